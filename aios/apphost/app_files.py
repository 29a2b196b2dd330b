"""The one reader of files the system takes from an app folder (DESIGN §14.1).

An app folder is third-party: whoever wrote it chooses what ``role.md`` or
``icon.png`` *is*. Read by name, a symlink ``role.md -> /proc/self/environ``
would hand the system's own environment (launch token, LLM key) to the app
as its ``context.role``; a FIFO would block the launcher; ``/dev/zero`` would
never end; a hard link would reach a file elsewhere. So every file the
system reads from an app folder goes through :class:`AppFolder`:

* opened beneath the folder's fd through no symlink at all
  (``openat2`` ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``, or an
  ``O_NOFOLLOW`` walk; :func:`aios.host.safe_open.open_plain`), with
  ``O_NONBLOCK`` so that opening a FIFO cannot wait for a writer;
* kept only if it is a regular file with a single name (``st_nlink == 1``)
  no larger than its kind's cap (:data:`CAPS`), checked on the open fd;
* read once, at validation (each launch validates afresh).

Anything else raises :class:`AppFileError`, whose message names the file and
the problem; :mod:`aios.apphost.manifests` makes that the app's ``invalid`` reason.
A transient failure (EMFILE...) stays an ``OSError``: it says nothing about
the folder.

:func:`folder_fingerprint` is what the launcher's watcher compares: every
entry of the folder outside the workdir, by ``lstat`` (never opened, never
followed), plus the bytes of the manifest and ``role.md``.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from aios.host import safe_open

MANIFEST = "manifest.json"
ROLE_FILE = "role.md"

KIB = 1024
CAPS: dict[str, int] = {
    "manifest": 64 * KIB,
    "role": 64 * KIB,
    "icon": 1024 * KIB,
    "entry": 4096 * KIB,
}
"""Largest file of each kind the system reads from an app folder, in bytes."""
MAX_ENTRIES = 10_000
"""Entries of an app folder (outside its workdir) the watcher looks at; more make it invalid."""
SKIPPED_DIRS = frozenset({"__pycache__"})
"""Folders the watcher skips: Python's byte-code caches (rewritten by imports, not edits)."""
TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN})
"""Errors that say the machine is busy, not that a file is bad: never make an app invalid."""
READ_CHUNK = 64 * KIB

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


class AppFileError(ValueError):
    """A file of an app folder the system will not read; ``str(e)`` names file and problem."""


def raise_if_transient(e: BaseException) -> None:
    if isinstance(e, OSError) and e.errno in TRANSIENT_ERRNOS:
        raise e


def kind_of(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


@dataclass(frozen=True)
class FileRead:
    """One file read from an app folder."""

    rel: str
    data: bytes


class AppFolder:
    """An open app folder: reads its files by the rules above. Use as a context manager."""

    def __init__(self, path: Path):
        self.path = path
        # The folder's own path is the system's (apps/<id>), not the app's: opened plainly.
        self.fd = safe_open.open_root(path)

    def __enter__(self) -> AppFolder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def read(self, rel: str, kind: str) -> FileRead:
        """The bytes of the regular file ``rel``, at most ``CAPS[kind]`` of them."""
        cap = CAPS[kind]
        fd = self._open(rel)
        try:
            self._check(fd, rel, cap)
            chunks: list[bytes] = []
            got = 0
            while got <= cap:
                chunk = os.read(fd, min(READ_CHUNK, cap + 1 - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            if got > cap:  # it grew after the fstat
                raise AppFileError(f"{rel} is larger than the cap of {cap} bytes for a {kind} file")
            return FileRead(rel, b"".join(chunks))
        finally:
            os.close(fd)

    def check(self, rel: str, kind: str) -> os.stat_result:
        """Open ``rel`` by the same rules as :meth:`read` without reading it (an entry file)."""
        fd = self._open(rel)
        try:
            return self._check(fd, rel, CAPS[kind])
        finally:
            os.close(fd)

    def workdir(self, rel: str, *, create: bool = True) -> Path:
        """The workdir folder ``rel`` (created if missing), reached through no symlink.

        Without ``create``, a missing workdir is fine (it will be created at launch).
        """
        try:
            os.close(safe_open.open_plain_dir(self.fd, rel, create=create))
        except OSError as e:
            raise_if_transient(e)
            if e.errno == errno.ENOENT and not create:
                return self.path.resolve() / rel
            if e.errno == errno.ELOOP:
                raise AppFileError(
                    f"workdir {rel!r} is or passes through a symbolic link; "
                    "the workdir must be a plain subfolder of the app folder"
                ) from e
            if e.errno in (errno.ENOTDIR, errno.EEXIST):
                raise AppFileError(f"workdir {rel!r} exists and is not a folder") from e
            raise AppFileError(f"workdir {rel!r} cannot be created: {e.strerror or e}") from e
        return self.path.resolve() / rel

    def _open(self, rel: str) -> int:
        try:
            return safe_open.open_plain(
                self.fd, rel, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW
            )
        except OSError as e:
            raise_if_transient(e)
            if e.errno == errno.ENOENT:
                raise FileNotFoundError(errno.ENOENT, "not found in the app folder", rel) from e
            if e.errno == errno.ELOOP:
                raise AppFileError(
                    f"{rel} is a symbolic link or lies in a folder that is one; "
                    "the system reads only plain files of an app folder"
                ) from e
            if e.errno == errno.EXDEV:
                raise AppFileError(f"{rel} is not inside the app folder") from e
            if e.errno == errno.ENXIO:  # a socket
                raise AppFileError(f"{rel} is a socket, not a regular file") from e
            raise AppFileError(f"{rel} cannot be read: {e.strerror or e}") from e

    @staticmethod
    def _check(fd: int, rel: str, cap: int) -> os.stat_result:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise AppFileError(f"{rel} is {kind_of(st.st_mode)}, not a regular file")
        if st.st_nlink != 1:
            raise AppFileError(
                f"{rel} has {st.st_nlink} hard links (it may be a file from elsewhere); "
                "an app's files must each have a single name"
            )
        if st.st_size > cap:
            raise AppFileError(f"{rel} is {st.st_size} bytes, over the cap of {cap} bytes")
        return st


def folder_fingerprint(path: Path, workdir: str | None) -> tuple[Any, ...]:
    """Every entry of the folder outside ``workdir``, by lstat, and the manifest's and
    role.md's bytes: a change anywhere changes it.

    Never follows a link or opens anything but a regular manifest/role.md (through
    :class:`AppFolder`). A transient error raises OSError, so that a busy machine never
    looks like a changed app; a missing folder is ``()``.
    """
    skip = tuple(p for p in (workdir or "").split("/") if p not in ("", "."))
    entries: list[tuple[Any, ...]] = []
    try:
        _scan(path, (), skip, entries)
        contents: list[bytes | None] = []
        with AppFolder(path) as folder:
            for rel, kind in ((MANIFEST, "manifest"), (ROLE_FILE, "role")):
                try:
                    contents.append(folder.read(rel, kind).data)
                except (AppFileError, FileNotFoundError):
                    contents.append(None)
    except OSError as e:
        raise_if_transient(e)
        return ()
    return (tuple(entries), tuple(contents))


def _scan(
    folder: Path, prefix: tuple[str, ...], skip: tuple[str, ...], out: list[tuple[Any, ...]]
) -> None:
    with os.scandir(folder) as it:
        for entry in sorted(it, key=lambda e: e.name):
            rel = (*prefix, entry.name)
            if rel == skip or entry.name in SKIPPED_DIRS:
                continue
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):  # its entries speak for it (not its mtime: a
                out.append(("/".join(rel), st.st_mode, st.st_ino))  # new workdir touches it)
            else:
                out.append(
                    ("/".join(rel), st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                    + (st.st_ino, st.st_nlink)
                )
            if len(out) > MAX_ENTRIES:
                out.append(("…", "too many entries"))
                return
            if stat.S_ISDIR(st.st_mode):
                _scan(Path(entry.path), rel, skip, out)
                if len(out) > MAX_ENTRIES:
                    return
