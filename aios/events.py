"""The event bus behind ``/api/events``: one ``emit()`` for every live update.

Events are JSON objects with a ``type`` (``app_status``, ``view``, ``push``,
``notify``, ``ui_op``, ``speak``, ``log``). Each WebSocket client subscribes
with its own bounded queue; a client that stops reading loses its oldest
events rather than blocking the system.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from typing import Any

log = logging.getLogger(__name__)

EVENT_TYPES = frozenset({"app_status", "view", "push", "notify", "ui_op", "speak", "log"})


class Subscription:
    def __init__(self, bus: EventBus, maxsize: int):
        self._bus = bus
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=maxsize)
        self.dropped = 0

    def get(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def put(self, event: dict[str, Any]) -> None:
        while True:
            try:
                self.queue.put_nowait(event)
                return
            except queue.Full:
                try:
                    self.queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def close(self) -> None:
        self._bus.unsubscribe(self)


class EventBus:
    def __init__(self, queue_size: int = 500, recent: int = 50):
        self._subs: list[Subscription] = []
        self._lock = threading.Lock()
        self._queue_size = queue_size
        self.recent: deque[dict[str, Any]] = deque(maxlen=recent)
        self.closed = threading.Event()

    def subscribe(self) -> Subscription:
        sub = Subscription(self, self._queue_size)
        with self._lock:
            self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subs)

    def emit(self, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
        if type_ not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type_!r}")
        event = {**payload, "type": type_, "ts": time.time()}
        self.recent.append(event)
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            sub.put(event)
        return event

    def close(self) -> None:
        self.closed.set()
