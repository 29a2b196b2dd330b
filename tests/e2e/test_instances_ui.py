"""Instances and focus on the desktop in Chromium (DESIGN §13).

The real system with two copies of ``tests/fixtures/apps_runs/planner``, ``parent`` and
``child`` (as tests/integration/test_instances.py): the parent's plan ``launch``es the child
with ``instruction: "wait"``, whose view has a button that gives a ``result``. The page
follows the system's ``focus`` events (the child's window comes to the front, the parent's
comes back when the child ends) and reports the user closing a window (the waiting parent
goes on with ``closed_by_user``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from aios.config import DEFAULT_GRANTS
from tests.e2e.conftest import Desk, expect_in_front, wait_until
from tests.integration.conftest import FIXTURES, Running, start_system

PLANNER = FIXTURES / "apps_runs" / "planner"
APPS = ("parent", "child")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("e2e")
    apps = tmp / "apps"
    for app_id in APPS:
        shutil.copytree(PLANNER, apps / app_id)
        manifest = json.loads((apps / app_id / "manifest.json").read_text())
        manifest.update(name=app_id.title(), keywords=[app_id], description=f"the {app_id}")
        (apps / app_id / "manifest.json").write_text(json.dumps(manifest))
    system = start_system(
        apps,
        tmp / "data",
        language="en",
        voice={"welcome": False},
        handle_timeout=15,
        apps={"default_grants": DEFAULT_GRANTS, "restart_limit": 0},
    )
    yield system
    system.stop()


def session_of(desk: Desk) -> str:
    sid = desk.page.evaluate("() => localStorage.getItem('aios.session')")
    assert isinstance(sid, str) and sid, "the page has no session yet"
    return sid


def launch_child(desk: Desk, sid: str) -> str:
    """The parent's plan launches the child for a result; the run waits on it."""
    steps = [
        {
            "step_id": "kid",
            "tool": "launch",
            "args": {"app": "child", "instruction": "wait", "await_result": True},
        }
    ]
    body = {"app": "parent", "action_id": "plan", "params": {"steps": steps}, "session_id": sid}
    reply: dict[str, Any] = desk.api("POST", "/api/action", body)
    assert reply.get("state") == "waiting", reply
    return str(reply["run_id"])


def instance_states(desk: Desk, sid: str) -> dict[str, str]:
    return {i["app"]: i["state"] for i in desk.api("GET", f"/api/instances?session={sid}")}


def test_a_launched_child_comes_to_the_front_and_returning_restores_the_parent(
    desk: Desk,
) -> None:
    desk.open_app("parent")
    sid = session_of(desk)
    expect_in_front(desk, "parent")

    # the parent's plan launches the child: its window opens in front, saying who opened it
    launch_child(desk, sid)
    expect(desk.body("child")).to_contain_text("pick one")
    expect_in_front(desk, "child")
    expect(desk.win("child").locator(".win-opener")).to_have_text("opened by Parent")
    desk.shot("child_in_front")

    # the user picks in the child: its reply's result goes to the parent, which is in front
    desk.control("child", "give").click()
    expect(desk.body("parent")).to_contain_text('"closed_by_user": false')
    expect(desk.body("parent")).to_contain_text('"picked": "A"')
    expect_in_front(desk, "parent")
    expect(desk.win("child").locator(".win-opener")).to_be_hidden()
    assert wait_until(
        lambda: instance_states(desk, sid) == {"parent": "foreground", "child": "stopped"},
        what="the child stopped and the parent in front",
    )

    # launched again, the user closes the child's window: the parent goes on without a result
    launch_child(desk, sid)
    expect(desk.body("child")).to_contain_text("pick one")
    expect_in_front(desk, "child")
    desk.win("child").locator(".win-close").click()
    expect(desk.win("child")).to_have_count(0)
    expect(desk.body("parent")).to_contain_text('"closed_by_user": true')
    expect(desk.body("parent")).to_contain_text('"result": null')
    expect_in_front(desk, "parent")
    desk.shot("parent_back_in_front")


def test_the_window_the_user_raises_is_reported_as_the_focus(desk: Desk) -> None:
    desk.open_app("parent")
    sid = session_of(desk)
    desk.open_app("child")
    expect_in_front(desk, "child")
    assert wait_until(
        lambda: instance_states(desk, sid).get("child") == "foreground",
        what="the child in front",
    )
    desk.win("parent").locator(".win-title").click()
    expect_in_front(desk, "parent")
    assert wait_until(
        lambda: (
            (s := instance_states(desk, sid))["parent"] == "foreground"
            and s["child"] == "background"
        ),
        what="the parent reported in front",
    )
    # closing the parent's window closes its instance; the focus goes to the child
    desk.win("parent").locator(".win-close").click()
    expect_in_front(desk, "child")
    assert wait_until(
        lambda: instance_states(desk, sid)["parent"] == "stopped", what="the parent closed"
    )


def test_the_first_window_of_a_new_session_is_known_and_its_close_reported(desk: Desk) -> None:
    # the open's events come before its reply, which is what brings the page its session
    desk.open_app("child")
    sid = session_of(desk)
    assert wait_until(
        lambda: instance_states(desk, sid) == {"child": "foreground"}, what="the child open"
    )
    desk.win("child").locator(".win-close").click()
    expect(desk.win("child")).to_have_count(0)
    assert wait_until(
        lambda: instance_states(desk, sid) == {"child": "stopped"}, what="the child closed"
    )
