"""What the user approved, exactly (DESIGN §14.2 "The card is the execution").

A step is approved as its **canonical form**: the tool and its arguments as
they will run (templates resolved), in canonical JSON, plus the content of
every workdir file an interpreter of the command may run (pinned files).
:func:`step_hash` is that form's SHA-256; an :class:`Approval` keeps it with
the decision, and :meth:`Approval.holds` is the check the executor makes
right before the step runs: same arguments, same file contents, or the step
is a new decision (:func:`aios.runs.gate.recheck`).

Pinned files: when a command runs an interpreter (``python3``, ``node``,
``bash``…), every word of the command that names a regular file of the
workdir (``script.py``, ``./sub/../script.py``, ``payload.py`` inside
``python3 -c "exec(open('payload.py').read())"``, a ``cat`` piped into an
interpreter) is read race-free beneath the workdir
(:func:`aios.tools.sandbox.open_workdir_file`), hashed in full and shown on the
card (capped). Whatever cannot be read (a link leading outside, a FIFO, a
hard link) is pinned by why it could not be, so the card says so.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Final

from aios.host import safe_open
from aios.tools.sandbox import SandboxPolicy

INTERPRETERS: Final = frozenset(
    """python python3 python2 pypy pypy3 node nodejs deno bun bash sh dash zsh ksh mksh fish
    busybox perl ruby php lua luajit tclsh wish Rscript osascript pwsh""".split()
)
"""Programs that run code they read from a file (by name, versions such as python3.11
included by :func:`is_interpreter`)."""
PIN_SHOW_CHARS = 32_000
"""Characters of a pinned file shown on the card (the hash covers all of it). A longer
file is shown cut, and says so (``whole: false``): the card never claims more than it
shows. Scripts an app writes are mostly far shorter; the card scrolls."""
PIN_MAX_BYTES = 64 * 1024 * 1024
"""Bytes of a pinned file read to hash it; a larger one is pinned by size and mtime."""
PIN_MAX_FILES = 16
PIN_MAX_WORDS = 256
"""Words of one command looked up as files (a command of thousands of words costs
no more than this many lookups)."""
_WORD = re.compile(r"[^\s'\"`$(){}\[\]<>|;&,=:*?!]+")
"""Candidate file names inside an argument (also inside an inline script)."""
_VERSIONED = re.compile(r"^([A-Za-z]+?)[\d.]*$")


def canonical(tool: str, args: Any) -> str:
    """The call as one canonical JSON text (keys sorted, no spaces, ASCII)."""
    return json.dumps([tool, args], sort_keys=True, separators=(",", ":"), default=str)


def step_hash(tool: str, args: Any, pins: tuple[Pin, ...] = ()) -> str:
    """SHA-256 of the canonical call and of the contents of the files it pins."""
    h = hashlib.sha256(canonical(tool, args).encode("utf-8", "surrogatepass"))
    for pin in pins:
        h.update(f"\0{pin.path}\0{pin.sha256}".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


@dataclass(frozen=True)
class Pin:
    """One workdir file an interpreter of the step may run, as it was reviewed."""

    path: str
    """As written in the command (relative to its cwd)."""
    target: str
    """Where it leads, relative to the workdir ("" when it could not be opened)."""
    size: int
    sha256: str
    """Of the whole content; for an unreadable file, of why it is unreadable."""
    text: str = ""
    """The content shown (capped at :data:`PIN_SHOW_CHARS`, invisible characters visible)."""
    note: str = ""
    """Why the content is not shown (outside the workdir, not a regular file…)."""
    reason: str = ""
    """:data:`NOT_SHOWN`'s key for ``note`` (the renderer says it in the UI language)."""
    whole: bool = True
    """``text`` is the whole file (False: only its beginning, the card says so)."""

    def public(self) -> dict[str, Any]:
        from aios.tools.risk import visible

        out: dict[str, Any] = {
            "path": visible(self.path),
            "size": self.size,
            "sha256": self.sha256,
            "content": self.text,
            "shown_chars": len(self.text),
        }
        if self.target and self.target != self.path:
            out["target"] = visible(self.target)
        if self.note:
            out["note"] = self.note
            out["reason"] = self.reason
        if not self.whole:
            out["whole"] = False
        return out


NOT_SHOWN: Final = {
    "outside": "leads outside the workdir: content not shown",
    "unopened": "not shown: cannot be opened",
    "not_regular": "not shown: not a regular file",
    "hard_link": "not shown: a hard link (may be a file outside)",
    "large": f"larger than {PIN_MAX_BYTES} bytes: pinned by size and modification time",
    "binary": "binary content: not shown",
}
"""Why a pinned file's content is not on the card, by key (``Pin.reason``)."""


@dataclass(frozen=True)
class Approval:
    """A decision's hash, kept per step until the step runs."""

    hash: str
    reads_files: bool = False
    """The command runs an interpreter: its workdir files are read and hashed again."""

    def holds(self, tool: str, args: Any, policy: SandboxPolicy | None) -> bool:
        """The step about to run is the one approved: the same canonical arguments and,
        for an interpreter, the same workdir files with the same contents (read now)."""
        reads = self.reads_files and isinstance(args, dict)
        pins = pins_of(policy, tool, args, show=False) if reads else ()
        return step_hash(tool, args, pins) == self.hash


_REF = re.compile(r"\{\{\s*(step_\w+)")


def template_refs(value: Any) -> list[str]:
    """The steps whose results ``{{step_N…}}`` templates in ``value`` use (any depth)."""
    found: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if "{{" in v:
                found += [m for m in _REF.findall(v) if m not in found]
        elif isinstance(v, dict):
            stack += list(v.values())
        elif isinstance(v, list):
            stack += v
    return found


def is_interpreter(prog: str) -> bool:
    name = os.path.basename(prog)
    if name in INTERPRETERS:
        return True
    m = _VERSIONED.match(name)
    return m is not None and m.group(1) in INTERPRETERS


def command_argvs(tool: str, args: dict[str, Any]) -> list[list[str]]:
    """The argv lists a command step runs (pipeline stages), [] when it is no command
    or cannot be split (then the tool refuses it)."""
    from aios.tools.risk import split_for_display

    if tool not in ("shell_exec", "process_start"):
        return []
    cmd = args.get("cmd")
    if tool == "process_start" and isinstance(cmd, str) and isinstance(args.get("args"), list):
        cmd = [cmd, *args["args"]]
    if isinstance(cmd, list):
        return [[str(a) for a in cmd]] if cmd else []
    if not isinstance(cmd, str):
        return []
    return split_for_display(cmd) or []


def pins_of(
    policy: SandboxPolicy | None,
    tool: str,
    args: dict[str, Any],
    argvs: list[list[str]] | None = None,
    *,
    show: bool = True,
) -> tuple[Pin, ...]:
    """The workdir files the step's interpreter may run, read and hashed now."""
    if policy is None:
        return ()
    argvs = command_argvs(tool, args) if argvs is None else argvs
    if not any(argv and is_interpreter(argv[0]) for argv in argvs):
        return ()
    cwd = _cwd(args)
    words: list[str] = []
    for i, argv in enumerate(argvs):
        if not argv or not is_interpreter(argv[0]):
            continue
        code, reads_stdin = code_words(argv)
        words += code
        if reads_stdin and i > 0:
            # ``cat script.py | python3``: what the earlier stages name is the program
            words += [w for stage in argvs[:i] for a in stage[1:] for w in _candidates(a)]
    out: list[Pin] = []
    seen: set[str] = set()
    for word in words[:PIN_MAX_WORDS]:
        if word in seen or len(out) >= PIN_MAX_FILES:
            continue
        seen.add(word)
        pin = pin_file(policy, word, cwd, show=show)
        if pin is not None:
            out.append(pin)
    return tuple(out)


INLINE_CODE: Final = frozenset({"c", "e", "E", "p", "--eval", "--print", "--command"})
"""Options whose value is the program itself (``python3 -c``, ``node -e``, ``bash -c``)."""
CODE_VALUE: Final = frozenset(
    {"r", "f", "M", "m", "--require", "--import", "--loader", "--experimental-loader"}
    | {"--file", "--init-file", "--rcfile"}
)
"""Options whose value names code that runs too (``node -r pre.js``, ``python3 -m mod``)."""
TAKES_VALUE: Final = frozenset({"W", "X", "Q", "o", "O", "I", "x"})
"""Other short options that take a value (``-W ignore``): the value is no program."""


def code_words(argv: list[str]) -> tuple[list[str], bool]:
    """The words of an interpreter's argv that may name code it runs: its script, the
    files an inline program names, the modules it preloads; and whether it reads its
    program from stdin (no script and no inline program). The script's own arguments
    after it are data, not code."""
    words: list[str] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return words + argv[i + 1 : i + 2], i + 1 >= len(argv)
        if arg == "-" or arg[:1] not in "-+":
            return words + [arg], False  # the script; what follows is its argv
        i += 1
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in INLINE_CODE or name in CODE_VALUE:
                if not eq and i < len(argv):
                    value, i = argv[i], i + 1
                if name in INLINE_CODE:
                    return words + _candidates(value), False
                words += _module_files(value)
            continue
        for j, flag in enumerate(arg[1:], start=2):  # a cluster: -uc 'code', -Wignore
            if flag in INLINE_CODE or flag in CODE_VALUE or flag in TAKES_VALUE:
                value = arg[j:]
                if not value and i < len(argv):
                    value, i = argv[i], i + 1
                if flag in INLINE_CODE:
                    return words + _candidates(value), False
                if flag in CODE_VALUE:
                    words += _module_files(value)
                    if flag == "m":
                        return words, False  # python3 -m mod: the rest is the module's argv
                break
    return words, True


def runs_written(tool: str, args: dict[str, Any], written: dict[str, str]) -> tuple[str, ...]:
    """The earlier steps that write a file this command's interpreter runs (``written``:
    normalized path -> step): it is reviewed once they ran, with the content they wrote."""
    cwd = _cwd(args)
    argvs = command_argvs(tool, args)
    words = [w for argv in argvs if argv and is_interpreter(argv[0]) for w in code_words(argv)[0]]
    if any(argv and is_interpreter(argv[0]) and code_words(argv)[1] for argv in argvs[1:]):
        words += [w for argv in argvs for a in argv[1:] for w in _candidates(a)]
    hits = {written.get(os.path.normpath(os.path.join(cwd, w))) for w in words[:PIN_MAX_WORDS]}
    return tuple(sorted(h for h in hits if h))


def _module_files(value: str) -> list[str]:
    base = value.replace(".", "/")
    return [value, base + ".py", base + "/__main__.py", base + ".js"]


def _candidates(arg: str) -> list[str]:
    return [w for w in _WORD.findall(arg) if not w.startswith("-")][:PIN_MAX_WORDS]


def _cwd(args: Any) -> str:
    cwd = args.get("cwd") if isinstance(args, dict) else None
    return cwd if isinstance(cwd, str) and cwd else "."


def pin_file(policy: SandboxPolicy, word: str, cwd: str = ".", *, show: bool = True) -> Pin | None:
    """``word`` as a file of the workdir, hashed; None when it names no file there.

    Opened race-free beneath the workdir (:mod:`aios.host.safe_open`, links that stay
    inside followed), never blocking (a FIFO), a regular file with one name only;
    ``show=False`` (the check before a run) hashes without preparing the text."""
    if "\x00" in word:
        return None
    if os.path.isabs(word):
        rel = os.path.relpath(word, policy.workdir)
        if rel.startswith(".."):
            return None
    else:
        rel = os.path.normpath(os.path.join(cwd, word))
    if rel.startswith("../") or rel == "..":
        return None
    try:
        st = os.lstat(policy.workdir / rel)
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    root = safe_open.open_root(policy.workdir)
    try:
        fd = safe_open.open_beneath(root, rel, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        link = os.readlink(policy.workdir / rel) if stat.S_ISLNK(st.st_mode) else ""
        if e.errno in (errno.EXDEV, errno.ELOOP):
            return _unreadable(word, "", link, "outside")
        return _unreadable(word, "", link, "unopened", f" ({e.strerror})")
    finally:
        os.close(root)
    try:
        fst = os.fstat(fd)
        target = _target(policy, fd) if show else ""
        if not stat.S_ISREG(fst.st_mode):
            return _unreadable(word, target, "", "not_regular")
        if safe_open.hard_link_count(fst) > 1:
            return _unreadable(word, target, "", "hard_link")
        return _read_pin(word, target, fd, fst, show)
    finally:
        os.close(fd)


def _target(policy: SandboxPolicy, fd: int) -> str:
    """Where the opened file is, relative to the workdir (what a link led to)."""
    real = os.readlink(safe_open.fd_path(fd))
    return os.path.relpath(real, os.path.realpath(policy.workdir))


def _unreadable(word: str, target: str, link: str, reason: str, detail: str = "") -> Pin:
    note = NOT_SHOWN[reason] + detail
    digest = hashlib.sha256(
        f"unreadable\0{target}\0{link}\0{note}".encode("utf-8", "surrogatepass")
    )
    return Pin(
        path=word,
        target=target or link,
        size=0,
        sha256=digest.hexdigest(),
        note=note,
        reason=reason,
    )


def _read_pin(word: str, target: str, fd: int, st: os.stat_result, show: bool) -> Pin:
    from aios.tools.risk import visible

    h = hashlib.sha256()
    if st.st_size > PIN_MAX_BYTES:
        h.update(f"large\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}".encode())
        return Pin(
            path=word,
            target=target,
            size=st.st_size,
            sha256=h.hexdigest(),
            note=NOT_SHOWN["large"],
            reason="large",
        )
    head = b""
    size = 0
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        if len(head) < PIN_SHOW_CHARS * 4:
            head += chunk[: PIN_SHOW_CHARS * 4 - len(head)]
        size += len(chunk)
        h.update(chunk)
    if not show:
        return Pin(word, target, size, h.hexdigest())
    if b"\0" in head:
        return Pin(word, target, size, h.hexdigest(), note=NOT_SHOWN["binary"], reason="binary")
    decoded = head.decode("utf-8", "replace")
    whole = size == len(head) and len(decoded) <= PIN_SHOW_CHARS
    text = visible(decoded[:PIN_SHOW_CHARS], keep_lines=True)
    return Pin(word, target, size, h.hexdigest(), text=text, whole=whole)
