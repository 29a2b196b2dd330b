# Longer than ~500 lines on purpose: one app's process loop (spawn, readiness, liveness, memory,
# restart policy) reads as one state machine.
"""One app's process, from spawn to reap (the restarter half of the launcher).

:mod:`aios.apphost.registry` knows the registry of apps (folders, manifests, ports,
routes); this module knows processes and nothing about manifests:

* :func:`app_env` builds an app's environment without the system's secrets;
* :func:`spawn_process` starts ``argv`` in its own process group; a
  :class:`~aios.apphost.applog.LogPump` thread copies its output into a log that it
  rotates at a size cap while the app runs;
* :func:`wait_ready` waits until the app says it listens: it blocks on the
  readiness pipe whose write end the app inherits (:mod:`aios_sdk.boot`
  writes one byte the moment the app listens), and only probes the port,
  every :data:`READY_POLL_INTERVAL`, for a process spawned without one;
* stopping (SIGTERM → grace → SIGKILL over the whole group and the
  descendants that left it) is :func:`aios.host.procgroup.stop`;
* :class:`RestartPolicy` decides whether and when a crashed app comes back;
* :class:`Liveness` says how a running app is watched: ``GET /health`` probes
  (any HTTP answer counts), ``/handle`` timeouts reported by the controller,
  and the resident memory of its process tree;
* :class:`AppSupervisor` runs that loop for one app in one thread and reports
  status changes through a callback, like jupyter_client's restarter.
"""

from __future__ import annotations

import errno
import http.client
import logging
import os
import re
import select
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from aios.apphost.applog import LogPump, log_line, log_tail, rotate_log
from aios.host import procgroup
from aios.host.procgroup import KILL_WAIT
from aios.names import ENV_APP_ID, ENV_APP_TOKEN, ENV_SYSTEM_URL, ENV_WORKDIR
from aios.protocol import app_secret
from aios_sdk._unix import UnixHTTPConnection, connect_unix

if TYPE_CHECKING:
    from aios.apphost.confinement import Sandbox
    from aios.config import AppsConfig

log = logging.getLogger(__name__)

READY_POLL_INTERVAL = 0.02
"""Seconds between readiness probes of a starting app spawned without a readiness pipe."""
CANCEL_LOOK = 0.5
"""Seconds a wait on the readiness pipe goes without looking at its cancel flag (a stop
also ends the wait at once: killing the app closes the pipe)."""
READY_READ = 64
LIVENESS_PATH = "/health"
MB = 1024 * 1024

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
    IDLE = "idle"
    """Valid and not running: it starts on its next use (``apps.autostart``, ``idle_stop_s``)."""


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
        return min(self.backoff_max, self.backoff_initial * 2.0 ** max(crashes - 1, 0))

    @classmethod
    def from_config(cls, apps: AppsConfig) -> RestartPolicy:
        return cls(
            restart_limit=apps.restart_limit,
            stable_start_time=apps.stable_start_time,
            backoff_initial=apps.backoff_initial,
            backoff_max=apps.backoff_max,
        )


@dataclass(frozen=True)
class Liveness:
    """How a running app is watched, and when it is restarted although it still runs.

    Every ``interval`` seconds: the resident memory of its process tree is
    compared with ``max_memory_mb``, and ``GET /health`` must get an HTTP
    answer within ``timeout`` (any status: the spec's raw-Flask template has
    no such route, and its 404 still proves it serves HTTP); ``failures``
    probes in a row without one, or ``handle_timeouts`` ``/handle`` calls in
    a row that timed out (an HTTP server whose handler hangs), restart it.
    """

    interval: float
    timeout: float
    failures: int
    handle_timeouts: int
    max_memory_mb: int

    @classmethod
    def from_config(cls, apps: AppsConfig) -> Liveness:
        return cls(
            interval=apps.liveness_interval,
            timeout=apps.liveness_timeout,
            failures=apps.liveness_failures,
            handle_timeouts=apps.handle_timeouts,
            max_memory_mb=apps.max_memory_mb,
        )


# ----------------------------------------------------------------- environment


def scrub_env(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``environ`` without anything that looks like a secret or a system setting."""
    return {
        k: v
        for k, v in environ.items()
        if not _SECRET_NAME.search(k) and not k.upper().startswith(_SYSTEM_PREFIXES)
    }


def app_env(
    environ: Mapping[str, str],
    *,
    app_id: str,
    port: int,
    system_url: str,
    token: str,
    workdir: Path,
    project_root: Path,
    launch_secret: str = "",
) -> dict[str, str]:
    """The environment of one app launch (DESIGN §4), with its launch secret (§11)."""
    env = scrub_env(environ)
    path = [str(project_root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env.update(
        {
            "APP_PORT": str(port),
            ENV_APP_ID: app_id,
            ENV_SYSTEM_URL: system_url,
            ENV_APP_TOKEN: token,
            ENV_WORKDIR: str(workdir),
            **({app_secret.LAUNCH_SECRET_ENV: launch_secret} if launch_secret else {}),
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": os.pathsep.join(dict.fromkeys(path)),
        }
    )
    return env


# --------------------------------------------------------------------- process


class AppProcess(subprocess.Popen[bytes]):
    """An app's process, with the :class:`LogPump` that drains its output.

    ``sandbox`` is its confinement (None when unconfined): the supervisor
    reaches the app through its socket and releases it once the process is gone.
    """

    log_pump: LogPump | None = None
    sandbox: Sandbox | None = None
    ready_fd: int | None = None
    """The read end of the readiness pipe (None: no pipe, or the wait is over)."""
    ready_via: str = ""
    """How readiness was learned: ``signal`` (the pipe) or ``probe`` (a connect)."""

    def close_ready(self) -> None:
        fd, self.ready_fd = self.ready_fd, None
        if fd is not None:
            os.close(fd)

    def finish_log(self, timeout: float = KILL_WAIT) -> None:
        """Wait until the pump has written what the app printed before it ended."""
        if self.log_pump is not None and self.log_pump is not threading.current_thread():
            self.log_pump.join(timeout)


def spawn_process(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    header: str,
    log_max_bytes: int,
    preexec: Callable[[], None] | None = None,
    pass_fds: tuple[int, ...] = (),
    ready: tuple[int, int] | None = None,
) -> AppProcess:
    """Start ``argv`` as the leader of a new session, stdout+stderr pumped into ``log_path``.

    ``ready`` is a readiness pipe (:func:`os.pipe`, owned by this call from now on):
    the process inherits its write end, which its environment names
    (``AIOS_READY_FD``), and :func:`wait_ready` blocks on the read end.
    Raises OSError when the program cannot be started.
    """
    ready_r, ready_w = ready if ready is not None else (None, None)
    try:
        proc = _spawn(argv, cwd, env, log_path, header, log_max_bytes, preexec, pass_fds, ready_w)
        proc.ready_fd = ready_r
        return proc
    except BaseException:
        if ready_r is not None:
            os.close(ready_r)
        raise
    finally:
        if ready_w is not None:
            os.close(ready_w)  # the app holds the only write end: its exit is our EOF


def _spawn(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    header: str,
    log_max_bytes: int,
    preexec: Callable[[], None] | None,
    pass_fds: tuple[int, ...],
    ready_w: int | None,
) -> AppProcess:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if log_path.stat().st_size >= log_max_bytes:
            rotate_log(log_path)
    except FileNotFoundError:
        pass
    log_line(log_path, header)
    # Own session = own process group, so stopping reaches the app's children too.
    proc = procgroup.popen(
        argv,
        AppProcess,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        close_fds=True,
        pass_fds=pass_fds if ready_w is None else (*pass_fds, ready_w),
        preexec_fn=preexec,
    )
    assert proc.stdout is not None
    # The pump owns the read end from now on (the file object must not close it too).
    fd = os.dup(proc.stdout.fileno())
    proc.stdout.close()
    proc.stdout = None
    proc.log_pump = LogPump(fd, log_path, log_max_bytes, name=f"log-{log_path.stem}")
    proc.log_pump.start()
    return proc


_LOCAL_SHORTAGE = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""Errors that say the system itself is short of resources, not that the app is dead."""


def answers_http(
    port: int,
    timeout: float,
    path: str = LIVENESS_PATH,
    headers: Mapping[str, str] | None = None,
    socket_path: Path | None = None,
) -> bool | None:
    """Whether an HTTP server on ``port`` answers ``GET path`` (any status) within ``timeout``.

    A confined app is asked on its ``socket_path`` instead. None when the
    probe could not be made (the system is out of file descriptors, say):
    that says nothing about the app.
    """
    conn: http.client.HTTPConnection = (
        http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        if socket_path is None
        else UnixHTTPConnection(str(socket_path), "127.0.0.1", port, timeout)
    )
    try:
        conn.request("GET", path, headers=dict(headers or {}))
        conn.getresponse().read()
        return True
    except OSError as e:
        return None if e.errno in _LOCAL_SHORTAGE else False
    except http.client.HTTPException:
        return False
    finally:
        conn.close()


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants (0 when it is gone)."""
    total = 0
    for p in procgroup.process_tree(pid):
        try:
            total += p.memory_info().rss
        except (OSError, psutil.Error):
            continue
    return total


def port_accepts(port: int, timeout: float = 0.2, socket_path: Path | None = None) -> bool:
    """Whether the app accepts a connection: on ``port``, or on its ``socket_path`` if confined."""
    try:
        if socket_path is not None:
            connect_unix(str(socket_path), timeout).close()
            return True
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def sandbox_of(proc: subprocess.Popen[bytes]) -> Sandbox | None:
    return proc.sandbox if isinstance(proc, AppProcess) else None


def socket_of(proc: subprocess.Popen[bytes]) -> Path | None:
    sandbox = sandbox_of(proc)
    return sandbox.app_socket if sandbox is not None else None


def release(proc: subprocess.Popen[bytes]) -> None:
    """Once ``proc`` is gone: its log is complete and its sandbox (if any) is taken down."""
    if isinstance(proc, AppProcess):
        # never the readiness pipe: the supervisor's thread may be blocked on it (it
        # closes it itself when its wait ends; killing the app ends that wait)
        proc.finish_log()
        sandbox, proc.sandbox = proc.sandbox, None
        if sandbox is not None:
            sandbox.close()


def wait_ready(
    proc: subprocess.Popen[bytes], port: int, timeout: float, cancel: threading.Event
) -> str:
    """Wait until the app listens: ``ready``, ``exited``, ``timeout`` or ``cancelled``.

    A process with a readiness pipe is waited for on it (:func:`_wait_signal`);
    one without, or one that closed the pipe while alive, is probed.
    """
    deadline = time.monotonic() + timeout
    if isinstance(proc, AppProcess) and proc.ready_fd is not None:
        try:
            outcome = _wait_signal(proc, proc.ready_fd, deadline, cancel)
        finally:
            proc.close_ready()
        if outcome != "closed":
            return outcome
    return _wait_probe(proc, port, deadline, cancel)


def _wait_signal(proc: AppProcess, fd: int, deadline: float, cancel: threading.Event) -> str:
    """Block on the readiness pipe; ``closed`` when the app shut it but still runs."""
    while True:
        if cancel.is_set():
            return "cancelled"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        readable, _, _ = select.select([fd], [], [], min(left, CANCEL_LOOK))
        if not readable:
            continue
        data = os.read(fd, READY_READ)
        if cancel.is_set():
            return "cancelled"
        if proc.poll() is not None:
            return "exited"
        if data:
            proc.ready_via = "signal"
            return "ready"
        return "closed"


def _wait_probe(
    proc: subprocess.Popen[bytes], port: int, deadline: float, cancel: threading.Event
) -> str:
    """Probe the port every :data:`READY_POLL_INTERVAL` until the app accepts."""
    while True:
        if cancel.is_set():
            return "cancelled"
        if proc.poll() is not None:
            return "exited"
        if port_accepts(port, socket_path=socket_of(proc)):
            # The port might belong to a stranger that grabbed it first; only a live app counts.
            if proc.poll() is not None:
                return "exited"
            if isinstance(proc, AppProcess):
                proc.ready_via = "probe"
            return "ready"
        if time.monotonic() >= deadline:
            return "timeout"
        cancel.wait(READY_POLL_INTERVAL)


# ------------------------------------------------------------------ supervisor

StatusCallback = Callable[[AppStatus, "str | None"], None]


class AppSupervisor:
    """Runs one app in a thread: spawn, wait until ready, watch, restart per policy.

    ``spawn`` starts one instance (the launcher builds argv, env and token);
    ``on_status(status, error)`` reports RUNNING / RESTARTING / FAILED. The
    supervisor never reports STOPPED: whoever calls :meth:`stop` decides what
    the app becomes next (stopped, restarted, removed).
    """

    def __init__(
        self,
        app_id: str,
        port: int,
        *,
        spawn: Callable[[], subprocess.Popen[bytes]],
        policy: RestartPolicy,
        start_timeout: float,
        grace: float,
        log_path: Path,
        on_status: StatusCallback,
        liveness: Liveness,
        probe_headers: Callable[[], Mapping[str, str]] | None = None,
        on_settled: Callable[[], None] | None = None,
    ):
        self.app_id = app_id
        self._on_settled = on_settled
        """Called (from any thread) each time the app settles: the launcher's waits wake."""
        self._probe_headers = probe_headers
        """Headers of the liveness probe (the current launch's secret)."""
        self.port = port
        self._spawn = spawn
        self._policy = policy
        self._liveness = liveness
        self._wake = threading.Event()
        self._handle_timeouts = 0
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

    def note_handle(self, timed_out: bool) -> None:
        """The controller's word on one ``/handle`` call: it timed out, or it was answered."""
        with self._lock:
            self._handle_timeouts = self._handle_timeouts + 1 if timed_out else 0
        if timed_out:
            self._wake.set()

    def stop(self) -> str:
        """Stop the app for good (idempotent); return the path that ran."""
        with self._lock:
            self._stopping.set()
            proc = self._proc
        self._wake.set()
        path = "not running" if proc is None else procgroup.stop(proc, self._grace)
        if proc is not None:
            release(proc)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        self._settle()
        if proc is not None:
            code = proc.returncode
            log_line(self._log_path, f"stopped: {path} (exit code {code})")
            log.info("app %s stopped: %s (exit code %s)", self.app_id, path, code)
        return path

    # ----------------------------------------------------------------- thread

    def _settle(self) -> None:
        self._settled.set()
        if self._on_settled is not None:
            self._on_settled()

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
                    self._handle_timeouts = 0
                    try:
                        proc = self._proc = self._spawn()
                    except (OSError, subprocess.SubprocessError) as e:
                        self._report(AppStatus.FAILED, f"could not start the app: {e}")
                        return
                    self.spawned_at = began
                outcome = wait_ready(proc, self.port, self._start_timeout, self._stopping)
                if outcome == "cancelled":
                    return
                if outcome == "timeout":
                    procgroup.stop(proc, self._grace)
                    release(proc)
                    log_line(self._log_path, "killed: no connection accepted in time")
                    self._report(
                        AppStatus.FAILED,
                        f"did not accept connections on port {self.port} within "
                        f"{self._start_timeout:g} s; last log lines:\n"
                        f"{log_tail(self._log_path)}",
                    )
                    return
                reason: str | None = None
                if outcome == "ready":
                    self.ready_at = time.monotonic()
                    self._log_ready(proc, self.ready_at - began)
                    self._report(AppStatus.RUNNING)
                    self._settle()
                    reason = self._watch(proc)
                if self._stopping.is_set():
                    return
                if reason is not None:
                    # Alive but not doing its job: stop it, then count it like a crash.
                    log.warning("app %s %s; stopping it", self.app_id, reason)
                    procgroup.stop(proc, self._grace)
                # The app died on its own: clear its leftovers (they may hold the port).
                procgroup.kill_group(proc.pid)
                release(proc)
                crashes = self._policy.count_crash(crashes, time.monotonic() - began)
                log_line(
                    self._log_path,
                    f"killed: it {reason}" if reason else f"exited with code {proc.returncode}",
                )
                log.warning(
                    "app %s exited with code %s (crash %d)", self.app_id, proc.returncode, crashes
                )
                if self._policy.gives_up(crashes):
                    what = (
                        f"it {reason} ({crashes} times in a row)"
                        if reason
                        else f"crashed {crashes} times"
                    )
                    self._report(
                        AppStatus.FAILED, f"{what}; last log lines:\n{log_tail(self._log_path)}"
                    )
                    return
                self.restarts += 1
                self._report(AppStatus.RESTARTING, f"restarting: it {reason}" if reason else None)
                if self._stopping.wait(self._policy.backoff(crashes)):
                    return
        finally:
            self._settle()

    def _log_ready(self, proc: subprocess.Popen[bytes], seconds: float) -> None:
        via = proc.ready_via if isinstance(proc, AppProcess) else "probe"
        how = "it signalled that it listens" if via == "signal" else "it accepted a connection"
        log_line(self._log_path, f"ready after {seconds * 1000:.0f} ms: {how}")

    def _watch(self, proc: subprocess.Popen[bytes]) -> str | None:
        """Watch a running app until it exits (None) or must be restarted (the reason why)."""
        live = self._liveness
        exited = threading.Event()

        def wait_exit() -> None:
            proc.wait()
            exited.set()
            self._wake.set()

        threading.Thread(target=wait_exit, name=f"app-{self.app_id}-wait", daemon=True).start()
        misses = 0
        answered = time.monotonic()
        next_probe = answered + live.interval
        while True:
            self._wake.wait(max(0.0, next_probe - time.monotonic()))
            self._wake.clear()
            if exited.is_set() or self._stopping.is_set():
                return None
            with self._lock:
                timeouts = self._handle_timeouts
            if timeouts >= live.handle_timeouts:
                return f"did not answer /handle in time {timeouts} times in a row"
            if time.monotonic() < next_probe:
                continue
            rss = tree_rss(proc.pid)
            if rss > live.max_memory_mb * MB:
                return f"used more than {live.max_memory_mb} MB of memory ({rss // MB} MB)"
            sandbox = sandbox_of(proc)
            limit = sandbox.limit_reached(proc.pid) if sandbox is not None else None
            if limit is not None:
                log.warning("app %s %s", self.app_id, limit)
                log_line(self._log_path, f"limit: it {limit}")
                self._report(AppStatus.RUNNING, f"it {limit}")
            alive = answers_http(
                self.port,
                live.timeout,
                headers=(self._probe_headers() if self._probe_headers is not None else None),
                socket_path=socket_of(proc),
            )
            if alive:
                misses, answered = 0, time.monotonic()
            elif alive is False:
                misses += 1
                if misses >= live.failures:
                    return (
                        f"did not answer GET {LIVENESS_PATH} for "
                        f"{time.monotonic() - answered:.1f} s ({misses} probes in a row)"
                    )
            next_probe = time.monotonic() + live.interval
