"""The host's process table and disks as apps granted ``system.processes`` may see them (§11.7).

Narrow on purpose: pid, name, user, CPU, memory and start time. Never the
command line or the environment, which carry other programs' secrets; an app
never reads the host's ``/proc`` itself. The one write is :func:`end_host_process`
("end task"), which refuses anything the system itself depends on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import psutil

from aios.errors import NotFound, PermissionDenied

END_GRACE_SECONDS = 3.0
"""Seconds an ended process has after SIGTERM before it gets SIGKILL."""
END_POLL_SECONDS = 0.05
"""How often :func:`end_host_process` looks whether the process has gone."""
PF_KTHREAD = 0x00200000
"""The per-process flag (``/proc/<pid>/stat`` field 9) of a kernel thread."""
KTHREADD_PID = 2
"""The kernel thread daemon, parent of every kernel thread."""
MAX_DISKS = 8
SKIPPED_MOUNTS = ("/snap", "/boot/efi")
FIELDS = (
    "pid",
    "name",
    "username",
    "uids",
    "cpu_percent",
    "memory_info",
    "memory_percent",
    "create_time",
)


def host_processes() -> list[dict[str, Any]]:
    """One entry per process, ``cpu_percent`` measured since the previous call, and
    ``endable``: whether :func:`end_host_process` would end it (not one it refuses).

    psutil keeps the Process objects of ``process_iter`` between calls, so the
    first call after a process appeared reports 0 % for it (there is no "before").
    """
    out = []
    protected = _protected_pids()
    uid = os.getuid()
    for p in psutil.process_iter(list(FIELDS)):
        info = p.info
        mem = info.get("memory_info")
        uids = info.get("uids")
        pid = info["pid"]
        out.append(
            {
                "pid": pid,
                "name": info.get("name") or "?",
                "user": info.get("username") or "",
                "cpu_percent": round(info.get("cpu_percent") or 0.0, 1),
                "memory_rss": mem.rss if mem is not None else 0,
                "memory_percent": round(info.get("memory_percent") or 0.0, 1),
                "started": info.get("create_time"),
                "endable": pid not in protected
                and uids is not None
                and uids.real == uid
                and not _is_kernel_thread(pid),
            }
        )
    return out


def _protected_pids() -> set[int]:
    """pid 1, the kernel thread daemon, this system's process, its ancestors and
    everything it started."""
    me = psutil.Process(os.getpid())
    try:
        family = [*me.parents(), *me.children(recursive=True)]
    except psutil.Error:
        family = []
    return {1, KTHREADD_PID, me.pid, *(p.pid for p in family)}


def host_disks() -> list[dict[str, Any]]:
    """The host's disks (one entry per filesystem): mount point, total, used, free, percent.

    A confined app sees only its sandbox's mounts, so the system answers this for it.
    """
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    parts = psutil.disk_partitions(all=False) or []
    mounts = [p.mountpoint for p in parts if not p.mountpoint.startswith(SKIPPED_MOUNTS)]
    for mount in mounts or ["/"]:
        try:
            usage = psutil.disk_usage(mount)
        except OSError:
            continue
        key = f"{usage.total}:{usage.used}"
        if key in seen:  # bind mounts of one disk
            continue
        seen.add(key)
        out.append(
            {
                "mount": mount,
                "total": usage.total,
                "used": usage.used,
                "free": usage.free,
                "percent": round(usage.percent, 1),
            }
        )
        if len(out) >= MAX_DISKS:
            break
    return out


def end_host_process(
    pid: int,
    grace: float = END_GRACE_SECONDS,
    confirm: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """End one host process ("end task"): SIGTERM, then SIGKILL after ``grace`` seconds.

    Refused (:class:`PermissionDenied`, one line naming why) for pid 1, kernel threads,
    this system's own process, its ancestors and everything it started (app sandboxes,
    tool processes: its process tree), and another user's processes;
    :class:`NotFound` when there is no such process. ``confirm(name)`` runs once those
    checks pass and before the signal (the user is asked there; it raises to refuse).
    Returns ``{pid, name, ended: True}``.
    """
    if pid == 1:
        raise PermissionDenied("pid 1 (init) cannot be ended: the whole machine depends on it")
    try:
        proc = psutil.Process(pid)
        name = proc.name()
    except psutil.NoSuchProcess:
        raise NotFound(f"no process with pid {pid}") from None
    except psutil.Error as e:
        raise PermissionDenied(f"process {pid} cannot be inspected: {e}") from None
    if pid == KTHREADD_PID or _is_kernel_thread(pid):
        raise PermissionDenied(f"process {pid} ({name}) is a kernel thread and cannot be ended")
    me = psutil.Process(os.getpid())
    if pid == me.pid or pid in {p.pid for p in me.parents()}:
        raise PermissionDenied(
            f"process {pid} ({name}) runs the AIOS system itself and cannot be ended from an app"
        )
    if pid in {p.pid for p in me.children(recursive=True)}:
        raise PermissionDenied(
            f"process {pid} ({name}) belongs to the AIOS system (an app or tool process); "
            "close or restart the app instead"
        )
    try:
        if proc.uids().real != os.getuid():
            raise PermissionDenied(
                f"process {pid} ({name}) belongs to another user and cannot be ended"
            )
    except psutil.NoSuchProcess:
        return {"pid": pid, "name": name, "ended": True}  # it ended on its own meanwhile
    if confirm is not None:
        confirm(name)
    try:
        proc.terminate()
        if not _gone(proc, grace):
            proc.kill()
            _gone(proc, grace)
    except psutil.NoSuchProcess:
        pass  # it ended on its own meanwhile
    except psutil.AccessDenied as e:
        raise PermissionDenied(f"process {pid} ({name}) cannot be ended: {e}") from None
    return {"pid": pid, "name": name, "ended": True}


def _is_kernel_thread(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return False  # not Linux, or gone: psutil answers for it
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) ": state is field 3
    try:
        flags = int(fields[9 - 3])
    except (IndexError, ValueError):
        return False
    return bool(flags & PF_KTHREAD)


def _gone(proc: psutil.Process, within: float) -> bool:
    """Whether ``proc`` exits (or is a zombie nobody reaped yet) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(END_POLL_SECONDS)
