"""What memory costs an instruction (issue 23, DESIGN §15), through the real system.

    python bench/bench_memory_system.py [--memories 1000] [--rounds 200]

Two systems side by side in one run, the same apps (the Echo test app) and the same fake
OpenAI server planning every instruction ("llm" planner: the model dispatches to Echo at
once), one with ``memory.enabled`` and ``--memories`` memories kept (the user's and Echo's),
one with memory off. Instructions alternate between the two, so load on a shared machine
weighs on both alike.

- **Injection.** With memory on, each instruction's planner prompt carries the self files
  and the user's memories for it (a search), and Echo's context carries ``memory`` (another
  search). Printed: the instruction's p50 / p95 with and without, and the p50 difference
  (target ≤ 2 ms).
- **Extraction off the request path.** Memory on, the extraction made busy all along: the
  idle time is 0 and every instruction's turn schedules one; the model's extraction answer
  is held back (``--extract-delay`` s), so an extraction is always running. Printed: the
  instruction's p50 / p95 while extraction runs vs memory off (target: within noise).
"""

from __future__ import annotations

import argparse
import json
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

from bench.running import running_system  # noqa: E402
from tests.fakes.fake_openai import FakeOpenAI, Reply, tool_call  # noqa: E402

FIXTURE_APPS = ROOT / "tests" / "fixtures" / "apps_system"
WORDS = (
    "tea coffee jazz piano cycling Lisbon Porto train meeting passport dentist garden "
    "茶 咖啡 爵士乐 钢琴 骑车 杭州 火车 开会 护照 牙医 花园 猫 狗 生日 女儿 书 电影"
).split()
PLAN = tool_call("dispatch_tasks", {"tasks": [{"id": "t1", "app": "echo", "instruction": "hello"}]})
SAYINGS = ("echo what tea do I like", "echo 我的护照在哪", "echo play some jazz", "echo hi")


@contextmanager
def system(
    tmp: Path, name: str, fake: FakeOpenAI, memory: dict[str, Any], planner: str = "llm"
) -> Iterator[Any]:
    apps = tmp / name / "apps"
    shutil.copytree(FIXTURE_APPS / "echo", apps / "echo")
    llm = {"api_key": "sk-bench", "base_url": fake.url, "model": "fake", "planner": planner,
           "max_retries": 0}  # fmt: skip
    raw = {
        "apps_dir": str(apps),
        "data_dir": str(tmp / name / "data"),
        "llm": llm,
        "memory": memory,
        "approvals": {"mode": "auto"},
        "quotas": {"instances": 100_000},
    }  # fmt: skip
    with running_system(raw) as running:
        yield running


def keep(sys_: Any, n: int) -> None:
    for i in range(n):
        a, b, c = WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)], WORDS[(i * 13) % len(WORDS)]
        scope = "echo" if i % 4 == 0 else "user"
        sys_.memory.memories.add(f"memory {i}: {a} {b} {c}", scope=scope)


def timed(http: requests.Session, url: str, text: str) -> float:
    t = time.perf_counter()
    r = http.post(url + "/api/instruction", json={"text": text}, timeout=30)
    took = (time.perf_counter() - t) * 1000
    if r.status_code != 200 or not r.json().get("results"):
        raise SystemExit(f"instruction failed: {r.status_code} {r.text[:200]}")
    return took


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def line(label: str, values: list[float]) -> str:
    return f"  {label:<34} p50 {statistics.median(values):7.2f} ms   p95 {pct(values, 95):7.2f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memories", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--extract-delay", type=float, default=2.0)
    args = ap.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="aios-bench-memory-"))
    try:
        with FakeOpenAI(api_key="sk-bench", default=PLAN) as fake:
            print(f"## injection: {args.memories} memories kept, {args.rounds} instructions each")
            on_cfg = {"enabled": True, "extract_idle_s": 3600}
            with (
                system(tmp, "on", fake, on_cfg) as (on, on_http),
                system(tmp, "off", fake, {"enabled": False}) as (off, off_http),
            ):
                keep(on, args.memories)
                with_mem, without = [], []
                for i in range(args.rounds):
                    said = SAYINGS[i % len(SAYINGS)]
                    with_mem.append(timed(on_http, on.url, said))
                    without.append(timed(off_http, off.url, said))
                print(line("memory on (prompt + context.memory)", with_mem))
                print(line("memory off (the baseline)", without))
                added = statistics.median(with_mem) - statistics.median(without)
                print(f"  added p50: {added:+.2f} ms (target ≤ 2 ms)")
        busy = Reply.from_spec({"delay": args.extract_delay, "then": json.dumps({"facts": []})})
        with FakeOpenAI(api_key="sk-bench", default=busy) as slow:
            print(f"\n## extraction off the request path: {args.rounds} instructions each")
            busy_cfg = {"enabled": True, "extract_idle_s": 0.001}
            with (
                system(tmp, "busy", slow, busy_cfg, "offline") as (b, b_http),
                system(tmp, "quiet", slow, {"enabled": False}, "offline") as (q, q_http),
            ):
                during, quiet = [], []
                for i in range(args.rounds):
                    said = f"echo I love {WORDS[i % len(WORDS)]} number {i}"
                    during.append(timed(b_http, b.url, said))
                    quiet.append(timed(q_http, q.url, said))
                running = b.memory.extractor.runs
                print(line("while extraction runs", during))
                print(line("memory off (the baseline)", quiet))
                ratio = statistics.median(during) / statistics.median(quiet)
                print(f"  p50 ratio: {ratio:.2f}; extractions finished meanwhile: {running}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
