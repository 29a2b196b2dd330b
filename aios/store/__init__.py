# Longer than ~500 lines on purpose: the only module that touches SQLite (STYLE 2): every
# table's queries, the pool and the error mapping live together so no SQL leaks elsewhere;
# retention is in aios/store/pruner.py.
"""The one SQLite database (WAL) of the system: the only module that touches SQLite.

Tables: ``tool_calls_log`` (audit), ``cache`` (per-app namespaces, TTL),
``sessions``, ``history``, ``tasks``, ``agent_state``, ``llm_usage``, ``meta``,
``grants`` (the user's decision on each permission an app requested),
``app_installs`` (when each app was first seen) and ``route_owners`` (the user's
answer when a later app would take an earlier app's words, DESIGN §14.7). The
tables of runs, interactions and tool policy are ``aios.store.runs``'s: it goes
through this store's pool, transactions and error mapping, and registers its
retention with ``add_retention``.

Connections come from a fixed pool of ``pool_size``: every operation borrows
one and gives it back, so the number of open file descriptors never follows
the peak number of concurrent requests (SQLite keeps a closed connection's
descriptors open while another connection holds a lock, so "open more, close
later" leaks them). A thread that already holds a connection reuses it. WAL
lets readers run beside the one writer; writers of this process queue on a
lock before ``BEGIN IMMEDIATE`` (SQLite's busy handler sleeps with growing
delays, which under many concurrent requests costs far more than the writes).

``sqlite3`` errors are mapped here to the StoreError family: a full disk,
an I/O error or a damaged file also put the store in a *failing* state that
``failure()`` reports (``/api/health``) until a write succeeds again. At
start a damaged file is moved aside (``aios.db.broken-<timestamp>``) and a
fresh database is created.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import queue
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aios.errors import StoreBusy, StoreCorrupt, StoreError, StoreFull

log = logging.getLogger(__name__)

POOL_SIZE = 8
"""Connections per store (each holds about two file descriptors)."""
BUSY_TIMEOUT = 30.0
"""Seconds a statement waits for another process's lock, and a thread for a free connection."""
HISTORY_PAGE = 200
"""History entries ``session()`` returns when no limit is given."""
PRUNE_BATCH = 5000
"""Rows deleted per transaction while pruning, so other writers interleave."""
PROBE_BYTES = 16384
"""Size of the health probe's write while failing: large enough to need new pages."""
UNFINISHED = ("pending", "running")
FINISHED = ("done", "error", "interrupted")

# sqlite3 primary result codes (the low byte of an extended code)
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 10, 11, 13, 14, 26

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
CREATE INDEX IF NOT EXISTS llm_usage_ts ON llm_usage (ts);
CREATE INDEX IF NOT EXISTS tool_calls_ts ON tool_calls_log (ts);
CREATE INDEX IF NOT EXISTS history_ts ON history (ts);

CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS grants (
    app TEXT NOT NULL,
    permission TEXT NOT NULL,
    granted INTEGER NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (app, permission)
);

CREATE TABLE IF NOT EXISTS app_installs (
    app TEXT PRIMARY KEY,
    generation INTEGER NOT NULL,
    first_seen REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS route_owners (
    owner TEXT NOT NULL,
    newcomer TEXT NOT NULL,
    chosen TEXT NOT NULL,
    ts REAL NOT NULL,
    PRIMARY KEY (owner, newcomer)
);
"""

_MISSING = object()

RetentionHook = Callable[[float, int], dict[str, int]]
"""``hook(cut, rows_per_session)`` deletes what another module keeps in this database
(created before ``cut``, beyond ``rows_per_session``) and returns rows deleted per table."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ensure_session(db: sqlite3.Connection, sid: str) -> None:
    now = time.time()
    db.execute(
        "INSERT OR IGNORE INTO sessions (id, created, updated) VALUES (?,?,?)", (sid, now, now)
    )


def new_session_id() -> str:
    return "sess_" + uuid.uuid4().hex[:16]


def _code(e: sqlite3.Error) -> int | None:
    code = getattr(e, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _out_of_fds() -> bool:
    try:
        os.close(os.open(os.devnull, os.O_RDONLY))
    except OSError as e:
        return e.errno in (errno.EMFILE, errno.ENFILE)
    return False


def _is_damage(e: sqlite3.Error) -> bool:
    return (
        _code(e) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
        or "malformed" in str(e)
        or "not a database" in str(e)
    )


AUDIT_RUN_COLUMNS = ("run_id", "risk", "decision")
"""Added to ``tool_calls_log`` by DESIGN §12 (a database made before gains them at start)."""


def _add_audit_columns(conn: sqlite3.Connection) -> None:
    have = {row[1] for row in conn.execute("PRAGMA table_info(tool_calls_log)")}
    for name in AUDIT_RUN_COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE tool_calls_log ADD COLUMN {name} TEXT")


class Store:
    """Thread-safe access to the system database at ``path``."""

    def __init__(
        self,
        path: Path | str,
        *,
        pool_size: int = POOL_SIZE,
        busy_timeout: float = BUSY_TIMEOUT,
        clock: Callable[[], float] = time.time,
    ):
        self.path = str(path)
        self.clock = clock
        """Wall-clock seconds for timestamps and cache expiry (injectable for tests)."""
        self.pool_size = max(1, pool_size)
        self.busy_timeout = busy_timeout
        self.moved_aside: Path | None = None
        """Where a damaged database found at start was moved, if one was."""
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._opened = 0
        self._open_lock = threading.Lock()
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._closed = False
        self._failure: str | None = None
        self._retention_hooks: dict[str, RetentionHook] = {}
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._set_aside_if_damaged()
        try:
            with self._conn() as conn, self._write_lock:
                conn.executescript(SCHEMA)
                _add_audit_columns(conn)
        except sqlite3.Error as e:
            raise self._map(e) from e

    @property
    def location(self) -> str:
        return str(Path(self.path).resolve().parent) if self.path != ":memory:" else "memory"

    # ----------------------------------------------------------- integrity

    def _set_aside_if_damaged(self) -> None:
        """quick_check an existing file; move a damaged one (and its -wal/-shm) aside."""
        db = Path(self.path)
        if not db.exists() or db.stat().st_size == 0:
            return  # a zero-length file is a fresh database
        problem = None
        try:
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            try:
                rows = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
            finally:
                conn.close()
            if rows != ["ok"]:
                found = [
                    line for r in rows for line in str(r).splitlines() if not line.startswith("***")
                ] or ["quick_check failed"]
                problem = found[0] + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
        except sqlite3.Error as e:
            if not _is_damage(e):
                raise self._map(e) from e
            problem = str(e)
        if problem is None:
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest = db.with_name(f"{db.name}.broken-{stamp}")
        n = 1
        while dest.exists():
            n += 1
            dest = db.with_name(f"{db.name}.broken-{stamp}-{n}")
        for suffix in ("-wal", "-shm"):
            side = Path(self.path + suffix)
            if side.exists():
                side.rename(str(dest) + suffix)
        db.rename(dest)
        self.moved_aside = dest
        log.warning(
            "the database %s is damaged (%s): moved it to %s and started a fresh one",
            self.path,
            problem,
            dest,
        )

    # ---------------------------------------------------------- connections

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            except sqlite3.Error:
                conn.close()
                raise
        except sqlite3.Error as e:
            raise self._map(e) from e
        conn.row_factory = sqlite3.Row
        return conn

    def _acquire(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._open_lock:
            grow = self._opened < self.pool_size
            if grow:
                self._opened += 1
        if grow:
            try:
                return self._open()
            except BaseException:
                with self._open_lock:
                    self._opened -= 1
                raise
        try:
            return self._idle.get(timeout=self.busy_timeout)
        except queue.Empty:
            raise StoreBusy(
                f"the database {self.path} is busy: no connection became free "
                f"within {self.busy_timeout:g} s"
            ) from None

    def _give_back(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            self._discard(conn)
            return
        if self._closed:
            self._discard(conn)
        else:
            self._idle.put(conn)

    def _discard(self, conn: sqlite3.Connection) -> None:
        with self._open_lock:
            self._opened -= 1
        try:
            conn.close()
        except sqlite3.Error:
            pass

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        """Borrow a connection for one operation (the thread's own if it holds one)."""
        held: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        conn = self._acquire()
        self._local.conn = conn
        try:
            yield conn
        finally:
            self._local.conn = None
            self._give_back(conn)

    def _map(self, e: sqlite3.Error) -> StoreError:
        """The StoreError for a sqlite3 error; full disk, I/O and damage mark the store failing."""
        code = _code(e)
        err: StoreError
        if code == _SQLITE_FULL or "disk is full" in str(e):
            err = StoreFull(
                f"the disk holding {self.location} is full: free some space "
                "(the system recovers by itself)"
            )
        elif code == _SQLITE_IOERR:
            err = StoreError(f"disk I/O error on the database {self.path}: {e}")
        elif _is_damage(e):
            err = StoreCorrupt(
                f"the database {self.path} is damaged ({e}): restart the "
                "system to move it aside and start a fresh one"
            )
        elif code == _SQLITE_CANTOPEN and _out_of_fds():
            return StoreError(
                f"cannot open the database {self.path}: the system has run out "
                "of file descriptors (too many open files)"
            )
        elif "locked" in str(e) or "busy" in str(e):
            return StoreBusy(f"the database {self.path} is busy: {e}")
        else:
            return StoreError(f"database error in {self.path}: {e}")
        self._failure = str(err)
        return err

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._conn() as conn, self._write_lock:
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._rollback(conn)
                raise self._map(e) from e
            except BaseException:
                self._rollback(conn)
                raise
        self._failure = None  # a write went through: whatever failed has recovered

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the rollback of a failed write failing too changes nothing for the caller

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            with self._conn() as conn:
                return conn.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise self._map(e) from e

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                break
            self._discard(conn)

    # -------------------------------------------------------------- health

    def failure(self) -> str | None:
        """Why the store is failing (full disk, I/O error, damage), or None when it works.

        While failing, each call tries one tiny write, so the state clears as
        soon as the cause is gone even when nothing else writes.
        """
        if self._failure is not None and not self._closed:
            try:
                self.set_meta("probe", "x" * PROBE_BYTES)
            except StoreError:
                pass
        return self._failure

    def size_bytes(self) -> int:
        """The database file plus its write-ahead log."""
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))

    # ---------------------------------------------------------------- audit

    def audit(
        self,
        *,
        app: str,
        tool: str,
        args: str,
        status: str,
        duration_ms: float,
        error: str | None = None,
        session_id: str | None = None,
        step_id: str | None = None,
        run_id: str | None = None,
        risk: str | None = None,
        decision: str | None = None,
    ) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO tool_calls_log (ts, session_id, app, step_id, tool, args, status,"
                " duration_ms, error, run_id, risk, decision) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    self.clock(),
                    session_id,
                    app,
                    step_id,
                    tool,
                    args,
                    status,
                    duration_ms,
                    error,
                    run_id,
                    risk,
                    decision,
                ),
            )
            return int(cur.lastrowid or 0)

    def audit_rows(
        self, *, app: str | None = None, session_id: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]]:
        where: list[str] = []
        params: list[str | int] = []
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

    def cache_set(
        self,
        namespace: str,
        key: str,
        value: Any,
        ttl: float | None = None,
        *,
        fits: Callable[[int, int, int], None] | None = None,
    ) -> None:
        """Store a value; ``fits(keys, bytes, adding)`` — the namespace's other live
        entries and this value's size — is asked in the same transaction and may raise
        (a quota), which leaves the cache as it was."""
        expires = self.clock() + ttl if ttl else None
        text = _dumps(value)
        with self._tx() as db:
            if fits is not None:
                db.execute(
                    "DELETE FROM cache WHERE namespace=? AND expires_at IS NOT NULL "
                    "AND expires_at<=?",
                    (namespace, self.clock()),
                )
                keys, size = db.execute(
                    "SELECT COUNT(*), COALESCE(SUM(length(CAST(value AS BLOB))), 0) FROM cache "
                    "WHERE namespace=? AND key<>?",
                    (namespace, key),
                ).fetchone()
                fits(int(keys), int(size), len(text.encode("utf-8")))
            db.execute(
                "INSERT OR REPLACE INTO cache (namespace, key, value, expires_at) VALUES (?,?,?,?)",
                (namespace, key, text, expires),
            )

    def cache_usage(self, namespace: str) -> tuple[int, int]:
        """(keys, bytes of values) the namespace holds, expired entries not counted."""
        rows = self._query(
            "SELECT COUNT(*), COALESCE(SUM(length(CAST(value AS BLOB))), 0) FROM cache "
            "WHERE namespace=? AND (expires_at IS NULL OR expires_at>?)",
            (namespace, self.clock()),
        )
        return int(rows[0][0]), int(rows[0][1])

    def forget_app(self, app: str) -> dict[str, int]:
        """Delete what the system keeps for a removed app: its cache and its grants (its
        audit rows stay). Rows deleted per table."""
        with self._tx() as db:
            return {
                "cache": db.execute("DELETE FROM cache WHERE namespace=?", (app,)).rowcount,
                "grants": db.execute("DELETE FROM grants WHERE app=?", (app,)).rowcount,
            }

    def cache_get(self, namespace: str, key: str, default: Any = None) -> Any:
        rows = self._query(
            "SELECT value, expires_at FROM cache WHERE namespace=? AND key=?", (namespace, key)
        )
        if not rows:
            return default
        value, expires = rows[0]
        if expires is not None and expires <= self.clock():
            with self._tx() as db:
                db.execute(
                    "DELETE FROM cache WHERE namespace=? AND key=? AND expires_at<=?",
                    (namespace, key, self.clock()),
                )
            return default
        return json.loads(value)

    def cache_has(self, namespace: str, key: str) -> bool:
        return self.cache_get(namespace, key, _MISSING) is not _MISSING

    def cache_delete(self, namespace: str, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM cache WHERE namespace=? AND key=?", (namespace, key))

    def cache_purge_expired(self, now: float | None = None) -> int:
        """Delete the entries expired at ``now`` (default: the store's clock)."""
        at = self.clock() if now is None else now
        with self._tx() as db:
            return db.execute(
                "DELETE FROM cache WHERE expires_at IS NOT NULL AND expires_at<=?", (at,)
            ).rowcount

    # ------------------------------------------------------------- sessions

    def ensure_session(self, session_id: str | None = None) -> str:
        sid = session_id or new_session_id()
        with self._tx() as db:
            _ensure_session(db, sid)
        return sid

    def session_exists(self, session_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM sessions WHERE id=?", (session_id,)))

    def sessions_overview(self, limit: int) -> list[dict[str, Any]]:
        """Sessions most recently updated first: ``{session_id, created, updated, title,
        turns}``, where ``title`` is the first typed or spoken text (None when there is
        none yet) and ``turns`` the number of such texts."""
        rows = self._query(
            "SELECT s.id, s.created, s.updated,"
            " (SELECT json_extract(h.content, '$.text') FROM history h WHERE h.session_id=s.id"
            "  AND h.role='user' AND json_extract(h.content, '$.text') IS NOT NULL"
            "  ORDER BY h.id LIMIT 1) AS title,"
            " (SELECT COUNT(*) FROM history h WHERE h.session_id=s.id AND h.role='user'"
            "  AND json_extract(h.content, '$.text') IS NOT NULL) AS turns"
            " FROM sessions s ORDER BY s.updated DESC, s.rowid DESC LIMIT ?",
            (limit,),
        )
        return [
            {
                "session_id": r["id"],
                "created": r["created"],
                "updated": r["updated"],
                "title": r["title"],
                "turns": r["turns"],
            }
            for r in rows
        ]

    def set_context_var(self, session_id: str, name: str, value: Any) -> None:
        with self._tx() as db:  # one transaction, not two: this runs on every request
            _ensure_session(db, session_id)
            row = db.execute("SELECT context FROM sessions WHERE id=?", (session_id,)).fetchone()
            ctx = json.loads(row[0]) if row else {}
            ctx[name] = value
            db.execute(
                "UPDATE sessions SET context=?, updated=? WHERE id=?",
                (_dumps(ctx), self.clock(), session_id),
            )

    def context_vars(self, session_id: str) -> dict[str, Any]:
        rows = self._query("SELECT context FROM sessions WHERE id=?", (session_id,))
        return json.loads(rows[0][0]) if rows else {}

    def add_history(self, session_id: str, role: str, content: Any, app: str | None = None) -> int:
        with self._tx() as db:
            _ensure_session(db, session_id)
            cur = db.execute(
                "INSERT INTO history (session_id, ts, role, app, content) VALUES (?,?,?,?,?)",
                (session_id, self.clock(), role, app, _dumps(content)),
            )
            db.execute("UPDATE sessions SET updated=? WHERE id=?", (self.clock(), session_id))
            return int(cur.lastrowid or 0)

    def history(self, session_id: str, limit: int = HISTORY_PAGE) -> list[dict[str, Any]]:
        return self.history_page(session_id, limit=limit)[0]

    def history_page(
        self, session_id: str, *, before: int | None = None, limit: int = HISTORY_PAGE
    ) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` entries older than entry id ``before`` (oldest first), and
        whether older ones remain."""
        sql = "SELECT * FROM history WHERE session_id=?"
        params: tuple[Any, ...] = (session_id,)
        if before is not None:
            sql += " AND id<?"
            params += (before,)
        rows = self._query(sql + " ORDER BY id DESC LIMIT ?", (*params, limit + 1))
        more = len(rows) > limit
        return [
            {**dict(r), "content": json.loads(r["content"])} for r in reversed(rows[:limit])
        ], more

    def upsert_task(
        self,
        session_id: str,
        task_id: str,
        *,
        app: str | None,
        instruction: str | None,
        depends_on: list[str],
        status: str,
        result: Any = None,
    ) -> None:
        now = self.clock()
        finished = now if status in FINISHED else None
        with self._tx() as db:
            db.execute(
                "INSERT INTO tasks (session_id, task_id, app, instruction, depends_on, status,"
                " created, finished, result) VALUES (?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (session_id, task_id) DO UPDATE SET status=excluded.status,"
                " finished=excluded.finished, result=excluded.result, app=excluded.app",
                (
                    session_id,
                    task_id,
                    app,
                    instruction,
                    _dumps(depends_on),
                    status,
                    now,
                    finished,
                    None if result is None else _dumps(result),
                ),
            )

    def interrupt_unfinished_tasks(self) -> int:
        """Mark tasks a previous run left pending or running as ``interrupted``."""
        with self._tx() as db:
            return db.execute(
                "UPDATE tasks SET status='interrupted', finished=? WHERE status IN (?, ?)",
                (self.clock(), *UNFINISHED),
            ).rowcount

    def tasks(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT * FROM tasks WHERE session_id=? ORDER BY created, rowid", (session_id,)
        )
        out = []
        for r in rows:
            d = dict(r)
            d["depends_on"] = json.loads(d["depends_on"])
            d["result"] = json.loads(d["result"]) if d["result"] else None
            out.append(d)
        return out

    def set_agent_state(self, session_id: str, app: str, state: Any) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO agent_state (session_id, app, state, updated)"
                " VALUES (?,?,?,?)",
                (session_id, app, _dumps(state), self.clock()),
            )

    def agent_state(self, session_id: str, app: str) -> Any:
        rows = self._query(
            "SELECT state FROM agent_state WHERE session_id=? AND app=?", (session_id, app)
        )
        return json.loads(rows[0][0]) if rows else None

    def session(
        self, session_id: str, *, before: int | None = None, limit: int = HISTORY_PAGE
    ) -> dict[str, Any] | None:
        """Everything §4.4 keeps for one session, with one page of its history.

        ``history`` holds up to ``limit`` entries older than entry id ``before``
        (the newest when None); ``has_more`` says whether older entries remain,
        and ``next_before`` is the ``before`` that fetches them.
        """
        rows = self._query("SELECT * FROM sessions WHERE id=?", (session_id,))
        if not rows:
            return None
        tasks = self.tasks(session_id)
        history, more = self.history_page(session_id, before=before, limit=limit)
        states = self._query("SELECT app, state FROM agent_state WHERE session_id=?", (session_id,))
        return {
            "session_id": session_id,
            "created": rows[0]["created"],
            "updated": rows[0]["updated"],
            "history": history,
            "has_more": more,
            "next_before": history[0]["id"] if more and history else None,
            "current_tasks": [t for t in tasks if t["status"] in UNFINISHED],
            "completed_tasks": [t for t in tasks if t["status"] not in UNFINISHED],
            "context": json.loads(rows[0]["context"]),
            "agent_states": {r["app"]: json.loads(r["state"]) for r in states},
            "tool_calls_log": list(reversed(self.audit_rows(session_id=session_id, limit=500))),
        }

    # ------------------------------------------------------------ llm usage

    def record_llm_usage(
        self,
        *,
        provider: str,
        model: str,
        latency_ms: float,
        ok: bool,
        purpose: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        error: str | None = None,
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO llm_usage (ts, provider, model, purpose, prompt_tokens,"
                " completion_tokens, latency_ms, ok, error) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    self.clock(),
                    provider,
                    model,
                    purpose,
                    prompt_tokens,
                    completion_tokens,
                    latency_ms,
                    int(ok),
                    error,
                ),
            )

    def llm_usage(self, limit: int = 100) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._query("SELECT * FROM llm_usage ORDER BY id DESC LIMIT ?", (limit,))
        ]

    # ------------------------------------------------------------ retention

    def prune(
        self,
        *,
        audit_rows: int,
        audit_days: float,
        history_rows_per_session: int,
        history_days: float,
        llm_usage_rows: int,
        now: float | None = None,
    ) -> dict[str, int]:
        """Delete what is past retention (by count and by age); rows deleted per table."""
        now = self.clock() if now is None else now
        audit_cut, history_cut = now - audit_days * 86400, now - history_days * 86400
        out = {
            "tool_calls_log": self._delete_batched("tool_calls_log", "ts<?", (audit_cut,))
            + self._keep_newest("tool_calls_log", audit_rows),
            "llm_usage": self._delete_batched("llm_usage", "ts<?", (audit_cut,))
            + self._keep_newest("llm_usage", llm_usage_rows),
            "history": self._delete_batched("history", "ts<?", (history_cut,)),
            "tasks": self._delete_batched(
                "tasks",
                "created<? AND status NOT IN (?, ?)",
                (history_cut, *UNFINISHED),
                key="rowid",
            ),
            "cache": self.cache_purge_expired(now),
        }
        crowded = self._query(
            "SELECT session_id FROM history GROUP BY session_id HAVING count(*) > ?",
            (history_rows_per_session,),
        )
        for (sid,) in crowded:
            out["history"] += self._keep_newest(
                "history", history_rows_per_session, "session_id=?", (sid,)
            )
        tasks = self._query(
            "SELECT session_id FROM tasks GROUP BY session_id HAVING count(*) > ?",
            (history_rows_per_session,),
        )
        for (sid,) in tasks:
            out["tasks"] += self._keep_newest(
                "tasks", history_rows_per_session, "session_id=?", (sid,), key="rowid"
            )
        for hook in list(self._retention_hooks.values()):
            out.update(hook(history_cut, history_rows_per_session))
        with self._tx() as db:
            db.execute("DELETE FROM agent_state WHERE updated<?", (history_cut,))
            out["sessions"] = db.execute(
                "DELETE FROM sessions WHERE updated<? AND id NOT IN"
                " (SELECT session_id FROM history)",
                (history_cut,),
            ).rowcount
        return out

    def add_retention(self, name: str, hook: RetentionHook) -> None:
        """Have ``prune()`` also call ``hook`` with the history retention (aios.store.runs's
        tables); registering the same ``name`` again replaces the earlier hook."""
        self._retention_hooks[name] = hook

    def _keep_newest(
        self, table: str, keep: int, where: str = "1", params: tuple[Any, ...] = (), key: str = "id"
    ) -> int:
        rows = self._query(
            f"SELECT {key} FROM {table} WHERE {where} ORDER BY {key} DESC LIMIT 1 OFFSET ?",
            (*params, keep),
        )
        if not rows:
            return 0
        return self._delete_batched(table, f"{where} AND {key}<=?", (*params, rows[0][0]), key=key)

    def _delete_batched(
        self, table: str, where: str, params: tuple[Any, ...], key: str = "id"
    ) -> int:
        total = 0
        while True:
            with self._tx() as db:
                n = db.execute(
                    f"DELETE FROM {table} WHERE {key} IN (SELECT {key} FROM {table}"
                    f" WHERE {where} LIMIT ?)",
                    (*params, PRUNE_BATCH),
                ).rowcount
            total += n
            if n < PRUNE_BATCH:
                return total

    def vacuum(self, now: float | None = None) -> None:
        """Give the space of deleted rows back to the disk and empty the write-ahead log."""
        with self._conn() as conn, self._write_lock:
            try:
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as e:
                raise self._map(e) from e
        self.set_meta("vacuumed", self.clock() if now is None else now)

    def last_vacuum(self) -> float | None:
        value = self.meta("vacuumed")
        return float(value) if value is not None else None

    def meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key=?", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: Any) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))

    # ------------------------------------------------------------- grants

    def grants(self, app: str) -> dict[str, bool]:
        """Permission -> granted, for every decision recorded for ``app``."""
        rows = self._query("SELECT permission, granted FROM grants WHERE app=?", (app,))
        return {str(r[0]): bool(r[1]) for r in rows}

    def set_grants(
        self, app: str, decisions: dict[str, bool], *, keep_existing: bool = False
    ) -> None:
        """Record decisions; ``keep_existing`` only fills in permissions not decided yet."""
        verb = "INSERT OR IGNORE" if keep_existing else "INSERT OR REPLACE"
        now = time.time()
        with self._tx() as db:
            db.executemany(
                f"{verb} INTO grants (app, permission, granted, ts) VALUES (?, ?, ?, ?)",
                [(app, p, int(g), now) for p, g in decisions.items()],
            )

    # ------------------------------------------------- installs and route owners

    def record_installs(self, apps: list[str]) -> dict[str, int]:
        """Each app's install generation: the one it got when first seen, or a new one.

        Apps first seen together (one scan) share a generation, one more than
        any before; an app seen before keeps its own, across restarts.
        """
        now = time.time()
        with self._tx() as db:
            known = {
                str(r[0]): int(r[1])
                for r in db.execute("SELECT app, generation FROM app_installs").fetchall()
            }
            new = [a for a in dict.fromkeys(apps) if a not in known]
            if new:
                generation = max(known.values(), default=0) + 1
                db.executemany(
                    "INSERT INTO app_installs (app, generation, first_seen) VALUES (?, ?, ?)",
                    [(a, generation, now) for a in new],
                )
                known.update(dict.fromkeys(new, generation))
        return {a: known[a] for a in apps}

    def route_owner_choices(self, newcomer: str) -> dict[str, str]:
        """Owner -> the app the user chose when ``newcomer`` would take the owner's words."""
        rows = self._query("SELECT owner, chosen FROM route_owners WHERE newcomer=?", (newcomer,))
        return {str(r[0]): str(r[1]) for r in rows}

    def set_route_owner_choice(self, owners: list[str], newcomer: str, chosen: str) -> None:
        """Remember the user's answer for each (owner, ``newcomer``) pair that was asked."""
        now = time.time()
        with self._tx() as db:
            db.executemany(
                "INSERT OR REPLACE INTO route_owners (owner, newcomer, chosen, ts) "
                "VALUES (?, ?, ?, ?)",
                [(o, newcomer, chosen, now) for o in owners],
            )
