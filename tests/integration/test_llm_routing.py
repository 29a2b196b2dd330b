"""The controller with an LLM: the real ``openai`` client talks over HTTP to a fake
OpenAI-compatible server that plays the model; the apps are real processes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from tests.fakes.fake_openai import FakeOpenAI, http_error, not_json, text, tool_call
from tests.integration.conftest import Running


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test") as f:
        yield f


@pytest.fixture
def system(make_system: Callable[..., Running], fake: FakeOpenAI) -> Running:
    return make_system(
        ["echo", "slow"],
        llm={"api_key": "sk-test", "base_url": fake.url, "model": "fake-model", "max_retries": 0},
    )


def dispatch(*tasks: dict[str, object]) -> object:
    return tool_call("dispatch_tasks", {"tasks": list(tasks)})


def test_llm_plan_runs_two_independent_tasks_concurrently(
    system: Running, fake: FakeOpenAI
) -> None:
    fake.script(
        [
            dispatch(
                {"id": "t1", "app": "slow", "instruction": "nap 1", "depends_on": []},
                {"id": "t2", "app": "slow", "instruction": "nap 1", "depends_on": []},
                {
                    "id": "t3",
                    "app": "echo",
                    "instruction": "after both",
                    "depends_on": ["t1", "t2"],
                },
            )
        ]
    )
    out = system.instruct("睡两觉然后回声")
    assert out["source"] == "llm"
    assert [t["id"] for t in out["plan"]] == ["t1", "t2", "t3"]
    a, b, c = (r["response"]["data"] for r in out["results"])
    # the two naps overlapped in time; the dependent task saw both results
    assert a["start"] < b["end"] and b["start"] < a["end"]
    upstream = c["context"]["upstream"]
    assert set(upstream) == {"t1", "t2"} and upstream["t1"]["message"] == "slept 1.0"
    sent = fake.requests[0]
    assert sent["model"] == "fake-model"
    # constrained decoding (the fake takes a JSON schema): the app is an enum of the apps
    schema = sent["response_format"]["json_schema"]["schema"]
    app_field = schema["properties"]["tasks"]["items"]["properties"]["app"]
    assert set(app_field["enum"]) >= {"echo", "slow"}
    assert sent["temperature"] == 0 and sent["max_tokens"] == 512
    assert "睡两觉然后回声" in sent["messages"][-1]["content"]


def test_invalid_llm_plan_is_retried_with_the_error(system: Running, fake: FakeOpenAI) -> None:
    fake.script(
        [
            dispatch({"id": "t1", "app": "nosuchapp", "instruction": "x", "depends_on": []}),
            dispatch({"id": "t1", "app": "echo", "instruction": "hi", "depends_on": []}),
        ]
    )
    out = system.instruct("say hi")
    assert out["source"] == "llm" and [t["app"] for t in out["plan"]] == ["echo"]
    retry = fake.requests[1]["messages"]
    assert any("nosuchapp" in str(m.get("content")) for m in retry[2:])


@pytest.mark.parametrize(
    "failure",
    [
        [http_error(401)],
        [http_error(429)],
        [tool_call("dispatch_tasks", "{not json"), tool_call("dispatch_tasks", "{still not")],
        [not_json()],
    ],
    ids=["401", "429", "malformed", "200-not-json"],
)
def test_llm_failures_fall_back_to_the_offline_router_visibly(
    system: Running, fake: FakeOpenAI, failure: list[object]
) -> None:
    fake.script(failure)
    out = system.instruct("echo hello")
    assert out["source"] == "offline"
    assert [t["app"] for t in out["plan"]] == ["echo"]
    assert out["results"][0]["response"]["status"] == "ok"
    assert out["notes"] and "offline router" in out["notes"][0]
    usage = system.system.store.llm_usage()
    assert usage and usage[0]["purpose"] == "plan"  # every attempt is recorded
    http_failure = (
        getattr(failure[0], "status", 200) != 200 or getattr(failure[0], "body", None) is not None
    )
    assert (usage[0]["ok"] == 0) == http_failure


def test_direct_reply_without_an_app(system: Running, fake: FakeOpenAI) -> None:
    fake.script([tool_call("reply_directly", {"text": "现在是下午。"})])
    out = system.instruct("现在是上午还是下午")
    assert out["plan"] == [] and out["message"] == "现在是下午。"


def test_apps_ask_the_llm_through_the_system_with_their_own_token(
    system: Running, fake: FakeOpenAI
) -> None:
    fake.script([text("来自模型的回答")])
    record = system.system.launcher.get("echo")
    assert record is not None
    import requests

    r = requests.post(
        system.url + "/api/sys/llm",
        timeout=10,
        headers={"Authorization": f"Bearer {record.token}"},
        json={"messages": [{"role": "user", "content": "你好"}]},
    )
    assert r.status_code == 200, r.text
    assert r.json()["message"]["content"] == "来自模型的回答"
    assert "sk-test" not in r.text  # the key never leaves the system
    assert system.system.store.llm_usage()[0]["purpose"] == "app:echo"


def test_a_planning_failure_is_logged_once(
    system: Running, fake: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.script([http_error(401)])
    with caplog.at_level(logging.INFO, logger="aios"):
        out = system.instruct("echo hello")
    assert out["source"] == "offline"
    said = [r for r in caplog.records if "API key rejected" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
    assert said[0].name == "aios.control.controller" and said[0].levelno == logging.WARNING


def test_llm_settings_reach_the_next_instruction(system: Running, fake: FakeOpenAI) -> None:
    first = system.system.llm
    r = system.post("/api/config", {"updates": {"voice_rate": 0.9}})
    assert r.status_code == 200 and system.system.llm is first  # not an LLM setting
    with FakeOpenAI(api_key="sk-test") as other:
        other.script([tool_call("reply_directly", {"text": "来自新的服务"})])
        # a new endpoint takes its key with it: a base_url alone would clear the key
        r = system.post(
            "/api/config", {"updates": {"llm": {"base_url": other.url, "api_key": "sk-test"}}}
        )
        assert r.status_code == 200, r.text
        out = system.instruct(
            "讲个笑话"
        )  # not a system intent (aios/control/intents.py): it is planned
        assert len(other.requests) == 1 and fake.requests == []
    assert out["source"] == "llm" and "来自新的服务" in out["message"]
