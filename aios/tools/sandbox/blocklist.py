"""The block list (DESIGN §12): commands refused in every mode, before every other rule."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path

from aios.errors import ToolRefused
from aios.tools.sandbox.policy import SandboxPolicy
from aios.tools.sandbox.shellwords import split_words

BLOCK_REASONS: dict[str, str] = {
    "privilege-escalation": "commands that change user are never run",
    "power": "commands that stop or restart the machine are never run",
    "disk-format": "commands that format or partition disks are never run",
    "device-write": "writing to a device is never allowed",
    "delete-outside": "deleting / or anything outside the app's workdir is never allowed",
    "download-exec": "a download is never fed to an interpreter",
}
"""Each block-list rule and the explanation its refusal gives (DESIGN §12)."""
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "xargs": (frozenset("-a --arg-file -d --delimiter -E -I -L -n --max-args -P".split()), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata"}), 0),
    "chrt": (frozenset(), 1),
    "taskset": (frozenset(), 1),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "command": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "busybox": (frozenset(), 0),
    "toybox": (frozenset(), 0),
    "watch": (frozenset({"-n", "--interval", "-d", "-q"}), 0),
    "flock": (frozenset({"-w", "--timeout", "-E", "-c"}), 1),
    "strace": (frozenset({"-o", "-p", "-e", "-s", "-u", "-E"}), 0),
    "ltrace": (frozenset({"-o", "-p", "-e", "-s", "-u"}), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "unshare": (frozenset(), 0),
}
"""Programs that run another program: (their options that take a value, positional
arguments before the program), so that ``env nice /usr/bin/sudo`` is seen as ``sudo``."""
SPLIT_STRING_OPTIONS = ("-S", "--split-string")
"""``env -S "sudo x"``: the value is itself a command line."""
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})
"""Their ``-c`` script is parsed and checked like a command line."""
DOWNLOADERS = ("curl", "wget", "fetch", "aria2c", "http", "https", "lwp-download")
INTERPRETERS = (*sorted(SHELLS), *"python* pypy* perl* ruby* node nodejs php* lua*".split())
"""Programs that run the code they read: fed a download, it runs it."""
DELETERS = frozenset({"rm", "rmdir", "unlink", "shred"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
"""``find`` options whose following words, up to ``;`` or ``+``, are a command it runs."""
SERVICE_MANAGERS = frozenset({"systemctl", "loginctl"})
"""``systemctl reboot`` is the ``power`` rule as much as ``reboot`` is."""
DEVICE_WRITERS = frozenset(
    {"tee", "shred", "wipefs", "mkswap", "blkdiscard", "truncate", "fallocate", "badblocks"}
)
"""Programs that write to every file argument."""
COPIERS = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
"""Programs that write to their last argument (or ``-t``'s value)."""
OUTPUT_OPTIONS = ("-o", "-O", "-t", "--output", "--output-document", "--target-directory")
OUTPUT_ASSIGNMENTS = tuple(f"{o}=" for o in OUTPUT_OPTIONS if o.startswith("--"))
HARMLESS_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/full", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty"}
)
HARMLESS_DEVICE_DIRS = ("/dev/fd/", "/dev/pts/", "/dev/shm/")
MAX_NESTING = 4
PATTERN_CACHE = 64
"""Compiled word lists kept (the block list's rules, per distinct config, and ours)."""
"""Levels of ``sh -c '…'`` looked into; a deeper script is refused outright."""
_Hit = tuple[str, str]
"""(rule, what matched)."""
_Statement = list[tuple[str, list[str]]]
"""(operator before it, the programs it runs) per segment of one statement."""


def check_block_list(policy: SandboxPolicy, cmd: str | list[str], cwd: Path | None = None) -> None:
    """Refuse a command the block list names; the first command rule, in every mode.

    The program-name rules (``approvals.block_list``) match the basename of
    every program the line runs, looking through wrappers (``env``, ``nice``,
    ``timeout``, ``xargs``, ``busybox``…) and into ``sh -c`` scripts, even in
    syntax the later rules refuse. The structural rules look at the
    arguments: a device written to, a deletion outside the workdir, a
    download feeding an interpreter. The message starts ``blocked: <rule>``.
    """
    refuse_blocked(
        policy, [(a, False) for a in cmd] if isinstance(cmd, list) else scan_tokens(cmd), cwd
    )


def refuse_blocked(policy: SandboxPolicy, tokens: list[tuple[str, bool]], cwd: Path | None) -> None:
    hit = _scan(policy, tokens, cwd or policy.workdir, 0, None)
    if hit is not None:
        rule, what = hit
        raise ToolRefused(f"blocked: {rule} ({what}): {BLOCK_REASONS[rule]}")


def scan_tokens(text: str) -> list[tuple[str, bool]]:
    # Backticks substitute a command as $( ) does: scan them as a group. A line
    # the splitter cannot parse is still looked at word by word.
    text = text.replace("`", "(")
    try:
        return split_words(text)
    except ValueError:
        return [(w, False) for w in text.split()]


def _scan(
    policy: SandboxPolicy,
    tokens: list[tuple[str, bool]],
    cwd: Path,
    depth: int,
    shell: str | None,
) -> _Hit | None:
    if depth > MAX_NESTING:
        raise ToolRefused(f"command policy: shell scripts nested deeper than {MAX_NESTING} levels")
    segments: list[tuple[str, list[str]]] = [("", [])]
    for word, is_op in tokens:
        if is_op:
            segments.append((word, []))
        else:
            segments[-1][1].append(word)
    statement: _Statement = []
    for op, argv in segments:
        if _separates(op):
            hit = _download_exec(statement, shell)
            if hit is not None:
                return hit
            statement = []
        if argv and ">" in op:
            if _device(argv[0], cwd):
                return ("device-write", f"> {argv[0]}")
            argv = argv[1:]
        elif argv and "<" in op and "(" not in op:
            argv = argv[1:]
        names: list[str] = []
        for name, args in _levels(argv):
            hit = _check_level(policy, name, args, cwd, depth)
            if hit is not None:
                return hit
            names.append(name)
        statement.append((op, names))
    return _download_exec(statement, shell)


def _separates(op: str) -> bool:
    return op == "||" or (bool(op) and set(op) <= {";", "&", "\n", "\r"})


@functools.lru_cache(maxsize=PATTERN_CACHE)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """One test for a list of names and shell patterns (checked on every command)."""
    exact = frozenset(p for p in patterns if not any(c in p for c in "*?["))
    globs = [fnmatch.translate(p) for p in patterns if p not in exact]
    rx = re.compile("|".join(globs)) if globs else None
    return lambda name: name in exact or (rx is not None and rx.match(name) is not None)


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return _matcher(patterns)(name)


def _levels(argv: list[str]) -> list[tuple[str, list[str]]]:
    """Each program the argv runs, outermost first: (basename, its arguments)."""
    out: list[tuple[str, list[str]]] = []
    rest = argv
    while rest:
        if out and any(c in rest[0] for c in " \t"):
            # a wrapper given one string runs it through a shell (watch 'sudo x')
            rest = [w for w, _ in scan_tokens(rest[0])] + rest[1:]
            if not rest:
                break
        name = os.path.basename(rest[0])
        out.append((name, rest[1:]))
        if name not in WRAPPERS:
            break
        rest = _unwrap(name, rest[1:])
    return out


def _find_commands(args: list[str]) -> list[list[str]]:
    """The commands ``find … -exec cmd {} ;`` (``-execdir``, ``-ok``, ``-okdir``) runs."""
    out: list[list[str]] = []
    for i, a in enumerate(args):
        if a in FIND_EXEC:
            end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")), len(args))
            if args[i + 1 : end]:
                out.append(args[i + 1 : end])
    return out


def _unwrap(name: str, args: list[str]) -> list[str]:
    """The argv a wrapper runs: its options (and ``NAME=value`` for env) skipped."""
    value_opts, positionals = WRAPPERS[name]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if name == "env" and a.startswith(SPLIT_STRING_OPTIONS):
            if a in SPLIT_STRING_OPTIONS:
                value, i = (args[i + 1] if i + 1 < len(args) else ""), i + 2
            else:
                value, i = (a.split("=", 1)[1] if a.startswith("--") else a[2:]), i + 1
            return [w for w, _ in scan_tokens(value)] + args[i:]
        if a in value_opts:
            i += 2
        elif (a.startswith("-") and len(a) > 1) or (name == "env" and "=" in a):
            i += 1
        else:
            break
    return args[i + positionals :]


def _rule_words(policy: SandboxPolicy, rule: str) -> tuple[str, ...]:
    return next((words for r, words in policy.block_list if r == rule), ())


def _check_level(
    policy: SandboxPolicy, name: str, args: list[str], cwd: Path, depth: int
) -> _Hit | None:
    for rule, words in policy.block_list:
        if _matches(name, words):
            return (rule, name)
    if name in SERVICE_MANAGERS:
        verb = next((a for a in args if not a.startswith("-")), "")
        if verb and _matches(verb, _rule_words(policy, "power")):
            return ("power", f"{name} {verb}")
    written = _device_write(name, args, cwd)
    if written is not None:
        return ("device-write", f"{name} {written}")
    if name in DELETERS:
        outside = _delete_outside(policy, args, cwd)
        if outside is not None:
            return ("delete-outside", f"{name} {outside}")
    if name in SHELLS:
        script = _shell_script(args)
        if script is not None:
            return _scan(policy, scan_tokens(script), cwd, depth + 1, name)
    if name == "find":
        for argv in _find_commands(args):
            hit = _scan(policy, [(w, False) for w in argv], cwd, depth + 1, None)
            if hit is not None:
                return hit
    return None


def _shell_script(args: list[str]) -> str | None:
    """The script of ``sh -c 'script'`` (``-ec``, ``-xc``… too), else None."""
    has_c = False
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a.startswith("--"):
            continue
        elif a.startswith(("-", "+")) and len(a) > 1:
            has_c = has_c or "c" in a[1:]
            skip = a[1:] == "o"
        else:
            return a if has_c else None
    return None


def _device(arg: str, cwd: Path) -> bool:
    """Whether ``arg`` (or its ``=value``, or a glued ``-oVALUE``) names a device under /dev,
    through a symlink too; the null, zero, tty and fd devices are not counted."""
    values = [arg, arg.split("=", 1)[1] if "=" in arg else ""]
    if arg.startswith("-"):
        values.append(arg[2:])
    for value in values:
        if not value or value.startswith("-"):
            continue
        path = os.path.join(cwd, value)
        for p in (os.path.normpath(path), os.path.realpath(path)):
            if (
                p.startswith("/dev/")
                and p not in HARMLESS_DEVICES
                and not p.startswith(HARMLESS_DEVICE_DIRS)
            ):
                return True
    return False


def _device_write(name: str, args: list[str], cwd: Path) -> str | None:
    """The argument naming a device the program would write to, if one does."""
    positional = [a for a in args if not a.startswith("-")]
    written: list[str] = []
    if name == "dd":
        written = [a for a in args if a.startswith("of=")]
    elif name in DEVICE_WRITERS:
        written = positional
    elif name in COPIERS and positional:
        written = [positional[-1]]
    for i, a in enumerate(args):
        if a in OUTPUT_OPTIONS:
            written += args[i + 1 : i + 2]
        elif a.startswith(OUTPUT_ASSIGNMENTS):
            written.append(a)
        elif a.startswith(("-o", "-O")) and len(a) > 2 and a[2] in "/.":
            written.append(a)
    return next((a for a in written if _device(a, cwd)), None)


def _delete_outside(policy: SandboxPolicy, args: list[str], cwd: Path) -> str | None:
    """The first operand of rm (rmdir, unlink, shred) that is / or outside the workdir."""
    options = True
    for a in args:
        if options and a == "--":
            options = False
            continue
        if options and a.startswith("-") and len(a) > 1:
            continue
        if a.startswith("~"):
            return a
        path = cwd / a
        if path.name in ("", ".", ".."):
            target = Path(os.path.realpath(path))
        else:
            # rm removes a symlink itself, not what it points to: resolve the folder only.
            target = Path(os.path.realpath(path.parent)) / path.name
        if target != policy.workdir and policy.workdir not in target.parents:
            return a
    return None


def _download_exec(statement: _Statement, shell: str | None) -> _Hit | None:
    """A downloader piped into a later interpreter, or substituted (``$( )``, ``<( )``,
    backticks) into a line an interpreter runs."""
    downloader: str | None = None
    piped = False
    interpreter = shell
    for op, names in statement:
        piped = piped or (downloader is not None and "|" in op)
        fetches = next((n for n in names if _matches(n, DOWNLOADERS)), None)
        runs = next((n for n in names if _matches(n, INTERPRETERS)), None)
        if fetches is not None and interpreter is not None and "(" in op:
            return ("download-exec", f"{interpreter} ({fetches} …)")
        if runs is not None and downloader is not None and piped:
            return ("download-exec", f"{downloader} | {runs}")
        interpreter = interpreter or runs
        downloader = downloader or fetches
    return None
