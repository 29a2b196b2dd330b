"""``process_start`` and the table of apps' background processes.

``process_start(cmd, args=[], background=False)``: the same checks and the
same sandbox as ``shell_exec``. In the foreground it runs to completion and
answers like ``shell_exec``. In the background it starts detached in its own
session, writes stdout and stderr to ``<workdir>/.aios/proc_<pid>.log`` (so
the app can read it with ``file_read``) and is tracked per app in the
system's :class:`~aios.tools.processes.ProcessTable` (``ctx.processes``), which
caps how many each app may run and kills them all when the app or the
system stops.

Background processes get the same limits as commands (CPU seconds, memory,
file size, process count) but no timeout. Inside bubblewrap they have no
network either: they suit jobs that work on files (conversions, builds),
not servers.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from typing import Any

from pydantic import Field

from aios.errors import ToolRefused
from aios.tools.base import ToolArgs, ToolContext, ToolOutput, atomic_tool
from aios.tools.processes import Launch, TrackedProcess
from aios.tools.risk import command_line, in_cwd
from aios.tools.sandbox import relative_display
from aios.tools.shell import (
    AIOS_DIR,
    CommandPlan,
    aios_dir,
    new_cgroup,
    plan_command,
    run_command,
    spawn,
)


class ProcessStartArgs(ToolArgs):
    cmd: str = Field(description="The program, or a whole command line when args is empty.")
    args: list[str] = Field(default_factory=list, description="Arguments for the program.")
    background: bool = Field(
        default=False,
        description="Start detached; output goes to a log file in the workdir's .aios folder.",
    )


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
            log_fd = os.open(
                tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd
            )
            cgroup = new_cgroup(plan, 1)
            proc = spawn(
                plan,
                plan.stages[0],
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=log_fd,
                cgroup=cgroup,
            )
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
        return TrackedProcess(
            app=ctx.app_id,
            proc=proc,
            log=shown,
            cmd=plan.display,
            started=time.time(),
            cgroup=cgroup,
        )

    return launch


def _describe(args: dict[str, Any]) -> str:
    cmd = args.get("cmd")
    extra = args.get("args") or []
    line = command_line([cmd, *extra] if extra and isinstance(cmd, str) else cmd)
    return in_cwd(f"{line} &" if args.get("background") else line, args)


@atomic_tool(
    "process_start",
    ProcessStartArgs,
    "Start a program in the app's workdir (same rules as shell_exec). In the "
    "foreground it runs to completion and returns exit_code, stdout, stderr, "
    "truncated; with background=true it returns {pid, log, running} at once and "
    f"writes its output to {AIOS_DIR}/proc_<pid>.log in the workdir.",
    timeout=10,
    risk="high",
    describe=_describe,
    offer_words=("进程", "后台", "启动程序", "process", "background"),
)
def process_start(ctx: ToolContext, args: ProcessStartArgs) -> ToolOutput:
    cmd: str | list[str] = [args.cmd, *args.args] if args.args else args.cmd
    plan = plan_command(ctx, cmd)
    ctx.check_workspace()  # a command writes where it runs: not once the workdir is full
    if not args.background:
        return run_command(ctx, plan, "process_start", None)
    if len(plan.stages) > 1:
        raise ToolRefused(
            f"command policy: a background process is one program, not a pipeline: {plan.display!r}"
        )
    if ctx.processes is None:
        raise ToolRefused("background processes are not available here (no process table)")
    entry = ctx.processes.start(ctx.app_id, _launcher(ctx, plan))
    return ToolOutput(
        {"pid": entry.pid, "log": entry.log, "running": True}, {"os_sandbox": plan.sandbox_name}
    )
