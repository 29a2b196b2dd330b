"""The sandbox rules (docs/app-guide.md §7; DESIGN §6), in one place.

Pure checks (no I/O beyond resolving paths): path confinement, the command
policy, the URL policy, the DSN policy. The tools call these before they act;
each refusal is a :class:`~aios.errors.ToolRefused` whose message names the
rule and the value. Commands additionally run inside an OS sandbox
(bubblewrap) where one works on this machine; see :mod:`aios.host.os_sandbox`.
"""

from __future__ import annotations

import errno
import fnmatch
import functools
import ipaddress
import os
import re
import socket
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from aios.config import DEFAULT_BLOCK_LIST, SandboxConfig
from aios.errors import PathNotFound, ToolRefused
from aios.host import safe_open
from aios.protocol import Manifest
from aios.protocol.outbound import BadDestination, destination, prepared_url

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class SandboxPolicy:
    """The effective rules for one app: the global config narrowed by its manifest."""

    workdir: Path
    """Resolved absolute path of the app's workdir (the sandbox root)."""
    config: SandboxConfig = field(default_factory=SandboxConfig)
    shell_whitelist: tuple[str, ...] = ()
    http_domain_whitelist: tuple[str, ...] = ()
    """Empty = any domain."""
    block_list: tuple[tuple[str, tuple[str, ...]], ...] = tuple(DEFAULT_BLOCK_LIST.items())
    """``approvals.block_list``: (rule, program patterns), checked before every command rule."""

    @classmethod
    def build(
        cls,
        config: SandboxConfig,
        workdir: Path,
        manifest: Manifest | None = None,
        block_list: Mapping[str, Sequence[str]] | None = None,
    ) -> SandboxPolicy:
        """Global lists narrowed (never widened) by the manifest's lists."""
        shell = list(config.shell_whitelist)
        if manifest is not None and manifest.shell_whitelist is not None:
            shell = [c for c in manifest.shell_whitelist if c in shell]
        domains = list(config.http_domain_whitelist)
        if manifest is not None and manifest.http_domain_whitelist is not None:
            wanted = [d.lower() for d in manifest.http_domain_whitelist]
            domains = [d for d in wanted if _domain_allowed(d, domains)] if domains else wanted
            if not domains:
                # The manifest asked for domains the global list does not allow:
                # narrowing to nothing must mean "nothing", not "anything".
                domains = ["(none)"]
        return cls(
            workdir=workdir.resolve(),
            config=config,
            shell_whitelist=tuple(shell),
            http_domain_whitelist=tuple(d.lower() for d in domains),
            block_list=tuple(
                (rule, tuple(w)) for rule, w in (block_list or DEFAULT_BLOCK_LIST).items()
            ),
        )

    @property
    def whitelist_enabled(self) -> bool:
        return self.config.enable_shell_whitelist


# ------------------------------------------------------------------- paths


def resolve_path(
    policy: SandboxPolicy, path: str | os.PathLike[str], *, must_exist: bool = False
) -> Path:
    """Map a tool's path argument to an absolute path inside the workdir.

    Paths are relative to the workdir; a leading component equal to the
    workdir's own folder name names the workdir itself (the spec writes
    ``workspace/recent.json``). Symlinks are resolved before the check, so a
    link pointing outside is refused too. Absolute paths are refused.
    """
    raw = os.fspath(path)
    rel = workdir_relative(policy, raw)
    candidate = policy.workdir / rel if rel != "." else policy.workdir
    resolved = candidate.resolve()
    if resolved != policy.workdir and policy.workdir not in resolved.parents:
        raise ToolRefused(f"path confinement: {raw!r} resolves outside the app's workdir")
    if must_exist and not resolved.exists():
        raise PathNotFound(f"path not found: {raw!r}")
    return resolved


def workdir_relative(policy: SandboxPolicy, path: str | os.PathLike[str]) -> str:
    """A tool's path argument as a path relative to the workdir (``"."`` for itself).

    Only spelling is checked here (NUL, absolute, the leading workdir name);
    the race-free open in :mod:`aios.host.safe_open` decides where it leads.
    """
    raw = os.fspath(path)
    if "\x00" in raw:
        raise ToolRefused(f"path confinement: NUL byte in path {raw!r}")
    if raw.strip() == "":
        raw = "."
    p = Path(raw)
    if p.is_absolute():
        raise ToolRefused(
            f"path confinement: absolute path {raw!r} refused; "
            "paths are relative to the app's workdir"
        )
    parts = p.parts
    if parts and parts[0] == policy.workdir.name:
        parts = parts[1:]
    return str(Path(*parts)) if parts else "."


def workdir_rel(policy: SandboxPolicy, resolved: Path) -> str:
    """What :func:`resolve_path` returned, relative to the workdir (for aios.host.safe_open)."""
    return str(resolved.relative_to(policy.workdir)) if resolved != policy.workdir else "."


def escaped(shown: str) -> ToolRefused:
    """The refusal when the race-free open found that ``shown`` leads outside (EXDEV)."""
    return ToolRefused(
        f"path confinement: {shown} resolves outside the app's workdir "
        "(it changed while being opened); refused"
    )


def check_hard_links(shown: str, st: os.stat_result) -> None:
    """A regular file with more than one name may be a file outside the workdir."""
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise ToolRefused(
            f"path confinement: {shown} is a hard link ({st.st_nlink} names); "
            "refused, as it may be a file outside the app's workdir"
        )


def open_workdir_file(policy: SandboxPolicy, path: str) -> tuple[int, os.stat_result]:
    """Open a regular file inside the workdir race-free for reading: ``(fd, stat)``.

    :class:`PathNotFound` when it is missing or not a regular file,
    :class:`ToolRefused` when it leads outside or has several hard links.
    """
    resolved = resolve_path(policy, path, must_exist=True)
    root = safe_open.open_root(policy.workdir)
    try:
        fd = safe_open.open_beneath(
            root, workdir_rel(policy, resolved), os.O_RDONLY | os.O_NONBLOCK
        )
    except OSError as e:
        if e.errno in (errno.EXDEV, errno.ELOOP):
            raise escaped(repr(path)) from e
        raise PathNotFound(f"path not found: {path!r}") from e
    finally:
        os.close(root)
    st = os.fstat(fd)
    try:
        if not stat.S_ISREG(st.st_mode):
            raise PathNotFound(f"not a file: {path}")
        check_hard_links(repr(path), st)
    except (PathNotFound, ToolRefused):
        os.close(fd)
        raise
    return fd, st


def relative_display(policy: SandboxPolicy, path: Path) -> str:
    """How a path inside the workdir is shown back to the app."""
    try:
        rel = path.relative_to(policy.workdir)
    except ValueError:
        return str(path)
    return str(Path(policy.workdir.name) / rel) if str(rel) != "." else policy.workdir.name


# ---------------------------------------------------------------- commands

EXPANSIONS = ("`", "$(", "${")
"""Refused anywhere, even quoted: they only mean something to a shell."""
OPERATOR_CHARS = frozenset(";&|<>()\n\r")
"""Unquoted, these make shell syntax (lists, redirections, subshells)."""


def _words(cmd: str) -> list[tuple[str, bool]]:
    """Split like a POSIX shell splits words, without any expansion.

    Returns ``(text, is_operator)`` pairs; an operator is a run of unquoted
    :data:`OPERATOR_CHARS`. Quoted text is always a plain word, so
    ``python3 -c "print(1 > 0); print(2)"`` is one program and two
    arguments: with no shell, a quoted ``;`` or ``>`` is just a character.
    """
    out: list[tuple[str, bool]] = []
    word: list[str] = []
    has_word = False
    i, n = 0, len(cmd)

    def flush() -> None:
        nonlocal has_word
        if has_word:
            out.append(("".join(word), False))
            word.clear()
            has_word = False

    while i < n:
        c = cmd[i]
        if c in OPERATOR_CHARS:
            flush()
            j = i
            while j < n and cmd[j] in OPERATOR_CHARS:
                j += 1
            out.append((cmd[i:j], True))
            i = j
        elif c in " \t":
            flush()
            i += 1
        elif c == "'":
            end = cmd.find("'", i + 1)
            if end < 0:
                raise ValueError("no closing single quote")
            word.append(cmd[i + 1 : end])
            has_word = True
            i = end + 1
        elif c == '"':
            i += 1
            while i < n and cmd[i] != '"':
                if cmd[i] == "\\" and i + 1 < n and cmd[i + 1] in '"\\$`\n':
                    i += 1
                word.append(cmd[i])
                i += 1
            if i >= n:
                raise ValueError("no closing double quote")
            has_word = True
            i += 1
        elif c == "\\":
            if i + 1 >= n:
                raise ValueError("backslash at the end")
            word.append(cmd[i + 1])
            has_word = True
            i += 2
        else:
            word.append(c)
            has_word = True
            i += 1
    flush()
    return out


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
        _refuse_blocked(policy, [(a, False) for a in cmd], cwd)
        _check_nul(cmd, cmd)
        return [list(cmd)]
    text = cmd.strip()
    if not text:
        raise ToolRefused("command policy: empty command")
    unparsed: ValueError | None = None
    try:
        words = _words(text)
    except ValueError as e:
        words, unparsed = [], e
    # one split serves both, unless the block list must look into backticks or past the error
    _refuse_blocked(policy, _scan_tokens(text) if unparsed or "`" in text else words, cwd)
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


# --------------------------------------------------------------- block list

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
    _refuse_blocked(
        policy, [(a, False) for a in cmd] if isinstance(cmd, list) else _scan_tokens(cmd), cwd
    )


def _refuse_blocked(
    policy: SandboxPolicy, tokens: list[tuple[str, bool]], cwd: Path | None
) -> None:
    hit = _scan(policy, tokens, cwd or policy.workdir, 0, None)
    if hit is not None:
        rule, what = hit
        raise ToolRefused(f"blocked: {rule} ({what}): {BLOCK_REASONS[rule]}")


def _scan_tokens(text: str) -> list[tuple[str, bool]]:
    # Backticks substitute a command as $( ) does: scan them as a group. A line
    # the splitter cannot parse is still looked at word by word.
    text = text.replace("`", "(")
    try:
        return _words(text)
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
            rest = [w for w, _ in _scan_tokens(rest[0])] + rest[1:]
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
            return [w for w, _ in _scan_tokens(value)] + args[i:]
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
            return _scan(policy, _scan_tokens(script), cwd, depth + 1, name)
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


# --------------------------------------------------------------------- URLs


def _domain_allowed(host: str, whitelist: list[str] | tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    for entry in whitelist:
        entry = entry.lower().lstrip("*").lstrip(".")
        if host == entry or host.endswith("." + entry):
            return True
    return False


def is_loopback_host(host: str) -> bool:
    """True for every spelling of this machine: names, ``127.1``, ``2130706433``,
    ``0x7f000001``, ``[::ffff:127.0.0.1]``, ``0.0.0.0``, and the machine's own hostname."""
    host = host.lower().strip("[]").rstrip(".")
    if host in LOOPBACK_NAMES or host.endswith(".localhost") or host == _hostname():
        return True
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(host)
    except ValueError:
        try:
            # inet_aton accepts the short, decimal and hex forms browsers and libc accept
            ip = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def _hostname() -> str:
    try:
        return socket.gethostname().lower()
    except OSError:
        return "localhost"


def check_url(policy: SandboxPolicy, url: str, forbidden_ports: set[int]) -> None:
    """Scheme, domain whitelist, and never the system's or an app's own port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise ToolRefused(f"network policy: malformed URL {url!r}: {e}") from e
    if parts.scheme not in ("http", "https"):
        raise ToolRefused(f"network policy: only http and https URLs are allowed, got {url!r}")
    if not parts.hostname:
        raise ToolRefused(f"network policy: URL has no host: {url!r}")
    try:
        # judged as the client will connect (DESIGN §14.5), not as this parser reads it
        host = destination(url)
        port = urlsplit(prepared_url(url)).port
    except (BadDestination, ValueError) as e:
        raise ToolRefused(f"network policy: {e}") from e
    if policy.http_domain_whitelist and not _domain_allowed(host, policy.http_domain_whitelist):
        raise ToolRefused(
            f"network policy: domain {host!r} is not in the whitelist "
            f"({', '.join(policy.http_domain_whitelist)})"
        )
    if is_loopback_host(host):
        port = port or (443 if parts.scheme == "https" else 80)
        if port in forbidden_ports:
            raise ToolRefused(
                f"network policy: port {port} on {host} belongs to the system or "
                "another app; use the app protocol instead"
            )


# ---------------------------------------------------------------------- DSN


def resolve_dsn(policy: SandboxPolicy, dsn: str) -> str:
    """``sqlite:///notes.db``, ``notes.db`` or ``:memory:`` inside the workdir.

    Returns what ``sqlite3.connect`` should open. Anything else must be on
    the explicit ``db_allowed_dsns`` list.
    """
    if dsn == ":memory:":
        return dsn
    if dsn in policy.config.db_allowed_dsns:
        return dsn.removeprefix("sqlite:///")
    raw = dsn
    if "://" in dsn:
        if not dsn.startswith("sqlite:///"):
            raise ToolRefused(
                f"database policy: only sqlite DSNs inside the workdir are allowed (got {dsn!r})"
            )
        raw = dsn.removeprefix("sqlite:///")
    if raw.startswith("file:") or "?" in raw:
        raise ToolRefused(f"database policy: URI file names are not allowed (got {dsn!r})")
    return str(resolve_path(policy, raw))
