"""The database through the real system's API: store errors as JSON, tasks per
instruction, history pages, and the background pruner. (A full disk and a
damaged file at start, with the desktop as a process, are in test_faults.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aios.errors import StoreFull
from aios.store import Store
from tests.integration.conftest import Running

DEADLINE = 30.0


# ------------------------------------------------------------- through the API


def test_store_errors_and_unexpected_errors_are_json(
    make_system: Callable[..., Running], monkeypatch: pytest.MonkeyPatch
) -> None:
    running = make_system(["echo"])
    path = running.system.store.location

    def full(*a: Any, **kw: Any) -> None:
        raise StoreFull(f"the disk holding {path} is full: free some space")

    monkeypatch.setattr(running.system.store, "session", full)
    r = running.get("/api/sessions/sess_x")
    assert r.status_code == 503 and r.json() == {
        "error": f"the disk holding {path} is full: free some space"
    }

    def bug(*a: Any, **kw: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(running.system.store, "session", bug)
    r = running.get("/api/sessions/sess_x")
    assert r.status_code == 500 and r.headers["Content-Type"] == "application/json"
    assert "RuntimeError: a bug" in r.json()["error"]


def test_every_instruction_keeps_its_own_tasks(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"])
    sid = None
    for n in range(4):
        out = running.instruct(f"echo number {n}", sid)
        sid = out["session_id"]
        assert out["plan"][0]["id"] == "t1"
    mem = running.get(f"/api/sessions/{sid}").json()
    assert [t["instruction"] for t in mem["completed_tasks"]] == [
        f"echo number {n}" for n in range(4)
    ]
    assert len({t["task_id"] for t in mem["completed_tasks"]}) == 4
    assert all(t["status"] == "done" for t in mem["completed_tasks"])


def test_tasks_left_running_by_a_killed_run_are_interrupted_at_start(
    tmp_path: Path, make_system: Callable[..., Running]
) -> None:
    data = tmp_path / "data"
    s = Store(data / "aios.db")
    sid = s.ensure_session()
    s.upsert_task(sid, "r1-t1", app="echo", instruction="long", depends_on=[], status="running")
    s.close()
    running = make_system(["echo"], data_dir=data)
    mem = running.get(f"/api/sessions/{sid}").json()
    assert mem["current_tasks"] == []
    assert [(t["task_id"], t["status"]) for t in mem["completed_tasks"]] == [
        ("r1-t1", "interrupted")
    ]


def test_session_history_is_paginated_and_bad_parameters_are_named(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], store={"history_page": 3, "history_page_max": 5})
    sid = running.open("echo")["session_id"]
    for _ in range(3):
        running.open("echo", sid)  # 2 entries each: the open and the app's reply
    first = running.get(f"/api/sessions/{sid}").json()
    assert len(first["history"]) == 3 and first["has_more"] is True
    seen = [h["id"] for h in first["history"]]
    before = first["next_before"]
    while before is not None:
        page = running.get(f"/api/sessions/{sid}?before={before}&limit=5").json()
        seen = [h["id"] for h in page["history"]] + seen
        before = page["next_before"]
    assert len(seen) == 8 and seen == sorted(seen)
    for query, name in (
        ("limit=abc", "limit"),
        ("limit=6", "limit"),
        ("limit=0", "limit"),
        ("before=-1", "before"),
        ("before=x", "before"),
    ):
        r = running.get(f"/api/sessions/{sid}?{query}")
        assert r.status_code == 400 and f"'{name}'" in r.json()["error"], (query, r.text)


def test_the_system_runs_the_pruner_in_the_background(make_system: Callable[..., Running]) -> None:
    running = make_system(
        ["echo"], retention={"history_rows_per_session": 10, "prune_interval": 0.1}
    )
    sid = running.open("echo")["session_id"]
    for _ in range(8):
        running.open("echo", sid)
    pruner = running.system.pruner
    seen = pruner.passes
    with pruner.passed:
        assert pruner.passed.wait_for(lambda: pruner.passes >= seen + 1, timeout=DEADLINE)
    mem = running.get(f"/api/sessions/{sid}?limit=100").json()
    assert len(mem["history"]) == 10 and mem["has_more"] is False
