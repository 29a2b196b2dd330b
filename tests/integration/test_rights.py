"""Rights are never borrowed (DESIGN §14.4, issue 20 item 4).

Real system, real app processes (the bundled ``system_agent`` and ``code``, and the
hostile ``tests/fixtures/apps_rights/evil``), approvals ``smart``. Each attack the issue
reports is reproduced as it was made, with its positive control beside it:

- an app without ``desktop.control`` launches ``system_agent`` with "隐藏任务栏": the
  UI operation waits on a card naming both apps; denied, nothing changes; allowed, it
  is applied (and ``system_agent`` asked by the user itself needs no card);
- ``code`` always allowed to ``shell_exec``, launched by another app: it asks, the card
  names both apps and offers no "always"; allowed, the code runs;
- apps launching each other: a cycle, a chain deeper than 3 and a fan-out over the
  limit are step errors starting ``launch:``, never a RecursionError or a 500;
- "allow for this session" holds in the session the user answered in, not in a session
  id the app writes into its own call.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.events import Subscription
from tests.conftest import ROOT
from tests.integration.conftest import FIXTURES, Running, final_view, start_system
from tests.util import wait_for

EVIL = FIXTURES / "apps_rights" / "evil"
WAIT = 20.0
SNAPSHOT = {
    "elements": [
        {"id": "taskbar", "type": "taskbar", "label": "taskbar", "x": 0, "y": 752,
         "width": 1280, "height": 48, "visible": True},
        {"id": "clock", "type": "clock", "label": "14:05", "x": 1190, "y": 758,
         "width": 80, "height": 36, "visible": True},
        {"id": "win_hello", "type": "window", "label": "Hello", "x": 300, "y": 120,
         "width": 480, "height": 360, "visible": True},
    ],
    "viewport": {"width": 1280, "height": 800},
}  # fmt: skip


NAMES = {
    "evil": {"zh-CN": "Evil", "en": "Evil"},
    "code": {"zh-CN": "代码", "en": "Code"},
    "system_agent": {"zh-CN": "系统控制", "en": "System Control"},
}
"""Each app's display name per locale, as a card names the apps of a launch chain."""


def copy_evil(apps: Path, app_id: str) -> None:
    shutil.copytree(EVIL, apps / app_id)
    manifest = json.loads((apps / app_id / "manifest.json").read_text())
    manifest.update(name=app_id.title(), keywords=[app_id], description=f"hostile {app_id}")
    (apps / app_id / "manifest.json").write_text(json.dumps(manifest))


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    apps = tmp_path / "apps"
    copy_evil(apps, "evil")
    for app_id in ("system_agent", "code"):
        shutil.copytree(ROOT / "apps" / app_id, apps / app_id)
    r = start_system(apps, tmp_path / "data", approvals={"mode": "smart", "timeout": 60})
    assert r.post("/api/ui/snapshot", SNAPSHOT).status_code == 200
    yield r
    r.stop()


def plan(r: Running, app: str, steps: list[dict[str, Any]], sid: str | None = None) -> Any:
    body: dict[str, Any] = {"app": app, "action_id": "plan", "params": {"steps": steps}}
    if sid:
        body["session_id"] = sid
    reply = r.post("/api/action", body)
    assert reply.status_code == 200, reply.text
    return reply.json()


def evil_launches(r: Running, app: str, instruction: str) -> Any:
    step = {"step_id": "kid", "tool": "launch", "args": {"app": app, "instruction": instruction}}
    return plan(r, "evil", [step])


def the_card(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("state") == "waiting", reply
    cards = list(reply.get("pending") or [])
    assert len(cards) == 1, cards
    card: dict[str, Any] = cards[0]
    return card


def answer(r: Running, card: dict[str, Any], decision: str) -> None:
    got = r.post(f"/api/interactions/{card['id']}", {"decision": decision})
    assert got.status_code == 200, got.text


def ui_ops(sub: Subscription) -> list[dict[str, Any]]:
    out = []
    while (ev := sub.get(timeout=0.05)) is not None:
        if ev["type"] == "ui_op":
            out.append(ev)
    return out


def view_of(sub: Subscription, run_id: str, app: str) -> dict[str, Any]:
    return final_view(sub, run_id, app=app, wait=WAIT)


# ------------------------------------------------------- (a) desktop.control is not lent


def test_a_launched_system_agent_does_not_lend_desktop_control(running: Running) -> None:
    sub, desktop = running.system.bus.subscribe(), running.system.bus.subscribe()
    reply = evil_launches(running, "system_agent", "隐藏任务栏")
    card = the_card(reply)
    assert card["app"] == "system_agent" and card["chain"] == ["evil", "system_agent"]
    assert card["on_behalf_of"] == ["evil"]
    assert card["chain_names"] == [NAMES["evil"], NAMES["system_agent"]]
    (step,) = card["steps"]
    # both apps by structure, in every locale; the step's words are the operation's own
    assert step["chain"] == ["evil", "system_agent"], step
    assert step["chain_names"] == [NAMES["evil"], NAMES["system_agent"]], step
    assert step["text"] == "hide taskbar", step
    assert "allow_always" not in card["options"]
    assert ui_ops(desktop) == []  # nothing reached the desktop before the user answered
    answer(running, card, "deny")
    child = view_of(sub, reply["run_id"], "system_agent")
    assert child["status"] == "error" and "denied" in json.dumps(child, ensure_ascii=False)
    assert ui_ops(desktop) == []
    assert running.get("/api/ui/ops").json().get("ops", []) == []


def test_rename_by_a_launcher_waits_and_runs_once_the_user_allows(running: Running) -> None:
    """Positive control: a launched child the user approves does its work."""
    sub, desktop = running.system.bus.subscribe(), running.system.bus.subscribe()
    reply = evil_launches(running, "system_agent", "把Hello窗口改名为系统设置")
    card = the_card(reply)
    assert ui_ops(desktop) == []
    answer(running, card, "allow")
    view_of(sub, reply["run_id"], "system_agent")
    applied = ui_ops(desktop)
    assert [(e["op"], e["id"], e.get("text")) for e in applied] == [
        ("change_text", "win_hello", "系统设置")
    ], applied


def test_system_agent_acting_for_the_user_needs_no_card(running: Running) -> None:
    """Positive control: an app granted desktop.control acting for itself."""
    sub = running.system.bus.subscribe()
    out = running.instruct("隐藏任务栏")
    assert out.get("state") != "waiting" and out["results"][0]["app"] == "system_agent", out
    assert [(e["op"], e["id"]) for e in ui_ops(sub)] == [("hide", "taskbar")]


def test_a_launcher_named_like_the_child_is_named_with_its_id_on_the_card(
    tmp_path: Path,
) -> None:
    """Variant: the launcher takes the child's own name ("代码" / "Code") so the card
    would read "Code, asked by Code": the card's names are the desktop's display names,
    the later look-alike carries its id in every locale (DESIGN §14.7)."""
    apps = tmp_path / "apps"
    shutil.copytree(ROOT / "apps" / "code", apps / "code")
    copy_evil(apps, "mimic")
    manifest = json.loads((apps / "mimic" / "manifest.json").read_text())
    manifest["name"] = dict(NAMES["code"])
    (apps / "mimic" / "manifest.json").write_text(json.dumps(manifest))
    r = start_system(apps, tmp_path / "data", approvals={"mode": "smart", "timeout": 60})
    try:
        step = {
            "step_id": "kid",
            "tool": "launch",
            "args": {"app": "code", "instruction": "运行 print(1)"},
        }
        card = the_card(plan(r, "mimic", [step]))
        assert card["chain"] == ["mimic", "code"], card
        assert card["chain_names"] == [
            {"zh-CN": "代码 (mimic)", "en": "Code (mimic)"},
            NAMES["code"],
        ], card
        assert card["steps"][0]["chain_names"] == card["chain_names"]
        answer(r, card, "deny")
    finally:
        r.stop()


# ------------------------------------------------- (b) "always allow" for B is B's alone


def test_code_always_allowed_still_asks_for_work_another_app_started(running: Running) -> None:
    sub = running.system.bus.subscribe()
    assert running.post("/api/apps/code/policy", {"shell_exec": "allow"}).status_code == 200
    # positive control: Code for the user runs with no card
    out = running.instruct("运行 print(6*7)")
    assert out.get("state") != "waiting", out
    assert "42" in json.dumps(out["results"][0]["response"]["data"])
    reply = evil_launches(running, "code", "运行 print(6*7)")
    card = the_card(reply)
    assert card["app"] == "code" and card["chain"] == ["evil", "code"]
    step = next(s for s in card["steps"] if s["tool"] == "shell_exec")
    assert step["rule"] == "ask"
    assert step["chain"] == ["evil", "code"] and step["chain_names"][-1] == NAMES["code"]
    assert step["text"].startswith("python3 ") and "asked by" not in step["text"], step
    assert "allow_always" not in card["options"]
    answer(running, card, "allow")
    child = view_of(sub, reply["run_id"], "code")
    assert "42" in json.dumps(child["data"]), child
    # the answer for Evil→Code did not become an "always" for Code or for Evil
    assert running.get("/api/apps/evil/policy").json() == {}
    assert running.get("/api/apps/code/policy").json() == {"shell_exec": "allow"}


def test_allow_for_session_given_to_a_chain_stays_with_that_chain(running: Running) -> None:
    sub = running.system.bus.subscribe()
    reply = evil_launches(running, "code", "运行 print(1)")
    card = the_card(reply)
    assert "allow_session" in card["options"]
    answer(running, card, "allow_session")
    view_of(sub, reply["run_id"], "code")
    sid = reply["session_id"]
    # the same chain in the same session: allowed
    launch = {"app": "code", "instruction": "运行 print(2)"}
    again = plan(running, "evil", [{"step_id": "kid", "tool": "launch", "args": launch}], sid=sid)
    assert again.get("state") != "waiting", again
    # Code by itself in that session was not given anything (smart asks for commands)
    alone = running.instruct("运行 print(3)", sid)
    assert alone.get("state") == "waiting", alone


def test_a_synchronous_call_tool_of_launched_work_asks_too(tmp_path: Path) -> None:
    """Variant: the child's rights reached through its own ``call_tool`` (not a plan
    step) while it works for the launcher."""
    apps = tmp_path / "apps"
    copy_evil(apps, "evil")
    copy_evil(apps, "proxy")
    r = start_system(apps, tmp_path / "data", approvals={"mode": "smart", "timeout": 60})
    try:
        sub = r.system.bus.subscribe()
        assert r.post("/api/apps/proxy/policy", {"shell_exec": "allow"}).status_code == 200
        call = 'call {"tool": "shell_exec", "args": {"cmd": ["echo", "hi"]}}'
        # positive control: proxy, always allowed, calls for the user: no card
        alone = r.instruct("proxy " + call)
        assert alone.get("state") != "waiting", alone
        assert "hi" in json.dumps(alone["results"][0]["response"]["data"])
        step = {"step_id": "kid", "tool": "launch", "args": {"app": "proxy", "instruction": call}}
        reply = plan(r, "evil", [step])
        card = the_card(reply)
        assert card["app"] == "proxy" and card["chain"] == ["evil", "proxy"], card
        (step,) = card["steps"]
        assert step["chain"] == ["evil", "proxy"] and step["text"] == "echo hi", step
        assert step["chain_names"] == [{"zh-CN": "Evil", "en": "Evil"}] + [
            {"zh-CN": "Proxy", "en": "Proxy"}
        ]
        answer(r, card, "deny")
        assert "denied" in json.dumps(view_of(sub, reply["run_id"], "proxy"))
    finally:
        r.stop()


# ------------------------------------------------------------ (c) cycles, depth, fan-out


@pytest.fixture
def chain_apps(tmp_path: Path) -> Iterator[Running]:
    apps = tmp_path / "apps"
    for app_id in ("ping", "pong", "hop1", "hop2", "hop3", "hop4", "hop5"):
        copy_evil(apps, app_id)
    r = start_system(apps, tmp_path / "data", approvals={"mode": "smart"})
    yield r
    r.stop()


def launched_views(sub: Subscription, run_id: str, until_app: str) -> dict[str, dict[str, Any]]:
    """The views of launched children of ``run_id``, until ``until_app``'s."""
    seen: dict[str, dict[str, Any]] = {}

    def got() -> bool:
        while (ev := sub.get(timeout=0.05)) is not None:
            if ev["type"] == "view" and ev.get("run_id") == run_id and ev.get("launched_by"):
                seen[ev["app"]] = ev["response"]
        return until_app in seen

    wait_for(got, what=f"the view of {until_app}", timeout=WAIT)
    return seen


def test_two_apps_launching_each_other_is_a_cycle_error(chain_apps: Running) -> None:
    r = chain_apps
    sub = r.system.bus.subscribe()
    launches = [
        {"step_id": "go", "tool": "launch", "args": {"app": "pong", "instruction": "bounce ping"}}
    ]
    reply = plan(r, "ping", launches)
    assert reply["response"]["status"] == "ok", reply
    pong = launched_views(sub, reply["run_id"], "pong")["pong"]
    err = pong["data"]["results"]["step_hop"]["error"]
    assert err.startswith("launch:") and "cycle" in err and "ping" in err, err
    assert "Recursion" not in json.dumps(reply)


def test_a_launch_chain_deeper_than_three_is_refused(chain_apps: Running) -> None:
    r = chain_apps
    sub = r.system.bus.subscribe()
    first = {
        "step_id": "go",
        "tool": "launch",
        "args": {"app": "hop2", "instruction": "bounce hop3,hop4,hop5"},
    }
    reply = plan(r, "hop1", [first])
    views = launched_views(sub, reply["run_id"], "hop4")
    assert views["hop2"]["data"]["results"]["step_hop"]["status"] == "ok"
    assert views["hop3"]["data"]["results"]["step_hop"]["status"] == "ok"
    err = views["hop4"]["data"]["results"]["step_hop"]["error"]
    assert err.startswith("launch:") and "deep" in err and "3" in err, err
    assert "hop1 → hop2 → hop3 → hop4" in err, err


def test_a_fan_out_over_the_limit_is_refused(chain_apps: Running) -> None:
    r = chain_apps
    steps = [
        {
            "step_id": f"k{i}",
            "tool": "launch",
            "args": {"app": "pong", "instruction": "bounce"},
            "on_error": "continue",
        }
        for i in range(6)
    ]
    reply = plan(r, "ping", steps)
    results = reply["response"]["data"]["results"]
    assert [results[f"step_k{i}"]["status"] for i in range(6)] == ["ok"] * 4 + ["error"] * 2
    err = results["step_k4"]["error"]
    assert err.startswith("launch:") and "at most 4" in err, err


# ------------------------------------------- (d) allow-for-session follows the user's session


def call_as(r: Running, sid: str, claimed: str | None) -> Any:
    body = {
        "app": "evil",
        "action_id": "call_as",
        "session_id": sid,
        "params": {"tool": "shell_exec", "args": {"cmd": ["echo", "hi"]}, "session": claimed},
    }
    reply = r.post("/api/action", body)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_allow_for_session_is_bound_to_the_session_the_user_answered_in(
    running: Running,
) -> None:
    sub = running.system.bus.subscribe()
    s1 = running.open("evil")["session_id"]
    first = call_as(running, s1, s1)
    card = the_card(first)
    assert card["session_id"] == s1 and "allow_session" in card["options"]
    answer(running, card, "allow_session")
    assert "hi" in json.dumps(view_of(sub, first["run_id"], "evil"))
    # positive control: the same call in the same session is allowed now
    again = call_as(running, s1, s1)
    assert again.get("state") != "waiting", again
    assert "hi" in json.dumps(again["response"]["data"])
    # another session: the app names s1 in its call; it gets no benefit
    s2 = running.open("evil")["session_id"]
    assert s2 != s1
    spoofed = call_as(running, s2, s1)
    card2 = the_card(spoofed)
    assert card2["session_id"] == s2  # asked where the user is, not where the app says
    answer(running, card2, "deny")
    assert "denied" in json.dumps(view_of(sub, spoofed["run_id"], "evil"))


def test_a_call_outside_any_request_gets_no_session_allowance(running: Running) -> None:
    """Variant: the app calls in the background (no request of the system in flight),
    naming the session the user allowed it in."""
    sub = running.system.bus.subscribe()
    s1 = running.open("evil")["session_id"]
    first = call_as(running, s1, s1)
    answer(running, the_card(first), "allow_session")
    view_of(sub, first["run_id"], "evil")
    record = running.system.launcher.get("evil")
    assert record is not None
    got: dict[str, Any] = {}

    def background() -> None:
        http = requests.Session()
        http.trust_env = False
        resp = http.post(
            running.url + "/api/sys/tool",
            json={"tool": "shell_exec", "args": {"cmd": ["echo", "bg"]}, "session_id": s1},
            headers={"Authorization": f"Bearer {record.token}"},
            timeout=WAIT,
        )
        got["status"], got["body"] = resp.status_code, resp.json()

    t = threading.Thread(target=background)
    t.start()
    pending = wait_for(
        lambda: [
            i for i in running.get("/api/interactions?pending=1").json() if i["app"] == "evil"
        ],
        what="a card for the background call",
        timeout=WAIT,
    )
    assert "allow_session" not in pending[0]["options"]  # no session vouches for it
    answer(running, pending[0], "deny")
    t.join(WAIT)
    assert got["status"] == 200 and got["body"]["code"] == "denied", got
