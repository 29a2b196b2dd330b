"""Calls to one app never wait on another app (DESIGN §9, issue 8 item 5).

Every call the controller makes to an app (``/handle``, one round at a time)
takes one of that app's slots first. An app has ``apps.max_concurrent_calls``
slots; a call that finds them taken waits, behind that app only, for at most
``apps.busy_wait`` seconds, and at most ``apps.max_waiting_calls`` calls may
wait: beyond that a call fails at once with :class:`~aios.errors.AppBusy`
(HTTP 503). A hung app thus holds its own slots and nothing else.

Tasks of a plan run each in a thread of their own (:func:`run_in_thread`), not
in a pool shared by every app: a shared pool filled by calls to a hung app
used to hold back calls to every other one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from aios.errors import AppBusy

if TYPE_CHECKING:
    from aios.config import AppsConfig

T = TypeVar("T")


@dataclass
class _Gate:
    cond: threading.Condition = field(default_factory=threading.Condition)
    busy: int = 0
    waiting: int = 0


class AppSlots:
    """The call slots of every app, created on first use; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[str, _Gate] = {}

    def _gate(self, app_id: str) -> _Gate:
        with self._lock:
            gate = self._gates.get(app_id)
            if gate is None:
                gate = self._gates[app_id] = _Gate()
            return gate

    def load(self, app_id: str) -> tuple[int, int]:
        """``(in flight, waiting)`` calls to ``app_id`` right now."""
        gate = self._gate(app_id)
        with gate.cond:
            return gate.busy, gate.waiting

    @contextmanager
    def slot(self, app_id: str, limits: AppsConfig) -> Iterator[None]:
        """Hold one of ``app_id``'s slots for the ``with`` block; AppBusy when none frees."""
        gate = self._gate(app_id)
        limit = limits.max_concurrent_calls
        with gate.cond:
            if gate.busy >= limit:
                if gate.waiting >= limits.max_waiting_calls:
                    raise AppBusy(
                        f"app {app_id!r} is busy: {gate.busy} calls are in flight "
                        f"and {gate.waiting} waiting for it; try again later"
                    )
                gate.waiting += 1
                try:
                    free = gate.cond.wait_for(lambda: gate.busy < limit, limits.busy_wait)
                finally:
                    gate.waiting -= 1
                if not free:
                    raise AppBusy(
                        f"app {app_id!r} is busy: none of its {limit} call slots "
                        f"freed within {limits.busy_wait:g} s; try again later"
                    )
            gate.busy += 1
        try:
            yield
        finally:
            with gate.cond:
                gate.busy -= 1
                gate.cond.notify()

    def forget(self, app_id: str) -> None:
        """Drop an idle app's gate (an unloaded app); a busy one keeps it."""
        with self._lock:
            gate = self._gates.get(app_id)
            if gate is not None and gate.busy == 0 and gate.waiting == 0:
                del self._gates[app_id]


def run_in_thread(fn: Callable[..., T], *args: object, name: str = "aios-task") -> Future[T]:
    """``fn(*args)`` in a new daemon thread; its result (or exception) in the future."""
    fut: Future[T] = Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
            fut.set_exception(e)

    threading.Thread(target=run, name=name, daemon=True).start()
    return fut
