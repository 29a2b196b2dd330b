"""Traces (DESIGN §16): every decision of a session, one JSON object a line in
``<data_dir>/traces/<session>.jsonl``. :class:`~aios.traces.writer.TraceWriter`
owns the files (one background thread, a bounded queue, retention);
:class:`~aios.traces.tracer.Tracer` is what the controller, planner, steps and
LLM client hold: one ``emit`` call per decision, a no-op when traces are off.
"""

from __future__ import annotations

from aios.traces.tracer import NO_TRACER, Tracer, bind, current
from aios.traces.writer import TraceWriter

__all__ = ["NO_TRACER", "TraceWriter", "Tracer", "bind", "current"]
