"""Runs (DESIGN §12): the user approves, watches and stops what an app's plan does.

Real system, real app process (``tests/fixtures/apps_runs/planner``: the action
``plan`` runs the steps it is given), real commands in the sandbox, real SQLite.
Each row of §12: the three modes, the four decisions (always across a restart),
expiry, the block list, cancel of a running command and of a waiting run, the
409s and 400s, two tabs answering one card, recovery of a waiting run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integration.conftest import FIXTURES, Running, copy_apps, final_view, start_system
from tests.util import wait_for

APPS = FIXTURES / "apps_runs"
APP = "planner"
WAIT = 20.0

SHELL = [{"step_id": "run", "tool": "shell_exec", "args": {"cmd": "echo hello"}}]
WRITE = [{"step_id": "w", "tool": "file_write", "args": {"path": "out.txt", "content": "x"}}]
READ = [{"step_id": "r", "tool": "file_list", "args": {"path": "."}}]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(data: Path | None = None, **approvals: Any) -> Running:
        apps = tmp_path / "apps"
        if not apps.exists():
            copy_apps(apps, [APP], source=APPS)
        running = start_system(
            apps, data or tmp_path / "data", approvals={"mode": "smart", **approvals}
        )
        started.append(running)
        return running

    yield start
    for r in started:
        r.stop()


def plan(running: Running, steps: list[dict[str, Any]], sid: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"app": APP, "action_id": "plan", "params": {"steps": steps}}
    if sid:
        body["session_id"] = sid
    r = running.post("/api/action", body)
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    return reply


def answer(running: Running, ia_id: str, decision: str) -> tuple[int, dict[str, Any]]:
    r = running.post(f"/api/interactions/{ia_id}", {"decision": decision})
    return r.status_code, r.json()


def run_row(running: Running, run_id: str) -> dict[str, Any]:
    r = running.get(f"/api/runs/{run_id}")
    assert r.status_code == 200, r.text
    row: dict[str, Any] = r.json()
    return row


def wait_state(running: Running, run_id: str, state: str) -> dict[str, Any]:
    return wait_for(
        lambda: row if (row := run_row(running, run_id))["state"] == state else None,
        timeout=WAIT,
        what=f"run {run_id} to be {state}",
    )


# --------------------------------------------------------------------- modes


def test_smart_mode_asks_before_a_command_and_runs_it_once_allowed(
    make: Callable[..., Running],
) -> None:
    running = make()
    sub = running.system.bus.subscribe()
    reply = plan(running, SHELL)
    assert reply["state"] == "waiting" and reply["run_id"].startswith("run_")
    (card,) = reply["pending"]
    assert card["kind"] == "approval" and card["run_id"] == reply["run_id"]
    (step,) = card["steps"]
    assert step["tool"] == "shell_exec" and step["risk"] == "high" and "echo hello" in step["text"]
    pending = running.get("/api/interactions?pending=1").json()
    assert [p["id"] for p in pending] == [card["id"]]
    assert run_row(running, reply["run_id"])["state"] == "waiting"

    status, body = answer(running, card["id"], "allow")
    assert status == 200 and body["state"] == "answered"
    view = final_view(sub, reply["run_id"])
    assert "results" in view.get("data", {}), view
    assert view["data"]["results"]["step_run"]["result"]["stdout"].strip() == "hello"
    row = wait_state(running, reply["run_id"], "done")
    assert [s["status"] for s in row["steps"]] == ["ok"]
    assert running.get("/api/interactions?pending=1").json() == []
    audit = running.get("/api/audit", params={"app": APP}).json()
    shell = next(a for a in audit if a["tool"] == "shell_exec")
    assert shell["run_id"] == reply["run_id"] and shell["risk"] == "high"
    assert shell["decision"] == "user"


def test_smart_mode_runs_reads_and_writes_at_once(make: Callable[..., Running]) -> None:
    running = make()
    reply = plan(running, WRITE + READ)
    assert "state" not in reply, reply
    assert reply["response"]["data"]["codes"] == {"step_w": None, "step_r": None}
    assert reply["run_id"] == reply["response"]["run_id"]
    assert run_row(running, reply["run_id"])["state"] == "done"


def test_auto_mode_asks_nothing(make: Callable[..., Running]) -> None:
    running = make(mode="auto")
    reply = plan(running, SHELL)
    assert "state" not in reply
    assert reply["response"]["data"]["results"]["step_run"]["status"] == "ok"


def test_manual_mode_asks_before_a_write_but_not_a_read(make: Callable[..., Running]) -> None:
    running = make(mode="manual")
    reply = plan(running, READ)
    assert "state" not in reply
    reply = plan(running, WRITE)
    assert reply["state"] == "waiting"
    assert reply["pending"][0]["steps"][0]["risk"] == "medium"


# ----------------------------------------------------------------- decisions


def test_deny_stops_the_plan_and_the_app_sees_denied(make: Callable[..., Running]) -> None:
    running = make()
    sub = running.system.bus.subscribe()
    marker = Path(running.apps_dir / APP / "workspace" / "made.txt")
    steps = [
        {
            "step_id": "mk",
            "tool": "shell_exec",
            "args": {"cmd": ["python3", "-c", "open('made.txt','w').write('x')"]},
        }
    ]
    reply = plan(running, steps)
    status, _ = answer(running, reply["pending"][0]["id"], "deny")
    assert status == 200
    view = final_view(sub, reply["run_id"])
    assert view["data"]["codes"] == {"step_mk": "denied"}
    assert view["data"]["results"]["step_mk"]["error"] == "denied by the user"
    assert not marker.exists()
    audit = running.get("/api/audit", params={"app": APP}).json()
    denied = next(a for a in audit if a["tool"] == "shell_exec")
    assert denied["status"] == "denied" and denied["decision"] == "denied"


def test_allow_for_this_session_asks_again_only_in_another_session(
    make: Callable[..., Running],
) -> None:
    running = make()
    first = plan(running, SHELL)
    sid = first["session_id"]
    answer(running, first["pending"][0]["id"], "allow_session")
    wait_state(running, first["run_id"], "done")
    again = plan(running, SHELL, sid=sid)
    assert "state" not in again, again
    other = plan(running, SHELL)
    assert other["session_id"] != sid and other["state"] == "waiting"


def test_always_allow_survives_a_restart_and_can_be_revoked(
    make: Callable[..., Running], tmp_path: Path
) -> None:
    running = make()
    first = plan(running, SHELL)
    answer(running, first["pending"][0]["id"], "allow_always")
    wait_state(running, first["run_id"], "done")
    assert running.get(f"/api/apps/{APP}/policy").json() == {"shell_exec": "allow"}
    running.stop()
    again = make(data=tmp_path / "data")
    assert "state" not in plan(again, SHELL)
    r = again.post(f"/api/apps/{APP}/policy", {"shell_exec": None})
    assert r.status_code == 200 and r.json() == {}
    assert plan(again, SHELL)["state"] == "waiting"


def test_a_never_policy_refuses_without_asking(make: Callable[..., Running]) -> None:
    running = make(mode="auto")
    r = running.post(f"/api/apps/{APP}/policy", {"shell_exec": "never"})
    assert r.status_code == 200
    reply = plan(running, SHELL)
    assert "state" not in reply
    assert reply["response"]["data"]["codes"] == {"step_run": "denied"}


def test_an_unanswered_card_expires(make: Callable[..., Running]) -> None:
    running = make(timeout=1)
    sub = running.system.bus.subscribe()
    reply = plan(running, SHELL)
    view = final_view(sub, reply["run_id"])
    assert view["data"]["codes"] == {"step_run": "expired"}
    ia = reply["pending"][0]["id"]
    status, body = answer(running, ia, "allow")
    assert status == 409 and body["current"]["state"] == "expired"


# ----------------------------------------------------------------- bad input


def test_bad_answers_and_two_tabs(make: Callable[..., Running]) -> None:
    running = make()
    reply = plan(running, SHELL)
    ia = reply["pending"][0]["id"]
    status, body = answer(running, ia, "maybe")
    assert status == 400 and "allow, allow_session, allow_always, deny" in body["error"]
    assert answer(running, "ia_0000000000000000", "allow")[0] == 404
    results: list[tuple[int, dict[str, Any]]] = []
    tabs = [
        threading.Thread(target=lambda d=d: results.append(answer(running, ia, d)))
        for d in ("allow", "deny")
    ]
    for t in tabs:
        t.start()
    for t in tabs:
        t.join()
    codes = sorted(code for code, _ in results)
    assert codes == [200, 409], results
    winner = next(body for code, body in results if code == 200)["answer"]["decision"]
    loser = next(body for code, body in results if code == 409)
    assert loser["current"]["answer"]["decision"] == winner
    assert answer(running, ia, winner)[0] == 200  # the same answer again is fine
    wait_state(running, reply["run_id"], "done")
    r = running.post(f"/api/runs/{reply['run_id']}/cancel")
    assert r.status_code == 409 and r.json()["current"]["state"] == "done"
    assert running.post("/api/runs/run_nope/cancel").status_code == 404


# -------------------------------------------------------------------- cancel


def test_cancel_kills_a_running_command_and_nothing_is_written_after(
    make: Callable[..., Running],
) -> None:
    running = make(mode="auto")
    sub = running.system.bus.subscribe()
    after = running.apps_dir / APP / "workspace" / "after.txt"
    code = "import time; time.sleep(30); open('after.txt', 'w').write('late')"
    steps = [
        {"step_id": "slow", "tool": "shell_exec", "args": {"cmd": ["python3", "-c", code]}},
        {"step_id": "next", "tool": "file_write", "args": {"path": "next.txt", "content": "x"}},
    ]
    done: dict[str, Any] = {}
    caller = threading.Thread(target=lambda: done.update(plan(running, steps)))
    caller.start()

    def sleeper() -> psutil.Process | None:
        for p in psutil.process_iter(["cmdline"]):
            if code in " ".join(p.info["cmdline"] or []):
                return p
        return None

    proc = wait_for(sleeper, timeout=WAIT, what="the command to start")
    run_id = running.get("/api/runs?active=1").json()[0]["run_id"]
    r = running.post(f"/api/runs/{run_id}/cancel")
    assert r.status_code == 200
    gone = time.monotonic()
    wait_for(lambda: not proc.is_running(), timeout=2, what="the command to be killed")
    assert time.monotonic() - gone < 2
    caller.join(WAIT)
    codes = done["response"]["data"]["codes"]
    assert codes == {"step_slow": "cancelled", "step_next": "cancelled"}, codes
    assert wait_state(running, run_id, "cancelled")
    assert not after.exists() and not (after.parent / "next.txt").exists()
    del sub


def test_cancel_of_a_waiting_run_withdraws_its_card(make: Callable[..., Running]) -> None:
    running = make()
    sub = running.system.bus.subscribe()
    reply = plan(running, SHELL)
    r = running.post(f"/api/runs/{reply['run_id']}/cancel")
    assert r.status_code == 200
    view = final_view(sub, reply["run_id"])
    assert view["data"]["codes"] == {"step_run": "cancelled"}
    wait_state(running, reply["run_id"], "cancelled")
    assert running.get("/api/interactions?pending=1").json() == []


def test_typing_stop_cancels_the_sessions_run(make: Callable[..., Running]) -> None:
    running = make()
    reply = plan(running, SHELL)
    r = running.post("/api/instruction", {"text": "停止", "session_id": reply["session_id"]})
    assert r.status_code == 200 and r.json()["cancelled"] == [reply["run_id"]]
    wait_state(running, reply["run_id"], "cancelled")


# ------------------------------------------------------------------ recovery


def test_a_run_waiting_when_the_system_stopped_is_interrupted_after_restart(
    make: Callable[..., Running], tmp_path: Path
) -> None:
    running = make()
    reply = plan(running, SHELL)
    ia = reply["pending"][0]["id"]
    running.stop()  # the next start finds it still waiting, as after a crash
    again = make(data=tmp_path / "data")
    row = run_row(again, reply["run_id"])
    assert row["state"] == "interrupted"
    assert again.get("/api/interactions?pending=1").json() == []
    status, body = answer(again, ia, "allow")
    assert status == 409 and body["current"]["state"] == "withdrawn"


# ---------------------------------------------------------- synchronous calls


def test_a_synchronous_call_waits_for_the_card_without_timing_the_app_out(
    make: Callable[..., Running],
) -> None:
    """The app calls shell_exec itself inside /handle: the run pauses on the same card,
    the desktop's request is answered "waiting" at once, and the app's /handle, still
    waiting for the user, is not timed out (handle_timeout is 3 s in these tests)."""
    running = make()
    sub = running.system.bus.subscribe()
    body = {
        "app": APP,
        "action_id": "call",
        "params": {"tool": "shell_exec", "args": {"cmd": "echo synced"}},
    }
    reply = running.post("/api/action", body).json()
    assert reply["state"] == "waiting", reply
    (card,) = reply["pending"]
    assert [s["tool"] for s in card["steps"]] == ["shell_exec"]
    started = time.monotonic()
    wait_for(
        lambda: time.monotonic() - started > running.system.config.handle_timeout + 0.5,
        timeout=WAIT,
        what="longer than the handle timeout",
    )
    assert run_row(running, reply["run_id"])["state"] == "waiting"
    assert answer(running, card["id"], "allow")[0] == 200
    view = final_view(sub, reply["run_id"])
    assert view["data"]["result"]["stdout"].strip() == "synced", view
    body["params"]["args"] = {"cmd": "echo denied"}
    reply = running.post("/api/action", body).json()
    answer(running, reply["pending"][0]["id"], "deny")
    view = final_view(sub, reply["run_id"])
    assert view["data"]["error"] == "denied by the user", view


def test_an_interrupted_run_can_be_retried_and_nothing_reruns_by_itself(
    make: Callable[..., Running], tmp_path: Path
) -> None:
    running = make(mode="auto")
    made = running.apps_dir / APP / "workspace" / "again.txt"
    write = [{"step_id": "w", "tool": "file_write", "args": {"path": "again.txt", "content": "1"}}]
    first = plan(running, write)
    assert made.read_text() == "1"
    made.unlink()
    assert running.post(f"/api/runs/{first['run_id']}/retry").status_code == 200
    assert made.read_text() == "1"  # the same action, sent again on request
    waiting = make(data=tmp_path / "data2")  # a second system: a run left waiting
    reply = plan(waiting, SHELL)
    r = waiting.post(f"/api/runs/{reply['run_id']}/retry")
    assert r.status_code == 409 and r.json()["current"]["state"] == "waiting"
    waiting.stop()
    again = make(data=tmp_path / "data2", mode="auto")
    assert run_row(again, reply["run_id"])["state"] == "interrupted"
    assert again.get("/api/runs?active=1").json() == []  # nothing re-ran at start
    r = again.post(f"/api/runs/{reply['run_id']}/retry")
    assert r.status_code == 200, r.text
    assert r.json()["response"]["data"]["results"]["step_run"]["status"] == "ok"


def test_a_long_command_reports_its_output_while_it_runs(make: Callable[..., Running]) -> None:
    running = make(mode="auto")
    sub = running.system.bus.subscribe()
    code = "import sys, time\nfor i in range(40):\n print('line', i, flush=True); time.sleep(0.05)"
    steps = [{"step_id": "p", "tool": "shell_exec", "args": {"cmd": ["python3", "-c", code]}}]
    reply = plan(running, steps)
    assert reply["response"]["data"]["results"]["step_p"]["status"] == "ok"
    tails = []
    while (ev := sub.get(timeout=0.5)) is not None:
        if ev["type"] == "progress" and ev.get("run_id") == reply["run_id"]:
            tails.append(ev)
    assert tails, "no progress event while the command ran"
    assert all(t["step_id"] == "step_p" and "line" in t["tail"] for t in tails)
    assert tails[-1]["bytes"] > tails[0]["bytes"] or len(tails) == 1


def test_a_blocked_step_is_shown_as_refused_and_not_asked_about(
    make: Callable[..., Running],
) -> None:
    running = make()
    steps = [
        {"step_id": "bad", "tool": "shell_exec", "args": {"cmd": "sudo ls"}},
        {"step_id": "ok", "tool": "shell_exec", "args": {"cmd": "echo fine"}},
    ]
    reply = plan(running, steps)
    bad, ok = reply["pending"][0]["steps"]
    assert bad["rule"] == "never" and bad["blocked"].startswith("blocked: privilege-escalation")
    assert ok["rule"] == "ask" and "blocked" not in ok


def test_the_bundled_code_app_asks_once_per_session_in_smart_mode(tmp_path: Path) -> None:
    """Deliverable 9: a bundled app keeps working in smart mode; its command asks once."""
    apps = copy_apps(tmp_path / "apps", ["code"], source=FIXTURES.parent.parent / "apps")
    running = start_system(apps, tmp_path / "data", approvals={"mode": "smart"})
    try:
        sub = running.system.bus.subscribe()
        run_form = {"action_id": "run_form", "form_values": {"code": "print(6 * 7)", "timeout": 5}}
        r = running.post("/api/action", {"app": "code", **run_form}).json()
        assert r["state"] == "waiting", r
        (card,) = r["pending"]
        assert [s["risk"] for s in card["steps"] if s["rule"] == "ask"] == ["high"]
        assert "print(6 * 7)" in " ".join(s["text"] + s["args"] for s in card["steps"])
        assert answer(running, card["id"], "allow_session")[0] == 200
        view = final_view(sub, r["run_id"])
        assert view["data"]["stdout"] == "42\n", view
        again = running.post(
            "/api/action", {"app": "code", "session_id": r["session_id"], **run_form}
        ).json()
        assert "state" not in again, again.get("pending")
        assert again["response"]["data"]["stdout"] == "42\n"
    finally:
        running.stop()


# ------------------------------------------------------------------- ask


def ask_plan(**args: Any) -> list[dict[str, Any]]:
    return [{"step_id": "q", "tool": "ask", "args": args}]


def test_a_plan_asks_the_user_a_choice_and_gets_the_value(make: Callable[..., Running]) -> None:
    running = make()
    sub = running.system.bus.subscribe()
    options = [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]
    reply = plan(running, ask_plan(kind="choice", prompt="Which one?", options=options))
    (card,) = reply["pending"]
    assert card["kind"] == "choice" and card["prompt"] == "Which one?"
    assert card["options"] == options
    status, body = running.post(f"/api/interactions/{card['id']}", {"value": "c"}).status_code, {}
    assert status == 400
    r = running.post(f"/api/interactions/{card['id']}", {"value": "b"})
    assert r.status_code == 200 and r.json()["answer"] == {"value": "b"}
    view = final_view(sub, reply["run_id"])
    assert view["data"]["results"]["step_q"]["result"] == {"value": "b"}
    # answered: it stays in the record but can no longer be operated
    again = running.post(f"/api/interactions/{card['id']}", {"value": "a"})
    assert again.status_code == 409 and again.json()["current"]["answer"] == {"value": "b"}
    del body


def test_confirm_and_input_and_their_bad_answers(make: Callable[..., Running]) -> None:
    running = make()
    sub = running.system.bus.subscribe()
    reply = plan(running, ask_plan(kind="confirm", prompt="Delete it?"))
    ia = reply["pending"][0]["id"]
    bad = running.post(f"/api/interactions/{ia}", {"value": "yes"})
    assert bad.status_code == 400 and "true or false" in bad.json()["error"]
    running.post(f"/api/interactions/{ia}", {"value": False})
    assert final_view(sub, reply["run_id"])["data"]["results"]["step_q"]["result"] == {
        "value": False
    }
    reply = plan(running, ask_plan(kind="input", prompt="Name?", placeholder="a name"))
    card = reply["pending"][0]
    assert card["steps"][0]["placeholder"] == "a name"
    running.post(f"/api/interactions/{card['id']}", {"value": "小明"})
    assert final_view(sub, reply["run_id"])["data"]["results"]["step_q"]["result"] == {
        "value": "小明"
    }


def test_a_bad_ask_is_a_step_error_naming_the_problem(make: Callable[..., Running]) -> None:
    running = make()
    for args, words in (
        ({"kind": "choice", "prompt": "Which?"}, "a choice needs options"),
        ({"kind": "confirm"}, "a prompt"),
        ({"kind": "poll", "prompt": "?"}, "kind must be one of choice, confirm, input"),
    ):
        reply = plan(running, ask_plan(**args))
        assert "state" not in reply, reply
        result = reply["response"]["data"]["results"]["step_q"]
        assert result["status"] == "error" and words in result["error"], result


def test_an_unanswered_question_expires_and_a_cancelled_one_is_withdrawn(
    make: Callable[..., Running],
) -> None:
    running = make(timeout=1)
    sub = running.system.bus.subscribe()
    reply = plan(running, ask_plan(kind="confirm", prompt="Sure?"))
    assert final_view(sub, reply["run_id"])["data"]["codes"] == {"step_q": "expired"}
    reply = plan(running, ask_plan(kind="input", prompt="Name?"))
    running.post(f"/api/runs/{reply['run_id']}/cancel")
    assert final_view(sub, reply["run_id"])["data"]["codes"] == {"step_q": "cancelled"}
    assert (
        "ask"
        in running.system.controller.build_context(
            running.system.launcher.get(APP), reply["session_id"]
        )["available_tools"]
    )


# --------------------------------------------------- the router's clarifying choice


def look_alike_apps(root: Path) -> Path:
    """Two apps the offline router cannot tell apart by their words (names differ)."""
    import json
    import shutil

    for app_id, name in (("jotter", "Jotter 记录本"), ("memo", "Memo 备忘")):
        shutil.copytree(APPS / APP, root / app_id)
        manifest = {
            "name": name,
            "entry": "main.py",
            "description": "write down notes and lists 记录 笔记",
            "keywords": ["记录", "笔记", "note", "list"],
            "role_prompt": "You keep notes.",
        }
        (root / app_id / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False))
    return root


def test_the_router_asks_when_two_apps_are_too_close_and_remembers(tmp_path: Path) -> None:
    apps = look_alike_apps(tmp_path / "apps")
    running = start_system(apps, tmp_path / "data", approvals={"mode": "smart"})
    try:
        sub = running.system.bus.subscribe()
        r = running.post("/api/instruction", {"text": "记录 买牛奶"}).json()
        assert r["state"] == "waiting", r
        (card,) = r["pending"]
        assert card["kind"] == "choice"
        assert sorted(o["value"] for o in card["options"]) == ["jotter", "memo"]
        assert "Jotter" in card["prompt"] and "Memo" in card["prompt"]
        assert running.post(f"/api/interactions/{card['id']}", {"value": "memo"}).ok
        view = final_view(sub, r["run_id"])
        assert view["status"] == "ok"
        assert run_row(running, r["run_id"])["state"] == "done"
        calls = (apps / "memo" / "workspace" / "calls.log").read_text()
        assert calls.strip(), "the chosen app was not called"
        assert not (apps / "jotter" / "workspace" / "calls.log").exists()
        # the same question in the same session is not asked again
        again = running.post(
            "/api/instruction", {"text": "记录 买面包", "session_id": r["session_id"]}
        ).json()
        assert "state" not in again, again
        assert [x["app"] for x in again["results"]] == ["memo"]
        # a clause that names its app is never asked about
        named = running.post("/api/instruction", {"text": "打开 Jotter 记录本"}).json()
        assert "state" not in named and [x["app"] for x in named["results"]] == ["jotter"]
    finally:
        running.stop()
