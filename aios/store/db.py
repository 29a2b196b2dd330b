"""The database under every table: the connection pool, transactions, the mapping of
``sqlite3`` errors to the StoreError family, the set-aside of a damaged file, ``meta``,
vacuum and the retention helpers. No module outside ``aios.store`` opens ``aios.db``.

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
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aios.errors import StoreBusy, StoreCorrupt, StoreError, StoreFull

log = logging.getLogger("aios.store")

POOL_SIZE = 8
"""Connections per store (each holds about two file descriptors)."""
BUSY_TIMEOUT = 30.0
"""Seconds a statement waits for another process's lock, and a thread for a free connection."""
PRUNE_BATCH = 5000
"""Rows deleted per transaction while pruning, so other writers interleave."""
PROBE_BYTES = 16384
"""Size of the health probe's write while failing: large enough to need new pages."""

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
CREATE INDEX IF NOT EXISTS history_session_ts ON history (session_id, ts);

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

CREATE TABLE IF NOT EXISTS topics (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    parent TEXT,
    app TEXT NOT NULL,
    label TEXT NOT NULL,
    labelled_by TEXT NOT NULL DEFAULT 'rules',
    state TEXT NOT NULL CHECK (state IN ('active', 'paused', 'archived')),
    terms TEXT NOT NULL DEFAULT '{}',
    turns TEXT NOT NULL DEFAULT '[]',
    view INTEGER,
    instance TEXT,
    started REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS topics_session ON topics (session_id, updated);
"""

RetentionHook = Callable[[float, int], dict[str, int]]
"""``hook(cut, rows_per_session)`` deletes what another module keeps in this database
(created before ``cut``, beyond ``rows_per_session``) and returns rows deleted per table."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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


USAGE_COLUMNS = {
    "session_id": "TEXT",
    "run_id": "TEXT",
    "app": "TEXT",
    "cached_tokens": "INTEGER",
    "cost": "REAL",
}
"""Added to ``llm_usage`` by DESIGN §16 (a database made before gains them at start)."""


def _add_audit_columns(conn: sqlite3.Connection) -> None:
    have = {row[1] for row in conn.execute("PRAGMA table_info(tool_calls_log)")}
    for name in AUDIT_RUN_COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE tool_calls_log ADD COLUMN {name} TEXT")
    have = {row[1] for row in conn.execute("PRAGMA table_info(llm_usage)")}
    for name, kind in USAGE_COLUMNS.items():
        if name not in have:
            conn.execute(f"ALTER TABLE llm_usage ADD COLUMN {name} {kind}")


class Database:
    """Thread-safe access to the system database at ``path``: its pool, transactions, meta."""

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
        self._idle: list[sqlite3.Connection] = []
        """Connections not in use, the most recently given back last (taken first)."""
        self._opened = 0
        self._pool_changed = threading.Condition(threading.Lock())
        """Guards ``_idle`` and ``_opened``; notified when a connection is given back."""
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._closed = False
        self._failure: str | None = None
        self._retention_hooks: dict[str, RetentionHook] = {}
        self.history_epoch = 0
        """Counts the times history entries were deleted (retention): what is kept in memory
        from a session's history (aios/control/context.py) is read anew when it changes."""
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
        with self._pool_changed:
            if self._idle:
                return self._idle.pop()
            grow = self._opened < self.pool_size
            if grow:
                self._opened += 1
        if grow:
            try:
                return self._open()
            except BaseException:
                with self._pool_changed:
                    self._opened -= 1
                raise
        with self._pool_changed:
            if self._pool_changed.wait_for(lambda: bool(self._idle), timeout=self.busy_timeout):
                return self._idle.pop()
        raise StoreBusy(
            f"the database {self.path} is busy: no connection became free "
            f"within {self.busy_timeout:g} s"
        )

    def _give_back(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:
            self._discard(conn)
            return
        with self._pool_changed:
            if not self._closed:  # read under the lock: close() empties the pool under it
                self._idle.append(conn)
                self._pool_changed.notify()
                return
        self._discard(conn)

    def _discard(self, conn: sqlite3.Connection) -> None:
        with self._pool_changed:
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
        with self._pool_changed:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
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

    # ------------------------------------------------------------ retention

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
