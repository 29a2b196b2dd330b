"""App instances, focus and launch for a result (DESIGN §13).

Real system, real app processes: two copies of ``tests/fixtures/apps_runs/planner``
(``parent`` and ``child``); the parent's plan ``launch``es the child, which answers
with a ``result`` (``give <json>``), waits for the user (``wait``), or dies
(``crash``).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.events import Subscription
from tests.integration.conftest import FIXTURES, Running, final_view, start_system
from tests.util import wait_for

PLANNER = FIXTURES / "apps_runs" / "planner"
WAIT = 20.0


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    apps = tmp_path / "apps"
    for app_id in ("parent", "child"):
        shutil.copytree(PLANNER, apps / app_id)
        manifest = json.loads((apps / app_id / "manifest.json").read_text())
        manifest.update(name=app_id.title(), keywords=[app_id], description=f"the {app_id}")
        (apps / app_id / "manifest.json").write_text(json.dumps(manifest))
    r = start_system(apps, tmp_path / "data", apps={"restart_limit": 0})
    yield r
    r.stop()


def launch(running: Running, **args: Any) -> dict[str, Any]:
    steps = [{"step_id": "kid", "tool": "launch", "args": args}]
    body = {"app": "parent", "action_id": "plan", "params": {"steps": steps}}
    reply: dict[str, Any] = running.post("/api/action", body).json()
    return reply


def parent_view(sub: Subscription, run_id: str) -> dict[str, Any]:
    return final_view(sub, run_id, app="parent")


def instances(running: Running, sid: str) -> dict[str, dict[str, Any]]:
    return {i["app"]: i for i in running.get(f"/api/instances?session={sid}").json()}


def test_opening_apps_makes_instances_and_one_is_in_front(running: Running) -> None:
    sid = running.open("parent")["session_id"]
    running.open("child", session_id=sid)
    got = instances(running, sid)
    assert got["child"]["state"] == "foreground" and got["parent"]["state"] == "background"
    r = running.post(f"/api/instances/{got['parent']['instance_id']}/focus", {"session_id": sid})
    assert r.status_code == 200 and r.json()["state"] == "foreground"
    assert instances(running, sid)["child"]["state"] == "background"
    other = running.open("parent")["session_id"]
    assert other != sid
    r = running.post(f"/api/instances/{got['parent']['instance_id']}/close", {"session_id": other})
    assert r.status_code == 404  # an instance of another session
    assert running.post("/api/instances/inst_nope/focus", {}).status_code == 404


def test_a_launched_child_that_answers_at_once_gives_its_result(running: Running) -> None:
    sub = running.system.bus.subscribe()
    reply = launch(running, app="child", instruction='give {"file": "a.txt"}', await_result=True)
    view = reply.get("response") if "state" not in reply else parent_view(sub, reply["run_id"])
    assert view is not None
    result = view["data"]["results"]["step_kid"]
    assert result["status"] == "ok"
    assert result["result"] == {"result": {"file": "a.txt"}, "closed_by_user": False}
    got = instances(running, reply["session_id"])
    assert got["child"]["state"] == "stopped"
    assert got["child"]["parent_instance_id"] == got["parent"]["instance_id"]
    assert got["parent"]["state"] == "foreground"  # the focus came back


def test_a_child_the_user_answers_later_or_closes(running: Running) -> None:
    sub = running.system.bus.subscribe()
    reply = launch(running, app="child", instruction="wait", await_result=True)
    assert reply["state"] == "waiting", reply
    sid = reply["session_id"]
    child = wait_for(
        lambda: instances(running, sid).get("child"), timeout=WAIT, what="the child instance"
    )
    assert child["state"] == "foreground"
    # the user clicks the child's button: its reply carries the result
    picked = running.post(
        "/api/action",
        {
            "app": "child",
            "action_id": "give",
            "params": {"result": {"picked": "A"}},
            "session_id": sid,
        },
    )
    assert picked.status_code == 200
    view = parent_view(sub, reply["run_id"])
    assert view["data"]["results"]["step_kid"]["result"] == {
        "result": {"picked": "A"},
        "closed_by_user": False,
    }
    assert instances(running, sid)["parent"]["state"] == "foreground"
    # again, and this time the user closes the child's window
    reply = launch(running, app="child", instruction="wait", await_result=True)
    sid = reply["session_id"]
    child = wait_for(
        lambda: (
            c
            if (c := instances(running, sid).get("child")) and c["state"] == "foreground"
            else None
        ),
        timeout=WAIT,
        what="the child in front",
    )
    r = running.post(f"/api/instances/{child['instance_id']}/close", {"session_id": sid})
    assert r.status_code == 200
    view = parent_view(sub, reply["run_id"])
    assert view["data"]["results"]["step_kid"]["result"] == {
        "result": None,
        "closed_by_user": True,
    }


def test_a_child_that_crashes_is_an_error_for_the_parent(running: Running) -> None:
    sub = running.system.bus.subscribe()
    reply = launch(running, app="child", instruction="crash", await_result=True)
    view = reply.get("response") if "state" not in reply else parent_view(sub, reply["run_id"])
    assert view is not None
    result = view["data"]["results"]["step_kid"]
    assert result["status"] == "error" and "child" in result["error"], result
    assert instances(running, reply["session_id"])["parent"]["state"] == "foreground"


def test_bad_launches_are_step_errors_naming_the_problem(running: Running) -> None:
    for args, words in (
        ({"app": "nope"}, "no app 'nope'"),
        ({"app": "parent"}, "cannot launch itself"),
        ({}, "give the app to open"),
    ):
        reply = launch(running, **args)
        result = reply["response"]["data"]["results"]["step_kid"]
        assert result["status"] == "error" and words in result["error"], result


def test_notes_asks_the_files_app_for_a_file_and_keeps_the_pick(tmp_path: Path) -> None:
    """The bundled example: notes launches files for a result; the user's pick there
    becomes a note, and the focus goes back to notes."""
    root = Path(__file__).resolve().parent.parent.parent
    apps = tmp_path / "apps"
    for app_id in ("notes", "files"):
        shutil.copytree(root / "apps" / app_id, apps / app_id)
    (apps / "files" / "workspace" / "report.txt").write_text("hello")
    r = start_system(apps, tmp_path / "data")
    try:
        sub = r.system.bus.subscribe()
        reply = r.post("/api/action", {"app": "notes", "action_id": "attach"}).json()
        assert reply["state"] == "waiting", reply
        sid = reply["session_id"]
        files = wait_for(
            lambda: (
                f if (f := instances(r, sid).get("files")) and f["state"] == "foreground" else None
            ),
            timeout=WAIT,
            what="the files app in front",
        )
        assert files["parent_instance_id"] == instances(r, sid)["notes"]["instance_id"]
        pick = {
            "app": "files",
            "action_id": "pick",
            "params": {"path": "report.txt"},
            "session_id": sid,
        }
        assert r.post("/api/action", pick).json()["response"]["result"]["path"] == "report.txt"
        deadline = time.monotonic() + WAIT
        view: dict[str, Any] | None = None
        while view is None and time.monotonic() < deadline:
            ev = sub.get(timeout=0.5)
            if ev and ev.get("type") == "view" and ev.get("run_id") == reply["run_id"]:
                view = ev["response"] if ev["app"] == "notes" else None
        assert view is not None and "report.txt" in view["message"], view
        assert instances(r, sid)["notes"]["state"] == "foreground"
        listed = r.open("notes", session_id=sid)["response"]["data"]["items"]
        assert any("report.txt" in str(item) for item in listed)
    finally:
        r.stop()


def test_a_child_that_never_answers_expires_like_an_approval(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    for app_id in ("parent", "child"):
        shutil.copytree(PLANNER, apps / app_id)
    r = start_system(apps, tmp_path / "data", approvals={"timeout": 1})
    try:
        sub = r.system.bus.subscribe()
        reply = launch(r, app="child", instruction="wait", await_result=True)
        assert reply["state"] == "waiting", reply
        view = parent_view(sub, reply["run_id"])
        assert view["data"]["codes"] == {"step_kid": "expired"}
        assert instances(r, reply["session_id"])["child"]["state"] == "stopped"
    finally:
        r.stop()
