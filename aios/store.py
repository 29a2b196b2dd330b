"""The one SQLite database (WAL) of the system: the only module that touches SQLite.

Tables: ``tool_calls_log`` (audit), ``cache`` (per-app namespaces, TTL),
``sessions``, ``history``, ``tasks``, ``agent_state``, ``llm_usage``.

Each thread holds its own connection while it lives; WAL lets readers run
beside the one writer, and ``busy_timeout`` makes concurrent writers wait
instead of fail, so writes from many threads lose nothing. ``sqlite3``
errors are mapped to StoreError here.

The HTTP server runs every request in a new thread, so a connection is
leased to a thread and returns to an idle pool when the thread ends (else
each request would open, and keep, one more connection and its file
descriptors). Writers of this process queue on a lock before ``BEGIN
IMMEDIATE``: SQLite's busy handler waits by sleeping with growing delays,
which under many concurrent requests costs far more than the writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aios.errors import StoreError

SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_calls_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    session_id TEXT,
    app TEXT NOT NULL,
    step_id TEXT,
    tool TEXT NOT NULL,
    args TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'error', 'denied')),
    duration_ms REAL NOT NULL,
    error TEXT
);
CREATE INDEX IF NOT EXISTS tool_calls_app ON tool_calls_log (app, id);
CREATE INDEX IF NOT EXISTS tool_calls_session ON tool_calls_log (session_id, id);

CREATE TABLE IF NOT EXISTS cache (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires_at REAL,
    PRIMARY KEY (namespace, key)
);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    context TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    ts REAL NOT NULL,
    role TEXT NOT NULL,
    app TEXT,
    content TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS history_session ON history (session_id, id);

CREATE TABLE IF NOT EXISTS tasks (
    session_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    app TEXT,
    instruction TEXT,
    depends_on TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL,
    created REAL NOT NULL,
    finished REAL,
    result TEXT,
    PRIMARY KEY (session_id, task_id)
);

CREATE TABLE IF NOT EXISTS agent_state (
    session_id TEXT NOT NULL,
    app TEXT NOT NULL,
    state TEXT NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (session_id, app)
);

CREATE TABLE IF NOT EXISTS llm_usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    purpose TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_ms REAL NOT NULL,
    ok INTEGER NOT NULL,
    error TEXT
);
"""

_MISSING = object()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ensure_session(db: sqlite3.Connection, sid: str) -> None:
    now = time.time()
    db.execute("INSERT OR IGNORE INTO sessions (id, created, updated) VALUES (?,?,?)",
               (sid, now, now))


def new_session_id() -> str:
    return "sess_" + uuid.uuid4().hex[:16]


IDLE_CONNECTIONS = 16
"""Connections kept for reuse after their threads ended; more are closed."""


class _Lease:
    """A thread's hold on one connection; when it is freed the connection returns."""

    __slots__ = ("conn", "__weakref__")

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn


class Store:
    """Thread-safe access to the system database at ``path``."""

    def __init__(self, path: Path | str):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._idle: list[sqlite3.Connection] = []
        self._conns_lock = threading.RLock()
        self._write_lock = threading.RLock()
        self._closed = False
        try:
            self._conn().executescript(SCHEMA)
        except sqlite3.Error as e:
            raise StoreError(f"cannot create the schema in {self.path}: {e}") from e

    # ---------------------------------------------------------- connections

    def _conn(self) -> sqlite3.Connection:
        lease = getattr(self._local, "lease", None)
        if lease is not None:
            return lease.conn
        conn = None
        with self._conns_lock:
            if self._closed:
                raise StoreError("the store is closed")
            if self._idle:
                conn = self._idle.pop()
        if conn is None:
            conn = self._open()
        lease = _Lease(conn)
        # Runs when the thread ends (its locals die) or the store is closed.
        finalizer = weakref.finalize(lease, self._release, conn)
        finalizer.atexit = False
        self._local.lease = lease
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
        except sqlite3.Error as e:
            raise StoreError(f"cannot open database {self.path}: {e}") from e
        conn.row_factory = sqlite3.Row
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _release(self, conn: sqlite3.Connection) -> None:
        """A thread is done with ``conn``: keep it for the next thread (a few at most)."""
        with self._conns_lock:
            if self._closed or conn not in self._conns:
                return
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                self._idle_full(conn)
                return
            if len(self._idle) < IDLE_CONNECTIONS:
                self._idle.append(conn)
            else:
                self._idle_full(conn)

    def _idle_full(self, conn: sqlite3.Connection) -> None:
        self._conns.remove(conn)
        try:
            conn.close()
        except sqlite3.Error:
            pass

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        with self._write_lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"database error in {self.path}: {e}") from e
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise StoreError(f"database error in {self.path}: {e}") from e

    def close(self) -> None:
        self._closed = True
        with self._conns_lock:
            for conn in self._conns:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._conns.clear()
            self._idle.clear()
        self._local = threading.local()

    # ---------------------------------------------------------------- audit

    def audit(self, *, app: str, tool: str, args: str, status: str, duration_ms: float,
              error: str | None = None, session_id: str | None = None,
              step_id: str | None = None) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO tool_calls_log (ts, session_id, app, step_id, tool, args, status,"
                " duration_ms, error) VALUES (?,?,?,?,?,?,?,?,?)",
                (time.time(), session_id, app, step_id, tool, args, status, duration_ms, error))
            return int(cur.lastrowid or 0)

    def audit_rows(self, *, app: str | None = None, session_id: str | None = None,
                   limit: int = 200) -> list[dict[str, Any]]:
        where, params = [], []
        if app:
            where.append("app = ?")
            params.append(app)
        if session_id:
            where.append("session_id = ?")
            params.append(session_id)
        sql = "SELECT * FROM tool_calls_log"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(max(1, min(int(limit), 5000)))
        return [dict(r) for r in self._query(sql, tuple(params))]

    # ---------------------------------------------------------------- cache

    def cache_set(self, namespace: str, key: str, value: Any, ttl: float | None = None) -> None:
        expires = time.time() + ttl if ttl else None
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO cache (namespace, key, value, expires_at)"
                       " VALUES (?,?,?,?)", (namespace, key, _dumps(value), expires))

    def cache_get(self, namespace: str, key: str, default: Any = None) -> Any:
        rows = self._query("SELECT value, expires_at FROM cache WHERE namespace=? AND key=?",
                           (namespace, key))
        if not rows:
            return default
        value, expires = rows[0]
        if expires is not None and expires <= time.time():
            with self._tx() as db:
                db.execute("DELETE FROM cache WHERE namespace=? AND key=? AND expires_at<=?",
                           (namespace, key, time.time()))
            return default
        return json.loads(value)

    def cache_has(self, namespace: str, key: str) -> bool:
        return self.cache_get(namespace, key, _MISSING) is not _MISSING

    def cache_delete(self, namespace: str, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM cache WHERE namespace=? AND key=?", (namespace, key))

    def cache_purge_expired(self) -> int:
        with self._tx() as db:
            return db.execute("DELETE FROM cache WHERE expires_at IS NOT NULL AND expires_at<=?",
                              (time.time(),)).rowcount

    # ------------------------------------------------------------- sessions

    def ensure_session(self, session_id: str | None = None) -> str:
        sid = session_id or new_session_id()
        with self._tx() as db:
            _ensure_session(db, sid)
        return sid

    def session_exists(self, session_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM sessions WHERE id=?", (session_id,)))

    def set_context_var(self, session_id: str, name: str, value: Any) -> None:
        with self._tx() as db:  # one transaction, not two: this runs on every request
            _ensure_session(db, session_id)
            row = db.execute("SELECT context FROM sessions WHERE id=?", (session_id,)).fetchone()
            ctx = json.loads(row[0]) if row else {}
            ctx[name] = value
            db.execute("UPDATE sessions SET context=?, updated=? WHERE id=?",
                       (_dumps(ctx), time.time(), session_id))

    def context_vars(self, session_id: str) -> dict[str, Any]:
        rows = self._query("SELECT context FROM sessions WHERE id=?", (session_id,))
        return json.loads(rows[0][0]) if rows else {}

    def add_history(self, session_id: str, role: str, content: Any,
                    app: str | None = None) -> int:
        with self._tx() as db:
            _ensure_session(db, session_id)
            cur = db.execute("INSERT INTO history (session_id, ts, role, app, content)"
                             " VALUES (?,?,?,?,?)",
                             (session_id, time.time(), role, app, _dumps(content)))
            db.execute("UPDATE sessions SET updated=? WHERE id=?", (time.time(), session_id))
            return int(cur.lastrowid or 0)

    def history(self, session_id: str, limit: int = 200) -> list[dict[str, Any]]:
        rows = self._query("SELECT * FROM (SELECT * FROM history WHERE session_id=?"
                           " ORDER BY id DESC LIMIT ?) ORDER BY id", (session_id, limit))
        return [{**dict(r), "content": json.loads(r["content"])} for r in rows]

    def upsert_task(self, session_id: str, task_id: str, *, app: str | None,
                    instruction: str | None, depends_on: list[str], status: str,
                    result: Any = None) -> None:
        now = time.time()
        finished = now if status in ("done", "error") else None
        with self._tx() as db:
            db.execute(
                "INSERT INTO tasks (session_id, task_id, app, instruction, depends_on, status,"
                " created, finished, result) VALUES (?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (session_id, task_id) DO UPDATE SET status=excluded.status,"
                " finished=excluded.finished, result=excluded.result, app=excluded.app",
                (session_id, task_id, app, instruction, _dumps(depends_on), status, now,
                 finished, None if result is None else _dumps(result)))

    def tasks(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._query("SELECT * FROM tasks WHERE session_id=? ORDER BY created",
                           (session_id,))
        out = []
        for r in rows:
            d = dict(r)
            d["depends_on"] = json.loads(d["depends_on"])
            d["result"] = json.loads(d["result"]) if d["result"] else None
            out.append(d)
        return out

    def set_agent_state(self, session_id: str, app: str, state: Any) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO agent_state (session_id, app, state, updated)"
                       " VALUES (?,?,?,?)", (session_id, app, _dumps(state), time.time()))

    def agent_state(self, session_id: str, app: str) -> Any:
        rows = self._query("SELECT state FROM agent_state WHERE session_id=? AND app=?",
                           (session_id, app))
        return json.loads(rows[0][0]) if rows else None

    def session(self, session_id: str) -> dict[str, Any] | None:
        """Everything §4.4 keeps for one session."""
        rows = self._query("SELECT * FROM sessions WHERE id=?", (session_id,))
        if not rows:
            return None
        tasks = self.tasks(session_id)
        states = self._query("SELECT app, state FROM agent_state WHERE session_id=?",
                             (session_id,))
        return {
            "session_id": session_id,
            "created": rows[0]["created"],
            "updated": rows[0]["updated"],
            "history": self.history(session_id),
            "current_tasks": [t for t in tasks if t["status"] in ("pending", "running")],
            "completed_tasks": [t for t in tasks if t["status"] not in ("pending", "running")],
            "context": json.loads(rows[0]["context"]),
            "agent_states": {r["app"]: json.loads(r["state"]) for r in states},
            "tool_calls_log": list(reversed(self.audit_rows(session_id=session_id, limit=500))),
        }

    # ------------------------------------------------------------ llm usage

    def record_llm_usage(self, *, provider: str, model: str, latency_ms: float, ok: bool,
                         purpose: str | None = None, prompt_tokens: int | None = None,
                         completion_tokens: int | None = None,
                         error: str | None = None) -> None:
        with self._tx() as db:
            db.execute("INSERT INTO llm_usage (ts, provider, model, purpose, prompt_tokens,"
                       " completion_tokens, latency_ms, ok, error) VALUES (?,?,?,?,?,?,?,?,?)",
                       (time.time(), provider, model, purpose, prompt_tokens,
                        completion_tokens, latency_ms, int(ok), error))

    def llm_usage(self, limit: int = 100) -> list[dict[str, Any]]:
        return [dict(r) for r in self._query("SELECT * FROM llm_usage ORDER BY id DESC LIMIT ?",
                                             (limit,))]
