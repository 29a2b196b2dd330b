"""An SQLite VFS that opens databases (and their journals) race-free beneath the workdir.

SQLite opens files by name: the database, then ``<db>-journal``, ``-wal``
and ``-shm`` beside it, and ``ATTACH`` targets, each resolved from ``/`` at
the moment SQLite gets to it. Its unix VFS expands every symlink of the name
first (``xFullPathname``, with ``lstat``/``readlink``), so even a
``/proc/self/fd/<dirfd>/notes.db`` name is turned back into a path string
that a swap can redirect. Its opens themselves use ``O_NOFOLLOW`` on the
final component.

So this module registers ``aios-beneath``: a copy of the ``unix`` VFS whose
only change is ``xFullPathname``. For a name inside the workdir it pins the
database's folder with :func:`aios.host.safe_open.open_parent` (``openat2`` with
``RESOLVE_BENEATH``) and answers ``/proc/self/fd/<that fd>/<name>``, which
SQLite then uses verbatim: the kernel reaches the pinned folder through the
fd, and the database, its journals and the folder ``fsync`` all live in that
folder, opened ``O_NOFOLLOW``. A name outside the workdir, a relative name,
or a database with several hard links gets ``SQLITE_CANTOPEN``. Locks are
POSIX locks on the same inodes, so other connections to the same file
(through its ordinary path) still coordinate with ours.

The pinned fds belong to one connection: :func:`scope` opens them for the
``with`` block (the thread that runs the query) and closes them after.
Where the VFS cannot be registered (no ``/proc``, SQLite linked statically)
:func:`available` is False and the caller falls back to plain names.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from aios.host import safe_open

log = logging.getLogger(__name__)

VFS_NAME = "aios-beneath"
SQLITE_OK = 0
SQLITE_CANTOPEN = 14
FD_PREFIX = "/proc/self/fd/"


class _Vfs(ctypes.Structure):
    """``struct sqlite3_vfs`` up to version 3 (all the function pointers opaque)."""

    _fields_ = [
        ("iVersion", ctypes.c_int),
        ("szOsFile", ctypes.c_int),
        ("mxPathname", ctypes.c_int),
        ("pNext", ctypes.c_void_p),
        ("zName", ctypes.c_char_p),
        ("pAppData", ctypes.c_void_p),
    ] + [
        (name, ctypes.c_void_p)
        for name in (
            "xOpen",
            "xDelete",
            "xAccess",
            "xFullPathname",
            "xDlOpen",
            "xDlError",
            "xDlSym",
            "xDlClose",
            "xRandomness",
            "xSleep",
            "xCurrentTime",
            "xGetLastError",
            "xCurrentTimeInt64",
            "xSetSystemCall",
            "xGetSystemCall",
            "xNextSystemCall",
        )
    ]  # type: ignore[assignment]  # a computed list; ctypes reads it at class creation


_FullPathname = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p
)


@dataclass
class Scope:
    workdir: Path
    root_fd: int
    fds: list[int] = field(default_factory=list)
    reason: str | None = None

    def pin(self, name: str) -> str | None:
        """The ``/proc/self/fd`` name for ``name``, or None (and a reason) to refuse."""
        if name.startswith(FD_PREFIX):
            fd_text = name[len(FD_PREFIX) :].split("/", 1)[0]
            return name if fd_text.isdigit() and int(fd_text) in self.fds else None
        path = Path(name)
        if not path.is_absolute() or not path.is_relative_to(self.workdir):
            self.reason = f"{name} is outside the app's workdir"
            return None
        rel = str(path.relative_to(self.workdir))
        try:
            dfd, final = safe_open.open_parent(self.root_fd, rel)
        except OSError as e:
            self.reason = (
                f"{rel} resolves outside the app's workdir"
                if e.errno in (errno.EXDEV, errno.ELOOP)
                else f"{rel}: {e.strerror or e}"
            )
            return None
        self.fds.append(dfd)
        try:
            st = os.stat(final, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            self.reason = f"{rel} is a hard link ({st.st_nlink} names)"
            return None
        return f"{FD_PREFIX}{dfd}/{final}"


_local = threading.local()


def _full_pathname(vfs: int | None, zname: bytes | None, n_out: int, z_out: int | None) -> int:
    try:
        current: Scope | None = getattr(_local, "scope", None)
        if current is None or zname is None or z_out is None:
            return SQLITE_CANTOPEN
        mapped = current.pin(os.fsdecode(zname))
        if mapped is None:
            return SQLITE_CANTOPEN
        data = os.fsencode(mapped) + b"\0"
        if len(data) > n_out:
            return SQLITE_CANTOPEN
        ctypes.memmove(z_out, data, len(data))
        return SQLITE_OK
    except Exception:  # noqa: BLE001 - an exception must not cross into C
        log.exception("db_query: mapping a database name failed")
        return SQLITE_CANTOPEN


_callback = _FullPathname(_full_pathname)
_registered: _Vfs | None = None


def _register() -> _Vfs | None:
    import _sqlite3  # the extension module: its libsqlite3 is the one sqlite3 uses

    if not os.path.isdir(FD_PREFIX):
        return None
    try:
        lib = ctypes.CDLL(_sqlite3.__file__)
        find = lib.sqlite3_vfs_find
    except (OSError, AttributeError):
        return None
    find.restype = ctypes.POINTER(_Vfs)
    find.argtypes = [ctypes.c_char_p]
    unix = find(b"unix")
    if not unix or unix.contents.iVersion < 3:
        return None
    vfs = _Vfs()
    ctypes.memmove(ctypes.byref(vfs), unix, ctypes.sizeof(_Vfs))
    vfs.zName = VFS_NAME.encode()
    vfs.pNext = None
    vfs.xFullPathname = ctypes.cast(_callback, ctypes.c_void_p).value
    lib.sqlite3_vfs_register.argtypes = [ctypes.POINTER(_Vfs), ctypes.c_int]
    if lib.sqlite3_vfs_register(ctypes.byref(vfs), 0) != SQLITE_OK:
        return None
    return vfs


_lock = threading.Lock()


def available() -> bool:
    """Register the VFS once; False where it cannot work here."""
    global _registered
    with _lock:
        if _registered is None:
            _registered = _register()
            if _registered is None:
                log.warning(
                    "db_query: the race-free SQLite VFS is unavailable here; "
                    "databases are opened by name"
                )
        return _registered is not None


def uri(path: Path) -> str:
    """The ``sqlite3.connect(..., uri=True)`` name that opens ``path`` through the VFS."""
    return f"file:{quote(str(path))}?vfs={VFS_NAME}"


@contextmanager
def scope(workdir: Path) -> Iterator[Scope]:
    """Pinned fds for the connection opened (and closed) inside the block, in this thread."""
    root = safe_open.open_root(workdir)
    current = Scope(workdir=workdir, root_fd=root)
    _local.scope = current
    try:
        yield current
    finally:
        _local.scope = None
        for fd in [root, *current.fds]:
            os.close(fd)
