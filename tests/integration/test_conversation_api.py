"""The conversation timeline and the sessions list (DESIGN §13 "Conversation panel").

A real system with real app processes (``apps_system/echo`` answers typed
instructions, ``apps_runs/planner`` runs the plan it is given, in approvals mode
"smart" so a command waits for the user), the real HTTP API on 127.0.0.1 and
a real SQLite file that a restart reads again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import FIXTURES, SYSTEM_APPS, Running, copy_apps, start_system
from tests.util import wait_for

WAIT = 20.0
SHELL = [{"step_id": "run", "tool": "shell_exec", "args": {"cmd": "echo hello"}}]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []
    apps = tmp_path / "apps"
    copy_apps(apps, ["echo"], source=SYSTEM_APPS)
    copy_apps(apps, ["planner"], source=FIXTURES / "apps_runs")

    def start() -> Running:
        running = start_system(apps, tmp_path / "data", approvals={"mode": "smart"})
        started.append(running)
        return running

    yield start
    for r in started:
        r.stop()


def timeline(running: Running, sid: str, **params: Any) -> dict[str, Any]:
    r = running.get(f"/api/sessions/{sid}/timeline", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def plan(running: Running, sid: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"app": "planner", "action_id": "plan", "params": {"steps": steps}, "session_id": sid}
    r = running.post("/api/action", body)
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    return reply


def new_session(running: Running) -> str:
    r = running.post("/api/sessions", {})
    assert r.status_code == 201, r.text
    sid: str = r.json()["session_id"]
    return sid


def test_a_typed_instruction_and_its_reply_appear_in_order(make: Callable[..., Running]) -> None:
    running = make()
    sid = new_session(running)
    reply = running.instruct("echo 你好", sid)
    assert reply["message"] == "echo: echo 你好", reply
    entries = timeline(running, sid)["entries"]
    kinds = [e["kind"] for e in entries]
    assert kinds == ["user", "run", "reply"], entries
    user, run, answer = entries
    assert user["text"] == "echo 你好"
    assert run["run_kind"] == "instruction" and run["apps"] == ["echo"]
    assert run["state"] == "done" and run["retryable"] is False
    assert answer["apps"] == ["echo"] and answer["message"] == "echo: echo 你好"
    assert user["ts"] <= run["ts"] <= answer["ts"]


def test_a_run_that_waited_and_was_approved_shows_its_card_answered(
    make: Callable[..., Running],
) -> None:
    running = make()
    sid = new_session(running)
    reply = plan(running, sid, SHELL)
    (card,) = reply["pending"]
    pending = [e for e in timeline(running, sid)["entries"] if e["kind"] == "interaction"]
    assert [e["interaction"]["state"] for e in pending] == ["pending"]
    assert pending[0]["id"] == f"i{card['id']}"
    r = running.post(f"/api/interactions/{card['id']}", {"decision": "allow"})
    assert r.status_code == 200, r.text

    def settled() -> list[dict[str, Any]] | None:
        entries = timeline(running, sid)["entries"]
        runs = [e for e in entries if e["kind"] == "run"]
        return entries if runs and runs[0]["state"] == "done" else None

    entries = wait_for(settled, timeout=WAIT, what="the approved run to be done")
    (ia,) = [e["interaction"] for e in entries if e["kind"] == "interaction"]
    assert ia["state"] == "answered" and ia["answer"]["decision"] == "allow"
    (run,) = [e for e in entries if e["kind"] == "run"]
    assert run["run_id"] == reply["run_id"] and run["run_kind"] == "action"
    order = [e["kind"] for e in entries]
    assert order.index("run") < order.index("interaction"), order


def test_an_interrupted_run_is_in_the_timeline_with_retry_after_a_restart(
    make: Callable[..., Running],
) -> None:
    running = make()
    sid = new_session(running)
    running.instruct("echo first", sid)
    reply = plan(running, sid, SHELL)
    running.stop()
    again = make()
    entries = timeline(again, sid)["entries"]
    assert entries[0]["text"] == "echo first"
    (run,) = [e for e in entries if e["kind"] == "run" and e["run_id"] == reply["run_id"]]
    assert run["state"] == "interrupted" and run["retryable"] is True
    (ia,) = [e["interaction"] for e in entries if e["kind"] == "interaction"]
    assert ia["state"] == "withdrawn"
    r = again.post(f"/api/runs/{run['run_id']}/retry")
    assert r.status_code == 200, r.text


def test_paging_with_before_gives_older_entries_without_gaps_or_duplicates(
    make: Callable[..., Running],
) -> None:
    running = make()
    sid = new_session(running)
    for i in range(5):
        running.instruct(f"echo {i}", sid)
    whole = timeline(running, sid, limit=1000)
    assert whole["has_more"] is False and whole["next_before"] is None
    assert len(whole["entries"]) == 15
    pages: list[list[dict[str, Any]]] = []
    page = timeline(running, sid, limit=4)
    pages.append(page["entries"])
    while page["has_more"]:
        page = timeline(running, sid, limit=4, before=page["next_before"])
        pages.append(page["entries"])
    assert [len(p) for p in pages] == [4, 4, 4, 3]
    stitched = [e["id"] for p in reversed(pages) for e in p]
    assert stitched == [e["id"] for e in whole["entries"]]
    texts = [e["text"] for e in whole["entries"] if e["kind"] == "user"]
    assert texts == [f"echo {i}" for i in range(5)]


def test_a_new_session_is_empty_and_listed_first(make: Callable[..., Running]) -> None:
    running = make()
    old = new_session(running)
    running.instruct("echo " + "长" * 100, old)
    sid = new_session(running)
    assert sid != old
    assert timeline(running, sid) == {
        "session_id": sid,
        "entries": [],
        "has_more": False,
        "next_before": None,
    }
    listed = running.get("/api/sessions").json()
    assert [s["session_id"] for s in listed[:2]] == [sid, old]
    assert listed[0]["turns"] == 0 and listed[0]["title"] is None
    assert listed[1]["turns"] == 1 and listed[1]["title"].startswith("echo 长")
    assert len(listed[1]["title"]) <= 80 and listed[1]["title"].endswith("…")


def test_bad_requests_are_one_line_json_errors(make: Callable[..., Running]) -> None:
    running = make()
    sid = new_session(running)
    r = running.get("/api/sessions/nosuchsession/timeline")
    assert r.status_code == 404 and "nosuchsession" in r.json()["error"]
    r = running.get("/api/sessions/bad-id!/timeline")
    assert r.status_code == 404 and r.headers["Content-Type"].startswith("application/json")
    for params, word in (
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"before": "x1"}, "before"),
        ({"before": "h999999"}, "before"),
    ):
        r = running.get(f"/api/sessions/{sid}/timeline", params=params)
        assert r.status_code == 400, (params, r.text)
        assert word in r.json()["error"] and "\n" not in r.json()["error"]
    r = running.get("/api/sessions", params={"limit": "-1"})
    assert r.status_code == 400 and "limit" in r.json()["error"]
