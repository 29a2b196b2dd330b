"""``file_read``, ``file_write``, ``file_list``: files inside the app's workdir.

Every path goes through :func:`aios.tools.sandbox.resolve_path` first (the
refusal with its reason), and is then opened race-free from an fd of the
workdir by :mod:`aios.host.safe_open` (``openat2`` with ``RESOLVE_BENEATH``, or a
component-by-component walk), so swapping a folder for a symlink between the
check and the open cannot lead outside. Files are opened ``O_NONBLOCK`` and
checked with ``fstat`` on the open descriptor, so a FIFO or a device can
never block or flood a tool; a file with several hard links is refused.
Writes are atomic: a temp file created with ``O_EXCL | O_NOFOLLOW`` in the
pinned folder fd, ``fsync``, a rename relative to that fd — a failed write
leaves the old file byte-identical.
"""

from __future__ import annotations

import codecs
import errno
import fnmatch
import json
import logging
import os
import stat
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from aios.errors import ToolFailed, ToolRefused
from aios.host import safe_open
from aios.tools.base import ToolArgs, ToolContext, ToolOutput, atomic_tool
from aios.tools.sandbox import (
    SandboxPolicy,
    check_hard_links,
    escaped,
    relative_display,
    resolve_path,
    workdir_rel,
)

log = logging.getLogger(__name__)

CHUNK_BYTES = 64 * 1024
"""Read/write granularity; the tool's deadline is checked between chunks."""
MAX_LIST_ENTRIES = 1000
"""file_list returns at most this many entries (meta.truncated tells)."""
NEW_FILE_MODE = 0o644
"""Mode of a file file_write creates (an existing file keeps its mode)."""


class _Deadline:
    def __init__(self, ctx: ToolContext, tool: str):
        self.seconds = ctx.timeout(tool)
        self.tool = tool
        self._end = time.monotonic() + self.seconds

    def check(self) -> None:
        if time.monotonic() > self._end:
            raise ToolFailed(f"{self.tool}: timed out after {self.seconds:g}s")


def _display(policy: SandboxPolicy, path: Path) -> str:
    return relative_display(policy, path)


def _os_error(tool: str, shown: str, e: OSError) -> ToolFailed | ToolRefused:
    """Map an OSError from opening/reading ``shown`` to our error tree."""
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return ToolFailed(f"file not found: {shown}")
    if e.errno == errno.ELOOP:
        # O_NOFOLLOW hit a symlink that appeared after the path was resolved.
        return ToolRefused(f"path confinement: {shown} became a symlink; refused")
    if e.errno == errno.EXDEV:
        return escaped(shown)
    if e.errno in (errno.EACCES, errno.EPERM):
        return ToolFailed(f"{tool}: permission denied: {shown}")
    if e.errno == errno.EISDIR:
        return ToolFailed(f"{tool}: {shown} is a directory")
    return ToolFailed(f"{tool}: cannot access {shown}: {e.strerror or e}")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _open_in(policy: SandboxPolicy, path: Path, flags: int) -> int:
    """Open ``path`` (as resolve_path returned it) race-free beneath the workdir."""
    root = safe_open.open_root(policy.workdir)
    try:
        return safe_open.open_beneath(root, workdir_rel(policy, path), flags)
    finally:
        os.close(root)


def _open_regular(
    tool: str,
    shown: str,
    policy: SandboxPolicy,
    path: Path,
    missing_ok: bool = False,
    *,
    dir_fd: int | None = None,
) -> tuple[int, os.stat_result] | None:
    """Open for reading without blocking, race-free beneath the workdir.

    With ``dir_fd``, ``path`` is a plain name in that pinned folder, opened
    with ``O_NOFOLLOW``. Anything but a regular file is refused, and so is a
    file with several hard links. ``None`` when the file does not exist and
    ``missing_ok``.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        if dir_fd is not None:
            fd = os.open(path, flags | os.O_NOFOLLOW, dir_fd=dir_fd)
        else:
            fd = _open_in(policy, path, flags)
    except OSError as e:
        if missing_ok and e.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise _os_error(tool, shown, e) from e
    st = os.fstat(fd)
    try:
        check_hard_links(shown, st)
    except ToolRefused:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = _kind(st.st_mode)
        if kind == "directory":
            raise ToolFailed(f"{tool}: {shown} is a directory, not a file (use file_list)")
        raise ToolRefused(
            f"file policy: {shown} is a {kind}; only regular files can be used with {tool}"
        )
    return fd, st


# ------------------------------------------------------------------ file_read


class FileReadArgs(ToolArgs):
    path: str = Field(description="File path relative to the app's workdir.")
    offset: int = Field(default=0, ge=0, description="First character to return.")
    limit: int | None = Field(
        default=None,
        ge=0,
        description="Most characters to return (default: all, up to the read limit).",
    )


FILE_WORDS = (
    "文件", "目录", "文件夹", "保存", "存到", "写到", "记到", "记下", "读取", "打开",
    "列出", "笔记", "待办", "file", "folder", "directory", "save", "write", "read",
    "list", "note", "todo", ".txt", ".md", ".csv", ".json", "workspace", "/files/",
)  # fmt: skip
"""Words of a request for which the generic app offers the file tools."""


@atomic_tool(
    "file_read",
    FileReadArgs,
    "Read a text file inside the app's workdir. Returns the text itself; "
    "offset/limit count characters; large files are cut at the read limit.",
    timeout=5,
    risk="safe",
    describe=lambda args: str(args.get("path", "")),
    offer_words=FILE_WORDS,
)
def file_read(ctx: ToolContext, args: FileReadArgs) -> ToolOutput:
    deadline = _Deadline(ctx, "file_read")
    target = resolve_path(ctx.policy, args.path)
    shown = _display(ctx.policy, target)
    opened = _open_regular("file_read", shown, ctx.policy, target)
    assert opened is not None
    fd, st = opened
    try:
        text, truncated, lossy, more = _read_text(
            fd, args.offset, args.limit, ctx.policy.config.max_read_bytes, deadline
        )
    except OSError as e:
        raise _os_error("file_read", shown, e) from e
    finally:
        os.close(fd)
    meta: dict[str, Any] = {
        "path": shown,
        "size": st.st_size,
        "truncated": truncated,
        "encoding": "utf-8 (undecodable bytes replaced)" if lossy else "utf-8",
        "offset": args.offset,
        "chars": len(text),
    }
    if more:
        meta["next_offset"] = args.offset + len(text)
    return ToolOutput(text, meta)


def _read_text(
    fd: int, offset: int, limit: int | None, cap: int, deadline: _Deadline
) -> tuple[str, bool, bool, bool]:
    """Decode from ``fd``; skip ``offset`` characters, keep ``limit`` of them.

    Returns ``(text, truncated_by_cap, lossy, more_after)``. Two decoders run
    side by side: a replacing one produces the text, a strict one only tells
    whether anything had to be replaced (a literal U+FFFD in the file is not
    a loss).
    """
    lenient = codecs.getincrementaldecoder("utf-8")(errors="replace")
    strict: codecs.IncrementalDecoder | None = codecs.getincrementaldecoder("utf-8")()
    lossy = False
    skip = offset
    pieces: list[str] = []
    kept_chars = 0
    kept_bytes = 0
    while True:
        deadline.check()
        chunk = os.read(fd, CHUNK_BYTES)
        final = not chunk
        if strict is not None:
            try:
                strict.decode(chunk, final)
            except UnicodeDecodeError:
                lossy, strict = True, None
        text = lenient.decode(chunk, final)
        if skip:
            dropped = min(skip, len(text))
            text, skip = text[dropped:], skip - dropped
        if text:
            at_limit = limit is not None and kept_chars + len(text) >= limit
            take = text[: limit - kept_chars] if at_limit and limit is not None else text
            raw = take.encode("utf-8")
            if kept_bytes + len(raw) > cap:
                # Cut at the byte cap on a character boundary.
                pieces.append(raw[: cap - kept_bytes].decode("utf-8", errors="ignore"))
                return "".join(pieces), True, lossy, True
            pieces.append(take)
            kept_chars += len(take)
            kept_bytes += len(raw)
            if at_limit:
                more = len(take) < len(text) or (not final and _has_more(fd, lenient))
                return "".join(pieces), False, lossy, more
        if final:
            return "".join(pieces), False, lossy, False


def _has_more(fd: int, decoder: codecs.IncrementalDecoder) -> bool:
    pos = os.lseek(fd, 0, os.SEEK_CUR)
    return pos < os.fstat(fd).st_size or bool(decoder.getstate()[0])


# ----------------------------------------------------------------- file_write


class FileWriteArgs(ToolArgs):
    path: str = Field(description="File path relative to the app's workdir.")
    content: Any = Field(
        description="Text to write; any other JSON value is written as indented JSON."
    )
    mode: Literal["overwrite", "append"] = "overwrite"

    @field_validator("content")
    @classmethod
    def _serialisable(cls, v: Any) -> Any:
        if not isinstance(v, str):
            try:
                json.dumps(v, ensure_ascii=False)
            except (TypeError, ValueError) as e:
                raise ValueError(f"content must be text or a JSON value ({e})") from e
        return v


@atomic_tool(
    "file_write",
    FileWriteArgs,
    "Write (or append to) a file inside the app's workdir, atomically. Non-text "
    "content is written as JSON. Returns {path, size}.",
    timeout=10,
    risk="medium",
    describe=lambda args: str(args.get("path", "")),
    offer_words=FILE_WORDS,
)
def file_write(ctx: ToolContext, args: FileWriteArgs) -> ToolOutput:
    deadline = _Deadline(ctx, "file_write")
    target = resolve_path(ctx.policy, args.path)
    shown = _display(ctx.policy, target)
    if target == ctx.policy.workdir:
        raise ToolFailed(f"file_write: {shown} is the workdir itself; give a file name")
    data = _encode_content(args.content)
    limit = ctx.policy.config.max_file_bytes

    _check_size(shown, len(data), limit)
    ctx.check_workspace(len(data))
    root = safe_open.open_root(ctx.policy.workdir)
    try:
        dfd, name = safe_open.open_parent(root, workdir_rel(ctx.policy, target), create=True)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EXDEV):
            raise _os_error("file_write", shown, e) from e
        raise ToolFailed(
            f"file_write: cannot create the folder for {shown}: {e.strerror or e}"
        ) from e
    finally:
        os.close(root)
    try:
        old: bytes = b""
        old_mode: int | None = None
        opened = _open_regular(
            "file_write", shown, ctx.policy, Path(name), missing_ok=True, dir_fd=dfd
        )
        if opened is not None:
            fd, st = opened
            old_mode = stat.S_IMODE(st.st_mode)
            try:
                if args.mode == "append":
                    _check_size(shown, st.st_size + len(data), limit)
                    old = _read_all(fd, deadline)
            except OSError as e:
                raise _os_error("file_write", shown, e) from e
            finally:
                os.close(fd)
        _check_size(shown, len(old) + len(data), limit)
        created = old_mode is None
        _atomic_write(
            dfd,
            name,
            shown,
            old + data if old else data,
            NEW_FILE_MODE if old_mode is None else old_mode,
            deadline,
        )
    finally:
        os.close(dfd)
    ctx.wrote(len(data))
    size = len(old) + len(data)
    return ToolOutput(
        {"path": shown, "size": size},
        {"mode": args.mode, "bytes_written": len(data), "created": created},
    )


def _encode_content(content: Any) -> bytes:
    text = (
        content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=2)
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ToolFailed(
            f"file_write: content is not valid Unicode text (lone surrogate at character {e.start})"
        ) from e


def _check_size(shown: str, size: int, limit: int) -> None:
    if size > limit:
        raise ToolRefused(
            f"resource limit: writing {shown} would make it {size} bytes, over "
            f"tool_sandbox.max_file_bytes ({limit}); the file is unchanged"
        )


def _read_all(fd: int, deadline: _Deadline) -> bytes:
    chunks = []
    while chunk := os.read(fd, CHUNK_BYTES):
        deadline.check()
        chunks.append(chunk)
    return b"".join(chunks)


def _atomic_write(
    dfd: int, name: str, shown: str, data: bytes, mode: int, deadline: _Deadline
) -> None:
    """Temp file beside the target in the pinned folder, fsync, rename, fsync the folder."""
    try:
        fd, tmp = safe_open.create_temp(dfd, name, ".tmp")
    except OSError as e:
        raise ToolFailed(
            f"file_write: cannot write in the folder of {shown}: {e.strerror or e}"
        ) from e
    try:
        try:
            view = memoryview(data)
            for start in range(0, len(data), CHUNK_BYTES):
                deadline.check()
                os.write(fd, view[start : start + CHUNK_BYTES])
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        safe_open.replace(dfd, tmp, name)
    except BaseException as e:
        safe_open.unlink_quiet(dfd, tmp)
        if isinstance(e, OSError):
            raise ToolFailed(f"file_write: cannot write {shown}: {e.strerror or e}") from e
        raise
    try:
        os.fsync(dfd)
    except OSError:
        # Some filesystems cannot fsync a directory; the rename already happened.
        log.debug("fsync of the folder of %s not supported", shown)


# ------------------------------------------------------------------ file_list


class FileListArgs(ToolArgs):
    path: str = Field(default=".", description="Folder relative to the app's workdir.")
    pattern: str | None = Field(default=None, description="Shell-style name filter, e.g. '*.mp3'.")


def _describe_list(args: dict[str, Any]) -> str:
    path = str(args.get("path") or ".")
    pattern = args.get("pattern")
    return f"{path.rstrip('/')}/{pattern}" if pattern else path


@atomic_tool(
    "file_list",
    FileListArgs,
    "List a folder inside the app's workdir: name, type (file|dir|link), size, "
    "modified. Optional shell-style pattern.",
    timeout=5,
    risk="safe",
    describe=_describe_list,
    offer_words=FILE_WORDS,
)
def file_list(ctx: ToolContext, args: FileListArgs) -> ToolOutput:
    deadline = _Deadline(ctx, "file_list")
    folder = resolve_path(ctx.policy, args.path)
    shown = _display(ctx.policy, folder)
    try:
        dfd = _open_in(ctx.policy, folder, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise ToolFailed(f"folder not found: {shown}") from e
        raise _os_error("file_list", shown, e) from e
    try:
        if not stat.S_ISDIR(os.fstat(dfd).st_mode):
            raise ToolFailed(f"file_list: {shown} is not a folder (use file_read)")
        # scandir on the fd: entries are looked at relative to it, never by path.
        with os.scandir(dfd) as it:
            matching = []
            for entry in it:
                deadline.check()
                if args.pattern is None or fnmatch.fnmatch(entry.name, args.pattern):
                    matching.append(entry)
        matching.sort(key=lambda e: e.name)
        entries = []
        for entry in matching[:MAX_LIST_ENTRIES]:
            deadline.check()
            item = _describe_entry(entry)  # stat relative to dfd: it must still be open
            if item is not None:
                entries.append(item)
    except OSError as e:
        raise _os_error("file_list", shown, e) from e
    finally:
        os.close(dfd)
    truncated = len(matching) > MAX_LIST_ENTRIES
    return ToolOutput(
        {"path": shown, "entries": entries},
        {"count": len(entries), "total": len(matching), "truncated": truncated},
    )


def _describe_entry(entry: os.DirEntry[str]) -> dict[str, Any] | None:
    # follow_symlinks=False everywhere: a link is listed as a link and its
    # target (possibly outside the workdir) is never looked at.
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None  # removed while listing
    if stat.S_ISLNK(st.st_mode):
        kind, size = "link", None
    elif stat.S_ISDIR(st.st_mode):
        kind, size = "dir", None
    elif stat.S_ISREG(st.st_mode):
        kind, size = "file", st.st_size
    else:
        kind, size = "other", None
    modified = datetime.fromtimestamp(st.st_mtime, tz=UTC).isoformat(timespec="seconds")
    return {"name": entry.name, "type": kind, "size": size, "modified": modified}
