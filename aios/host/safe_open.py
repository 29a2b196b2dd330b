"""Opening paths beneath a directory in one step, so no rename or symlink race escapes it.

Checking a path and opening it later (by name) lets another process swap a
folder for a symlink in between (DESIGN §11 item 9). Everything here starts
from a file descriptor of the root (the app's workdir) and never goes back
to a path string:

* :func:`open_beneath` is ``openat2(root_fd, rel, RESOLVE_BENEATH |
  RESOLVE_NO_MAGICLINKS)``: the kernel resolves and opens in one step and
  fails with ``EXDEV`` when any step (``..``, an absolute or outside symlink)
  would leave the root. Symlinks that stay beneath are followed, as before.
  Where ``openat2`` is missing (``ENOSYS``: kernels before 5.6, some seccomp
  filters) the same rules are walked by hand: one component at a time with
  ``O_NOFOLLOW | O_DIRECTORY`` relative to the previous directory's fd,
  symlinks read with ``readlinkat`` and expanded, ``..`` popping our own
  stack of fds (so it can never climb above the root).
* :func:`open_plain` is stricter, for files the *system* reads from an app
  folder (DESIGN §14.1): ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``, so no
  component may be a symlink at all (``ELOOP``), even one staying beneath;
  :func:`open_plain_dir` walks (and may create) a folder the same way.
* :func:`open_parent` pins the folder a new file goes into (creating missing
  folders with ``mkdirat``) and returns its fd plus the final name; the caller
  creates a temp file with ``O_EXCL | O_NOFOLLOW`` and renames it relative to
  that fd (:func:`create_temp`, :func:`replace`), so a swap after the lookup
  cannot redirect the write.

Errors are plain ``OSError``: ``EXDEV`` means "leaves the root",
``ELOOP`` "too many links, or a symlink where none may be". The tools map
them to their refusals.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import secrets
import stat
from pathlib import Path

SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}
"""The openat2 syscall number per machine (the same on both)."""
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
MAX_SYMLINKS = 40
"""Symlinks followed in one lookup at most, as the kernel's own limit."""
TEMP_ATTEMPTS = 100
"""Random temp names tried before giving up (each collision is astronomically rare)."""
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True) if os.name == "posix" else None
_syscall_nr = SYS_OPENAT2.get(platform.machine())
_openat2_works = _libc is not None and _syscall_nr is not None and hasattr(os, "O_PATH")


def openat2_available() -> bool:
    """False once the kernel said ENOSYS (or on a machine without it)."""
    return _openat2_works


def _openat2(
    dir_fd: int, rel: str, flags: int, mode: int, resolve: int = RESOLVE_NO_MAGICLINKS
) -> int:
    assert _libc is not None and _syscall_nr is not None
    how = _OpenHow(
        flags | os.O_CLOEXEC, mode if flags & os.O_CREAT else 0, RESOLVE_BENEATH | resolve
    )
    while True:
        fd = int(
            _libc.syscall(
                _syscall_nr, dir_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how)
            )
        )
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err != errno.EINTR and err != errno.EAGAIN:
            raise OSError(err, os.strerror(err), rel)


def open_root(root: str | os.PathLike[str]) -> int:
    """An fd on the root folder itself (its path is the system's, not the app's)."""
    return os.open(root, DIR_FLAGS)


def open_beneath(root_fd: int, rel: str, flags: int, mode: int = 0o644) -> int:
    """Open ``rel`` (relative, ``""`` or ``"."`` = the root) beneath ``root_fd``.

    ``flags`` are ``os.open`` flags without ``O_NOFOLLOW``; symlinks that stay
    beneath the root are followed, anything leaving it is ``EXDEV``.
    """
    global _openat2_works
    rel = rel or "."
    if rel.startswith("/"):
        raise OSError(errno.EXDEV, "absolute path", rel)
    if _openat2_works:
        try:
            return _openat2(root_fd, rel, flags, mode)
        except OSError as e:
            if e.errno != errno.ENOSYS:
                raise
            _openat2_works = False
    return _walk(root_fd, rel, flags, mode)


def _walk(root_fd: int, rel: str, flags: int, mode: int) -> int:
    """RESOLVE_BENEATH by hand: one component at a time, never by name from ``/``."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    parts.reverse()  # a stack: the next component is parts[-1]
    stack = [os.dup(root_fd)]
    links = 0
    try:
        while parts:
            name = parts.pop()
            if name == "..":
                if len(stack) == 1:
                    raise OSError(errno.EXDEV, "'..' leaves the root", rel)
                os.close(stack.pop())
                continue
            last = not parts
            try:
                if last:
                    return os.open(
                        name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=stack[-1]
                    )
                stack.append(os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=stack[-1]))
                continue
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                failure = e
            try:
                target = os.readlink(name, dir_fd=stack[-1])
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                if failure.errno == errno.ENOTDIR:
                    raise failure from None  # a real file used as a folder
                target = name  # it stopped being a link meanwhile: look again
            links += 1
            if links > MAX_SYMLINKS:
                raise OSError(errno.ELOOP, "too many symbolic links", rel)
            if target.startswith("/"):
                raise OSError(errno.EXDEV, "absolute symbolic link", rel)
            parts.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
        return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=stack[-1])
    finally:
        for fd in stack:
            os.close(fd)


def open_plain(root_fd: int, rel: str, flags: int) -> int:
    """Open ``rel`` beneath ``root_fd`` through no symlink at all (``ELOOP`` if one is met).

    ``..`` and absolute paths are ``EXDEV``. Meant for reading (no ``O_CREAT``).
    """
    global _openat2_works
    parts = _plain_parts(rel)
    if _openat2_works:
        try:
            return _openat2(
                root_fd, "/".join(parts), flags, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
            )
        except OSError as e:
            if e.errno != errno.ENOSYS:
                raise
            _openat2_works = False
    head = open_plain_dir(root_fd, "/".join(parts[:-1]))
    try:
        return _open_no_link(head, parts[-1], flags | os.O_NOFOLLOW)
    finally:
        os.close(head)


def open_plain_dir(root_fd: int, rel: str, *, create: bool = False) -> int:
    """An fd on the folder ``rel`` beneath ``root_fd``, reached through no symlink.

    With ``create``, missing folders are made (``mkdirat``) on the way. ``""``
    is the root itself.
    """
    parts = _plain_parts(rel) if rel not in ("", ".") else []
    fd = os.dup(root_fd)
    try:
        for name in parts:
            try:
                nxt = _open_no_link(fd, name, DIR_FLAGS | os.O_NOFOLLOW)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = _open_no_link(fd, name, DIR_FLAGS | os.O_NOFOLLOW)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _plain_parts(rel: str) -> list[str]:
    if rel.startswith("/"):
        raise OSError(errno.EXDEV, "absolute path", rel)
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise OSError(errno.EXDEV, "'..' in the path", rel)
    if not parts:
        raise OSError(errno.EISDIR, "names the folder itself", rel)
    return parts


def _open_no_link(dir_fd: int, name: str, flags: int) -> int:
    """``openat(dir_fd, name, flags | O_NOFOLLOW)``; a symlink is ``ELOOP`` whatever the flags."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        if e.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        try:
            os.readlink(name, dir_fd=dir_fd)
        except OSError:
            raise e from None  # not a link: a real file used as a folder
        raise OSError(errno.ELOOP, "a symbolic link", name) from None


def open_dir(root_fd: int, rel: str, *, create: bool = False) -> int:
    """An fd on the folder ``rel`` beneath the root, creating missing folders if asked."""
    try:
        return open_beneath(root_fd, rel, DIR_FLAGS)
    except OSError as e:
        if not create or e.errno != errno.ENOENT:
            raise
    head, _, name = rel.rstrip("/").rpartition("/")
    if name in ("", ".", ".."):
        raise OSError(errno.ENOENT, "no such folder", rel)
    parent = open_dir(root_fd, head, create=True)
    try:
        os.mkdir(name, dir_fd=parent)
    except FileExistsError:
        pass
    finally:
        os.close(parent)
    return open_beneath(root_fd, rel, DIR_FLAGS)


def open_parent(root_fd: int, rel: str, *, create: bool = False) -> tuple[int, str]:
    """``(fd of the folder, final name)`` for a file to create or replace at ``rel``.

    A final symlink that stays beneath is followed (the file it names is the
    one written, as before); the returned name is not a symlink at the time
    of the call, and callers open it with ``O_NOFOLLOW`` so a later swap fails.
    """
    for _ in range(MAX_SYMLINKS):
        head, _, name = rel.rstrip("/").rpartition("/")
        if name in ("", ".", ".."):
            raise OSError(errno.EISDIR, "names a folder", rel)
        dfd = open_dir(root_fd, head or ".", create=create)
        try:
            target = os.readlink(name, dir_fd=dfd)
        except OSError:
            return dfd, name  # not a link, or not there yet
        os.close(dfd)
        if target.startswith("/"):
            raise OSError(errno.EXDEV, "absolute symbolic link", rel)
        rel = f"{head}/{target}" if head else target
    raise OSError(errno.ELOOP, "too many symbolic links", rel)


def create_temp(dir_fd: int, name: str, suffix: str, mode: int = 0o600) -> tuple[int, str]:
    """A new file beside ``name`` in ``dir_fd``: ``(fd, temp name)``, never through a link."""
    for _ in range(TEMP_ATTEMPTS):
        tmp = f".{name}.{secrets.token_hex(4)}{suffix}"
        try:
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                mode,
                dir_fd=dir_fd,
            )
        except FileExistsError:
            continue
        return fd, tmp
    raise OSError(errno.EEXIST, "no free temporary name", name)


def replace(dir_fd: int, tmp: str, name: str) -> None:
    """Rename ``tmp`` over ``name``, both in ``dir_fd`` (a link there is replaced, not followed)."""
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def unlink_quiet(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def hard_link_count(st: os.stat_result) -> int:
    """Names of a regular file (0 for anything else): above 1 may be a file outside."""
    return st.st_nlink if stat.S_ISREG(st.st_mode) else 0


def fd_path(fd: int) -> Path:
    """``/proc/self/fd/<fd>``: a name that reaches the open object itself, not a path."""
    return Path(f"/proc/self/fd/{fd}")
