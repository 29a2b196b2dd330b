"""Traces and usage (DESIGN §16) on the real system: every event kind of an offline
instruction, a planned one (the fake OpenAI server plays the model and reports usage),
a run that waited for the user, an app's error; ``seq``; no secret in any file; the
usage totals; ``/api/traces`` and ``/api/usage``; the session report."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_openai import FakeOpenAI, tool_call
from tests.integration.conftest import FIXTURES, TOKEN, Running, copy_apps, start_system
from tests.integration.test_runs import SHELL, answer, plan, wait_state

KEY = "sk-trace-secret-0123456789"
PRICES = {"fake-model": {"input": 2.0, "output": 8.0, "cached": 0.5}}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


def llm(fake: FakeOpenAI) -> dict[str, Any]:
    return {
        "api_key": KEY,
        "base_url": fake.url,
        "model": "fake-model",
        "max_retries": 0,
        "prices": PRICES,
    }


def trace(running: Running, sid: str, run: str | None = None) -> list[dict[str, Any]]:
    r = running.get(f"/api/traces/{sid}", params={"run": run} if run else None)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines()]


def kinds(events: list[dict[str, Any]]) -> set[str]:
    return {e["event"] for e in events}


def assert_no_secret(data_dir: Path) -> None:
    files = list((data_dir / "traces").glob("*.jsonl"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert KEY not in text and TOKEN not in text, path.name
        seqs = [json.loads(line)["seq"] for line in text.splitlines()]
        assert seqs == sorted(set(seqs)) and seqs[0] == 1, path.name


def test_an_offline_instruction_is_traced(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"])
    out = running.instruct("echo hello")
    events = trace(running, out["session_id"])
    assert [e["event"] for e in events[:2]] == ["session_start", "instruction"]
    assert {
        "route",
        "run_start",
        "context_built",
        "iteration_end",
        "view",
        "run_end",
        "reply",
    } <= kinds(events)
    route = next(e for e in events if e["event"] == "route")
    assert route["source"] == "offline" and route["candidates"][0][0] == "echo"
    assert "echo" in route["candidates"][0][2]  # the words that matched, for the viewer
    assert route["tasks"][0]["app"] == "echo"
    built = next(e for e in events if e["event"] == "context_built")
    assert built["app"] == "echo" and built["run_id"] == out["run_id"] and built["sizes"]
    assert all(e["session_id"] == out["session_id"] for e in events)
    # ?run= keeps that run's events; an unknown session is a 404 naming it
    only = trace(running, out["session_id"], run=out["run_id"])
    assert only and all(e["run_id"] == out["run_id"] for e in only)
    missing = running.get("/api/traces/nosuchsession")
    assert missing.status_code == 404 and "nosuchsession" in missing.json()["error"]
    assert_no_secret(running.data_dir)


def test_a_planned_instruction_traces_the_model_and_its_usage(
    make_system: Callable[..., Running], fake: FakeOpenAI
) -> None:
    running = make_system(["echo"], llm=llm(fake))
    fake.script(
        [
            tool_call(
                "dispatch_tasks",
                {"tasks": [{"id": "t1", "app": "echo", "instruction": "hi", "depends_on": []}]},
            )
        ]
    )
    out = running.instruct("please say hi through the echo app")
    assert out["source"] == "llm"
    events = trace(running, out["session_id"])
    assert {"llm_request", "llm_response", "route", "view"} <= kinds(events)
    request = next(e for e in events if e["event"] == "llm_request")
    assert request["model"] == "fake-model" and request["messages"]
    response = next(e for e in events if e["event"] == "llm_response")
    reported = fake.usages[0]
    assert response["usage"]["prompt_tokens"] == reported["prompt_tokens"]
    assert response["usage"]["cached_tokens"] == reported["cached"]
    assert response["latency_ms"] > 0 and response["cost"] > 0
    assert next(e for e in events if e["event"] == "route")["source"] == "llm"

    usage = running.get("/api/usage", params={"by": "session"}).json()
    (group,) = [g for g in usage["groups"] if g["key"] == out["session_id"]]
    prompt = sum(u["prompt_tokens"] for u in fake.usages)
    completion = sum(u["completion_tokens"] for u in fake.usages)
    cached = sum(u["cached"] for u in fake.usages)
    assert group["calls"] == len(fake.usages)
    assert (group["prompt_tokens"], group["completion_tokens"], group["cached_tokens"]) == (
        prompt,
        completion,
        cached,
    )
    price = PRICES["fake-model"]
    dollars = ((prompt - cached) * price["input"] + cached * price["cached"]) / 1e6
    assert group["cost"] == pytest.approx(dollars + completion * price["output"] / 1e6)
    by_model = running.get("/api/usage", params={"by": "model", "since": 0}).json()
    assert [g["key"] for g in by_model["groups"]] == ["fake-model"]
    assert running.get("/api/usage", params={"since": 2**40}).json()["groups"] == []
    bad = running.get("/api/usage", params={"by": "week"})
    assert bad.status_code == 400 and "'by'" in bad.json()["error"]
    bad = running.get("/api/usage", params={"since": "yesterday"})
    assert bad.status_code == 400 and "'since'" in bad.json()["error"]

    # a new conversation ends this one with its report (the memory extraction it starts
    # reads this session in the background, after the report)
    calls = len(fake.usages)
    r = running.post("/api/sessions")
    assert r.status_code == 201
    shown = r.json()["report"]  # what the conversation panel shows of the session it ended
    assert shown["session_id"] == out["session_id"] and shown["llm_calls"] == calls
    report = next(e for e in trace(running, out["session_id"]) if e["event"] == "session_report")
    assert report["turns"] == 1 and report["runs"] == 1 and report["llm_calls"] == calls
    assert report["prompt_tokens"] == prompt and report["memories_added"] == 0
    ends = [e["event"] for e in trace(running, out["session_id"])]
    assert ends[ends.index("session_report") + 1] == "session_end"
    assert trace(running, r.json()["session_id"])[0]["event"] == "session_start"
    assert_no_secret(running.data_dir)


def test_a_run_that_waited_for_the_user_is_traced(tmp_path: Path) -> None:
    apps = copy_apps(tmp_path / "apps", ["planner"], source=FIXTURES / "apps_runs")
    running = start_system(apps, tmp_path / "data", approvals={"mode": "smart"})
    try:
        reply = plan(running, SHELL)
        assert reply["state"] == "waiting"
        answer(running, reply["pending"][0]["id"], "allow")
        wait_state(running, reply["run_id"], "done")
        events = trace(running, reply["session_id"], run=reply["run_id"])
        step = next(e for e in events if e["event"] == "step")
        assert step["tool"] == "shell_exec" and step["risk"] == "high"
        assert step["decision"] == "user" and "echo hello" in step["args"]
        result = next(e for e in events if e["event"] == "tool_result")
        assert result["status"] == "ok" and result["duration_ms"] >= 0
        assert "hello" in json.dumps(result["result"])  # what the command printed
        # the reply in the conversation names the run its "why?" opens
        entries = running.get(f"/api/sessions/{reply['session_id']}/timeline").json()["entries"]
        assert reply["run_id"] in [e.get("run_id") for e in entries if e["kind"] == "reply"]
        end = next(e for e in events if e["event"] == "run_end")
        assert end["state"] == "done" and end["waited"] is True
        assert {"tool_call", "iteration_end", "view"} <= kinds(events)
        asked, answered = (e for e in events if e["event"] == "approval")
        assert asked["state"] == "asked" and asked["tools"] == ["shell_exec"]
        assert answered["state"] == "answered" and answered["decision"] == "allow"
        assert_no_secret(tmp_path / "data")
    finally:
        running.stop()


def test_an_app_error_is_traced(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo", "bad"])
    out = running.instruct("bad raise")
    events = trace(running, out["session_id"])
    error = next(e for e in events if e["event"] == "error")
    assert error["app"] == "bad" and "HTTP 500" in error["error"]
    assert next(e for e in events if e["event"] == "run_end")["state"] == "failed"


def test_traces_off_writes_nothing(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"], traces={"enabled": False})
    out = running.instruct("echo hello")
    assert running.get(f"/api/traces/{out['session_id']}").status_code == 404
    running.system.trace_writer.flush()
    assert not list((running.data_dir / "traces").glob("*.jsonl"))
