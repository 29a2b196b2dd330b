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
from typing import Any

from aios.config import SandboxConfig
from aios.errors import ToolRefused
from aios.names import MCP_TOOL_PREFIX
from aios.protocol import ATOMIC_TOOLS
from aios.tools.base import (
    RISK_ORDER as RISK_ORDER,
    Risk as Risk,
    mcp_risk,
    registered_tools,
)
from aios.tools.sandbox import SandboxPolicy, check_block_list, split_command

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

_DESCRIBE_POLICY = SandboxPolicy(
    workdir=Path("/"), config=SandboxConfig(allow_pipes=True), block_list=()
)
"""Only for splitting a command into the argv lists the shell tool runs: no rule
beyond the syntax applies (the tool applies them when it runs)."""


def classify(tool: str, args: dict[str, Any]) -> Risk | None:
    """The risk class of one tool call; None for an app's own ``@tool`` (not atomic)."""
    if tool.startswith(MCP_TOOL_PREFIX):  # the server's annotations, the user's override
        return mcp_risk(tool)
    if tool not in ATOMIC_TOOLS:
        return None
    spec = registered_tools().get(tool)
    # An atomic tool registered without a class asks like the riskiest one.
    return spec.classify(args) if spec is not None else "high"


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


# ------------------------------------------------------------ plain words


def describe(tool: str, args: dict[str, Any]) -> str:
    """The step in plain, language-neutral words: whole, invisible characters visible."""
    return visible(describe_raw(tool, args))


def describe_raw(tool: str, args: dict[str, Any]) -> str:
    """:func:`describe` before :func:`visible`: its length is the command's length."""
    spec = registered_tools().get(tool)
    try:
        text = (
            spec.describe(args)
            if spec is not None and spec.describe is not None
            else f"{tool} {_compact(args)}"
        )
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


def in_cwd(line: str, args: dict[str, Any]) -> str:
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
