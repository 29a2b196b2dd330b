"""Reminders and automations with the real system (DESIGN §18): said in words, they are
scheduled; when due they run once through the controller, under the same approvals, and
what happened lands in the conversation; a due time passed while the desktop was off is
reported at the next start, never run; the JSON API lists, edits and deletes them."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aios.events import Subscription
from tests.integration.conftest import Running, copy_apps, start_system
from tests.util import wait_for

DUE_WAIT = 30.0
"""Seconds a test waits for a due automation to have run (a loaded machine)."""


def _timeline(running: Running, sid: str) -> list[dict[str, Any]]:
    r = running.get(f"/api/sessions/{sid}/timeline?limit=200")
    assert r.status_code == 200, r.text
    entries: list[dict[str, Any]] = r.json()["entries"]
    return entries


def _said(running: Running, sid: str, about: str) -> list[dict[str, Any]]:
    return [
        e
        for e in _timeline(running, sid)
        if e.get("from") == "desktop" and str(e.get("about")) == about
    ]


def _wait_said(sub: Subscription, about: str, timeout: float = DUE_WAIT) -> dict[str, Any]:
    """The next ``said`` event about ``about`` on the bus (waits on events, no polling)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
        if ev and ev.get("type") == "said" and ev.get("about") == about:
            return ev
    raise AssertionError(f"the desktop did not say {about!r} within {timeout}s")


def _schedule(running: Running, sid: str | None, **body: Any) -> dict[str, Any]:
    r = running.post("/api/automations", {"session_id": sid, **body})
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


def test_an_automation_a_few_seconds_ahead_runs_once_and_shows_in_the_conversation(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"])
    sid = running.instruct("echo hi")["session_id"]
    elsewhere = running.instruct("echo there")["session_id"]
    # the page looks at another conversation: the run's end is said once, by the runner
    assert running.post("/api/attention", {"session_id": elsewhere}).status_code == 200
    sub = running.system.bus.subscribe()
    made = _schedule(running, sid, what="echo scheduled hello", at=time.time() + 2)
    auto_id = made["automation"]["id"]
    assert made["automation"]["next_due"] is not None
    said = _wait_said(sub, "automation_done")
    assert "echo scheduled hello" in said["message"]
    shown = _said(running, sid, "automation_done")
    assert [e["message"] for e in shown] == [said["message"]]
    texts = [e.get("text") for e in _timeline(running, sid) if e["kind"] == "user"]
    assert texts.count("echo scheduled hello") == 1  # ran once, through the controller
    row = running.get(f"/api/automations?session={sid}").json()[0]
    assert row["id"] == auto_id and row["next_due"] is None and row["runs"] == 1
    assert row["last_state"] == "done" and row["last_run_id"]
    # a second pass of the scheduler finds nothing left to run
    assert running.system.automations.tick() == []
    thinker, seq = running.system.thinker, running.system.bus.seq
    wait_for(lambda: thinker.seen >= seq, "the thinker to have seen the run end")
    assert _said(running, elsewhere, "run_done") == [] == _said(running, sid, "run_done")


def test_words_schedule_a_reminder_and_it_is_said_when_due(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"])
    sub = running.system.bus.subscribe()
    reply = running.instruct("remind me in 2 seconds to stretch")
    sid = reply["session_id"]
    assert reply["intent"] == "automation" and reply["automation"]["kind"] == "reminder"
    assert "stretch" in reply["message"]
    assert _wait_said(sub, "reminder")["message"] == "Reminder: stretch"
    said = _said(running, sid, "reminder")
    assert [e["message"] for e in said] == ["Reminder: stretch"]  # in the conversation, once
    # said without a time it is no automation: the apps get it as before (Notes keeps it)
    assert running.instruct("remind me to buy milk", sid).get("intent") != "automation"
    assert len(running.get("/api/automations").json()) == 1


def test_a_restart_across_a_due_time_reports_it_missed_and_never_runs_it(
    tmp_path: Path,
) -> None:
    apps = copy_apps(tmp_path / "apps", ["echo"])
    data = tmp_path / "data"
    grace = {"automations": {"grace_s": 1}}
    first = start_system(apps, data, **grace)
    try:
        sid = first.instruct("echo one")["session_id"]
        due = time.time() + 1.5
        made = _schedule(first, sid, what="echo while away", at=due)
    finally:
        first.stop()
    # the desktop is off past the due time and its grace
    wait_for(lambda: time.time() > due + 1.2, "the due time and its grace to pass", timeout=10)
    second = start_system(apps, data, **grace)
    try:
        # reported at start, before the scheduler's thread: the first pass did it
        missed = _said(second, sid, "missed")
        assert len(missed) == 1 and "echo while away" in missed[0]["message"]
        row = second.get("/api/automations").json()[0]
        assert row["id"] == made["automation"]["id"]
        assert row["missed"] == 1 and row["runs"] == 0 and row["next_due"] is None
        assert second.system.automations.tick() == []
    finally:
        second.stop()
    third = start_system(apps, data, **grace)
    try:  # a third start reports nothing again and runs nothing
        texts = [e.get("text") for e in _timeline(third, sid) if e["kind"] == "user"]
        assert "echo while away" not in texts
        assert third.system.automations.tick() == []
        assert len(_said(third, sid, "missed")) == 1
    finally:
        third.stop()


def test_an_automation_that_needs_approval_waits_as_a_card_and_says_so(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["stepper"], approvals={"mode": "manual", "timeout": 600})
    sub = running.system.bus.subscribe()
    made = _schedule(running, None, what="stepper save scheduled", at=time.time() + 1.5)
    sid = made["session_id"]
    assert "stepper save scheduled" in _wait_said(sub, "automation_waiting")["message"]
    cards = [e for e in _timeline(running, sid) if e["kind"] == "interaction"]
    assert cards and cards[0]["interaction"]["state"] == "pending"
    row = running.get("/api/automations").json()[0]
    assert row["last_state"] == "waiting"
    ia = cards[0]["interaction"]
    r = running.post(f"/api/interactions/{ia['id']}", {"decision": "allow"})
    assert r.status_code == 200, r.text
    assert "stepper save scheduled" in _wait_said(sub, "run_done")["message"]
    assert len(_said(running, sid, "run_done")) == 1


def test_the_api_lists_pauses_edits_and_deletes_and_refuses_bad_input(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], automations={"min_interval_s": 300})
    made = _schedule(running, None, text="every Monday at 9 list my notes tagged work")
    row = made["automation"]
    assert row["cron"] == "0 9 * * 1" and row["what"] == "list my notes tagged work"
    assert row["when"]["en"] == "every Monday at 09:00" and row["when"]["zh-CN"] == "每周一 09:00"
    r = running.http.patch(f"{running.url}/api/automations/{row['id']}", json={"paused": True})
    assert r.status_code == 200 and r.json()["paused"] is True
    r = running.http.patch(
        f"{running.url}/api/automations/{row['id']}", json={"paused": False, "cron": "30 8 * * *"}
    )
    assert r.status_code == 200 and r.json()["cron"] == "30 8 * * *"
    assert r.json()["when"]["en"] == "every day at 08:30"
    bad = running.http.patch(f"{running.url}/api/automations/{row['id']}", json={"cron": "nope"})
    assert bad.status_code == 400 and "cron" in bad.json()["error"]
    often = _post_error(running, {"what": "x", "cron": "*/2 * * * *"}, 400)
    assert "min_interval_s" in often
    assert "past" in _post_error(running, {"what": "x", "at": time.time() - 5}, 400)
    assert "no time" in _post_error(running, {"text": "hello there"}, 400)
    assert "min_interval_s" in _post_error(running, {"text": "every 2 minutes echo x"}, 400)
    said = running.instruct("every 2 minutes echo x")  # in the command bar: said, not a 400
    assert said["intent"] == "automation" and said["automation"] is None
    assert "min_interval_s" in said["message"]
    r = running.http.delete(f"{running.url}/api/automations/{row['id']}")
    assert r.status_code == 200
    assert running.get("/api/automations").json() == []
    gone = running.http.delete(f"{running.url}/api/automations/{row['id']}")
    assert gone.status_code == 404 and "no automation" in gone.json()["error"]


def _post_error(running: Running, body: dict[str, Any], status: int) -> str:
    r = running.post("/api/automations", body)
    assert r.status_code == status, r.text
    return str(r.json()["error"])
