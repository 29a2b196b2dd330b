"""The labelled routing set (bench/routing_set.jsonl) through the offline router, with a floor.

``python bench/bench_routing.py`` prints the exact figures (per kind and language, the
latency, the misses, the baseline); this test keeps the router from falling below
:data:`FLOOR` and checks that the set stays what the benchmark says it is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
FLOOR = 0.90
"""Share of the set the offline router (with the system intents) must get right."""
SET_MIN = 150


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_routing", ROOT / "bench" / "bench_routing.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _bench()


def test_the_set_covers_every_bundled_app_both_languages_and_every_kind(bench: ModuleType) -> None:
    cases = bench.load_set()
    apps = bench.load_apps()
    assert len(cases) >= SET_MIN
    assert {c.lang for c in cases} == {"zh-CN", "en"}
    assert {c.kind for c in cases} == set(bench.KINDS)
    expected = {a for c in cases for a in c.expect}
    assert expected == {p.id for p in apps.profiles}  # every bundled app, no other
    assert all(c.expect == [] for c in cases if c.kind in ("smalltalk", "system"))
    assert all(len(c.expect) >= 2 for c in cases if c.kind == "compound")


def test_offline_routing_accuracy_is_above_the_floor(bench: ModuleType) -> None:
    cases, apps = bench.load_set(), bench.load_apps()
    report = bench.evaluate("offline", cases, apps)
    misses = [f"{c.text!r}: want {c.expect}, got {p.apps}" for c, p in report.misses]
    assert report.accuracy >= FLOOR, f"{report.accuracy:.1%} < {FLOOR:.0%}:\n" + "\n".join(misses)
    # compound instructions: independent steps unless one uses the other's result
    compound = report.by_kind["compound"]
    assert compound[0] / compound[1] >= FLOOR
    baseline = bench.evaluate("baseline", cases, apps)
    assert report.accuracy > baseline.accuracy


def test_the_benchmark_prints_accuracy_latency_and_misses(
    bench: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = (ROOT / "bench" / "routing_set.jsonl").read_text(encoding="utf-8").splitlines()
    small = tmp_path / "set.jsonl"
    small.write_text("\n".join(rows[:: len(rows) // 8]) + "\n", encoding="utf-8")
    assert bench.main(["--misses", "3", "--set", str(small)]) == 0
    out = capsys.readouterr().out
    assert "== mode offline: accuracy" in out and "== mode baseline: accuracy" in out
    assert "p50" in out and "p95" in out and "summary: offline" in out
