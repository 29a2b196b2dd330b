"""How much a tool call can do, and the call in plain words (DESIGN §12 "Risk").

:func:`classify` gives each atomic tool call its risk class, which the
approval policy turns into "ask" or "allow"; :func:`describe` is the line the
plan preview card shows for it: the command line as it will run, the path,
``METHOD URL``, always whole (DESIGN §14.2: never cut, never folded) with
every control and invisible character made visible (:func:`visible`). Both
are pure and never raise on bad arguments (the tool itself refuses those
when it runs). The block list, which refuses whatever
the risk, is part of the command policy (:func:`aios.tools.sandbox.check_block_list`);
:func:`blocked` asks it about a step before the step runs.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Final, Literal

from aios.config import SandboxConfig
from aios.errors import ToolRefused
from aios.protocol import ATOMIC_TOOLS
from aios.protocol.outbound import card_text
from aios.tools.sandbox import SandboxPolicy, check_block_list, split_command

Risk = Literal["safe", "low", "medium", "high"]
RISK_ORDER: Final[tuple[Risk, ...]] = ("safe", "low", "medium", "high")
"""Least to most; ``RISK_ORDER.index(r)`` compares two classes."""

MARK_OPEN, MARK_CLOSE = "\u27e8", "\u27e9"
"""⟨ ⟩: around a character made visible (``⟨U+200B⟩``, ``⟨\\n⟩``); a ⟨ in the text
itself is shown as ``⟨U+27E8⟩``, so a marker can never be forged by the text."""
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
INVISIBLE_PRINTABLE = frozenset(
    "\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180b\u180c\u180d\u180f"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
    + "".join(chr(c) for c in range(0xE0100, 0xE01F0))
)
"""Characters Python calls printable that draw nothing (Hangul fillers, the braille
blank, the combining grapheme joiner, variation selectors)."""
SHELL_SAFE = frozenset("@%+=:,./-_")
"""Characters besides letters and digits that a shell never needs quoted."""

FIXED_RISK: Final[dict[str, Risk]] = {
    "file_read": "safe",
    "file_list": "safe",
    "cache_get": "safe",
    "cache_set": "low",
    "notify": "low",
    "file_write": "medium",
    "shell_exec": "high",
    "process_start": "high",
}
"""Tools whose risk does not depend on their arguments."""
READ_METHODS = frozenset({"GET", "HEAD"})

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

_DESCRIBE_POLICY = SandboxPolicy(
    workdir=Path("/"), config=SandboxConfig(allow_pipes=True), block_list=()
)
"""Only for splitting a command into the argv lists the shell tool runs: no rule
beyond the syntax applies (the tool applies them when it runs)."""


def classify(tool: str, args: dict[str, Any]) -> Risk | None:
    """The risk class of one tool call; None for an app's own ``@tool`` (not atomic)."""
    if tool not in ATOMIC_TOOLS:
        return None
    fixed = FIXED_RISK.get(tool)
    if fixed is not None:
        return fixed
    if tool == "http_request":
        method = str(args.get("method") or "GET").upper()
        return "low" if method in READ_METHODS and not args.get("save_to") else "medium"
    if tool == "db_query":
        sql = args.get("sql")
        return "safe" if isinstance(sql, str) and is_read_only_sql(sql) else "medium"
    # An atomic tool added without a class here asks like the riskiest one.
    return "high"


def blocked(policy: SandboxPolicy, tool: str, args: dict[str, Any]) -> str | None:
    """The block list's refusal (``"blocked: <rule> …"``) of a command step, else None.

    Lets a plan preview show a step as refused instead of asking about it; the
    tool checks again when it runs, so this is never the only check.
    """
    cmd = args.get("cmd")
    if tool == "process_start" and isinstance(cmd, str) and args.get("args"):
        extra = args["args"]
        cmd = [cmd, *extra] if isinstance(extra, list) else cmd
    elif tool not in ("shell_exec", "process_start"):
        return None
    if not (isinstance(cmd, str) or (isinstance(cmd, list) and cmd)):
        return None
    if isinstance(cmd, list) and not all(isinstance(a, str) for a in cmd):
        return None
    cwd = args.get("cwd")
    try:
        check_block_list(policy, cmd, policy.workdir / cwd if isinstance(cwd, str) else None)
    except ToolRefused as e:
        return str(e)
    return None


# --------------------------------------------------------------------- SQL


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


# ------------------------------------------------------------ plain words


def describe(tool: str, args: dict[str, Any]) -> str:
    """The step in plain, language-neutral words: whole, invisible characters visible."""
    return visible(describe_raw(tool, args))


def describe_raw(tool: str, args: dict[str, Any]) -> str:
    """:func:`describe` before :func:`visible`: its length is the command's length."""
    if tool == "http_request":  # a request whole: method, full URL, body size (§14.5)
        return card_text(args)
    try:
        text = _describe(tool, args)
    except (TypeError, ValueError, AttributeError):
        text = _compact(args)
    return text or tool


def visible(text: str, *, keep_lines: bool = False) -> str:
    """``text`` with every control, format and invisible character shown as a marker:
    ``⟨\\n⟩``, ``⟨\\t⟩``, ``⟨\\r⟩``, else ``⟨U+XXXX⟩`` (C0/C1 controls, zero-width and
    bidi characters, spaces other than U+0020, unassigned code points…). Nothing is
    removed or cut. ``keep_lines`` (a file's content) keeps line breaks and tabs."""
    if keep_lines:  # most lines of a file need nothing: only the others are walked
        return "".join(
            part if part in ("\n", "\t") else visible(part) for part in _LINES.split(text)
        )
    if text.isprintable() and MARK_OPEN not in text and INVISIBLE_PRINTABLE.isdisjoint(text):
        return text
    out: list[str] = []
    for c in text:
        if c.isprintable() and c != MARK_OPEN and c not in INVISIBLE_PRINTABLE:
            out.append(c)
        elif c in _NAMED:
            out.append(MARK_OPEN + _NAMED[c] + MARK_CLOSE)
        else:
            out.append(f"{MARK_OPEN}U+{ord(c):04X}{MARK_CLOSE}")
    return "".join(out)


_LINES = re.compile(r"([\n\t])")


def _describe(tool: str, args: dict[str, Any]) -> str:
    if tool == "shell_exec":
        return _in_cwd(command_line(args.get("cmd")), args)
    if tool == "process_start":
        cmd = args.get("cmd")
        extra = args.get("args") or []
        line = command_line([cmd, *extra] if extra and isinstance(cmd, str) else cmd)
        return _in_cwd(f"{line} &" if args.get("background") else line, args)
    if tool in ("file_read", "file_write"):
        return str(args.get("path", ""))
    if tool == "file_list":
        path = str(args.get("path") or ".")
        pattern = args.get("pattern")
        return f"{path.rstrip('/')}/{pattern}" if pattern else path
    if tool == "db_query":
        sql = str(args.get("sql", ""))
        dsn = args.get("dsn")
        return f"{dsn}: {sql}" if dsn else sql
    if tool in ("cache_get", "cache_set"):
        return str(args.get("key", ""))
    if tool == "notify":
        return str(args.get("title", ""))
    return f"{tool} {_compact(args)}"


def _in_cwd(line: str, args: dict[str, Any]) -> str:
    cwd = args.get("cwd")
    return line if cwd in (None, "", ".") else f"{line}  (cwd {_join([str(cwd)])})"


def command_line(cmd: Any) -> str:
    """The command as the shell tool will run it: its argv lists, shell-quoted,
    pipeline stages joined by ``|``; text it cannot split is shown as given."""
    if isinstance(cmd, list):
        return _join([str(a) for a in cmd])
    if not isinstance(cmd, str):
        return "" if cmd is None else str(cmd)
    stages = split_for_display(cmd)
    if stages is None:
        return cmd
    return " | ".join(_join(argv) for argv in stages)


def split_for_display(cmd: str) -> list[list[str]] | None:
    """The argv lists the shell tool splits ``cmd`` into; None when it cannot."""
    try:
        return split_command(_DESCRIBE_POLICY, cmd)
    except ToolRefused:
        return None


def _join(argv: list[str]) -> str:
    """``shlex.join``, except that letters of any script stay unquoted (七里香, not '七里香')."""
    return " ".join(
        a if a and all(c.isalnum() or c in SHELL_SAFE for c in a) else shlex.quote(a) for a in argv
    )


def _compact(args: Any) -> str:
    try:
        return json.dumps(args, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(args)
