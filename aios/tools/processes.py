"""The table of apps' background processes (``process_start(background=true)``).

A long-lived part of the system, like the launcher: :class:`ProcessTable`
tracks every background process per app, caps how many each app may run,
and stops them (whole process groups, :func:`aios.host.procgroup.stop`) when
the app or the system stops. The ``process_start`` tool
(:mod:`aios.tools.process`) reaches it through
:attr:`aios.tools.base.ToolContext.processes`; this module knows nothing
about tools.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from aios.errors import ToolFailed, ToolRefused
from aios.host import procgroup
from aios.host.os_sandbox import PidsCgroup
from aios.host.procgroup import Stopped

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL when a background process is stopped."""


@dataclass
class TrackedProcess:
    app: str
    proc: subprocess.Popen[bytes]
    log: str
    cmd: str
    started: float
    cgroup: PidsCgroup | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def info(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "log": self.log,
            "cmd": self.cmd,
            "running": not procgroup.has_exited(self.proc),
            "started": self.started,
        }


Launch = Callable[[], TrackedProcess]


class ProcessTable:
    """Background processes per app: a cap per app, stop one, stop an app's, stop all.

    Processes are started from one long-lived thread: bwrap's
    ``--die-with-parent`` ties a sandbox to the *thread* that forked it, and
    a request thread of the server ends as soon as it has answered.
    """

    def __init__(self, max_per_app: int, *, stop_grace: float = STOP_GRACE_SECONDS) -> None:
        self.max_per_app = max_per_app
        self.stop_grace = stop_grace
        self._procs: dict[int, TrackedProcess] = {}
        self._lock = threading.RLock()
        self._spawner: ThreadPoolExecutor | None = None
        self._closed = False

    def reconfigure(self, max_per_app: int) -> None:
        """A new cap per app (settings changed); processes already running keep running."""
        with self._lock:
            self.max_per_app = max_per_app

    def start(self, app: str, launch: Launch) -> TrackedProcess:
        """Run ``launch`` (which starts the process) if the app is under its cap."""
        with self._lock:
            if self._closed:
                raise ToolFailed("the system is shutting down; no new background processes")
            self._prune()
            running = [p for p in self._procs.values() if p.app == app]
            if len(running) >= self.max_per_app:
                raise ToolRefused(
                    f"background process limit: app {app!r} already runs {len(running)} "
                    f"(max {self.max_per_app}, tool_sandbox.max_background_processes); "
                    "wait for one to finish or stop it"
                )
            if self._spawner is None:
                self._spawner = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="aios-proc-spawner"
                )
            entry = self._spawner.submit(launch).result()
            self._procs[entry.pid] = entry
            log.info("app %s started background process %d: %s", app, entry.pid, entry.cmd)
            return entry

    def list(self, app: str) -> list[dict[str, Any]]:
        """The app's background processes that are still running."""
        with self._lock:
            self._prune()
            return [p.info() for p in self._procs.values() if p.app == app]

    def stop(self, app: str, pid: int) -> bool:
        """Stop one of the app's processes; False when it has none with that pid."""
        with self._lock:
            entry = self._procs.get(pid)
            if entry is None or entry.app != app:
                return False
            del self._procs[pid]
        self._terminate(entry)
        return True

    def stop_app(self, app: str) -> int:
        """Stop every background process of an app (when it stops); returns how many."""
        with self._lock:
            mine = [p for p in self._procs.values() if p.app == app]
            for p in mine:
                del self._procs[p.pid]
        for p in mine:
            self._terminate(p)
        return len(mine)

    def shutdown(self) -> None:
        """Kill every tracked process group, reap, refuse new starts."""
        with self._lock:
            self._closed = True
            everything = list(self._procs.values())
            self._procs.clear()
            spawner, self._spawner = self._spawner, None
        for p in everything:
            self._terminate(p, grace=0)
        if spawner is not None:
            spawner.shutdown(wait=True)

    # ------------------------------------------------------------ internals

    def _prune(self) -> None:
        for pid, entry in list(self._procs.items()):
            if procgroup.has_exited(entry.proc):
                del self._procs[pid]
                self._terminate(entry, grace=0)

    def _terminate(self, entry: TrackedProcess, grace: float | None = None) -> Stopped:
        """Stop the process and its group (:func:`aios.host.procgroup.stop`), then its cgroup."""
        how = procgroup.stop(entry.proc, self.stop_grace if grace is None else grace)
        if entry.cgroup is not None:
            entry.cgroup.kill_all()  # whatever escaped both the group and the process tree
            entry.cgroup.remove()
        log.info(
            "background process %d of app %s: %s (exit code %s)",
            entry.pid,
            entry.app,
            how,
            entry.proc.returncode,
        )
        return how
