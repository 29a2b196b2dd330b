"""The host's process table and disks as apps granted ``system.processes`` may see them (§11.7).

Read-only and narrow on purpose: pid, name, user, CPU, memory and start time.
Never the command line or the environment, which carry other programs'
secrets; an app never reads the host's ``/proc`` itself.
"""

from __future__ import annotations

from typing import Any

import psutil

MAX_DISKS = 8
SKIPPED_MOUNTS = ("/snap", "/boot/efi")
FIELDS = ("pid", "name", "username", "cpu_percent", "memory_info", "memory_percent", "create_time")


def host_processes() -> list[dict[str, Any]]:
    """One entry per process, ``cpu_percent`` measured since the previous call.

    psutil keeps the Process objects of ``process_iter`` between calls, so the
    first call after a process appeared reports 0 % for it (there is no "before").
    """
    out = []
    for p in psutil.process_iter(list(FIELDS)):
        info = p.info
        mem = info.get("memory_info")
        out.append(
            {
                "pid": info["pid"],
                "name": info.get("name") or "?",
                "user": info.get("username") or "",
                "cpu_percent": round(info.get("cpu_percent") or 0.0, 1),
                "memory_rss": mem.rss if mem is not None else 0,
                "memory_percent": round(info.get("memory_percent") or 0.0, 1),
                "started": info.get("create_time"),
            }
        )
    return out


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
