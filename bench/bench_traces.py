"""What traces cost (issue 24, DESIGN §16), through the real system.

    python bench/bench_traces.py [--rounds 300] [--events 100000]

Two systems side by side in one run, the same apps (the Echo test app) and the same fake
OpenAI server planning every instruction (``llm`` planner: the model dispatches to Echo),
one with ``traces.enabled``, one without. Actions and instructions alternate between the
two, so load on a shared machine weighs on both alike.

- **Request path.** An action (``POST /api/action`` to Echo) and an instruction (planned
  by the model) with traces on vs off: p50 / p95 and the p50 difference (target ≤ +0.3 ms
  each).
- **Writer.** Events a second one writer takes (``--events`` typical events in bursts of
  1,000, from the first ``emit`` to the last line on disk), and what it dropped.
- **Size.** Trace bytes per action and per instruction, and what a 30-day retention
  (``traces.keep_days`` 30, ``traces.max_mb`` 500) keeps at 1,000 instructions a day.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from aios.config import TracesConfig  # noqa: E402
from aios.tools import redacted  # noqa: E402
from aios.traces import Tracer, TraceWriter  # noqa: E402
from bench.running import running_system  # noqa: E402
from tests.fakes.fake_openai import FakeOpenAI, tool_call  # noqa: E402

FIXTURE_APPS = ROOT / "tests" / "fixtures" / "apps_system"
PLAN = tool_call("dispatch_tasks", {"tasks": [{"id": "t1", "app": "echo", "instruction": "hello"}]})
ACTION = {"app": "echo", "action_id": "again", "params": {"n": 1}}


@contextmanager
def system(tmp: Path, name: str, fake: FakeOpenAI, traces: bool) -> Iterator[Any]:
    apps = tmp / name / "apps"
    shutil.copytree(FIXTURE_APPS / "echo", apps / "echo")
    llm = {"api_key": "sk-bench", "base_url": fake.url, "model": "fake", "planner": "llm",
           "max_retries": 0}  # fmt: skip
    raw = {
        "apps_dir": str(apps),
        "data_dir": str(tmp / name / "data"),
        "llm": llm,
        "memory": {"enabled": False},
        "traces": {"enabled": traces},
        "approvals": {"mode": "auto"},
        "quotas": {"instances": 100_000},
    }
    with running_system(raw) as running:
        yield running


def timed(http: requests.Session, url: str, path: str, body: dict[str, Any]) -> float:
    t = time.perf_counter()
    r = http.post(url + path, json=body, timeout=30)
    took = (time.perf_counter() - t) * 1000
    if r.status_code != 200 or r.json().get("results") == []:
        raise SystemExit(f"{path} failed: {r.status_code} {r.text[:200]}")
    return took


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def line(label: str, values: list[float]) -> str:
    return f"  {label:<28} p50 {statistics.median(values):7.2f} ms   p95 {pct(values, 95):7.2f} ms"


def trace_bytes(sys_: Any) -> int:
    sys_.trace_writer.flush()
    return sum(p.stat().st_size for p in (sys_.data_dir / "traces").glob("*.jsonl"))


def timed_emit(tracer: Tracer) -> list[float]:
    """Wraps ``tracer.emit``: [seconds spent in it, calls] from now on."""
    spent = [0.0, 0.0]
    emit = tracer.emit

    def timed(event: str, /, **fields: Any) -> None:
        t = time.perf_counter()
        emit(event, **fields)
        spent[0] += time.perf_counter() - t
        spent[1] += 1

    tracer.emit = timed  # type: ignore[method-assign]
    return spent


def writer_throughput(tmp: Path, events: int) -> tuple[float, int]:
    """Events a second one writer writes (typical sizes), and how many it dropped."""
    writer = TraceWriter(tmp / "throughput", queue_max=TracesConfig().queue_max, redact=redacted)
    writer.start()
    tracer = Tracer(writer)
    messages = [{"role": "system", "content": "You route instructions. " * 40},
                {"role": "user", "content": "echo hello"}]  # fmt: skip
    start = time.perf_counter()
    with tracer.bind("sess_bench", "run_bench", "echo"):
        for i in range(events):
            if i % 4 == 0:
                tracer.emit("llm_request", model="fake", messages=messages)
            elif i % 4 == 1:
                tracer.emit("step", tool="file_read", args={"path": "notes.txt"}, risk="low")
            elif i % 4 == 2:
                tracer.emit("tool_result", tool="file_read", status="ok", duration_ms=0.4)
            else:
                tracer.emit("view", status="ok", title="Echo", message="hello")
            if i % 1000 == 999:  # bursts the queue holds: the writer's pace, not drops
                writer.flush()
    writer.flush()
    took = time.perf_counter() - start
    written = writer.written
    writer.stop()
    return written / took, events - written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--events", type=int, default=100_000)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    tmp = Path(tempfile.mkdtemp(prefix="aios-bench-traces-"))
    try:
        with (
            FakeOpenAI(api_key="sk-bench", model="fake", default=PLAN) as fake,
            system(tmp, "on", fake, True) as (on, http_on),
            system(tmp, "off", fake, False) as (off, http_off),
        ):
            pairs = {"on": (on, http_on), "off": (off, http_off)}
            in_emit = timed_emit(on.tracer)
            times: dict[str, list[float]] = {k: [] for k in ("a_on", "a_off", "i_on", "i_off")}
            for _ in range(20):  # warm up both
                for s, h in pairs.values():
                    timed(h, s.url, "/api/action", ACTION)
                    timed(h, s.url, "/api/instruction", {"text": "echo hello"})
            for i in range(args.rounds):
                order = ("on", "off") if i % 2 == 0 else ("off", "on")
                for mode in order:
                    s, h = pairs[mode]
                    times[f"a_{mode}"].append(timed(h, s.url, "/api/action", ACTION))
                for mode in order:
                    s, h = pairs[mode]
                    body = {"text": "echo hello"}
                    times[f"i_{mode}"].append(timed(h, s.url, "/api/instruction", body))
            # bytes: a fresh count of each kind on the traced system
            emit_ms = in_emit[0] * 1000 / (2 * args.rounds + 40)
            emits = in_emit[1] / (2 * args.rounds + 40)
            before = trace_bytes(on)
            n = 50
            for _ in range(n):
                timed(http_on, on.url, "/api/action", ACTION)
            per_action = (trace_bytes(on) - before) / n
            before = trace_bytes(on)
            for _ in range(n):
                timed(http_on, on.url, "/api/instruction", {"text": "echo hello"})
            per_instruction = (trace_bytes(on) - before) / n
        rate, dropped = writer_throughput(tmp, args.events)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"Traces on vs off, {args.rounds} rounds interleaved (Echo, fake model planning)")
    print(line("action, traces on", times["a_on"]))
    print(line("action, traces off", times["a_off"]))
    d_a = statistics.median(times["a_on"]) - statistics.median(times["a_off"])
    print(f"  action p50 difference: {d_a:+.2f} ms (target ≤ +0.3 ms)")
    print(line("instruction, traces on", times["i_on"]))
    print(line("instruction, traces off", times["i_off"]))
    d_i = statistics.median(times["i_on"]) - statistics.median(times["i_off"])
    print(f"  instruction p50 difference: {d_i:+.2f} ms (target ≤ +0.3 ms)")
    print(f"  time in emit() on the request path: {emit_ms:.3f} ms, {emits:.1f} events a request")
    print(f"Writer: {rate:,.0f} events/s over {args.events:,} events ({dropped} dropped)")
    cfg = TracesConfig()
    per_day = per_instruction * 1000
    kept_days = min(cfg.keep_days, cfg.max_mb * 1024 * 1024 / per_day)
    print(f"Size: {per_action:,.0f} B per action, {per_instruction:,.0f} B per instruction")
    print(
        f"  1,000 instructions a day: {per_day / 1e6:.1f} MB a day; keep_days {cfg.keep_days:g}"
        f" and max_mb {cfg.max_mb:g} keep {kept_days:.1f} days"
        f" ({kept_days * per_day / 1e6:,.0f} MB on disk)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
