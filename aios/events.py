"""The event bus behind ``/api/events``: one ``emit()`` for every live update.

Events are JSON objects with a ``type`` (``app_status``, ``view``, ``push``,
``notify``, ``ui_op``, ``speak``, ``log``, ``said`` (the desktop spoke first, DESIGN
§18), ``reply_stream`` (a reply the model is writing, aios/duplex/replies.py), and
for runs ``run``, ``step``, ``progress``, ``interaction``, ``interaction_done``), a
``ts``, a ``seq`` (one counter for the whole bus, strictly increasing, no holes) and the bus's
``epoch`` (random per start: a ``seq`` from another epoch means nothing here).

The bus keeps one replay buffer of recent events (DESIGN §12 "Events"; bounds in
:class:`~aios.config.EventsConfig`) and every subscription is a cursor into it:
there is no per-client queue to overflow. A subscription started ``since`` a
``seq`` first yields every held event after it, then the live ones, with no gap
and no duplicate (numbering, buffering and waking readers happen under one
lock). When the buffer no longer holds what a subscription needs next — a
``since`` from another epoch, older than the buffer or ahead of it, or a reader
so slow that the buffer moved past it — the subscription yields one
``{"type": "resync"}`` and goes on from the current ``seq``; the client then
reloads its state instead.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from aios.config import EventsConfig

EVENT_TYPES = frozenset(
    {
        "app_status",
        "view",
        "push",
        "notify",
        "ui_op",
        "speak",
        "log",
        "run",
        "step",
        "progress",
        "interaction",
        "interaction_done",
        "instance",
        "focus",
        "memory",
        "mcp_status",
        "said",
        "topics",
        "reply_stream",
    }
)
RESYNC = "resync"
"""The type of the event a subscription yields when it cannot fill its gap."""
EPOCH_HEX_BYTES = 8
"""An epoch is this many random bytes, as hex."""


def event_size(event: dict[str, Any]) -> int:
    """An event's size as the buffer counts it: its JSON with non-ASCII escaped (at least
    its UTF-8 size, a bound on what it takes in memory as text)."""
    return len(json.dumps(event, default=str))


class Subscription:
    """A reader's cursor into the bus: ``get()`` returns the next event after ``cursor``."""

    def __init__(self, bus: EventBus, cursor: int, resync: bool):
        self._bus = bus
        self.cursor = cursor
        """The ``seq`` of the last event this reader was given."""
        self.start_seq = bus.seq
        """The bus's ``seq`` when the subscription started (what a ``hello`` reports)."""
        self._resync = resync
        self.resyncs = 0
        """How many times this reader was told to resync (it fell behind the buffer)."""
        self.ended = False
        """Set by :meth:`EventBus.end_subscriptions`: the reader should hang up."""

    @property
    def epoch(self) -> str:
        return self._bus.epoch

    def get(self, timeout: float) -> dict[str, Any] | None:
        """The next event, waiting at most ``timeout`` s; None when none came or it ended."""
        got = self._bus._next(self, timeout, 1)
        return got[0] if got else None

    def get_many(self, timeout: float, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` events in order: all that are there now, else the first to
        come within ``timeout`` s; [] when none came or it ended. (A replay goes out in
        a few writes instead of one per event.)"""
        return self._bus._next(self, timeout, limit)

    def close(self) -> None:
        self._bus.unsubscribe(self)


class EventBus:
    def __init__(
        self, config: EventsConfig | None = None, clock: Callable[[], float] = time.monotonic
    ):
        self._config = config or EventsConfig()
        self._clock = clock
        """Ages the buffer's events (monotonic seconds)."""
        self.epoch = secrets.token_hex(EPOCH_HEX_BYTES)
        self.seq = 0
        """The ``seq`` of the newest event (0: none yet in this epoch)."""
        self._buffer: deque[tuple[float, dict[str, Any], int]] = deque()
        """(monotonic time, event, its size), oldest first; their ``seq`` are consecutive."""
        self._bytes = 0
        """The sum of the held events' sizes (:func:`event_size`)."""
        self._subs: set[Subscription] = set()
        self._cond = threading.Condition()
        self.closed = threading.Event()

    # ---------------------------------------------------------------- readers

    def subscribe(self, since: int | None = None, epoch: str | None = None) -> Subscription:
        """A reader of the events after ``since`` (of ``epoch``; None: this one), else of live ones.

        Without ``since`` the reader gets the events emitted from now on. With it,
        the held events after ``since`` come first, or a single ``resync`` when the
        bus cannot give all of them.
        """
        with self._cond:
            if since is None:
                sub = Subscription(self, self.seq, resync=epoch is not None and epoch != self.epoch)
            else:
                fillable = (epoch is None or epoch == self.epoch) and self._holds_after(since)
                sub = Subscription(self, since if fillable else self.seq, resync=not fillable)
            self._subs.add(sub)
        return sub

    def reader(self) -> Subscription:
        """A reader of live events inside the system (the thinker, aios/duplex/thinker.py):
        not one of the clients :attr:`subscribers` counts, never hung up by
        :meth:`end_subscriptions`."""
        with self._cond:
            return Subscription(self, self.seq, resync=False)

    def unsubscribe(self, sub: Subscription) -> None:
        with self._cond:
            self._subs.discard(sub)

    @property
    def subscribers(self) -> int:
        with self._cond:
            return len(self._subs)

    def held(self) -> int:
        """How many events the replay buffer holds now."""
        with self._cond:
            return len(self._buffer)

    def held_bytes(self) -> int:
        """The size of the events the replay buffer holds now (:func:`event_size`)."""
        with self._cond:
            return self._bytes

    def _holds_after(self, seq: int) -> bool:
        """Whether every event after ``seq`` is still in the buffer (caller holds the lock)."""
        first = self._buffer[0][1]["seq"] if self._buffer else self.seq + 1
        return first - 1 <= seq <= self.seq

    def _next(self, sub: Subscription, timeout: float, limit: int) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not sub.ended:
                if sub._resync:
                    sub._resync = False
                    # the stream goes on from where the reader was put (its hello's seq):
                    # what was emitted since it subscribed still reaches it; only a reader
                    # the buffer has moved past starts again from now
                    if not self._holds_after(sub.cursor):
                        sub.cursor = self.seq
                    return [
                        {"type": RESYNC, "seq": sub.cursor, "epoch": self.epoch, "ts": time.time()}
                    ]
                if sub.cursor < self.seq:
                    if not self._holds_after(sub.cursor):
                        # the buffer moved past a slow reader: it has missed events
                        sub.resyncs += 1
                        sub._resync = True
                        continue
                    start = sub.cursor + 1 - self._buffer[0][1]["seq"]
                    stop = min(len(self._buffer), start + limit)
                    events = [self._buffer[i][1] for i in range(start, stop)]
                    sub.cursor = events[-1]["seq"]
                    return events
                left = deadline - time.monotonic()
                if left <= 0 or self.closed.is_set():
                    return []
                self._cond.wait(left)
            return []

    # ---------------------------------------------------------------- writers

    def emit(self, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
        if type_ not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type_!r}")
        with self._cond:
            self.seq += 1
            event = {**payload, "type": type_, "ts": time.time(), "seq": self.seq}
            event["epoch"] = self.epoch
            now = self._clock()
            size = event_size(event)
            self._buffer.append((now, event, size))
            self._bytes += size
            self._trim(now)
            self._cond.notify_all()
        return event

    def _trim(self, now: float) -> None:
        cfg = self._config
        buf = self._buffer
        while len(buf) > 1 and (
            self._bytes > cfg.replay_bytes
            or (
                len(buf) > cfg.replay_max
                and (now - buf[0][0] > cfg.replay_seconds or len(buf) > cfg.replay_ceiling)
            )
        ):
            self._bytes -= buf.popleft()[2]

    def end_subscriptions(self) -> int:
        """End every current subscription (their streams hang up; clients reconnect with
        ``since``); how many there were. The bus itself goes on."""
        with self._cond:
            subs = list(self._subs)
            for sub in subs:
                sub.ended = True
            self._subs.clear()
            self._cond.notify_all()
        return len(subs)

    def close(self) -> None:
        self.closed.set()
        with self._cond:
            self._cond.notify_all()
