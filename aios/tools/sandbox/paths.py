"""Path confinement: a tool's path argument stays inside the app's workdir."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from aios.errors import PathNotFound, ToolRefused
from aios.host import safe_open
from aios.tools.sandbox.policy import SandboxPolicy


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
