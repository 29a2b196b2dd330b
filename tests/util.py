"""Helpers shared by every test layer (unit, integration, e2e)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import simple_websocket

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: where ``desktop_app.py`` is."""

WAIT_TIMEOUT = 10.0
"""Seconds :func:`wait_for` polls by default before it fails the test."""
POLL_INTERVAL = 0.02
"""Seconds between two polls: short enough not to slow a test, long enough not to spin."""
APP_LISTEN_TIMEOUT = 20.0
"""Seconds an app process started by a test may take to listen on its port."""
CONNECT_PROBE = 0.2
"""Seconds one connection attempt of :func:`wait_listening` may take."""
LOG_TAIL_CHARS = 2000


def wait_for(
    pred: Callable[[], T],
    what: str = "the condition",
    timeout: float = WAIT_TIMEOUT,
    *,
    interval: float = POLL_INTERVAL,
) -> T:
    """Poll ``pred`` until it returns something truthy and return that value.

    ``pred`` runs at least once, also after the deadline has passed, so a slow
    machine never fails a condition that holds by the time it is checked.
    Past ``timeout`` seconds the test fails with an AssertionError naming
    ``what`` was awaited.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def wait_listening(
    proc: subprocess.Popen[Any], port: int, log: Path, timeout: float = APP_LISTEN_TIMEOUT
) -> None:
    """Wait until ``proc`` listens on 127.0.0.1:``port``.

    Fails at once, with the tail of ``log``, if the process exits first, and
    after ``timeout`` seconds with the same tail if it never listens.
    """

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"app exited with {proc.returncode}:\n{_tail(log)}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=CONNECT_PROBE).close()
        except OSError:
            return False
        return True

    try:
        wait_for(listening, f"the app to listen on port {port}", timeout)
    except AssertionError as e:
        if proc.poll() is not None:
            raise
        raise AssertionError(f"{e}:\n{_tail(log)}") from None


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-LOG_TAIL_CHARS:]
    except OSError as e:
        return f"(no log: {e})"


def desktop_argv(apps_dir: Path, data_dir: Path, *extra: str, port: str | None = "0") -> list[str]:
    """The command line of ``desktop_app.py --headless`` as a user runs it (a free port
    unless ``port`` is ``None``, which leaves the flag out)."""
    argv = [sys.executable, str(ROOT / "desktop_app.py"), "--headless"]
    if port is not None:
        argv += ["--port", port]
    return [*argv, "--apps-dir", str(apps_dir), "--data-dir", str(data_dir), *extra]


@contextlib.contextmanager
def small_tmpfs(mount: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``mount`` (a real small disk to fill); the test is
    skipped, with the reason, where mounting is not allowed."""
    import pytest

    mount.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot mount a tmpfs here: {e}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=30)


def fill_disk(directory: Path) -> Path:
    """Write zeros into ``directory/filler`` until the disk is full; return the filler."""
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as f:  # unbuffered: close has nothing to flush
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass  # ENOSPC: the disk is full
    return filler


class WsClient(simple_websocket.Client):  # type: ignore[misc]
    """``simple_websocket.Client`` that keeps the frames arriving with the handshake's reply.

    simple_websocket 1.1.0 reads the server's ``101`` with one ``recv``; when the server's
    first frame (the event stream's ``hello``) came in the same read, wsproto holds it,
    but the client takes only the handshake's event, and its reader thread then waits on
    the socket for more: the frame is delivered only when another one arrives, or never.
    On a loaded machine the two often share a read. Handling the held events before the
    reader thread starts delivers them (nothing else touches the connection yet).
    """

    def handshake(self) -> None:
        super().handshake()
        self.connected = self._handle_events()

    @classmethod
    def open(cls, url: str, headers: dict[str, str] | None = None) -> WsClient:
        return cls(url, headers=headers)


class ManualClock:
    """A clock a test sets by hand (``clock.now += 60``), for code given a ``clock``."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
