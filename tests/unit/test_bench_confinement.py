"""bench/bench_system.py's confinement figures: the table of confined next to
unconfined, the desktop config per mode, and how the host process tree is
attributed to apps (real processes: a parent without ``AIOS_APP_ID``, as bwrap
is, and a child with it, as the app inside is).

CI does not run the benchmark; these keep the parts that turn its
measurements into the README's figures from breaking unseen.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
import pytest

from tests.util import wait_for

ROOT = Path(__file__).resolve().parents[2]
CHILD_WAIT_S = 10.0
"""Seconds the fake sandbox gets to start the app process inside it."""

FAKE_SANDBOX = """
import os, subprocess, sys
env = {**os.environ, "AIOS_APP_ID": "demo"}
inner = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], env=env,
                         stdin=subprocess.PIPE)
sys.stdin.read()
inner.stdin.close()
inner.wait()
"""
"""Like bwrap: no app id of its own, the app process below it carries one. Both end
when their stdin closes."""


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_system", ROOT / "bench/bench_system.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


def results(
    start_ms: tuple[float, float], step_ms: tuple[float, float], ready_s: tuple[float, float]
) -> dict[str, Any]:
    """Figures as the bench records them, (unconfined, confined) per pair."""
    off, on = "off", "auto"

    def step(ms: float) -> dict[str, Any]:
        figures = {"step_overhead_cache_ms": ms, "step_overhead_read_ms": ms}
        return {"http": figures, "call_app": figures}

    def desk(ready: float, confined: int) -> dict[str, Any]:
        return {
            "health_ready_s": ready,
            "apps_running": 9,
            "runs": 3,
            "confined": [confined, 9],
            "rss_mb": 360.0,
            "pss_mb": 250.0,
            "bwrap_rss_mb": 29.0 if confined else 0.0,
        }

    return {
        "main_confined": {off: (0, 2), on: (2, 2)},
        "app_start": {off: {"p50": start_ms[0]}, on: {"p50": start_ms[1]}},
        "cold_start": {
            off: {"per_app_spawn_to_ready_ms": 900.0, "start_s": 1.0, "minimal_app_rss_mb": 31.0},
            on: {"per_app_spawn_to_ready_ms": 930.0, "start_s": 1.1, "minimal_app_rss_mb": 33.0},
        },
        "desktop": {off: desk(ready_s[0], 0), on: desk(ready_s[1], 9)},
        "steps": {"direct_ms": {}, off: step(step_ms[0]), on: step(step_ms[1])},
        "action_ms": {off: {"p50": 10.0}, on: {"p50": 10.1}},
    }


def by_metric(rows: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    return {row[0]: row[1:] for row in rows}


def test_each_cost_is_confined_minus_unconfined_against_its_target(bench: ModuleType) -> None:
    rows = by_metric(bench.confinement_rows(results((350.0, 420.0), (4.0, 4.2), (1.2, 1.4))))

    start = rows["app start: one minimal SDK app alone, System.start() p50"]
    assert start == ("350.0 ms", "420.0 ms", "+70.0 ms", "≤ +50 ms", "**no**")
    step = rows["mediated step cache_get (desktop API), overhead p50"]
    assert step == ("4.00 ms", "4.20 ms", "+0.20 ms", "≤ +0.3 ms", "yes")
    action = rows["action round trip (echo) p50"]
    assert action[2:] == ("+0.10 ms", "≤ +0.3 ms", "yes")
    ready = rows["desktop ready (/api/health), 9 bundled apps, median of 3"]
    assert ready == ("1.200 s", "1.400 s", "+0.200 s", "confined ≤ 1.5 s", "yes")
    assert rows["apps confined (desktop)"][:2] == ("0/9 apps confined", "9/9 apps confined")
    assert rows["apps confined (in-process systems)"][:2] == (
        "0/2 apps confined",
        "2/2 apps confined",
    )


def test_a_slower_confined_step_or_desktop_is_marked_missed(bench: ModuleType) -> None:
    rows = by_metric(bench.confinement_rows(results((350.0, 360.0), (4.0, 4.5), (1.2, 1.7))))

    assert rows["app start: one minimal SDK app alone, System.start() p50"][-1] == "yes"
    assert rows["mediated step file_read (call_app), overhead p50"][-2:] == (
        "≤ +0.3 ms",
        "**no**",
    )
    assert rows["desktop ready (/api/health), 9 bundled apps, median of 3"][-1] == "**no**"


def test_the_desktop_runs_with_the_projects_config_and_the_mode(
    bench: ModuleType, tmp_path: Path
) -> None:
    project = json.loads((ROOT / "config.json").read_text(encoding="utf-8"))
    for mode in ("auto", "off"):
        written = json.loads(bench.desktop_config(tmp_path, mode).read_text(encoding="utf-8"))
        assert written["apps"]["confinement"] == mode
        assert {k: v for k, v in written.items() if k != "apps"} == {
            k: v for k, v in project.items() if k != "apps"
        }


@pytest.fixture
def fake_sandbox() -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if k != "AIOS_APP_ID"}
    proc = subprocess.Popen([sys.executable, "-c", FAKE_SANDBOX], stdin=subprocess.PIPE, env=env)
    try:
        yield proc
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=CHILD_WAIT_S)


def test_a_sandboxs_own_process_is_counted_with_its_app(
    bench: ModuleType, fake_sandbox: subprocess.Popen[bytes]
) -> None:
    outer = psutil.Process(fake_sandbox.pid)

    def app_inside() -> bool:  # started, and exec'd with its own environment
        try:
            return any(q.environ().get("AIOS_APP_ID") == "demo" for q in outer.children())
        except psutil.Error:
            return False

    wait_for(app_inside, "the app process inside the fake sandbox", CHILD_WAIT_S)
    inner = outer.children()[0]

    labels = {p.pid: what for p, what in bench.label_tree(psutil.Process())}

    assert labels[os.getpid()] == "system (desktop_app.py)"
    assert labels[outer.pid].startswith("app demo (")
    assert labels[inner.pid].startswith("app demo (")
    weighed = bench.weigh(bench.label_tree(psutil.Process()), "test", verbose=False)
    assert weighed["app_rss_mb"]["demo"] > 0
