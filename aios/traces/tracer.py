"""What the rest of the system holds to trace a decision: ``tracer.emit("route", ...)``.

The session, run and app an event belongs to come from the arguments or, when left
out, from the context bound around the work (``with tracer.bind(sid, run_id, app)``),
a ``contextvars`` variable that the run threads inherit (aios/control/app_client.py
``run_in_thread``). Fields are redacted as the audit log redacts tool arguments
(aios/tools ``redacted``); the writer masks the configured keys and the launch token
in every line. With traces off the tracer is :data:`NO_TRACER` and ``emit`` returns
at once.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any

from aios.traces.writer import TraceWriter


@dataclass(frozen=True)
class TraceContext:
    session_id: str | None = None
    run_id: str | None = None
    app: str | None = None


_NONE = TraceContext()
_context: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "aios_trace", default=None
)


def current() -> TraceContext:
    """The session, run and app the work of this thread is for (as far as it was bound)."""
    return _context.get() or _NONE


@contextmanager
def bind(
    session_id: str | None = None, run_id: str | None = None, app: str | None = None
) -> Iterator[TraceContext]:
    """Events emitted and model calls made inside are this session's / run's / app's
    unless they say otherwise (the usage rows too: aios/llm/client.py)."""
    ctx = current()
    changes = {
        k: v
        for k, v in (("session_id", session_id), ("run_id", run_id), ("app", app))
        if v is not None
    }
    token = _context.set(replace(ctx, **changes))
    try:
        yield current()
    finally:
        _context.reset(token)


class Tracer:
    """Emits trace events to a :class:`TraceWriter` (None: traces are off)."""

    def __init__(
        self,
        writer: TraceWriter | None,
        *,
        clock: Callable[[], float] = time.time,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.writer = writer
        self.clock = clock
        self.on_event = on_event
        """Also handed every event (the OpenTelemetry exporter), on the caller's thread."""

    @property
    def enabled(self) -> bool:
        return self.writer is not None or self.on_event is not None

    def bind(
        self, session_id: str | None = None, run_id: str | None = None, app: str | None = None
    ) -> AbstractContextManager[TraceContext]:
        """:func:`bind`."""
        return bind(session_id, run_id, app)

    def emit(self, event: str, /, **fields: Any) -> None:
        """Record one event; never raises, never waits."""
        if not self.enabled:
            return
        ctx = current()
        record: dict[str, Any] = {
            "ts": round(self.clock(), 6),
            "event": event,
            "session_id": fields.pop("session_id", None) or ctx.session_id,
            "run_id": fields.pop("run_id", None) or ctx.run_id,
            "app": fields.pop("app", None) or ctx.app,
            **fields,
        }
        if not record["session_id"]:
            return
        if self.on_event is not None:
            try:
                self.on_event(record)
            except Exception:  # noqa: BLE001, S110 - an exporter must not break the caller
                pass
        if self.writer is not None:
            self.writer.write(record)


NO_TRACER = Tracer(None)
"""Traces off: ``emit`` returns at once."""
