"""The proactive desktop (issue 26 items 3 and 4, DESIGN §18), through the real system.

    python bench/bench_duplex_thinker.py [--window 20] [--runs 40]

- **Time words.** Accuracy of :func:`aios.duplex.when.parse` on the labelled set
  bench/data/when_set.jsonl (hand-labelled, both languages; the rules were tuned on the
  separate dev set in tests/unit/duplex/test_when.py): the schedule read exactly (kind,
  what, the time or the cron expression), the time alone, and no schedule where there is
  none.
- **Idle cost.** CPU seconds per hour of the thinker's and the scheduler's threads with 5
  sessions open (turns, automations due tomorrow, ``duplex.idle_s`` on and the page
  looking at one of them), measured over ``--window`` seconds and scaled to an hour,
  against the whole idle desktop's process in the same window (the baseline).
- **Announcement.** From a run's end (its final ``run`` event) to the desktop saying so
  (the ``said`` event), for runs of a session the page is not looking at: p50 / p95,
  against the bus's own delivery (the same final event reaching a subscriber) measured
  on the same runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from aios.duplex.when import parse  # noqa: E402
from bench.running import running_system  # noqa: E402

DATA = ROOT / "bench" / "data" / "when_set.jsonl"
FIXTURE_APPS = ROOT / "tests" / "fixtures" / "apps_system"
SESSIONS = 5


def time_words() -> None:
    lines = [json.loads(x) for x in DATA.read_text(encoding="utf-8").splitlines() if x.strip()]
    head, rows = lines[0], lines[1:]
    now = datetime.fromisoformat(head["now"]).astimezone()
    exact = timing = right_none = 0
    per_lang: dict[str, list[int]] = {"zh": [0, 0], "en": [0, 0]}
    wrong: list[str] = []
    schedules = [r for r in rows if not r.get("none")]
    for r in rows:
        got = parse(r["text"], now)
        if r.get("none"):
            right_none += got is None
            if got is not None:
                wrong.append(f"  {r['text']!r}: expected nothing, got {got.public()}")
            continue
        lang = "en" if r["text"].isascii() else "zh"
        per_lang[lang][1] += 1
        when_ok = got is not None and (
            got.cron == r.get("cron")
            if "cron" in r
            else got.at is not None and got.at.strftime("%Y-%m-%d %H:%M:%S") == r["at"]
        )
        full = when_ok and got is not None and (got.kind, got.what) == (r["kind"], r["what"])
        timing += when_ok
        exact += full
        per_lang[lang][0] += full
        if not full:
            wrong.append(f"  {r['text']!r}: {got.public() if got else None}")
    n, nones = len(schedules), len(rows) - len(schedules)
    print(f"time words: {len(rows)} labelled phrasings ({n} schedules, {nones} none)")
    print(f"  exact (kind, what, time):  {exact}/{n} = {exact / n:.1%}")
    print(f"  time right:                {timing}/{n} = {timing / n:.1%}")
    for lang, (ok, total) in per_lang.items():
        print(f"  {lang}: {ok}/{total} = {ok / max(total, 1):.1%}")
    print(f"  no schedule where none:    {right_none}/{nones}")
    for line in wrong:
        print(line)


def _cpu(proc: psutil.Process, names: set[int]) -> tuple[float, float]:
    """CPU seconds of the threads ``names`` (native ids) and of the whole process."""
    threads = {t.id: t.user_time + t.system_time for t in proc.threads()}
    mine = sum(threads.get(tid, 0.0) for tid in names)
    total = proc.cpu_times()
    return mine, total.user + total.system


def _system(tmp: Path) -> Any:
    apps = tmp / "apps"
    shutil.copytree(FIXTURE_APPS / "echo", apps / "echo")
    raw = {
        "apps_dir": str(apps),
        "data_dir": str(tmp / "data"),
        "llm": {"api_key": ""},
        "memory": {"enabled": False},
        "duplex": {"idle_s": 600},
    }
    return running_system(raw)


def idle_and_latency(window: float, runs: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-thinker-"))
    try:
        with _system(tmp) as (system, http):
            base = system.url
            sids = []
            for i in range(SESSIONS):
                r = http.post(f"{base}/api/instruction", json={"text": f"echo turn {i}"})
                sid = r.json()["session_id"]
                sids.append(sid)
                http.post(
                    f"{base}/api/automations",
                    json={"session_id": sid, "text": f"every day at 8am echo daily {i}"},
                )
            http.post(f"{base}/api/attention", json={"session_id": sids[0], "visible": True})
            threads = {t.native_id for t in threading.enumerate()
                       if t.name in ("thinker", "automations") and t.native_id}  # fmt: skip
            proc = psutil.Process()
            mine0, all0 = _cpu(proc, threads)
            t0 = time.monotonic()
            time.sleep(window)  # the measured idle window itself
            took = time.monotonic() - t0
            mine1, all1 = _cpu(proc, threads)
            per_hour = 3600 / took
            print(f"idle cost over {took:.1f} s, {SESSIONS} sessions open, scaled to an hour:")
            tick = 1 / os.sysconf("SC_CLK_TCK")  # what the kernel counts CPU time in
            print(f"  thinker + scheduler threads: {(mine1 - mine0) * per_hour:.3f} CPU s/h"
                  f" (resolution {tick * per_hour:.2f} CPU s/h)")  # fmt: skip
            print(f"  the whole idle desktop (baseline): {(all1 - all0) * per_hour:.3f} CPU s/h")
            _latency(system, http, sids, runs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _latency(system: Any, http: Any, sids: list[str], runs: int) -> None:
    base = system.url
    sub = system.bus.subscribe()
    said_lag: list[float] = []
    bus_lag: list[float] = []
    for i in range(runs):
        sid = sids[1 + i % (SESSIONS - 1)]  # never the one the page looks at
        http.post(f"{base}/api/instruction", json={"text": f"echo run {i}", "session_id": sid})
        ended: float | None = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ev = sub.get(timeout=1)
            if ev is None:
                continue
            if ev.get("type") == "run" and ev.get("state") == "done" and ended is None:
                ended = float(ev["ts"])
                bus_lag.append(time.time() - ended)
            elif ev.get("type") == "said" and ev.get("about") == "run_done" and ended is not None:
                said_lag.append(float(ev["ts"]) - ended)
                break
    sub.close()

    def ms(xs: list[float], q: int) -> float:
        return statistics.quantiles(xs, n=100)[q - 1] * 1000 if len(xs) > 1 else float("nan")

    print(f"run end -> announcement ({len(said_lag)}/{runs} runs announced):")
    p50 = statistics.median(said_lag) * 1000
    print(f"  said:  p50 {p50:.2f} ms, p95 {ms(said_lag, 95):.2f} ms")
    print(f"  bus delivery (baseline): p50 {statistics.median(bus_lag) * 1000:.2f} ms, "
          f"p95 {ms(bus_lag, 95):.2f} ms")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--window", type=float, default=20.0, help="idle seconds measured")
    ap.add_argument("--runs", type=int, default=40, help="runs announced")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    time_words()
    idle_and_latency(args.window, args.runs)


if __name__ == "__main__":
    main()
