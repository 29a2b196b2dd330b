"""The host's process table as apps granted ``system.processes`` may see it (DESIGN §11.7).

Read-only and narrow on purpose: pid, name, user, CPU, memory and start time.
Never the command line or the environment, which carry other programs'
secrets; an app never reads the host's ``/proc`` itself.
"""

from __future__ import annotations

from typing import Any

import psutil

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
