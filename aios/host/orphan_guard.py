"""Die with the system: nothing it started outlives it, even after ``kill -9``.

Two mechanisms, because neither suffices alone without a pid namespace:

* every process the system starts gets ``PR_SET_PDEATHSIG(SIGKILL)`` before
  it runs any code (:func:`die_with_parent`), so a leader dies the moment the
  system does. Linux sends that signal when the *thread* that forked the
  child ends, so every spawn goes through :func:`spawn`, which forks on one
  long-lived thread of its own (a request thread that started a background
  process may end long before that process);
* the leader's process group may hold children it started (they have no
  death signal): :class:`Guard`, one small detached process per system, is
  told every group the system starts and stops through a pipe; when the pipe
  reaches EOF (the system is gone, however it died) it SIGKILLs every group
  still registered.

What escapes both: a descendant that calls ``setsid`` after a double fork
(its own session, reparented to init). Only the pid namespace of DESIGN §11
confinement ends those.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal sent to this process when its parent thread ends."""
ORPHANED_EXIT = 70
"""Exit status of a child whose parent died before its death signal was armed."""

_GUARD_SOURCE = r"""
import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(s, signal.SIG_IGN)
if os.fork():  # detach: not a child of the system (nor of a test run) any more
    os._exit(0)
os.setsid()
groups = set()
for line in sys.stdin.buffer:  # EOF once the system is gone, however it died
    try:
        n = int(line)
    except ValueError:
        continue
    if n > 0:
        groups.add(n)
    else:
        groups.discard(-n)
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except OSError:
        pass
"""

_libc: Any = None
if sys.platform.startswith("linux"):
    try:
        _libc = ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - every Linux has a libc
        _libc = None


def die_with_parent(inner: Callable[[], object] | None = None) -> Callable[[], None]:
    """A ``preexec_fn``: SIGKILL this child when the spawning thread ends, then run ``inner``.

    If the parent died between the fork and the ``prctl`` (the signal would
    never come), the child exits at once.
    """
    parent = os.getpid()
    libc = _libc

    def preexec() -> None:
        if libc is not None:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:
                os._exit(ORPHANED_EXIT)
        if inner is not None:
            inner()

    return preexec


# ------------------------------------------------------------------ spawner

T = TypeVar("T")


class _Spawner:
    """One daemon thread that lives as long as the system and does every fork."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="process-spawner", daemon=True
                )
                self._thread.start()
            thread = self._thread
        if thread is threading.current_thread():
            return fn()
        done: Future[T] = Future()
        self._jobs.put((fn, done))
        return done.result()

    def _loop(self) -> None:
        while True:
            fn, done = self._jobs.get()
            try:
                done.set_result(fn())
            except BaseException as e:  # noqa: BLE001 - the caller re-raises it
                done.set_exception(e)


_spawner = _Spawner()


def spawn(fn: Callable[[], T]) -> T:
    """Run ``fn`` (which forks) on the long-lived spawner thread and return its result."""
    return _spawner.run(fn)


# -------------------------------------------------------------------- guard


class Guard:
    """The detached process that SIGKILLs the registered groups once the system is gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: Any = None
        self._groups: set[int] = set()
        self._broken = False

    def _start(self) -> None:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _GUARD_SOURCE],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        proc.wait()  # the first fork exits at once; the guard itself lives on, detached
        self._pipe = proc.stdin
        for g in self._groups:
            self._send(g)

    def _send(self, n: int) -> None:
        assert self._pipe is not None
        self._pipe.write(b"%d\n" % n)
        self._pipe.flush()

    def _tell(self, n: int) -> None:
        with self._lock:
            if n > 0:
                self._groups.add(n)
            else:
                self._groups.discard(-n)
            try:
                if self._pipe is None:
                    self._start()
                else:
                    self._send(n)
                self._broken = False
            except OSError as e:  # the guard was killed: start a new one next time
                self._pipe = None
                if not self._broken:
                    log.warning("the orphan guard is gone (%s); starting a new one", e)
                self._broken = True

    def add(self, pgid: int) -> None:
        """Kill group ``pgid`` if the system dies while it is registered."""
        self._tell(pgid)

    def discard(self, pgid: int) -> None:
        """The group was stopped: forget it (its number may be reused)."""
        if pgid in self._groups:
            self._tell(-pgid)


guard = Guard()

__all__ = ["ORPHANED_EXIT", "Guard", "die_with_parent", "guard", "spawn"]
