"""Apps' ports: which are free, and the port map that keeps them across runs.

Spec §5.3, §14.2. An app keeps its port from one run to the next (the port
map, ``data/port_map.json``) unless another app or another program holds it;
a port named in a manifest comes first. :class:`PortMap` makes that choice;
it never hands out a port that is already assigned (to an app or to the
system itself).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MIN_PORT = 1024
MAX_PORT = 65535
"""A remembered port outside this range is ignored (not an app's)."""


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Same option the apps' servers use, so a port in TIME_WAIT still counts as free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(taken: set[int]) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in taken:
            return port


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(
        json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    os.replace(tmp, path)


def read_port_map(path: Path) -> dict[str, int]:
    """The port map of a previous run ({} when there is none or it cannot be read)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        log.warning("ignoring unreadable port map %s: %s", path, e)
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(v, int) and MIN_PORT <= v <= MAX_PORT}


class PortMap:
    """The ports of the apps: chosen once per launch, remembered in ``path`` across runs.

    Not thread-safe by itself: the launcher calls it under its lock.
    """

    def __init__(self, path: Path, system_port: int | None) -> None:
        self.path = path
        self._system_port = system_port
        self._sticky: dict[str, int] = {}

    def load(self) -> None:
        """Take the ports remembered by the previous run."""
        self._sticky = read_port_map(self.path)

    def remember(self, app_id: str, port: int) -> None:
        self._sticky[app_id] = port

    def save(self, assigned: Mapping[str, int]) -> None:
        """Write the ports in use now; OSError when the file cannot be written."""
        write_json_atomic(self.path, dict(assigned))

    def choose(
        self,
        app_id: str,
        *,
        manifest_port: int | None,
        current: int | None,
        assigned: Mapping[str, int],
    ) -> int:
        """Manifest port, else the current one, else the previous port map's, else a free one.

        ``assigned`` holds the other apps' ports (by app id); a port in it,
        the system's own, or one another program listens on is never chosen.
        """
        owners = {port: other for other, port in assigned.items() if port and other != app_id}
        taken = set(owners)
        if self._system_port:
            taken.add(self._system_port)
        wanted = [("manifest", manifest_port), ("previous port map", self._sticky.get(app_id))]
        if current:  # a reload keeps its port unless the manifest now asks for another
            wanted.insert(1, ("current", current))
        for source, port in wanted:
            if port is None:
                continue
            loud = log.warning if source == "manifest" else log.info
            if port in taken:
                loud(
                    "app %s: port %d (%s) is already assigned to %s; using a free port",
                    app_id,
                    port,
                    source,
                    owners.get(port, "the system"),
                )
            elif port != current and not port_is_free(port):
                loud(
                    "app %s: port %d (%s) is in use by another program; using a free port",
                    app_id,
                    port,
                    source,
                )
            else:
                return port
        # Keep clear of ports other apps remember from the previous run, too.
        return free_port(taken | {p for i, p in self._sticky.items() if i != app_id})


__all__ = ["PortMap", "free_port", "port_is_free", "read_port_map", "write_json_atomic"]
