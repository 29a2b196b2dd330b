"""Fault injection against the real system: ``desktop_app.py --headless`` as a
subprocess with a temp data dir and a temp apps dir of fixture apps
(``tests/fixtures/apps_faults/``, steered by ``behave.json``).

Shared fixtures and helpers come first; every test starts its own system.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import queue
import random
import resource
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from tests.util import desktop_argv, fill_disk, small_tmpfs, wait_for

ROOT = Path(__file__).resolve().parent.parent.parent
FAULT_APPS = ROOT / "tests" / "fixtures" / "apps_faults"
TOKEN = "fault-injection-token"
READY_TIMEOUT = 60.0
"""Seconds a start may take on a loaded 2-core machine before the test gives up."""
EXIT_DEADLINE = 10.0
"""Seconds from a stop signal to the process' exit: the apps' stop grace (3 s) and some."""
CLIENTS = 10


# ------------------------------------------------------------------ helpers


def make_apps(root: Path, modes: dict[str, str]) -> Path:
    """An apps dir with one copy of the fixture app per id, each in its ``mode``."""
    apps = root / "apps"
    for app_id, mode in modes.items():
        shutil.copytree(FAULT_APPS / "faulty", apps / app_id)
        (apps / app_id / "behave.json").write_text(json.dumps({"mode": mode}))
    apps.mkdir(parents=True, exist_ok=True)
    return apps


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


_TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())


def signal_thread(pid: int, tid: int, sig: signal.Signals) -> None:
    """Deliver ``sig`` to one thread of another process (tgkill): the hard case, where
    the kernel hands a process signal to a worker thread, made deterministic."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_TGKILL, pid, tid, int(sig)) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {tid}) failed")


class Desktop:
    """One ``desktop_app.py --headless`` process and what it printed."""

    def __init__(
        self,
        tmp: Path,
        apps: Path,
        *,
        config: dict[str, Any] | None = None,
        preexec: Callable[[], None] | None = None,
    ):
        self.data = tmp / "data"
        tmp.mkdir(parents=True, exist_ok=True)
        cfg = tmp / "config.json"
        raw: dict[str, Any] = {
            "handle_timeout": 5,
            "llm": {"api_key": ""},
            "apps": {"autostart": "all"},  # the apps run from the start, as the faults need
        }
        for key, value in (config or {}).items():
            both = isinstance(value, dict) and isinstance(raw.get(key), dict)
            raw[key] = {**raw[key], **value} if both else value
        cfg.write_text(json.dumps(raw))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "AIOS_LLM_"))}
        env["AIOS_TOKEN"] = TOKEN
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            desktop_argv(apps, self.data, "--config", str(cfg)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=preexec,
        )
        self.stdout: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(s, sink), daemon=True)
            for s, sink in (
                (self.proc.stdout, self.stdout.put),
                (self.proc.stderr, self.log.append),
            )
        ]
        for t in self._readers:
            t.start()
        self.url = ""
        self.ready_after: float | None = None
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {TOKEN}"
        self.seen: set[int] = set()
        """Pids of every descendant seen so far (apps come and go; none may outlive us)."""

    @staticmethod
    def _read(stream: Any, sink: Callable[[str], None]) -> None:
        for line in stream:
            sink(line.rstrip("\n"))

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.stdout.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(
                    f"no ready line within {timeout:g} s; log tail:\n" + "\n".join(self.log[-20:])
                ) from None
            if line.startswith("AIOS ready: "):
                self.ready_after = time.monotonic() - self.started
                self.url = line.split(" ", 2)[2].split("/?")[0]
                return self.url

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.http.get(self.url + path, timeout=kw.pop("timeout", 20), **kw)

    def act(self, app: str, timeout: float = 20) -> requests.Response:
        return requests.post(
            self.url + "/api/action",
            json={"app": app, "action_id": "ping"},
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=timeout,
        )

    def descendants(self) -> list[psutil.Process]:
        try:
            found = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            found = []
        self.seen |= {p.pid for p in found}
        return found

    def _signal_a_worker_thread(self, sig: signal.Signals) -> None:
        """Request threads come and go: try worker threads until one takes the signal."""
        workers = [t.id for t in psutil.Process(self.proc.pid).threads() if t.id != self.proc.pid]
        random.shuffle(workers)
        for tid in workers:
            try:
                signal_thread(self.proc.pid, tid, sig)
                return
            except ProcessLookupError:
                continue
        raise AssertionError("no worker thread of the system took the signal")

    def stop(self, sig: signal.Signals = signal.SIGTERM, *, to_thread: bool = False) -> float:
        """Send ``sig`` to the process, or to one of its worker threads; seconds until exit."""
        self.descendants()
        if not to_thread:
            self.proc.send_signal(sig)
        else:
            self._signal_a_worker_thread(sig)
        began = time.monotonic()
        try:
            self.proc.wait(timeout=EXIT_DEADLINE * 3)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{sig.name} ignored: still running {EXIT_DEADLINE * 3:g} s later"
            ) from None
        return time.monotonic() - began

    def leftovers(self) -> list[int]:
        """Every process this system ever started that is still alive."""
        procs = []
        for pid in self.seen:
            try:
                procs.append(psutil.Process(pid))
            except psutil.Error:
                continue
        _, still = psutil.wait_procs(procs, timeout=2)
        return [p.pid for p in still if alive(p)]

    def kill(self) -> None:
        """Cleanup after a failed test: nothing may be left running."""
        self.descendants()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid in self.seen:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        for t in self._readers:  # they end at EOF, once nothing holds the pipes open
            t.join(timeout=EXIT_DEADLINE)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self.http.close()


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[Callable[..., Desktop]]:
    made: list[Desktop] = []

    def make(apps: Path, **kw: Any) -> Desktop:
        d = Desktop(tmp_path / f"run{len(made)}", apps, **kw)
        made.append(d)
        return d

    yield make
    for d in made:
        d.kill()


class Load:
    """``n`` client threads posting actions to ``app`` until stopped."""

    def __init__(self, d: Desktop, app: str, n: int = CLIENTS):
        self.ok = 0
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._d, self._app = d, app
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]
        for t in self._threads:
            t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                r = self._d.act(self._app, timeout=10)
                with self._lock:
                    if r.status_code == 200:
                        self.ok += 1
                    else:
                        self.errors.append(f"HTTP {r.status_code}")
            except requests.RequestException as e:  # the system went away under us
                with self._lock:
                    self.errors.append(type(e).__name__)

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=15)


# --------------------------------------------------------- signals under load


@pytest.mark.skipif(_TGKILL is None, reason="tgkill syscall number unknown on this machine")
def test_sigterm_under_load_always_stops_the_system_and_its_apps(
    tmp_path: Path, desktop: Callable[..., Desktop]
) -> None:
    """Five trials, 10 clients posting actions; the signal goes alternately to the
    process and to one of its worker threads (where Python never runs a handler)."""
    apps = make_apps(tmp_path, {"alpha": "ok", "beta": "ok"})
    times = []
    for trial in range(5):
        d = desktop(apps)
        d.wait_ready()
        load = Load(d, random.choice(["alpha", "beta"]))
        try:
            wait_for(lambda: load.ok >= 20, timeout=30, what="20 answered actions")  # noqa: B023
            # one Python process per app (confined, each under its two bwrap processes)
            assert len([p for p in d.descendants() if p.name().startswith("python")]) == 2
            sig = signal.SIGTERM if trial < 4 else signal.SIGINT
            took = d.stop(sig, to_thread=trial % 2 == 0)
        finally:
            load.stop()
        times.append(took)
        assert took < EXIT_DEADLINE, f"trial {trial}: exit took {took:.1f} s"
        assert d.proc.returncode == 0, "\n".join(d.log[-20:])
        assert d.leftovers() == [], f"trial {trial}: app processes outlived the system"
    print(f"exit after signal under load: {', '.join(f'{t:.2f}' for t in times)} s")


# ------------------------------------------------------ file descriptors (EMFILE)


NOFILE = 256
"""The system's fd limit in the EMFILE test: enough to start, far below the burst."""
HELD = NOFILE + 64
"""Idle client connections held open at once: each pins one server-side fd."""


def test_running_out_of_file_descriptors_unloads_no_app_and_leaks_no_process(
    tmp_path: Path, desktop: Callable[..., Desktop]
) -> None:
    apps = make_apps(tmp_path, {"alpha": "ok", "beta": "ok"})

    def low_nofile() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    d = desktop(apps, preexec=low_nofile)
    d.wait_ready()
    before = {
        a: d.act(a).json()["response"]["data"]["content"].split(":")[0] for a in ("alpha", "beta")
    }
    held: list[socket.socket] = []
    try:
        # Idle connections: the server accepts each and waits for a request on it.
        for _ in range(HELD):
            try:
                held.append(
                    socket.create_connection(("127.0.0.1", int(d.url.rsplit(":", 1)[1])), timeout=5)
                )
            except OSError:
                break
        # The hot-reload scan (every second) must meet EMFILE while they are held.
        wait_for(
            lambda: any("Too many open files" in line for line in d.log),
            timeout=30,
            what="the system to run out of file descriptors",
        )
    finally:
        for s in held:
            s.close()
    health = wait_for(lambda: _health_if_reachable(d), timeout=30, what="health after the burst")
    assert health["apps"] == {"alpha": "running", "beta": "running"}, health
    after = {
        a: d.act(a).json()["response"]["data"]["content"].split(":")[0] for a in ("alpha", "beta")
    }
    assert after == before, "an app was restarted although nothing changed"
    assert not [line for line in d.log if "unloading" in line or "reloading" in line]
    took = d.stop()
    assert took < EXIT_DEADLINE and d.proc.returncode == 0
    assert d.leftovers() == []


def _health_if_reachable(d: Desktop) -> dict[str, Any] | None:
    try:
        r = d.get("/api/health", timeout=5)
    except requests.RequestException:
        return None
    return r.json() if r.status_code == 200 else None


# ------------------------------------------------------------ one stuck app


READY_WAIT = 2.0


def test_an_app_that_never_listens_does_not_hold_the_desktop(
    tmp_path: Path, desktop: Callable[..., Desktop]
) -> None:
    apps = make_apps(tmp_path, {"healthy": "ok", "mute": "never_listen"})
    d = desktop(apps, config={"startup_ready_wait": READY_WAIT, "app_start_timeout": 120})
    d.wait_ready()
    assert d.ready_after is not None
    # Healthy apps take ~1.5 s on an idle machine; the bound is what matters.
    assert d.ready_after < READY_WAIT + 15, f"ready after {d.ready_after:.1f} s"
    health = d.get("/api/health").json()
    assert health["status"] == "starting"
    assert health["apps"] == {"healthy": "running", "mute": "starting"}
    r = d.act("healthy")
    assert r.status_code == 200 and r.json()["response"]["status"] == "ok"
    assert d.act("mute").status_code == 503
    assert d.stop() < EXIT_DEADLINE
    assert d.leftovers() == []
    print(f"ready line after {d.ready_after:.2f} s with one app that never listens")


def test_a_hung_app_does_not_delay_calls_to_a_healthy_one(
    tmp_path: Path, desktop: Callable[..., Desktop]
) -> None:
    """The system as a process: 10 actions wait on an app that accepts TCP and never
    answers; an action to its healthy neighbour still answers at once."""
    apps = make_apps(tmp_path, {"healthy": "ok", "hung": "no_answer"})
    d = desktop(apps)
    d.wait_ready()
    stuck = Load(d, "hung")
    try:
        # Every client has a call in flight (or was refused as busy) before we measure.
        wait_for(
            lambda: len(psutil.Process(d.proc.pid).net_connections()) > CLIENTS,
            timeout=30,
            what="the calls to the hung app to be in flight",
        )
        began = time.monotonic()
        r = d.act("healthy")
        took = time.monotonic() - began
    finally:
        stuck.stop()
    assert r.status_code == 200 and r.json()["response"]["status"] == "ok"
    assert took < 2.0, f"the healthy app answered after {took:.2f} s"
    assert d.stop() < EXIT_DEADLINE
    assert d.leftovers() == []
    print(f"healthy app answered in {took:.3f} s next to a hung one")


# ------------------------------------------------------ the database, the disk

TMPFS_SIZE = "2m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs where the first desktop's data dir goes."""
    with small_tmpfs(tmp_path / "run0" / "data", TMPFS_SIZE) as mount:
        yield mount


def test_a_full_disk_gives_json_errors_health_says_so_and_the_system_recovers(
    tmp_path: Path, small_disk: Path, desktop: Callable[..., Desktop]
) -> None:
    d = desktop(make_apps(tmp_path, {"healthy": "ok"}))
    assert d.data == small_disk
    d.wait_ready()
    assert d.act("healthy").status_code == 200
    filler = fill_disk(small_disk)

    def refused() -> list[requests.Response]:  # a list: a 503 Response is falsy
        r = d.act("healthy")
        return [r] if r.status_code != 200 else []

    [r] = wait_for(refused, timeout=30, what="a write to fail on the full disk")
    assert r.status_code == 503 and r.headers["Content-Type"] == "application/json"
    assert f"the disk holding {small_disk} is full" in r.json()["error"]
    health = d.get("/api/health").json()
    assert health["status"] == "degraded" and "is full" in health["store"]
    before = d.get("/api/self/USER").json()["text"]
    saved = d.http.put(d.url + "/api/self/USER", json={"text": "# USER\n" + "x" * 8000}, timeout=20)
    assert saved.status_code == 503 and saved.headers["Content-Type"] == "application/json"
    assert "is full" in saved.json()["error"]
    assert d.get("/api/self/USER").json()["text"] == before  # the old file, whole

    filler.unlink()
    wait_for(
        lambda: d.get("/api/health").json()["status"] == "ready",
        timeout=30,
        what="health to recover once space returned",
    )
    assert d.act("healthy").status_code == 200
    assert d.stop() < EXIT_DEADLINE
    assert not [line for line in d.log if line.startswith("Traceback")], d.log[-20:]


def _damaged_db(data_dir: Path, how: str) -> None:
    from aios.store import Store  # the real store writes the file that is then damaged

    s = Store(data_dir / "aios.db")
    for i in range(3000):
        s.add_history("s1", "user", "x" * 200 + str(i))
    s.close()
    path = data_dir / "aios.db"
    with path.open("r+b") as f:
        if how == "bad header":
            f.write(b"this is no db!!!")
        elif how == "truncated":
            f.truncate(path.stat().st_size // 2)
        else:
            f.seek(4096 * 3)
            f.write(os.urandom(4096 * 20))


@pytest.mark.parametrize("how", ["bad header", "truncated", "garbage pages"])
def test_a_damaged_database_at_start_is_moved_aside_in_one_line_and_the_system_works(
    tmp_path: Path, how: str, desktop: Callable[..., Desktop]
) -> None:
    _damaged_db(tmp_path / "run0" / "data", how)
    d = desktop(make_apps(tmp_path, {"healthy": "ok"}))
    d.wait_ready()
    assert d.get("/api/health").json()["store"] == "ok"
    r = d.act("healthy")
    assert r.status_code == 200 and r.json()["response"]["status"] == "ok"
    assert d.stop() < EXIT_DEADLINE
    said = [line for line in d.log if "is damaged" in line]
    assert len(said) == 1 and "moved it to" in said[0], d.log[-20:]
    assert not [line for line in d.log if line.startswith("Traceback")]
    moved = [p for p in d.data.glob("aios.db.broken-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(moved) == 1
