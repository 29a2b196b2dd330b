"""The controller end to end: real apps started by the launcher, real HTTP, real SQLite."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from aios.protocol import ATOMIC_TOOLS
from tests.integration.conftest import Running
from tests.util import wait_for


def content(result: dict[str, Any]) -> Any:
    return result["response"]["data"]["content"]


# --------------------------------------------------------------- open / context


def test_open_app_sends_an_empty_instruction_and_every_context_field(system_all: Running) -> None:
    first = system_all.open("echo")
    sid = first["session_id"]
    assert sid.startswith("sess_")
    assert first["response"]["data"]["instruction"] == ""
    # a second exchange in the same session: history_summary must reflect the first
    second = system_all.post(
        "/api/action", {"app": "echo", "action_id": "again", "params": {"n": 1}, "session_id": sid}
    ).json()
    ctx = second["response"]["data"]["context"]
    record = system_all.system.launcher.get("echo")
    assert record is not None
    assert ctx["app"] == "echo"
    assert ctx["role"] == "你是回声小AI，原样返回收到的内容。"
    assert ctx["workdir"] == str(record.workdir)
    assert Path(ctx["workdir"]).is_dir()
    assert isinstance(ctx["cwd_state"]["files"], list)
    assert ctx["cwd_state"]["last"] == ""  # the state the app returned last time
    assert ctx["available_tools"][: len(ATOMIC_TOOLS)] == list(ATOMIC_TOOLS)
    assert "shout" in ctx["available_tools"]  # its own @tool
    assert ctx["session_id"] == sid
    assert "echo" in ctx["history_summary"]
    assert ctx["tool_results"] == {} and ctx["upstream"] == {}
    assert ctx["locale"] == "zh-CN"
    assert ctx["memory"] == [] and "self" not in ctx  # none kept; no memory.read


ACTION_PAYLOADS: list[dict[str, Any]] = [
    {"action_id": "play", "params": {"song_id": "s_001"}},
    {"action_id": "search", "form_values": {"keyword": "周杰伦", "limit": 5}},
    {"action_id": "quality", "selected": "无损"},
    {"action_id": "tags", "checked": ["work", "home"]},
    {"action_id": "mode", "selected": "shuffle"},
    {"action_id": "filter", "value": "七里"},
    {"action_id": "open_doc", "href": "https://example.com/doc"},
    {"action_id": "shuffle", "on": True},
    {"action_id": "volume", "value": 75},
    {"action_id": "alarm", "value": "2026-08-14T22:00"},
]


@pytest.mark.parametrize("payload", ACTION_PAYLOADS, ids=lambda p: p["action_id"])
def test_every_action_payload_reaches_the_app_exactly(
    system_all: Running, payload: dict[str, Any]
) -> None:
    r = system_all.post("/api/action", {"app": "echo", **payload})
    assert r.status_code == 200, r.text
    data = r.json()["response"]["data"]
    assert data["action_request"] == payload
    assert data["instruction"] is None


def test_unknown_and_stopped_apps_get_404_and_503(system_all: Running) -> None:
    r = system_all.post("/api/apps/nobody/open", {})
    assert r.status_code == 404 and "nobody" in r.json()["error"]
    r = system_all.post("/api/action", {"app": "nobody", "action_id": "x"})
    assert r.status_code == 404
    system_all.system.launcher.stop_app("slow")
    r = system_all.post("/api/apps/slow/open", {})
    assert r.status_code == 503 and "not running" in r.json()["error"]
    assert system_all.open("echo")["response"]["status"] == "ok"  # others unaffected


# ------------------------------------------------------------------ steps loop


def test_steps_run_in_the_sandbox_and_results_come_back(system_all: Running) -> None:
    sub = system_all.system.bus.subscribe()
    try:
        result = system_all.post("/api/action", {"app": "stepper", "action_id": "x"}).json()
        assert content(result) == "stepper ready"
        out = system_all.instruct("stepper save 你好世界")
    finally:
        events = []
        while (e := sub.get(timeout=0.2)) is not None:
            events.append(e)
        sub.close()
    [res] = out["results"]
    assert res["app"] == "stepper"
    assert res["response"]["view_type"] == "text"
    results = res["response"]["data"]["results"]
    assert results["step_1"]["status"] == "ok" and results["step_1"]["tool"] == "file_write"
    assert results["step_1"]["result"]["size"] == len("你好世界".encode())
    assert "duration_ms" in results["step_1"]
    assert results["step_2"]["result"] == res["response"]["data"]["content"]
    note = system_all.apps_dir / "stepper" / "workspace" / "note.txt"
    assert note.read_text(encoding="utf-8") in res["response"]["data"]["content"]
    interim = [e for e in events if e["type"] == "view" and e.get("interim")]
    assert interim and interim[0]["response"]["view_type"] == "loading"
    rows = system_all.get("/api/audit?app=stepper").json()
    assert [r["tool"] for r in rows[:2]] == ["file_read", "file_write"]
    assert all(r["session_id"] == out["session_id"] for r in rows[:2])


def test_refused_step_stops_the_plan_and_is_audited_as_denied(system_all: Running) -> None:
    out = system_all.instruct("stepper fail")
    resp = out["results"][0]["response"]
    results = resp["data"]["results"]
    assert results["step_1"]["status"] == "error"
    assert "outside" in results["step_1"]["error"]
    assert "step_2" not in results  # on_error stop
    rows = system_all.get("/api/audit?app=stepper").json()
    assert rows[0]["status"] == "denied" and rows[0]["tool"] == "file_read"


def test_custom_tool_step_is_served_by_the_app_itself(system_all: Running) -> None:
    out = system_all.instruct("stepper shout hello")
    assert content(out["results"][0]) == "HELLO"


def test_no_progress_guard_and_max_rounds(system_all: Running) -> None:
    loop = system_all.instruct("stepper loop")["results"][0]["response"]
    assert any("no progress" in n for n in loop["notes"])
    assert loop["steps"] == []
    forever = system_all.instruct("stepper forever")["results"][0]["response"]
    assert any("max_rounds=4" in n for n in forever["notes"])
    # 4 rounds: steps ran after rounds 1-3, so the counter reached 3
    assert forever["data"]["n"] == 3


# --------------------------------------------------------------------- routing


def test_offline_routing_in_chinese_and_english(system_all: Running) -> None:
    out = system_all.instruct("用回声说你好")
    assert [t["app"] for t in out["plan"]] == ["echo"]
    assert out["source"] == "offline"
    out = system_all.instruct("echo hello there")
    assert [t["app"] for t in out["plan"]] == ["echo"]


def test_compound_instruction_runs_in_order_with_upstream(system_all: Running) -> None:
    out = system_all.instruct("echo hello and then use that with slow nap 0.1")
    assert [t["app"] for t in out["plan"]] == ["echo", "slow"]
    assert out["plan"][1]["depends_on"] == [out["plan"][0]["id"]]
    upstream = out["results"][1]["response"]["data"]["upstream"]
    assert upstream[out["plan"][0]["id"]]["app"] == "echo"
    assert "echo" in out["message"] and "slept" in out["message"]


def test_independent_steps_do_not_wait_for_each_other(system_all: Running) -> None:
    out = system_all.instruct("echo hello and then slow nap 0.1")
    assert [(t["app"], t["depends_on"]) for t in out["plan"]] == [("echo", []), ("slow", [])]
    assert out["results"][1]["response"]["data"]["upstream"] == {}
    assert "echo" in out["message"] and "slept" in out["message"]


def test_the_app_gets_its_part_of_the_instruction_in_context_routed(system_all: Running) -> None:
    out = system_all.instruct("用回声说你好，然后慢 nap 0.1")
    assert [t["app"] for t in out["plan"]] == ["echo", "slow"]
    data = out["results"][0]["response"]["data"]
    assert data["instruction"] == "用回声说你好"  # the task's words, as before
    routed = data["context"]["routed"]
    assert routed["text"] == "说你好" and routed["source"] == "offline"
    assert "回声" in routed["matched"] and routed["score"] > 0
    # a call no instruction routed (opening the window) has none
    assert system_all.open("echo")["response"]["data"]["context"]["routed"] is None


def test_nothing_matches_suggests_apps(system_all: Running) -> None:
    out = system_all.instruct("qwxzv")
    assert out["plan"] == [] and out["results"] == [] and out["intent"] == "no_match"
    assert out["desktop"] == [{"op": "search_menu", "query": "qwxzv"}]
    # nothing scores for "qwxzv": the apps installed first, each with an example
    suggested = {s["app"] for s in out["suggestions"]}
    assert "echo" in suggested and suggested <= {"echo", "stepper", "slow", "bad"}
    assert "Echo" in out["message"]
    assert "（echo）" not in out["message"]  # names, not a list of ids


# -------------------------------------------------------------- misbehaviour


@pytest.mark.parametrize(
    ("instruction", "needle"),
    [
        ("bad hang", "did not answer within 3 s"),
        ("bad badjson", "invalid JSON"),
        ("bad invalid", "view_type"),
        ("bad huge", "more than"),
        ("bad raise", "HTTP 500"),
    ],
)
def test_misbehaving_app_becomes_an_error_view(
    system_all: Running, instruction: str, needle: str
) -> None:
    out = system_all.instruct(instruction)
    [result] = out["results"]
    assert result["app"] == "bad"
    response = result["response"]
    assert response["status"] == "error" and response["view_type"] == "error"
    assert needle in response["message"]
    # the exchange is in the session history, and other apps keep working
    history = system_all.get(f"/api/sessions/{out['session_id']}").json()["history"]
    assert history[0]["content"] == {"text": instruction}
    assert history[-1]["role"] == "app" and needle in history[-1]["content"]["message"]
    assert system_all.open("echo")["response"]["status"] == "ok"


def test_app_crash_mid_request_is_reported_and_the_app_restarts(system_all: Running) -> None:
    resp = system_all.instruct("bad crash")["results"][0]["response"]
    assert resp["status"] == "error" and "'bad'" in resp["message"]
    launcher = system_all.system.launcher
    wait_for(
        lambda: (
            (rec := launcher.get("bad")) is not None
            and rec.status == "running"
            and rec.restarts >= 1
        ),
        "the crashed app to restart",
        15,
    )
    assert (
        system_all.post("/api/apps/bad/open", {}).json()["response"]["data"]["content"]
        == "bad app is fine"
    )


# ---------------------------------------------------------------- memory, load


def test_session_memory_survives_a_restart(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    first = make_system(["echo"])
    out = first.instruct("echo 记住这句话")
    sid = out["session_id"]
    first.stop()
    second = make_system(apps_dir=first.apps_dir, data_dir=first.data_dir)
    mem = second.get(f"/api/sessions/{sid}").json()
    texts = [h["content"] for h in mem["history"]]
    assert {"text": "echo 记住这句话"} in texts
    assert mem["completed_tasks"][0]["app"] == "echo"
    assert mem["tool_calls_log"] == [] or isinstance(mem["tool_calls_log"], list)
    again = second.open("echo", sid)
    assert "记住这句话" in again["response"]["data"]["context"]["history_summary"]


def test_thirty_concurrent_actions_without_an_error(system_all: Running) -> None:
    def act(i: int) -> dict[str, Any]:
        r = system_all.post(
            "/api/action", {"app": "echo", "action_id": "again", "params": {"i": i}}
        )
        assert r.status_code == 200, r.text
        return r.json()

    with ThreadPoolExecutor(max_workers=30) as pool:
        replies = list(pool.map(act, range(30)))
    assert sorted(r["response"]["data"]["action_request"]["params"]["i"] for r in replies) == list(
        range(30)
    )
    assert all(r["response"]["status"] == "ok" for r in replies)


def test_history_is_json_in_the_store(system_all: Running) -> None:
    out = system_all.instruct("echo 你好")
    rows = system_all.system.store.history(out["session_id"])
    assert json.dumps(rows, ensure_ascii=False)  # serialisable, nothing opaque lost
    assert rows[-1]["content"]["message"] == "echo: echo 你好" or rows[-1]["content"][
        "message"
    ].startswith("echo:")


def test_history_summary_keeps_up_with_a_long_session(system_all: Running) -> None:
    sid = system_all.open("echo")["session_id"]
    for i in range(25):  # 50 more history entries: past the summary's window
        system_all.post(
            "/api/action",
            {"app": "echo", "action_id": "again", "params": {"i": i}, "session_id": sid},
        )
    system_all.instruct("echo 最新的一句", sid)
    ctx = system_all.open("echo", sid)["response"]["data"]["context"]
    assert "最新的一句" in ctx["history_summary"]
    assert len(ctx["history_summary"]) <= system_all.system.config.history_summary_chars


def test_tasks_that_cannot_start_are_skipped_not_spun_on(system_all: Running) -> None:
    # The planner refuses such plans; the dispatcher must still end if one slips through.
    from aios.control.planner import Plan, Task

    ctl = system_all.system.controller
    sid = system_all.system.store.ensure_session()
    plan = Plan(
        tasks=[
            Task(id="t1", app="echo", instruction="a", depends_on=["t2"]),
            Task(id="t2", app="echo", instruction="b", depends_on=["t1"]),
            Task(id="t3", app="echo", instruction="c", depends_on=["t9"]),
            Task(id="t4", app="echo", instruction="d"),
        ],
        source="llm",
    )
    run = system_all.system.runs.start("instruction", "echo", sid, text="x")
    outcomes = ctl._run_plan(plan, "x", sid, run, "zh-CN")
    assert [o.response["status"] for o in outcomes] == ["error", "error", "error", "ok"]
    assert all("skipped" in o.response["message"] for o in outcomes[:3])


# what tests/fixtures/apps_system/bad answers to "verbatim", in the order it sends
VERBATIM_DATA = {"zeta": 1, "alpha": {"y": None, "b": [3, 1]}, "fields": "opaque"}
VERBATIM_ACTIONS = [
    {
        "type": "submit_form",
        "action_id": "save",
        "label": "Save",
        "fields": [{"name": "title", "label": "Title", "type": "text"}],
        "x_extra": {"kept": True},
    }
]


def test_replies_are_forwarded_exactly_as_the_app_sent_them(system_all: Running) -> None:
    sub = system_all.system.bus.subscribe()
    try:
        out = system_all.instruct("bad verbatim")
        interim = None
        deadline = time.monotonic() + 10
        while interim is None and time.monotonic() < deadline:
            event = sub.get(timeout=0.5)
            if event and event["type"] == "view" and event["app"] == "bad":
                interim = event["response"]
    finally:
        sub.close()
    response = out["results"][0]["response"]
    # validated, but not re-serialised: no "required": false added, no keys reordered
    for shown in (response, interim):
        assert shown is not None
        assert json.dumps(shown["data"]) == json.dumps(VERBATIM_DATA)
        assert json.dumps(shown["actions"]) == json.dumps(VERBATIM_ACTIONS)


def test_a_reply_without_status_is_invalid_and_names_the_field(system_all: Running) -> None:
    response = system_all.instruct("bad nostatus")["results"][0]["response"]
    assert response["status"] == "error" and response["view_type"] == "error"
    assert "status: Field required" in response["message"]


FLAKY_TOOLS_APP = """
import os
from flask import Flask, request
app = Flask(__name__)
asked = []

@app.get("/tools")
def tools():
    asked.append(1)
    if len(asked) == 1:
        return {"error": "warming up"}, 503
    return [{"name": "mine", "description": "a custom tool"}]

@app.post("/handle")
def handle():
    ctx = (request.json or {}).get("context") or {}
    return {"status": "ok", "view_type": "text",
            "data": {"content": "ok", "tools": ctx.get("available_tools"),
                     "asked": len(asked)}}

app.run(host="127.0.0.1", port=int(os.environ["APP_PORT"]))
"""


def test_a_failed_tools_listing_is_asked_again_not_cached(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    apps = tmp_path / "apps_flaky"
    (apps / "flaky").mkdir(parents=True)
    (apps / "flaky" / "manifest.json").write_text(
        json.dumps(
            {"name": "Flaky", "entry": "main.py", "keywords": ["flaky"], "role_prompt": "flaky"}
        )
    )
    (apps / "flaky" / "main.py").write_text(FLAKY_TOOLS_APP)
    running = make_system(apps_dir=apps)
    first = running.open("flaky")["response"]["data"]
    assert "mine" not in first["tools"]  # GET /tools answered 503 this once
    second = running.open("flaky")["response"]["data"]
    assert "mine" in second["tools"] and second["asked"] == 2
    third = running.open("flaky")["response"]["data"]
    assert third["asked"] == 2  # a real answer is kept for the launch


def test_opening_an_app_that_failed_validation_is_a_503_naming_why(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    apps = tmp_path / "apps_invalid"
    (apps / "norole").mkdir(parents=True)
    (apps / "norole" / "manifest.json").write_text(json.dumps({"name": "N", "entry": "main.py"}))
    (apps / "norole" / "main.py").write_text("")
    r = make_system(apps_dir=apps).post("/api/apps/norole/open", {})
    assert r.status_code == 503 and "role prompt" in r.json()["error"]


def test_rounds_are_the_rounds_that_ran(system_all: Running) -> None:
    controller = system_all.system.controller
    record = system_all.system.launcher.get("stepper")
    assert record is not None
    sid = system_all.system.store.ensure_session(None)
    # the loop stops early when the app repeats its steps: round 2, not max_rounds (4)
    assert controller.call_app(record, "stepper loop", None, sid).rounds == 2
    assert controller.call_app(record, "stepper forever", None, sid).rounds == 4
    assert controller.call_app(record, "", None, sid).rounds == 1


def test_history_pruned_by_retention_leaves_the_next_summary(system_all: Running) -> None:
    """The summary's window is kept in memory between calls; what retention deleted from the
    store is not shown to the app afterwards."""
    sid = system_all.instruct("echo 旧的一句话")["session_id"]
    ctx = system_all.open("echo", sid)["response"]["data"]["context"]
    assert "旧的一句话" in ctx["history_summary"]
    store = system_all.system.store
    deleted = store.prune(
        audit_rows=10_000,
        audit_days=365,
        history_rows_per_session=10_000,
        history_days=0,  # everything written so far is past retention
        llm_usage_rows=10_000,
        now=store.clock() + 1,
    )
    assert deleted["history"] > 0
    ctx = system_all.open("echo", sid)["response"]["data"]["context"]
    assert "旧的一句话" not in ctx["history_summary"]
