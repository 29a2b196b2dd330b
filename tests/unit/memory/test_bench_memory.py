"""bench/bench_memory.py keeps working and its labelled set keeps its shape (issue 23).

CI does not run the benchmark; this runs it small. No figure is asserted: the recall set
is not a fixture to tune the ranking on."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_memory", ROOT / "bench" / "bench_memory.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_memory"] = module
    spec.loader.exec_module(module)
    return module


def test_the_recall_set_has_its_shape(bench: ModuleType) -> None:
    memories, queries = bench.load_set(bench.SET_PATH)
    assert len(memories) >= 300 and len(queries) >= 200
    assert len({m["id"] for m in memories}) == len(memories)
    for rows in (memories, queries):
        zh = sum(r["lang"] == "zh" for r in rows)
        assert 0.4 <= zh / len(rows) <= 0.6
    short = [q for q in queries if q["lang"] == "zh" and len(q["q"]) <= 2]
    assert len(short) >= 30  # 1-2 character Chinese keywords
    assert all(q["relevant"] for q in queries)


def test_the_bench_runs_small(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--sizes", "300", "--queries", "12"]) == 0
    out = capsys.readouterr().out
    assert "memory_search latency" in out and "recall@5" in out
    assert "fts+fallback   zh" in out and "fts            en" in out
