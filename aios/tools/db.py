"""``db_query``: one SQL statement against an SQLite database in the app's workdir.

The DSN goes through :func:`aios.tools.sandbox.resolve_dsn` (``sqlite:///notes.db``,
``notes.db`` or ``:memory:``, inside the workdir, or on the config's
explicit allow-list). What SQL can reach is then narrowed by an SQLite
authorizer, which sees every statement after parsing, so no spelling of a
statement gets around it: ``ATTACH`` (and ``VACUUM INTO``, which attaches
its target) only to files inside the workdir, no ``load_extension``, no
process-wide ``PRAGMA temp_store_directory``. A progress handler enforces
the tool's timeout. Each call opens its own connection in autocommit mode,
so every write is committed when the call returns.

A database inside the workdir is opened through the ``aios-beneath`` VFS
(:mod:`aios.tools.db_vfs`): its folder is pinned race-free and SQLite reaches
the file and its ``-journal``/``-wal``/``-shm`` through that folder's fd, so
swapping a folder for a symlink cannot make it open or write a file outside.
"""

from __future__ import annotations

import base64
import ctypes
import ctypes.util
import errno
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from aios.config import QuotasConfig
from aios.errors import ToolFailed, ToolRefused
from aios.host import safe_open
from aios.quotas import refusal
from aios.tools import db_vfs
from aios.tools.base import Risk, ToolArgs, ToolContext, ToolOutput, atomic_tool
from aios.tools.sandbox import escaped, relative_display, resolve_dsn

log = logging.getLogger(__name__)

MAX_ROWS = 1000
"""Rows returned per call at most (meta.truncated tells)."""
PROGRESS_OPS = 1000
"""SQLite VM instructions between two looks at the clock."""
DENIED_PRAGMAS = frozenset(
    {"temp_store_directory", "data_store_directory", "soft_heap_limit", "hard_heap_limit"}
)
"""Pragmas that change where the whole process writes files or how much memory all of its
SQLite may use."""
FIXED_PRAGMAS = frozenset({"max_page_count", "page_size", "cache_size", "mmap_size", "temp_store"})
"""Pragmas an app may read but not set: they would lift the quotas on a query's memory
and the database's growth (aios/quotas.py)."""
MEMORY_CHECK_OPS = 100
"""SQLite VM instructions between two looks at SQLite's memory (``db_memory_bytes``)."""
PAGE_BYTES = 4096
"""SQLite's default page size, which :data:`FIXED_PRAGMAS` keeps."""
DENIED_FUNCTIONS = frozenset({"fts3_tokenizer"})
"""Functions that leak or take process memory: fts3_tokenizer('x') returns a pointer, and
fts3_tokenizer('x', ptr) installs one (code execution in the system process)."""


class DbQueryArgs(ToolArgs):
    dsn: str = Field(
        description="sqlite:///notes.db, notes.db (relative to the workdir) or :memory:"
    )
    sql: str = Field(min_length=1, description="One SQL statement; use ? or :name placeholders.")
    params: list[Any] | dict[str, Any] | None = Field(
        default=None,
        description="Values for the placeholders; objects and lists are stored as JSON text.",
    )


class _Guard:
    """The authorizer; remembers why it said no, for the error message."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.reason: str | None = None

    def __call__(
        self,
        action: int,
        arg1: str | None,
        arg2: str | None,
        dbname: str | None,
        source: str | None,
    ) -> int:
        if action == sqlite3.SQLITE_ATTACH:
            return self._attach(arg1)
        if action == sqlite3.SQLITE_PRAGMA and arg1 and arg1.lower() in DENIED_PRAGMAS:
            return self._deny(f"database policy: PRAGMA {arg1} is not allowed")
        if (
            action == sqlite3.SQLITE_PRAGMA
            and arg1
            and arg1.lower() in FIXED_PRAGMAS
            and arg2 is not None
        ):
            return self._deny(
                f"database policy: PRAGMA {arg1} can be read, not set (it would lift the "
                "app's database quotas)"
            )
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension":
            return self._deny("database policy: loading SQLite extensions is not allowed")
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
            return self._deny(f"database policy: the SQL function {arg2}() is not allowed")
        return sqlite3.SQLITE_OK

    def _deny(self, reason: str) -> int:
        self.reason = reason
        return sqlite3.SQLITE_DENY

    def _attach(self, name: str | None) -> int:
        if name is None:
            # Only a string literal reaches the authorizer; anything computed
            # (a ? parameter, an expression) cannot be checked, so it is refused.
            return self._deny("database policy: ATTACH needs the file name as a string literal")
        if name in ("", ":memory:"):
            # an attached memory or temporary database would hold data beyond the quota
            return self._deny(
                "database policy: ATTACH of an in-memory or temporary database is not "
                "allowed (quota db_memory_bytes); attach a file in the workdir"
            )
        if name.startswith("file:"):
            return self._deny(
                f"database policy: ATTACH of URI file names is not allowed ({name!r})"
            )
        if not os.path.isabs(name):
            # SQLite would resolve it against the system's working directory,
            # not the app's workdir: refuse instead of guessing.
            return self._deny(
                f"database policy: ATTACH {name!r} refused: give the absolute "
                f"path of a file inside the app's workdir ({self.workdir})"
            )
        real = Path(os.path.realpath(name))
        if real != self.workdir and self.workdir not in real.parents:
            return self._deny(
                f"database policy: ATTACH {name!r} refused: it is outside the app's workdir"
            )
        return sqlite3.SQLITE_OK


def _risk(args: dict[str, Any]) -> Risk:
    sql = args.get("sql")
    return "safe" if isinstance(sql, str) and is_read_only_sql(sql) else "medium"


def _describe(args: dict[str, Any]) -> str:
    sql = str(args.get("sql", ""))
    dsn = args.get("dsn")
    return f"{dsn}: {sql}" if dsn else sql


@atomic_tool(
    "db_query",
    DbQueryArgs,
    "Run one SQL statement on an SQLite database inside the app's workdir. Returns "
    "{columns, rows, rowcount}; writes are committed at once.",
    timeout=10,
    risk=_risk,
    risks=("safe", "medium"),
    describe=_describe,
    offer_words=("数据库", "表格", "sql", "sqlite", "database", "table", "query"),
)
def db_query(ctx: ToolContext, args: DbQueryArgs) -> ToolOutput:
    target = resolve_dsn(ctx.policy, args.dsn)
    shown = _show(ctx, target)
    pinned = False
    if target != ":memory:":
        path = Path(target)
        if path.is_dir():
            raise ToolFailed(f"db_query: {shown} is a folder, not a database file")
        if ctx.policy.workdir in path.parents:
            _make_folder(ctx, path, shown)
            pinned = db_vfs.available()
    with db_vfs.scope(ctx.policy.workdir) as sc:
        return _run(ctx, args, db_vfs.uri(Path(target)) if pinned else target, pinned, shown, sc)


def _make_folder(ctx: ToolContext, path: Path, shown: str) -> None:
    root = safe_open.open_root(ctx.policy.workdir)
    try:
        os.close(
            safe_open.open_dir(root, str(path.parent.relative_to(ctx.policy.workdir)), create=True)
        )
    except OSError as e:
        if e.errno in (errno.EXDEV, errno.ELOOP):
            raise escaped(shown) from e
        raise ToolFailed(
            f"db_query: cannot create the folder for {shown}: {e.strerror or e}"
        ) from e
    finally:
        os.close(root)


def _run(
    ctx: ToolContext, args: DbQueryArgs, name: str, uri: bool, shown: str, sc: db_vfs.Scope
) -> ToolOutput:

    seconds = ctx.timeout("db_query")
    deadline = time.monotonic() + seconds
    guard = _Guard(ctx.policy.workdir)
    params = _bindable(args.params)
    limits = ctx.quotas.config if ctx.quotas is not None else QuotasConfig()
    room = None if name == ":memory:" else ctx.workspace_room()
    conn: sqlite3.Connection | None = None
    memory = _MemoryWatch(limits.db_memory_bytes)
    try:
        conn = sqlite3.connect(name, timeout=seconds, isolation_level=None, uri=uri)
        _bound(conn, limits, room, memory_db=name == ":memory:")
        conn.set_authorizer(guard)
        conn.set_progress_handler(
            lambda: int(time.monotonic() > deadline or memory.over()), MEMORY_CHECK_OPS
        )
        cur = conn.execute(args.sql, params)
        columns = [d[0] for d in cur.description] if cur.description else []
        truncated = False
        rows: list[list[Any]] = []
        if cur.description:
            rows, truncated = _fetch_capped(cur, ctx.policy.config.max_output_bytes)
            rowcount = len(rows)
        else:
            # sqlite3 says -1 for statements that change no rows (CREATE, PRAGMA…).
            rowcount = max(cur.rowcount, 0)
        lastrowid = cur.lastrowid
        cur.close()
    except sqlite3.Error as e:
        if sc.reason is not None and guard.reason is None:
            raise ToolRefused(f"path confinement: database {sc.reason}; refused") from e
        over = _over_quota(e, memory, room, limits.db_memory_bytes)
        if over is not None:
            raise (
                ctx.quotas.refuse(over, ctx.app_id, None)
                if ctx.quotas is not None
                else refusal(over, ctx.app_id, None, getattr(limits, over))
            ) from e
        raise _map_error(e, guard, seconds, deadline, shown) from e
    finally:
        if conn is not None:
            conn.close()
    meta: dict[str, Any] = {"dsn": shown, "truncated": truncated}
    if lastrowid:
        meta["lastrowid"] = lastrowid
    return ToolOutput({"columns": columns, "rows": rows, "rowcount": rowcount}, meta)


def _bound(
    conn: sqlite3.Connection, limits: QuotasConfig, room: int | None, *, memory_db: bool
) -> None:
    """SQLite itself refuses what is over the app's quotas, before it is built: a value
    or row longer than ``db_value_bytes``, more than ``db_columns`` columns, an in-memory
    or temporary database past ``db_memory_bytes``, a database file growing past what is
    left of the workspace quota (``room``; None: no quota here)."""
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limits.db_value_bytes)
    conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, limits.db_columns)
    pages = limits.db_memory_bytes // PAGE_BYTES
    conn.execute(f"PRAGMA temp.max_page_count = {pages}")
    if memory_db:
        conn.execute(f"PRAGMA main.max_page_count = {pages}")
    elif room is not None:
        size = conn.execute("PRAGMA main.page_count").fetchone()[0]
        page = conn.execute("PRAGMA main.page_size").fetchone()[0]
        # at least one page: 0 would leave the cap unset
        conn.execute(f"PRAGMA main.max_page_count = {max(1, size + max(0, room) // page)}")


class _MemoryWatch:
    """Whether SQLite's memory grew past ``limit`` bytes since the query began (checked
    every :data:`MEMORY_CHECK_OPS` instructions; the count is the process's, so another
    query running at the same time counts too)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.start = _memory_used()
        self.tripped = False

    def over(self) -> bool:
        if _memory_used() - self.start > self.limit:
            self.tripped = True
        return self.tripped


def _load_memory_used() -> Callable[[], int]:
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
        used = fn.sqlite3_memory_used
    except (OSError, AttributeError):
        log.warning("SQLite's memory use cannot be read here: db_memory_bytes is not checked")
        return lambda: 0
    used.restype = ctypes.c_int64
    used.argtypes = []
    return lambda: int(used())


_memory_used = _load_memory_used()


def _over_quota(
    e: sqlite3.Error, memory: _MemoryWatch, room: int | None, memory_cap: int
) -> str | None:
    """The quota SQLite refused on, when it was one (None for any other error)."""
    message = str(e)
    if "string or blob too big" in message:
        return "db_value_bytes"
    if "too many columns" in message:
        return "db_columns"
    if message == "interrupted" and memory.tripped:
        return "db_memory_bytes"
    if "database or disk is full" in message:
        # the file's cap or the temporary database's: the smaller one is the one reached
        if room is not None and room < memory_cap:
            return "workspace_bytes"
        return "db_memory_bytes"
    return None


def _fetch_capped(cur: sqlite3.Cursor, limit: int) -> tuple[list[list[Any]], bool]:
    """At most MAX_ROWS rows and about ``limit`` bytes of values (like command output);
    True when more were left."""
    rows: list[list[Any]] = []
    size = 0
    for row in cur:
        if len(rows) == MAX_ROWS:
            return rows, True
        values = [_jsonable(v) for v in row]
        size += sum(len(v) if isinstance(v, str) else len(str(v)) for v in values)
        if size > limit:
            return rows, True
        rows.append(values)
    return rows, False


def _show(ctx: ToolContext, target: str) -> str:
    if target == ":memory:":
        return target
    return relative_display(ctx.policy, Path(target))


def _bindable(params: list[Any] | dict[str, Any] | None) -> list[Any] | dict[str, Any]:
    """SQLite binds scalars only; objects and lists travel as JSON text."""

    def one(v: Any) -> Any:
        return json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v

    if params is None:
        return []
    if isinstance(params, dict):
        return {k: one(v) for k, v in params.items()}
    return [one(v) for v in params]


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    return value


def _map_error(
    e: sqlite3.Error, guard: _Guard, seconds: float, deadline: float, shown: str
) -> ToolFailed | ToolRefused:
    message = str(e)
    if guard.reason is not None:
        return ToolRefused(guard.reason)
    if "one statement at a time" in message:
        return ToolFailed(
            "db_query: only one SQL statement per call; split the statements "
            "into separate calls (steps)"
        )
    if message == "interrupted" and time.monotonic() > deadline:
        return ToolFailed(f"db_query: timed out after {seconds:g}s")
    if isinstance(e, sqlite3.OperationalError) and "unable to open" in message:
        return ToolFailed(f"db_query: cannot open database {shown}: {message}")
    return ToolFailed(f"db_query: SQLite error: {message}")


# ----------------------------------------------- is it a read? (its risk class)

READ_PRAGMAS = frozenset(
    """application_id auto_vacuum busy_timeout cache_size cache_spill cell_size_check
    collation_list compile_options data_version database_list encoding foreign_key_check
    foreign_key_list foreign_keys freelist_count function_list index_info index_list
    index_xinfo integrity_check journal_mode journal_size_limit legacy_alter_table
    locking_mode max_page_count mmap_size module_list page_count page_size pragma_list
    query_only quick_check read_uncommitted recursive_triggers schema_version
    secure_delete synchronous table_info table_list table_xinfo temp_store user_version
    wal_autocheckpoint""".split()
)
"""Pragmas that only report when given no value. Others (``optimize``,
``wal_checkpoint``, ``incremental_vacuum``…) may write, so they count as writes."""
READ_PRAGMA_ARGS = frozenset(
    """foreign_key_check foreign_key_list index_info index_list index_xinfo integrity_check
    quick_check table_info table_list table_xinfo""".split()
)
"""Pragmas whose ``(argument)`` names what to report on; for the others
``PRAGMA name(value)`` sets, like ``PRAGMA name = value``."""
WRITE_WORDS = frozenset(
    """INSERT UPDATE DELETE REPLACE UPSERT CREATE DROP ALTER ATTACH DETACH VACUUM REINDEX
    ANALYZE PRAGMA BEGIN COMMIT ROLLBACK SAVEPOINT RELEASE RETURNING""".split()
)
"""Keywords that make a statement starting with SELECT/WITH/VALUES not clearly a read."""
READ_STARTS = frozenset({"SELECT", "VALUES", "WITH"})


def _sql_tokens(sql: str) -> list[str] | None:
    """Upper-cased words and punctuation, literals as ``'`` and quoted names as ``"``;
    comments dropped. None when a quote or comment is not closed."""
    out: list[str] = []
    i, n = 0, len(sql)
    closers = {"'": "'", '"': '"', "`": "`", "[": "]"}
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end < 0:
                return None
            i = end + 2
        elif c in closers:
            end = sql.find(closers[c], i + 1)
            # '' inside a literal is an escaped quote: keep looking past it.
            while end >= 0 and c in "'\"" and sql.startswith(c, end + 1):
                end = sql.find(c, end + 2)
            if end < 0:
                return None
            out.append("'" if c == "'" else '"')
            i = end + 1
        elif c.isalnum() or c in "_$":
            j = i
            while j < n and (sql[j].isalnum() or sql[j] in "_$"):
                j += 1
            out.append(sql[i:j].upper())
            i = j
        else:
            out.append(c)
            i += 1
    return out


def is_read_only_sql(sql: str) -> bool:
    """True only for a statement that clearly reads: SELECT, VALUES, WITH … SELECT,
    EXPLAIN …, or a reporting PRAGMA. Anything unclear counts as a write."""
    tokens = _sql_tokens(sql)
    if not tokens:
        return False
    if ";" in tokens:
        end = tokens.index(";")
        if any(t != ";" for t in tokens[end:]):
            return False  # a second statement
        tokens = tokens[:end]
        if not tokens:
            return False
    first = tokens[0]
    if first == "EXPLAIN":
        return True  # EXPLAIN [QUERY PLAN] shows a statement's plan, never runs it
    if first in READ_STARTS:
        return not any(t in WRITE_WORDS for t in tokens)
    if first == "PRAGMA":
        return _pragma_reads(tokens[1:])
    return False


def _pragma_reads(rest: list[str]) -> bool:
    if len(rest) >= 2 and rest[1] == ".":
        rest = rest[2:]  # schema.name
    if not rest or rest[0].lower() not in READ_PRAGMAS:
        return False
    tail = rest[1:]
    if not tail:
        return True
    # PRAGMA table_info(t): an argument naming what to report on, nothing after it.
    return (
        rest[0].lower() in READ_PRAGMA_ARGS
        and tail[0] == "("
        and tail[-1] == ")"
        and tail.count("(") == 1
    )
