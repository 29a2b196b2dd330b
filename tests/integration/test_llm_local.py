"""Local models (issue 15, items 5-7): the LLM client's timeouts against a loopback server,
and the generic assistant's habits with a small model's answers.

One real system for the module (the assistant and the slow test app, a fake OpenAI
server on 127.0.0.1 standing in for llama.cpp / Ollama); the client tests use the
same fake with a client of their own.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aios.config import validate_config
from aios.errors import AppTimeout, LLMError
from aios.llm.client import MIN_DERIVED_TIMEOUT, LLMClient
from aios.llm.providers import is_loopback
from aios.runs.runs import Run
from aios.tools import tool_schemas
from aios_sdk.generic.loop import clean_args
from tests.conftest import ROOT
from tests.fakes.fake_openai import delay, text, tool_call
from tests.integration.conftest import SYSTEM_APPS, Running, copy_apps, start_system
from tests.integration.test_generic_app import RoutingFake, audit

APP = "assistant"
HANDLE_TIMEOUT = 2.5
"""The module system's handle_timeout: an LLM call for the app is closed before it."""
WAIT = 10.0
"""Seconds a test polls for something the fake sees."""


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"not within {WAIT} s: {what}"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def fake() -> Iterator[RoutingFake]:
    with RoutingFake(api_key="sk-test") as f:
        yield f


@pytest.fixture(scope="module")
def running(fake: RoutingFake, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("local")
    apps = copy_apps(root / "apps", [APP], source=ROOT / "apps")
    copy_apps(apps, ["slow"], source=SYSTEM_APPS)
    system = start_system(
        apps,
        root / "data",
        handle_timeout=HANDLE_TIMEOUT,
        llm={
            "api_key": "sk-test",
            "base_url": fake.url,
            "model": "qwen2.5-0.5b-instruct",
            "max_retries": 2,
        },
    )
    try:
        yield system
    finally:
        system.stop()


@pytest.fixture(autouse=True)
def _clean(fake: RoutingFake) -> None:
    fake.reset()


def client(fake: RoutingFake, **llm: Any) -> LLMClient:
    config = validate_config(
        {"llm": {"api_key": "sk-test", "base_url": fake.url, "model": "m", **llm}}
    )
    return LLMClient(config)


def ask(system: Running, question: str) -> dict[str, Any]:
    r = system.post(
        "/api/action", {"app": APP, "action_id": "ask", "value": question, "locale": "en"}
    )
    assert r.status_code == 200, r.text
    response: dict[str, Any] = r.json()["response"]
    return response


# ------------------------------------------------------------------ the client


def test_a_timeout_against_a_loopback_server_is_not_retried(fake: RoutingFake) -> None:
    assert all(
        map(is_loopback, ["http://localhost:8080/v1", "http://127.0.0.2:1", "http://[::1]:9"])
    )
    assert not any(map(is_loopback, ["https://api.deepseek.com", "http://192.168.1.5:11434"]))
    llm = client(fake, timeout=0.5, max_retries=2, measure_local=False)
    fake.script([delay(5, "late"), "never asked"])
    with pytest.raises(LLMError, match="timed out after 0.5 s .*not retried"):
        llm.chat([{"role": "user", "content": "hi"}])
    assert len(fake.requests) == 1  # max_retries=2, yet one attempt: the server is local
    until(lambda: fake.closed == 1, "the client closes the request it gave up on")
    llm.close()


def test_the_probe_derives_the_timeouts_and_the_context_is_checked(
    fake: RoutingFake, caplog: pytest.LogCaptureFixture
) -> None:
    fake.first_token_delay = 1.5  # ~150 probe tokens in 1.5 s: 3,300 need ~30 s
    model, fake.max_model_len, fake.model = fake.model, 200, "m"  # a context size, as vLLM says
    try:
        with caplog.at_level(logging.INFO, logger="aios.llm.client"):
            llm = client(fake, timeout=5)
            assert llm.probed.wait(WAIT) and llm.ttft is not None and llm.ttft >= 1.5
            primary = llm._providers[0]
            derived = llm.timeout_for(primary)
            assert derived >= MIN_DERIVED_TIMEOUT and llm.handle_timeout(3) == derived
            said = [r for r in caplog.records if "first token after" in r.getMessage()]
            assert said and said[0].levelno == logging.WARNING
            assert f'"llm": {{"timeout": {derived:g}}}' in said[0].getMessage()
            fake.script(["ok", "ok"])
            long = [{"role": "user", "content": "很长的问题" * 200}]
            llm.chat(long)
            llm.chat(long)
        fits = [r for r in caplog.records if "may not fit" in r.getMessage()]
        assert len(fits) == 1 and fits[0].levelno == logging.WARNING  # warned once
        assert "context of 200 tokens" in fits[0].getMessage()
        llm.close()
    finally:
        fake.first_token_delay, fake.max_model_len, fake.model = 0.0, 0, model


# ------------------------------------------------------------- the app's time


def test_the_llm_call_is_closed_when_the_apps_time_is_up(
    running: Running, fake: RoutingFake
) -> None:
    fake.script([delay(30, "an answer nobody would receive")])
    start = time.monotonic()
    reply = ask(running, "What is the capital of France?")
    assert time.monotonic() - start < HANDLE_TIMEOUT  # the app answered, in time
    assert reply["status"] == "error"
    assert reply["message"].startswith("I ran out of time: the language model did not finish")
    assert "cancelled after" in reply["data"]["detail"]  # the system's own words, folded
    until(lambda: fake.closed == 1, "the fake sees the request closed")
    usage = running.system.store.llm_usage(limit=5)
    assert usage[0]["ok"] in (0, False) and "cancelled" in usage[0]["error"]


def test_an_app_that_does_not_answer_is_logged_at_warning(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    controller = running.system.controller
    record = running.system.launcher.get("slow")
    assert record is not None
    run = Run(run_id="run-slow", session_id="s-slow", app="slow", kind="instruction")
    with caplog.at_level(logging.WARNING, logger="aios.control.controller"):
        with pytest.raises(AppTimeout):
            controller.call_app(record, "nap 5", None, "s-slow", run=run)
    lines = [r for r in caplog.records if "did not answer within" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "'slow'" in lines[0].getMessage() and "run-slow" in lines[0].getMessage()


# ------------------------------------------------------------ the assistant


def test_a_repeated_call_runs_once_then_its_result_is_shown(
    running: Running, fake: RoutingFake
) -> None:
    # Round 1 a native call; round 2 the same call written as JSON text (new ids, the
    # same tool and arguments): the loop guard stops there and shows the result.
    again = json.dumps({"name": "file_list", "arguments": {"path": "."}})
    fake.script([tool_call("file_list", {"path": "."}), text(again), text(again), text(again)])
    before = len(audit(running, "file_list"))
    reply = ask(running, "list my files")
    assert len(audit(running, "file_list")) == before + 1  # executed once
    assert len(fake.app_requests()) == 2 and len(fake.pending()) == 2
    assert reply["status"] == "ok" and reply["view_type"] == "table"
    assert "name" in reply["data"]["columns"]
    assert [".gitkeep"] == [
        row[reply["data"]["columns"].index("name")] for row in reply["data"]["rows"]
    ]
    assert reply["message"] == "Here is what file_list returned."


def test_a_files_url_is_a_workspace_path_and_schema_echoes_are_dropped(
    running: Running, fake: RoutingFake
) -> None:
    fake.script(
        [
            tool_call(
                "file_write",
                {
                    "path": f"/apps/{APP}/files/x.txt",
                    "content": "hi",
                    "required": ["path", "content"],
                    "type": "object",
                },
            ),
            tool_call(
                "show_view",
                {"view_type": "text", "data": {"content": "Saved x.txt."}, "message": "Saved."},
            ),
        ]
    )
    reply = ask(running, "save hi to a file")
    assert (reply["status"], reply["message"]) == ("ok", "Saved.")
    assert (running.apps_dir / APP / "workspace" / "x.txt").read_text(encoding="utf-8") == "hi"
    result = [m for m in fake.app_requests()[1]["messages"] if m["role"] == "tool"][0]
    assert json.loads(result["content"])["status"] == "ok"
    # timeout: 0 and the like: dropped with a note, the default applies
    shell = next(s for s in tool_schemas() if s["function"]["name"] == "shell_exec")
    args, notes = clean_args(
        "shell_exec",
        {"cmd": "ls", "timeout": 0, "properties": {}},
        shell["function"]["parameters"],
        APP,
    )
    assert args == {"cmd": "ls"}
    assert notes == ["shell_exec: dropped timeout, properties (an echo of the schema, not a value)"]


def test_json_in_the_answer_is_never_spoken(running: Running, fake: RoutingFake) -> None:
    fenced = (
        '```json\n{"name": "show_view", "arguments": {"view_type": "text", '
        '"data": {"content": "Paris is the capital of France."}, "message": "Paris."}}\n```'
    )
    fake.script([text(fenced), text('```json\n{"answer": "Par')])
    reply = ask(running, "What is the capital of France?")
    assert (reply["view_type"], reply["message"]) == ("text", "Paris.")
    assert reply["data"]["content"] == "Paris is the capital of France."
    broken = ask(running, "And of Italy?")
    assert broken["message"] == "Here is the model's answer."
    assert broken["data"]["content"].startswith("```json")  # shown as it is, not spoken
