"""The command policy: parsing a command line with no shell, the whitelist, path arguments."""

from __future__ import annotations

import os
from pathlib import Path

from aios.errors import ToolRefused
from aios.tools.sandbox.blocklist import refuse_blocked, scan_tokens
from aios.tools.sandbox.policy import SandboxPolicy
from aios.tools.sandbox.shellwords import EXPANSIONS, split_words


def split_command(
    policy: SandboxPolicy, cmd: str | list[str], cwd: Path | None = None
) -> list[list[str]]:
    """Parse a command into pipeline stages of argv lists, refusing shell syntax.

    The block list (:func:`check_block_list`, relative paths resolved against
    ``cwd``, default the workdir) is checked first and always refuses.

    A string is split like a POSIX shell would split words, with no
    expansion. Shell operators (``;``, ``&&``, ``||``, ``&``, ``>``, ``<``,
    parentheses, an unquoted newline) and expansions (backticks, ``$(``,
    ``${``) are refused; a plain ``a | b`` pipeline is allowed when
    ``allow_pipes`` is on (each stage is then checked alone). A list is
    taken as one argv as is.
    """
    if isinstance(cmd, list):
        if not cmd or not all(isinstance(a, str) for a in cmd) or not cmd[0]:
            raise ToolRefused("command policy: cmd must be a non-empty string or list of strings")
        refuse_blocked(policy, [(a, False) for a in cmd], cwd)
        _check_nul(cmd, cmd)
        return [list(cmd)]
    text = cmd.strip()
    if not text:
        raise ToolRefused("command policy: empty command")
    unparsed: ValueError | None = None
    try:
        words = split_words(text)
    except ValueError as e:
        words, unparsed = [], e
    # one split serves both, unless the block list must look into backticks or past the error
    refuse_blocked(policy, scan_tokens(text) if unparsed or "`" in text else words, cwd)
    for op in EXPANSIONS:
        if op in text:
            raise ToolRefused(
                f"command policy: shell operator {op!r} is not allowed "
                f"(commands run without a shell): {cmd!r}"
            )
    if unparsed is not None:
        raise ToolRefused(f"command policy: cannot parse {cmd!r}: {unparsed}") from unparsed
    stages: list[list[str]] = [[]]
    for word, is_op in words:
        if not is_op:
            stages[-1].append(word)
        elif word == "|":
            stages.append([])
        elif "\n" in word or "\r" in word:
            raise ToolRefused(
                f"command policy: a line break is not allowed (one command "
                f"per call, no shell): {cmd!r}"
            )
        else:
            raise ToolRefused(
                f"command policy: shell operator {word!r} is not allowed "
                f"(commands run without a shell): {cmd!r}"
            )
    if any(not s for s in stages):
        raise ToolRefused(f"command policy: empty pipeline stage in {cmd!r}")
    if len(stages) > 1 and not policy.config.allow_pipes:
        raise ToolRefused(f"command policy: pipelines are disabled: {cmd!r}")
    for stage in stages:
        _check_nul(stage, cmd)
    return stages


def _check_nul(argv: list[str], cmd: str | list[str]) -> None:
    if any("\x00" in a for a in argv):
        raise ToolRefused(f"command policy: NUL byte in {cmd!r}")


def check_argv(policy: SandboxPolicy, argv: list[str], cwd: Path | None = None) -> None:
    """The whitelist on the first word, and path arguments confined to the workdir.

    ``cwd`` (default: the workdir) is where relative arguments are resolved,
    as the program will resolve them. An argument is treated as a path when
    it contains ``/``, starts with ``~``, is ``..``, or names something that
    exists (a symlink in the workdir pointing outside is caught that way);
    so are the value after ``=`` (``--out=/x``, ``if=/x``) and a short
    option's glued value (``-o/x``). This catches paths the command is given;
    paths computed inside an interpreter's code are the OS sandbox's job.
    """
    prog = argv[0]
    name = os.path.basename(prog)
    allowed = ", ".join(policy.shell_whitelist) or "none"
    if policy.whitelist_enabled:
        if "/" in prog:
            raise ToolRefused(
                f"command whitelist: {prog!r} must be named without a path (allowed: {allowed})"
            )
        if name not in policy.shell_whitelist:
            raise ToolRefused(f"command whitelist: {name!r} is not allowed (allowed: {allowed})")
    base = cwd or policy.workdir
    if "/" in prog and not prog.startswith("/"):
        _check_path_arg(policy, prog, base)
    for arg in argv[1:]:
        _check_path_arg(policy, arg, base)


def _check_path_arg(policy: SandboxPolicy, arg: str, base: Path) -> None:
    candidates = [arg]
    if "=" in arg:
        candidates.append(arg.split("=", 1)[1])
    if len(arg) > 2 and arg[0] == "-" and arg[1] != "-" and arg[2] in "/~.":
        candidates.append(arg[2:])
    for value in candidates:
        if not value:
            continue
        if value.startswith("~"):
            raise ToolRefused(
                f"path confinement: argument {arg!r} points outside the workdir "
                "(no home directory expansion)"
            )
        target = Path(value) if value.startswith("/") else base / value
        if not ("/" in value or value == ".." or os.path.lexists(target)):
            continue
        try:
            resolved = target.resolve()
        except (OSError, RuntimeError):
            raise ToolRefused(f"path confinement: argument {arg!r} cannot be resolved") from None
        if resolved != policy.workdir and policy.workdir not in resolved.parents:
            raise ToolRefused(f"path confinement: argument {arg!r} points outside the workdir")
