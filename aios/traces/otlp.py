"""OpenTelemetry export of the trace events (``traces.otlp_endpoint``), GenAI semantic
conventions: a span per run (``run <kind>``), and in it one per model call (``chat
<model>``: ``gen_ai.system``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
``output_tokens``) and per tool step (``execute_tool <tool>``), each carrying the
session and run ids (the planner's call, made before its run starts, is a root span).
The ``opentelemetry`` packages (the ``otel`` extra) are imported
only when an endpoint is configured.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


class OtlpExporter:
    """Turns trace events into spans on ``provider`` (an SDK ``TracerProvider``)."""

    def __init__(self, provider: Any):
        from opentelemetry.trace import set_span_in_context

        self.provider = provider
        self._tracer = provider.get_tracer("aios")
        self._in = set_span_in_context
        self._runs: dict[str, Any] = {}
        """Open run spans by run id: the parents of the model calls and tool steps in them."""

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        end = int(float(event["ts"]) * 1e9)
        run_id = event.get("run_id") or ""
        if kind == "run_start":
            self._runs[run_id] = self._tracer.start_span(
                f"run {event.get('kind') or ''}".strip(),
                start_time=end,
                attributes={
                    "aios.session_id": event.get("session_id") or "",
                    "aios.run_id": run_id,
                },
            )
            return
        attrs: dict[str, Any] = {
            "aios.session_id": event.get("session_id") or "",
            "aios.run_id": event.get("run_id") or "",
            "aios.app": event.get("app") or "",
        }
        if kind == "llm_response":
            usage = event.get("usage") or {}
            name = f"chat {event.get('model') or ''}".strip()
            attrs.update(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system": str(event.get("provider_system") or "openai"),
                    "gen_ai.request.model": str(event.get("model") or ""),
                    "gen_ai.response.model": str(event.get("model") or ""),
                    "gen_ai.usage.input_tokens": int(usage.get("prompt_tokens") or 0),
                    "gen_ai.usage.output_tokens": int(usage.get("completion_tokens") or 0),
                }
            )
            if event.get("finish_reason"):
                attrs["gen_ai.response.finish_reasons"] = [str(event["finish_reason"])]
            millis = float(event.get("latency_ms") or 0)
        elif kind == "tool_result":
            name = f"execute_tool {event.get('tool') or ''}".strip()
            attrs.update(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": str(event.get("tool") or ""),
                    "aios.status": str(event.get("status") or ""),
                }
            )
            millis = float(event.get("duration_ms") or 0)
        elif kind == "run_end":
            run = self._runs.pop(run_id, None)
            if run is None:
                return
            run.set_attribute("aios.state", str(event.get("state") or ""))
            run.set_attribute("aios.app", str(event.get("app") or ""))
            run.end(end_time=end)
            return
        else:
            return
        start = end - int(millis * 1e6)
        parent = self._runs.get(run_id)
        span = self._tracer.start_span(
            name,
            context=self._in(parent) if parent is not None else None,
            start_time=start,
            attributes=attrs,
        )
        span.end(end_time=end)

    def shutdown(self) -> None:
        self.provider.shutdown()


def otlp_exporter(endpoint: str) -> OtlpExporter | None:
    """An exporter sending to ``endpoint`` (OTLP/HTTP); None when none is set or the
    ``otel`` extra is not installed (logged once)."""
    if not endpoint:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "traces.otlp_endpoint is set but OpenTelemetry is not installed: "
            "pip install 'triton-aios[otel]' (spans are not exported)"
        )
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": "triton-aios"}))
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    return OtlpExporter(provider)
