"""One app's process, from spawn to reap (the restarter half of the launcher).

:mod:`aios.launcher` knows the registry of apps (folders, manifests, ports,
routes); this module knows processes and nothing about manifests:

* :func:`app_env` builds an app's environment without the system's secrets;
* :func:`spawn_process` starts ``argv`` in its own process group, output appended to a log;
* :func:`wait_ready` polls until the port accepts a TCP connection;
* :func:`stop_process` escalates SIGTERM → grace → SIGKILL over the whole
  group (and descendants that left it) and says which path ran;
* :class:`RestartPolicy` decides whether and when a crashed app comes back;
* :class:`AppSupervisor` runs that loop for one app in one thread and reports
  status changes through a callback, like jupyter_client's restarter.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path

import psutil

log = logging.getLogger(__name__)

READY_POLL_INTERVAL = 0.02
"""Seconds between readiness probes of a starting app."""
KILL_WAIT = 5.0
"""Seconds to wait for SIGKILLed processes to disappear."""
LOG_TAIL_LINES = 20
LOG_ROTATE_BYTES = 5_000_000
"""An app log larger than this is moved to ``<id>.log.1`` at the next launch."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
_SYSTEM_PREFIXES = ("AIOS_", "DEEPSEEK_")
"""The system's own settings (LLM keys, its launch token) never reach an app."""


class AppStatus(StrEnum):
    INVALID = "invalid"
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass(frozen=True)
class RestartPolicy:
    """When a crashed app is restarted, and when the launcher gives up on it.

    A run that lasted ``stable_start_time`` seconds or more resets the crash
    count; more than ``restart_limit`` crashes in a row (without such a run)
    marks the app failed. Restart ``n`` waits ``backoff_initial * 2**(n-1)``
    seconds, at most ``backoff_max``.
    """

    restart_limit: int = 3
    stable_start_time: float = 10.0
    backoff_initial: float = 0.5
    backoff_max: float = 8.0

    def __post_init__(self) -> None:
        if self.restart_limit < 0:
            raise ValueError(f"restart_limit must be >= 0 (got {self.restart_limit})")
        if self.stable_start_time < 0 or self.backoff_initial < 0 or self.backoff_max < 0:
            raise ValueError("restart policy times must not be negative")

    def count_crash(self, crashes: int, run_seconds: float) -> int:
        """The crash count after a run of ``run_seconds`` ended in a crash."""
        return 1 if run_seconds >= self.stable_start_time else crashes + 1

    def gives_up(self, crashes: int) -> bool:
        return crashes > self.restart_limit

    def backoff(self, crashes: int) -> float:
        return min(self.backoff_max, self.backoff_initial * 2 ** max(crashes - 1, 0))


# ----------------------------------------------------------------- environment


def scrub_env(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``environ`` without anything that looks like a secret or a system setting."""
    return {k: v for k, v in environ.items()
            if not _SECRET_NAME.search(k) and not k.upper().startswith(_SYSTEM_PREFIXES)}


def app_env(environ: Mapping[str, str], *, app_id: str, port: int, system_url: str,
            token: str, workdir: Path, project_root: Path) -> dict[str, str]:
    """The environment of one app launch (DESIGN §4)."""
    env = scrub_env(environ)
    path = [str(project_root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update({
        "APP_PORT": str(port),
        "AIOS_APP_ID": app_id,
        "AIOS_SYSTEM_URL": system_url,
        "AIOS_APP_TOKEN": token,
        "AIOS_WORKDIR": str(workdir),
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(path)),
    })
    return env


# --------------------------------------------------------------------- process


def log_line(log_path: Path, text: str) -> None:
    """Append one marked line of the launcher's own to an app's log."""
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    try:
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(f"===== {stamp} {text} =====\n")
    except OSError as e:
        log.warning("cannot write to %s: %s", log_path, e)


def log_tail(log_path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log ('' when there is none)."""
    if log_path is None:
        return ""
    try:
        with open(log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            data = f.read()
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def spawn_process(argv: list[str], *, cwd: Path, env: dict[str, str], log_path: Path,
                  header: str) -> subprocess.Popen[bytes]:
    """Start ``argv`` as the leader of a new session, stdout+stderr appended to ``log_path``.

    Raises OSError when the program cannot be started.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if log_path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(log_path, log_path.with_name(log_path.name + ".1"))
    except FileNotFoundError:
        pass
    log_line(log_path, header)
    with open(log_path, "ab") as out:
        # Own session = own process group, so stopping reaches the app's children too.
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True)


def port_accepts(port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float,
               cancel: threading.Event) -> str:
    """Poll until the app listens: ``ready``, ``exited``, ``timeout`` or ``cancelled``."""
    deadline = time.monotonic() + timeout
    while True:
        if cancel.is_set():
            return "cancelled"
        if proc.poll() is not None:
            return "exited"
        if port_accepts(port):
            # The port might belong to a stranger that grabbed it first; only a live app counts.
            return "ready" if proc.poll() is None else "exited"
        if time.monotonic() >= deadline:
            return "timeout"
        cancel.wait(READY_POLL_INTERVAL)


def _gone(p: psutil.Process) -> bool:
    try:
        return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_members(pgid: int) -> list[psutil.Process]:
    """Live processes of a group (orphans included, which ``children()`` cannot see)."""
    members = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and not _gone(p):
                members.append(p)
        except (OSError, psutil.Error):
            continue
    return members


def _reap(procs: list[psutil.Process], timeout: float = KILL_WAIT) -> None:
    """SIGKILL ``procs`` and wait until they are gone: a signal is delivered, not awaited."""
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    deadline = time.monotonic() + timeout
    while not all(_gone(p) for p in procs):
        if time.monotonic() >= deadline:
            log.error("processes survived SIGKILL: %s", [p.pid for p in procs if not _gone(p)])
            return
        time.sleep(0.01)


def kill_group(pgid: int) -> None:
    """SIGKILL whatever is left in a process group (after its leader died) and wait for it."""
    _signal_group(pgid, signal.SIGKILL)
    _reap(_group_members(pgid))


def stop_process(proc: subprocess.Popen[bytes], grace: float) -> str:
    """Stop an app and everything it started; return the path that ran.

    ``exited`` (it was already gone), ``terminated`` (SIGTERM sufficed) or
    ``killed`` (something was still alive after ``grace`` seconds). The
    descendants are listed before signalling because the ones that left the
    group (setsid) are only findable while their parent lives. Returns once
    every one of them is gone.
    """
    try:
        tracked = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        tracked = []
    known = {p.pid for p in tracked}
    tracked += [p for p in _group_members(proc.pid) if p.pid != proc.pid and p.pid not in known]
    if proc.poll() is not None and all(_gone(p) for p in tracked):
        return "exited"
    _signal_group(proc.pid, signal.SIGTERM)
    for p in tracked:
        try:
            p.terminate()
        except psutil.Error:
            pass
    deadline = time.monotonic() + grace
    path = "terminated"
    while proc.poll() is None or not all(_gone(p) for p in tracked):
        if time.monotonic() >= deadline:
            path = "killed"
            break
        time.sleep(0.02)
    # Always sweep the group: members started during the grace period are not in the list.
    _signal_group(proc.pid, signal.SIGKILL)
    known = {p.pid for p in tracked}
    _reap([p for p in tracked if not _gone(p)]
          + [p for p in _group_members(proc.pid) if p.pid not in known and p.pid != proc.pid])
    try:
        proc.wait(timeout=KILL_WAIT)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        log.error("process %d did not die after SIGKILL", proc.pid)
    return path


# ------------------------------------------------------------------ supervisor

StatusCallback = Callable[[AppStatus, "str | None"], None]


class AppSupervisor:
    """Runs one app in a thread: spawn, wait until ready, watch, restart per policy.

    ``spawn`` starts one instance (the launcher builds argv, env and token);
    ``on_status(status, error)`` reports RUNNING / RESTARTING / FAILED. The
    supervisor never reports STOPPED: whoever calls :meth:`stop` decides what
    the app becomes next (stopped, restarted, removed).
    """

    def __init__(self, app_id: str, port: int, *, spawn: Callable[[], subprocess.Popen[bytes]],
                 policy: RestartPolicy, start_timeout: float, grace: float, log_path: Path,
                 on_status: StatusCallback):
        self.app_id = app_id
        self.port = port
        self._spawn = spawn
        self._policy = policy
        self._start_timeout = start_timeout
        self._grace = grace
        self._log_path = log_path
        self._on_status = on_status
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._settled = threading.Event()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._run, name=f"app-{app_id}", daemon=True)
        self.restarts = 0
        self.spawned_at: float | None = None
        self.ready_at: float | None = None

    @property
    def settled(self) -> bool:
        """The first start has finished: the app ran, failed, or was stopped."""
        return self._settled.is_set()

    def start(self) -> None:
        self._thread.start()

    def wait_settled(self, timeout: float | None = None) -> bool:
        return self._settled.wait(timeout)

    def stop(self) -> str:
        """Stop the app for good (idempotent); return the path that ran."""
        with self._lock:
            self._stopping.set()
            proc = self._proc
        path = "not running" if proc is None else stop_process(proc, self._grace)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        self._settled.set()
        if proc is not None:
            code = proc.returncode
            log_line(self._log_path, f"stopped: {path} (exit code {code})")
            log.info("app %s stopped: %s (exit code %s)", self.app_id, path, code)
        return path

    # ----------------------------------------------------------------- thread

    def _report(self, status: AppStatus, error: str | None = None) -> None:
        if self._stopping.is_set():
            return
        try:
            self._on_status(status, error)
        except Exception:  # noqa: BLE001 - a listener's bug must not kill supervision
            log.exception("status callback failed for app %s", self.app_id)

    def _run(self) -> None:
        crashes = 0
        try:
            while True:
                with self._lock:
                    if self._stopping.is_set():
                        return
                    began = time.monotonic()
                    try:
                        proc = self._proc = self._spawn()
                    except OSError as e:
                        self._report(AppStatus.FAILED, f"could not start the app: {e}")
                        return
                    self.spawned_at = began
                outcome = wait_ready(proc, self.port, self._start_timeout, self._stopping)
                if outcome == "cancelled":
                    return
                if outcome == "timeout":
                    stop_process(proc, self._grace)
                    log_line(self._log_path, "killed: no connection accepted in time")
                    self._report(AppStatus.FAILED,
                                 f"did not accept connections on port {self.port} within "
                                 f"{self._start_timeout:g} s; last log lines:\n"
                                 f"{log_tail(self._log_path)}")
                    return
                if outcome == "ready":
                    self.ready_at = time.monotonic()
                    self._report(AppStatus.RUNNING)
                    self._settled.set()
                    proc.wait()
                if self._stopping.is_set():
                    return
                # The app died on its own: clear its leftovers (they may hold the port).
                kill_group(proc.pid)
                crashes = self._policy.count_crash(crashes, time.monotonic() - began)
                log_line(self._log_path, f"exited with code {proc.returncode}")
                log.warning("app %s exited with code %s (crash %d)", self.app_id,
                            proc.returncode, crashes)
                if self._policy.gives_up(crashes):
                    self._report(AppStatus.FAILED, f"crashed {crashes} times; last log lines:\n"
                                                   f"{log_tail(self._log_path)}")
                    return
                self.restarts += 1
                self._report(AppStatus.RESTARTING)
                if self._stopping.wait(self._policy.backoff(crashes)):
                    return
        finally:
            self._settled.set()
