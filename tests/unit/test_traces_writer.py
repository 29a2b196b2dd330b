"""The trace writer (aios/traces): numbering, drops, secrets, stop, retention, OTLP."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aios.tools import redacted
from aios.traces import Tracer, TraceWriter
from aios.traces.otlp import OtlpExporter
from tests.util import fill_disk, small_tmpfs


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_seq_increases_per_session_and_survives_a_restart(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path)
    w.start()
    tracer = Tracer(w)
    with tracer.bind("s1", "run_1", "echo"):
        for i in range(5):
            tracer.emit("step", n=i)
    tracer.emit("instruction", session_id="s2")
    w.stop()
    again = TraceWriter(tmp_path)
    again.start()
    Tracer(again).emit("view", session_id="s1")
    again.stop()
    s1 = lines(tmp_path / "s1.jsonl")
    assert [e["seq"] for e in s1] == [1, 2, 3, 4, 5, 6]
    assert s1[0]["run_id"] == "run_1" and s1[0]["app"] == "echo" and s1[0]["event"] == "step"
    assert s1[-1]["run_id"] is None and s1[-1]["event"] == "view"
    assert [e["seq"] for e in lines(tmp_path / "s2.jsonl")] == [1]


def test_a_full_queue_drops_and_the_next_line_says_how_many(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path, queue_max=2)
    tracer = Tracer(w)
    for i in range(5):  # the thread is not started: the queue holds two
        tracer.emit("step", session_id="s", n=i)
    assert w.dropped == 3
    w.start()
    w.flush()
    tracer.emit("view", session_id="s")
    w.stop()
    got = lines(tmp_path / "s.jsonl")
    assert [e.get("n") for e in got] == [0, 1, None]
    assert got[0]["dropped"] == 3 and "dropped" not in got[1] and "dropped" not in got[2]


def test_emit_never_waits_and_stop_leaves_no_thread(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path, queue_max=100)
    w.start()
    tracer = Tracer(w)
    start = time.perf_counter()
    for i in range(1000):
        tracer.emit("step", session_id="s", n=i)
    assert time.perf_counter() - start < 1.0
    w.stop()
    assert not any(t.name == "aios-traces" for t in threading.enumerate())
    got = lines(tmp_path / "s.jsonl")
    assert len(got) + sum(e.get("dropped", 0) for e in got) == 1000


def test_secrets_are_masked_and_arguments_redacted(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path, secrets=lambda: ["sk-secret-key", "launch-tok-123"], redact=redacted)
    w.start()
    Tracer(w).emit(
        "llm_request",
        session_id="s",
        messages=[{"role": "user", "content": "my key is sk-secret-key"}],
        args={"url": "http://x/?token=launch-tok-123", "api_key": "plain"},
        usage={"prompt_tokens": 3},
    )
    w.stop()
    text = (tmp_path / "s.jsonl").read_text(encoding="utf-8")
    assert "sk-secret-key" not in text and "launch-tok-123" not in text and "plain" not in text
    (event,) = lines(tmp_path / "s.jsonl")
    assert event["usage"] == {"prompt_tokens": 3}  # "tokens" is no secret outside arguments
    assert event["args"]["api_key"] == "***"


def test_a_tools_result_is_redacted_and_its_size_capped(tmp_path: Path) -> None:
    """A result of many rows keeps LIST_MAX of them and says how many more there were."""
    from aios.traces.writer import LIST_MAX, STRING_MAX

    w = TraceWriter(tmp_path, redact=redacted)
    w.start()
    rows = [{"n": i, "password": "hunter2"} for i in range(LIST_MAX + 50)]
    Tracer(w).emit("tool_result", session_id="s", result={"rows": rows, "text": "x" * 9000})
    w.stop()
    (event,) = lines(tmp_path / "s.jsonl")
    kept = event["result"]["rows"]
    assert len(kept) == LIST_MAX + 1 and kept[-1] == "…(+50 items)"
    assert kept[0] == {"n": 0, "password": "***"}
    assert event["result"]["text"].endswith(f"…(+{9000 - STRING_MAX} chars)")


def test_no_session_no_line_and_off_is_a_no_op(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path)
    w.start()
    Tracer(w).emit("step")  # nothing bound: nowhere to write
    Tracer(None).emit("step", session_id="s")
    Tracer(w).emit("step", session_id="../escape")
    w.stop()
    assert list(tmp_path.iterdir()) == []


def test_retention_by_days_then_by_megabytes(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path)
    now = 1_800_000_000.0
    for name, age_days, size in (("old", 40, 10), ("mid", 5, 600_000), ("new", 1, 600_000)):
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(b"x" * size)
        os.utime(p, (now - age_days * 86400, now - age_days * 86400))
    assert w.prune(keep_days=30, max_mb=10, now=now) == 1
    assert sorted(p.stem for p in tmp_path.iterdir()) == ["mid", "new"]
    assert w.prune(keep_days=30, max_mb=1, now=now) == 1  # 1.2 MB > 1 MB: the oldest goes
    assert [p.stem for p in tmp_path.iterdir()] == ["new"]


def test_otlp_spans_follow_the_genai_conventions() -> None:
    sdk = pytest.importorskip(
        "opentelemetry.sdk.trace", reason="the otel extra (opentelemetry-sdk) is not installed"
    )
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    exporter = OtlpExporter(provider)
    tracer = Tracer(None, on_event=exporter)
    with tracer.bind("s", "run_1", "echo"):
        tracer.emit("run_start", kind="instruction")
        tracer.emit(
            "llm_response",
            model="deepseek-chat",
            usage={"prompt_tokens": 12, "completion_tokens": 5},
            latency_ms=40.0,
            finish_reason="stop",
        )
        tracer.emit("tool_result", tool="file_read", status="ok", duration_ms=3.0)
        tracer.emit("run_end", kind="instruction", state="done", duration_ms=80.0)
        tracer.emit("route", source="offline")  # not a span
    exporter.shutdown()
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"chat deepseek-chat", "execute_tool file_read", "run instruction"}
    chat = spans["chat deepseek-chat"].attributes or {}
    assert chat["gen_ai.system"] == "openai" and chat["gen_ai.request.model"] == "deepseek-chat"
    assert chat["gen_ai.usage.input_tokens"] == 12 and chat["gen_ai.usage.output_tokens"] == 5
    assert chat["aios.run_id"] == "run_1"
    span = spans["chat deepseek-chat"]
    assert span.end_time is not None and span.start_time is not None
    assert span.end_time - span.start_time == 40_000_000
    run = spans["run instruction"]
    assert span.parent is not None and span.parent.span_id == run.context.span_id
    assert spans["execute_tool file_read"].parent.span_id == run.context.span_id  # type: ignore[union-attr]
    assert (run.attributes or {})["aios.state"] == "done"


def test_an_endpoint_builds_an_otlp_http_exporter_only_when_set() -> None:
    from aios.traces.otlp import otlp_exporter

    assert otlp_exporter("") is None
    pytest.importorskip(
        "opentelemetry.exporter.otlp.proto.http",
        reason="the otel extra (opentelemetry-exporter-otlp-proto-http) is not installed",
    )
    exporter = otlp_exporter("http://127.0.0.1:9")
    assert isinstance(exporter, OtlpExporter)
    exporter.shutdown()  # nothing was sent: returns at once


def test_a_full_disk_holds_the_lines_writes_no_half_line_and_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """ENOSPC mid-append: the file keeps only whole lines, the log says so in one line
    (no traceback), and once space returns every held event is written, in order."""
    with small_tmpfs(tmp_path / "disk", "256k") as disk:
        w = TraceWriter(disk / "traces")
        w.start()
        tracer = Tracer(w)
        tracer.emit("instruction", session_id="s1", text="before")
        w.flush()
        filler = fill_disk(disk)
        for i in range(50):  # more than the few bytes a full tmpfs may still take
            tracer.emit("step", session_id="s1", text="x" * 2000, n=i)
        w.flush()
        path = disk / "traces" / "s1.jsonl"
        raw = path.read_bytes()
        assert raw.endswith(b"\n"), "a half-written line was left in the trace"
        held = lines(path)
        assert held[0]["text"] == "before" and len(held) < 51
        failures = [r for r in caplog.records if r.name == "aios.traces.writer"]
        assert failures and all(r.exc_info is None for r in failures), "a traceback was logged"
        assert any("full" in r.getMessage() for r in failures)

        filler.unlink()
        tracer.emit("view", session_id="s1")
        w.flush()
        w.stop()
        events = lines(path)
    assert [e.get("n") for e in events[1:-1]] == list(range(50))
    assert events[-1]["event"] == "view"
    assert [e["seq"] for e in events] == list(range(1, 53))
