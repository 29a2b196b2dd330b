"""``process_start`` (spec §7.2) and the table of apps' background processes.

``process_start(cmd, args=[], background=False)``: the same checks and the
same sandbox as ``shell_exec``. In the foreground it runs to completion and
answers like ``shell_exec``. In the background it starts detached in its own
session, writes stdout and stderr to ``<workdir>/.aios/proc_<pid>.log`` (so
the app can read it with ``file_read``) and is tracked per app in a
:class:`ProcessTable`, which caps how many each app may run and kills them
all when the app or the system stops.

Background processes get the same limits as commands (CPU seconds, memory,
file size, process count) but no timeout. Inside bubblewrap they have no
network either: they suit jobs that work on files (conversions, builds),
not servers.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from aios.errors import ToolFailed, ToolRefused
from aios.os_sandbox import PidsCgroup
from aios.sandbox import relative_display
from aios.tools.base import ToolArgs, ToolContext, ToolOutput, atomic_tool
from aios.tools.shell import (
    AIOS_DIR,
    CommandPlan,
    aios_dir,
    has_exited,
    kill_group,
    new_cgroup,
    plan_command,
    run_command,
    spawn,
)

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 2.0
"""Between SIGTERM and SIGKILL when a background process is stopped."""


class ProcessStartArgs(ToolArgs):
    cmd: str = Field(description="The program, or a whole command line when args is empty.")
    args: list[str] = Field(default_factory=list, description="Arguments for the program.")
    background: bool = Field(default=False,
                             description="Start detached; output goes to a log file in the "
                                         "workdir's .aios folder.")


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
        return {"pid": self.pid, "log": self.log, "cmd": self.cmd,
                "running": not has_exited(self.proc), "started": self.started}


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
                    "wait for one to finish or stop it")
            if self._spawner is None:
                self._spawner = ThreadPoolExecutor(max_workers=1,
                                                   thread_name_prefix="aios-proc-spawner")
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
            if has_exited(entry.proc):
                del self._procs[pid]
                self._terminate(entry, grace=0)

    def _terminate(self, entry: TrackedProcess, grace: float | None = None) -> None:
        """SIGTERM the group, wait, SIGKILL the group, reap; say which path ran."""
        grace = self.stop_grace if grace is None else grace
        how = "had exited"
        if not has_exited(entry.proc):
            how = "terminated"
            kill_group(entry.proc, signal.SIGTERM)
            end = time.monotonic() + grace
            while not has_exited(entry.proc) and time.monotonic() < end:
                time.sleep(0.02)
            if not has_exited(entry.proc):
                how = "killed"
        kill_group(entry.proc, signal.SIGKILL)  # and whatever it left in its group
        if entry.cgroup is not None:
            entry.cgroup.kill_all()
        entry.proc.wait()
        if entry.cgroup is not None:
            entry.cgroup.remove()
        log.info("background process %d of app %s %s (exit code %s)", entry.pid, entry.app,
                 how, entry.proc.returncode)


# ---------------------------------------------------------------------- tool


def _launcher(ctx: ToolContext, plan: CommandPlan) -> Launch:
    """The function that starts ``plan`` detached, logging to ``.aios/proc_<pid>.log``."""

    def launch() -> TrackedProcess:
        aios = aios_dir(ctx.policy)
        # Open the folder once, then work relative to it without following
        # links, so a link swapped in by the app cannot redirect the log.
        dir_fd = os.open(aios, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        tmp_name = f"proc_starting_{uuid.uuid4().hex}.log"
        log_fd = -1
        cgroup = None
        try:
            log_fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             0o644, dir_fd=dir_fd)
            cgroup = new_cgroup(plan, 1)
            proc = spawn(plan, plan.stages[0], stdin=subprocess.DEVNULL, stdout=log_fd,
                         stderr=log_fd, cgroup=cgroup)
            name = f"proc_{proc.pid}.log"
            os.rename(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            if log_fd >= 0:
                try:
                    os.unlink(tmp_name, dir_fd=dir_fd)
                except OSError:
                    pass
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            if log_fd >= 0:
                os.close(log_fd)
            os.close(dir_fd)
        shown = relative_display(ctx.policy, aios / name)
        return TrackedProcess(app=ctx.app_id, proc=proc, log=shown, cmd=plan.display,
                              started=time.time(), cgroup=cgroup)

    return launch


@atomic_tool("process_start", ProcessStartArgs,
             "Start a program in the app's workdir (same rules as shell_exec). In the "
             "foreground it runs to completion and returns exit_code, stdout, stderr, "
             "truncated; with background=true it returns {pid, log, running} at once and "
             f"writes its output to {AIOS_DIR}/proc_<pid>.log in the workdir.")
def process_start(ctx: ToolContext, args: ProcessStartArgs) -> ToolOutput:
    cmd: str | list[str] = [args.cmd, *args.args] if args.args else args.cmd
    plan = plan_command(ctx, cmd)
    if not args.background:
        return run_command(ctx, plan, "process_start", None)
    if len(plan.stages) > 1:
        raise ToolRefused("command policy: a background process is one program, not a "
                          f"pipeline: {plan.display!r}")
    if ctx.processes is None:
        raise ToolRefused("background processes are not available here (no process table)")
    entry = ctx.processes.start(ctx.app_id, _launcher(ctx, plan))
    return ToolOutput({"pid": entry.pid, "log": entry.log, "running": True},
                      {"os_sandbox": plan.sandbox_name})
