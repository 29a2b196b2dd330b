"""The outcome benchmark's offline floor (issue 22): every task of bench/tasks.jsonl sent to
the real system without a model, its outcome checked on the real state — files on disk,
the Notes SQLite file, the views shown, the desktop changes sent.

``python bench/bench_tasks.py --modes offline`` prints the same figures per language,
app and kind with the failures; this test keeps the share of tasks done from falling
below :data:`FLOOR`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLOOR = 0.90
"""Share of tasks done offline: 136/248 (54.8 %) when the benchmark was written, 235/248
(94.8 %) after issue 22's app, router and planner changes; issue 22's target, which leaves
11 tasks of margin for a slow machine (a task whose card expires is a task not done)."""
JOBS = 2
"""App groups run side by side (each its own system): the machine has 2 cores."""


def _bench() -> ModuleType:
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_tasks", ROOT / "bench" / "bench_tasks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(600)
def test_offline_task_success_holds_the_floor() -> None:
    bench = _bench()
    tasks = bench.load_tasks()
    results = bench.run_mode(ROOT, "offline", tasks, JOBS, "", "")
    assert set(results) == {t["id"] for t in tasks}, "every task was run"
    done = sum(r["ok"] for r in results.values())
    failures = [
        f"{t['id']} {t['say']!r}: {'; '.join(results[t['id']]['problems'])}"
        for t in tasks
        if not results[t["id"]]["ok"]
    ]
    share = done / len(tasks)
    assert share >= FLOOR, f"{share:.1%} of tasks done offline:\n" + "\n".join(failures)
