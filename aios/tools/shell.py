"""``shell_exec``: run one command line in the app's sandbox.

There is no shell. The line is split into words (:func:`aios.tools.sandbox.split_command`
refuses operators and expansions), every pipeline stage passes
:func:`aios.tools.sandbox.check_argv`, programs are found on a fixed PATH, and a
plain ``a | b`` is wired with OS pipes between the stages. Each stage runs
in its own session with rlimits and, where it works, inside bubblewrap
(:mod:`aios.host.os_sandbox`); the network is unshared there, loopback included.

The runner here is shared with ``process_start``. A command may not leave
processes behind: when it exits (or times out, or floods its output) its
process groups are killed (:func:`aios.host.procgroup.signal_group`, before the
stages are reaped, so the group ids are still theirs) and reaped.
"""

from __future__ import annotations

import codecs
import logging
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from aios.errors import ToolFailed, ToolRefused
from aios.host import procgroup
from aios.host.os_sandbox import (
    BWRAP_EXTRA_TASKS,
    SANE_PATH,
    Capabilities,
    Limits,
    PidsCgroup,
    detect,
    fallback_nproc,
    make_preexec,
    visible_in_sandbox,
    wrap_argv,
)
from aios.names import ENV_DIR
from aios.tools.base import ToolArgs, ToolContext, ToolOutput, atomic_tool
from aios.tools.risk import command_line, in_cwd
from aios.tools.sandbox import SandboxPolicy, check_argv, resolve_path, split_command

log = logging.getLogger(__name__)

READ_CHUNK = 65536
POLL_SECONDS = 0.1
PROGRESS_EVERY = 0.5
"""Seconds between two progress reports (the tail of the output) of a running command."""
TAIL_LINES = 6
TAIL_CHARS = 2000
DRAIN_SECONDS = 0.5
"""After the command exits, how long its output may keep arriving (from
processes it left behind) before they are killed."""
OUTPUT_FLOOD_FACTOR = 16
"""Past this many times ``max_output_bytes`` (both streams together) the
command is killed instead of being read and discarded until its timeout."""
AIOS_DIR = ".aios"
"""Folder inside the workdir for the system's files about the app (logs, tmp)."""


class ShellExecArgs(ToolArgs):
    cmd: str | list[str] = Field(
        description="Command line (no shell: no ; && || > < & $( ) or backticks; a plain "
        "'a | b' pipeline is allowed), or an argv list."
    )
    timeout: float | None = Field(
        default=None, gt=0, description="Seconds; capped by the system's limit."
    )
    cwd: str | None = Field(default=None, description="Working directory, relative to the workdir.")


# ------------------------------------------------------------------ the plan


@dataclass
class CommandPlan:
    """A checked command, ready to run."""

    stages: list[list[str]]
    """argv per pipeline stage, programs resolved to absolute paths."""
    display: str
    workdir: Path
    cwd: Path
    limits: Limits
    caps: Capabilities
    in_bwrap: bool
    max_output: int
    """Bytes kept per stream (stdout, stderr)."""
    env: dict[str, str] = field(default_factory=dict)

    @property
    def sandbox_name(self) -> str:
        return "bubblewrap" if self.in_bwrap else "off"


def use_os_sandbox(policy: SandboxPolicy) -> tuple[Capabilities, bool]:
    """The machine's capabilities and whether this app's commands go into bwrap."""
    caps = detect()
    mode = policy.config.os_sandbox
    if mode == "off":
        return caps, False
    if caps.bwrap is None:
        if mode == "bwrap":
            raise ToolRefused(
                f"OS sandbox: config requires bubblewrap (tool_sandbox.os_sandbox "
                f"= 'bwrap') but it is not usable here: {caps.bwrap_problem}"
            )
        return caps, False
    return caps, True


def plan_command(ctx: ToolContext, cmd: str | list[str], cwd: str | None = None) -> CommandPlan:
    """Apply every argv rule; raise ToolRefused naming the rule, or return the plan."""
    policy = ctx.policy
    workdir = policy.workdir
    run_dir = resolve_path(policy, cwd or ".", must_exist=True)
    if not run_dir.is_dir():
        raise ToolRefused(f"cwd {cwd!r} is not a directory")
    stages = split_command(policy, cmd, run_dir)
    for argv in stages:
        check_argv(policy, argv, run_dir)
    caps, in_bwrap = use_os_sandbox(policy)
    resolved = [
        [resolve_program(argv[0], run_dir, workdir, in_bwrap), *argv[1:]] for argv in stages
    ]
    tmpdir = "/tmp" if in_bwrap else str(aios_dir(policy, "tmp"))
    env = {"PATH": SANE_PATH, "HOME": str(workdir), "LANG": "C.UTF-8", "TMPDIR": tmpdir}
    display = cmd if isinstance(cmd, str) else " ".join(cmd)
    return CommandPlan(
        stages=resolved,
        display=display,
        workdir=workdir,
        cwd=run_dir,
        limits=Limits.from_config(policy.config),
        caps=caps,
        in_bwrap=in_bwrap,
        max_output=policy.config.max_output_bytes,
        env=env,
    )


def resolve_program(prog: str, cwd: Path, workdir: Path, in_bwrap: bool) -> str:
    """An absolute path for the program, found on :data:`SANE_PATH` (never the caller's PATH)."""
    if "/" in prog:
        path = Path(prog) if prog.startswith("/") else (cwd / prog)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ToolFailed(f"command not found or not executable: {prog!r}")
    else:
        found = shutil.which(prog, path=SANE_PATH)
        if found is None:
            raise ToolFailed(f"command not found: {prog!r} (searched {SANE_PATH})")
        path = Path(found)
    if in_bwrap and not visible_in_sandbox(path, workdir):
        raise ToolRefused(
            f"OS sandbox: {prog!r} ({path}) is not visible inside the sandbox; "
            "only /usr, /etc and the workdir are"
        )
    return str(path)


def aios_dir(policy: SandboxPolicy, *sub: str) -> Path:
    """``<workdir>/.aios/<sub>``, created; refused if a link makes it leave the workdir."""
    rel = os.path.join(AIOS_DIR, *sub)
    resolve_path(policy, rel).mkdir(parents=True, exist_ok=True)
    return resolve_path(policy, rel)  # again: what was created is what is inside


# ---------------------------------------------------------------- launching


def spawn(
    plan: CommandPlan,
    argv: list[str],
    *,
    stdin: Any,
    stdout: Any,
    stderr: Any,
    cgroup: PidsCgroup | None,
) -> subprocess.Popen[bytes]:
    """Start one stage in its own session, limited, and inside bwrap when on."""
    caps, limits = plan.caps, plan.limits
    if plan.in_bwrap:
        full = wrap_argv(caps, argv, plan.workdir, plan.cwd, plan.env, limits)
        env = {"PATH": SANE_PATH}
        nproc = None  # set inside the user namespace by prlimit (see aios.host.os_sandbox)
    else:
        full, env, nproc = argv, dict(plan.env), fallback_nproc(caps, limits)
    try:
        return procgroup.popen(
            full,
            subprocess.Popen,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=plan.cwd,
            env=env,
            close_fds=True,
            preexec_fn=make_preexec(
                limits, cgroup=cgroup, nproc=nproc, die_with_parent=not plan.in_bwrap
            ),
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise ToolFailed(f"could not start {argv[0]!r}: {e}") from e


def new_cgroup(plan: CommandPlan, stages: int) -> PidsCgroup | None:
    extra = BWRAP_EXTRA_TASKS if plan.in_bwrap else 0
    return PidsCgroup.create(plan.caps.pids_cgroup, plan.limits.max_processes + stages * extra)


# ------------------------------------------------------------------ running


class _Capped:
    """Keeps the first ``cap`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        # A cut in the middle of a UTF-8 sequence drops the partial character
        # instead of showing a replacement mark for it.
        dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return dec.decode(bytes(self.data), final=not self.truncated)


@dataclass
class RunOutcome:
    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool = False
    flooded: bool = False
    cancelled: bool = False
    signal: int | None = None
    process_limit_hit: bool = False

    def result(self) -> dict[str, Any]:
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "truncated": self.truncated,
        }


def run_plan(
    plan: CommandPlan,
    timeout: float,
    cancel: threading.Event | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutcome:
    """Run every stage wired by pipes; capture, cap, time out, clean up."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ours = {out_w, err_w}  # our copies of the children's ends, closed once they run
    procs: list[subprocess.Popen[bytes]] = []
    cgroup = new_cgroup(plan, len(plan.stages))
    try:
        stdin = subprocess.DEVNULL
        for i, argv in enumerate(plan.stages):
            if i == len(plan.stages) - 1:
                stdout = out_w
            else:
                next_r, stdout = os.pipe()
                ours |= {next_r, stdout}
            procs.append(spawn(plan, argv, stdin=stdin, stdout=stdout, stderr=err_w, cgroup=cgroup))
            for fd in (stdin, stdout):
                if fd in ours and fd not in (out_w, err_w):
                    os.close(fd)
                    ours.discard(fd)
            if i < len(plan.stages) - 1:
                stdin = next_r
    except BaseException:
        for p in procs:
            procgroup.signal_group(p.pid, signal.SIGKILL)
            p.wait()
            procgroup.forget(p.pid)
        for fd in (out_r, err_r, *ours):
            os.close(fd)
        if cgroup is not None:
            cgroup.remove()
        raise
    for fd in ours:
        os.close(fd)
    return _collect(plan, procs, cgroup, out_r, err_r, timeout, cancel, progress)


def _collect(
    plan: CommandPlan,
    procs: list[subprocess.Popen[bytes]],
    cgroup: PidsCgroup | None,
    out_r: int,
    err_r: int,
    timeout: float,
    cancel: threading.Event | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutcome:
    streams = {out_r: _Capped(plan.max_output), err_r: _Capped(plan.max_output)}
    reported, shown = time.monotonic(), 0
    flood_limit = plan.max_output * OUTPUT_FLOOD_FACTOR
    sel = selectors.DefaultSelector()
    for fd in streams:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    timed_out = flooded = cancelled = False
    exited_at: float | None = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if cancel is not None and cancel.is_set():
                cancelled = True  # the user stopped the run: kill it now (finally below)
                break
            if exited_at is None and all(procgroup.has_exited(p) for p in procs):
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_SECONDS:
                break  # something the command left behind holds the pipe open
            for key, _ in sel.select(min(deadline - now, POLL_SECONDS)):
                _read_into(sel, key.fd, streams[key.fd])
            seen = sum(s.total for s in streams.values())
            if progress is not None and seen != shown and now - reported >= PROGRESS_EVERY:
                reported, shown = now, seen
                progress({"tail": _tail(streams[out_r], streams[err_r]), "bytes": seen})
            if sum(s.total for s in streams.values()) > flood_limit:
                flooded = True
                break
        if not timed_out and not flooded and not cancelled:
            timed_out = not _wait_exited(procs, deadline)
    finally:
        # Leftovers and, on timeout or flood, the command itself: whole groups.
        for p in procs:
            procgroup.signal_group(p.pid, signal.SIGKILL)
        if cgroup is not None:
            cgroup.kill_all()
        for p in procs:
            p.wait()
            procgroup.forget(p.pid)
        _drain(sel, streams)
        sel.close()
        os.close(out_r)
        os.close(err_r)
        hit = cgroup.hit_limit() if cgroup is not None else False
        if cgroup is not None:
            cgroup.remove()
    code, sig = _exit_status(procs[-1].returncode, plan.in_bwrap)
    out, err = streams[out_r], streams[err_r]
    return RunOutcome(
        exit_code=code,
        stdout=out.text(),
        stderr=err.text(),
        truncated=out.truncated or err.truncated,
        timed_out=timed_out,
        flooded=flooded,
        cancelled=cancelled,
        signal=sig,
        process_limit_hit=hit,
    )


def _tail(out: _Capped, err: _Capped) -> str:
    """The last lines a running command printed (stdout, then stderr), for its progress."""
    text = (out.text() + err.text())[-TAIL_CHARS:]
    return "\n".join(text.splitlines()[-TAIL_LINES:])


def _wait_exited(procs: list[subprocess.Popen[bytes]], deadline: float) -> bool:
    """Wait (without reaping) until every stage has exited; False at the deadline."""
    delay = 0.0005  # an exit usually follows the pipes' EOF within microseconds
    while not all(procgroup.has_exited(p) for p in procs):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, POLL_SECONDS / 2)
    return True


def _read_into(sel: selectors.BaseSelector, fd: int, sink: _Capped) -> None:
    try:
        chunk = os.read(fd, READ_CHUNK)
    except BlockingIOError:
        return
    if chunk:
        sink.feed(chunk)
    else:
        sel.unregister(fd)


def _drain(sel: selectors.BaseSelector, streams: dict[int, _Capped]) -> None:
    """Whatever is still buffered in the pipes once every writer is dead."""
    end = time.monotonic() + DRAIN_SECONDS
    while sel.get_map() and time.monotonic() < end:
        for key, _ in sel.select(POLL_SECONDS):
            _read_into(sel, key.fd, streams[key.fd])


def _exit_status(returncode: int | None, in_bwrap: bool) -> tuple[int, int | None]:
    """Shell-style exit code (128+N for signal N) and the signal, if one killed it."""
    if returncode is None:
        return -1, None
    if returncode < 0:
        return 128 - returncode, -returncode
    # bwrap reports its child's death by signal N as exit code 128+N.
    if in_bwrap and 128 < returncode < 128 + 65:
        try:
            return returncode, signal.Signals(returncode - 128).value
        except ValueError:
            pass
    return returncode, None


def describe_signal(sig: int, limits: Limits) -> str:
    name = signal.Signals(sig).name
    why = {
        signal.SIGXCPU: f"CPU time limit of {limits.cpu_seconds} s",
        signal.SIGXFSZ: f"file size limit of {limits.max_file_bytes} bytes",
        signal.SIGKILL: f"CPU time limit of {limits.cpu_seconds} s, or killed",
        signal.SIGSEGV: f"possibly the memory limit of {limits.memory_mb} MB",
        signal.SIGABRT: f"possibly the memory limit of {limits.memory_mb} MB",
        signal.SIGBUS: f"possibly the memory limit of {limits.memory_mb} MB",
    }.get(signal.Signals(sig))
    return f"killed by {name}" + (f" ({why})" if why else "")


def finish(plan: CommandPlan, outcome: RunOutcome, timeout: float) -> ToolOutput:
    """The tool's answer: ok only for exit code 0, otherwise ToolFailed keeping the output."""
    meta: dict[str, Any] = {"os_sandbox": plan.sandbox_name}
    result = outcome.result()
    if outcome.process_limit_hit:
        meta["process_limit_hit"] = True
    if outcome.cancelled:
        raise ToolFailed("cancelled by the user; process group killed", result=result, meta=meta)
    if outcome.timed_out:
        raise ToolFailed(
            f"timed out after {timeout:g}s; process group killed", result=result, meta=meta
        )
    if outcome.flooded:
        limit = plan.max_output * OUTPUT_FLOOD_FACTOR
        raise ToolFailed(
            f"output flood: more than {limit} bytes of output; process group killed",
            result=result,
            meta=meta,
        )
    if outcome.signal is not None:
        meta["signal"] = signal.Signals(outcome.signal).name
    if outcome.exit_code != 0:
        msg = f"exit code {outcome.exit_code}"
        if outcome.signal is not None:
            msg += f": {describe_signal(outcome.signal, plan.limits)}"
        if outcome.process_limit_hit:
            msg += f" (the limit of {plan.limits.max_processes} processes was reached)"
        raise ToolFailed(msg, result=result, meta=meta)
    return ToolOutput(result, meta)


def run_command(
    ctx: ToolContext, plan: CommandPlan, tool: str, requested_timeout: float | None
) -> ToolOutput:
    timeout = ctx.timeout(tool, requested_timeout)
    outcome = run_plan(plan, timeout, ctx.cancel, ctx.progress)
    return finish(plan, outcome, timeout)


@atomic_tool(
    "shell_exec",
    ShellExecArgs,
    "Run a command line in the app's workdir without a shell (whitelisted programs; "
    "a plain 'a | b' pipeline is allowed). Returns exit_code, stdout, stderr, "
    "truncated; a non-zero exit code is an error that keeps the output.",
    timeout=60,
    risk="high",
    describe=lambda args: in_cwd(command_line(args.get("cmd")), args),
    offer_words=(
        "命令",
        "终端",
        "执行",
        "运行",
        "脚本",
        "command",
        "shell",
        "terminal",
        "run ",
        "script",
        "python",
    ),  # fmt: skip
)
def shell_exec(ctx: ToolContext, args: ShellExecArgs) -> ToolOutput:
    plan = plan_command(ctx, args.cmd, args.cwd)
    ctx.check_workspace()  # a command writes where it runs: not once the workdir is full
    return run_command(ctx, plan, "shell_exec", args.timeout)


__all__ = [
    ENV_DIR,
    "CommandPlan",
    "RunOutcome",
    "ShellExecArgs",
    "aios_dir",
    "finish",
    "new_cgroup",
    "plan_command",
    "run_command",
    "run_plan",
    "shell_exec",
    "spawn",
]
