"""LLMClient with the real openai client over real HTTP against scripted fake servers."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from aios.config import Config
from aios.errors import LLMError, LLMUnavailable
from aios.llm.client import LLMClient
from aios.llm.providers import normalize_base_url
from aios.store import Store
from tests.fakes.fake_openai import (
    FakeOpenAI,
    delay,
    http_error,
    not_json,
    text,
    tool_call,
)

KEY = "sk-test"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


@pytest.fixture
def backup() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY, model="backup-model") as f:
        yield f


def make_config(
    base_url: str,
    *,
    key: str = KEY,
    retries: int = 1,
    timeout: float = 5,
    fallback: dict[str, Any] | None = None,
) -> Config:
    return Config.model_validate(
        {
            "llm": {
                "base_url": base_url,
                "model": "deepseek-chat",
                "api_key": key,
                "timeout": timeout,
                "max_retries": retries,
                "fallback": fallback or {},
            }
        }
    )


@pytest.fixture
def client_for(store: Store) -> Iterator[Any]:
    made: list[LLMClient] = []

    def build(config: Config, with_store: bool = True) -> LLMClient:
        c = LLMClient(config, store if with_store else None)
        made.append(c)
        return c

    yield build
    for c in made:
        c.close()


HELLO = [{"role": "user", "content": "你好"}]


def test_plain_reply_with_usage_recorded(fake: FakeOpenAI, client_for: Any, store: Store) -> None:
    fake.script([text("你好！有什么可以帮你？")])
    llm = client_for(make_config(fake.url))
    result = llm.chat(HELLO, purpose="chat")
    assert result.content == "你好！有什么可以帮你？"
    assert result.message["role"] == "assistant" and "tool_calls" not in result.message
    assert (result.provider, result.model) == ("primary", "deepseek-chat")
    assert (
        result.usage["total_tokens"]
        == (result.usage["prompt_tokens"] + result.usage["completion_tokens"])
        > 0
    )
    sent = fake.requests[0]
    assert sent["model"] == "deepseek-chat" and sent["messages"] == HELLO
    assert fake.headers[0]["authorization"] == f"Bearer {KEY}"
    [row] = store.llm_usage()
    assert (row["provider"], row["model"], row["purpose"], row["ok"]) == (
        "primary",
        "deepseek-chat",
        "chat",
        1,
    )
    assert row["prompt_tokens"] == result.usage["prompt_tokens"] and row["error"] is None
    status = llm.status()
    assert status["enabled"] and status["provider"] == "primary"
    assert status["last_error"] is None and status["last_ok_ts"]


@pytest.mark.parametrize("form", ["root", "v1", "endpoint"])
def test_base_url_with_or_without_v1(fake: FakeOpenAI, client_for: Any, form: str) -> None:
    url = {"root": fake.root_url, "v1": fake.url + "/", "endpoint": fake.url + "/chat/completions"}[
        form
    ]
    assert client_for(make_config(url)).chat(HELLO).content == "ok"
    assert fake.paths == ["/v1/chat/completions" if form != "root" else "/chat/completions"]


def test_tool_call_is_parsed_and_tools_are_sent(fake: FakeOpenAI, client_for: Any) -> None:
    args = {"tasks": [{"id": "t1", "app": "music", "instruction": "播放七里香", "depends_on": []}]}
    fake.script([tool_call("dispatch_tasks", args)])
    tools = [
        {
            "type": "function",
            "function": {
                "name": "dispatch_tasks",
                "description": "d",
                "parameters": {"type": "object", "properties": {"tasks": {"type": "array"}}},
            },
        }
    ]
    result = client_for(make_config(fake.url)).chat(HELLO, tools=tools, tool_choice="auto")
    [call] = result.tool_calls
    assert call["type"] == "function" and call["id"]
    assert call["function"]["name"] == "dispatch_tasks"
    assert json.loads(call["function"]["arguments"]) == args
    assert fake.requests[0]["tools"] == tools and fake.requests[0]["tool_choice"] == "auto"


def test_rejected_key_fails_at_once_with_a_clear_error(
    fake: FakeOpenAI, client_for: Any, store: Store
) -> None:
    llm = client_for(make_config(fake.url, key="sk-wrong", retries=3))
    with pytest.raises(LLMError) as err:
        llm.chat(HELLO, purpose="plan")
    assert "API key rejected" in str(err.value) and "primary" in str(err.value)
    assert len(fake.requests) == 1  # 401 is never retried
    [row] = store.llm_usage()
    assert row["ok"] == 0 and "401" in row["error"] and row["purpose"] == "plan"
    assert "API key rejected" in llm.status()["last_error"]


def test_rate_limit_is_retried_then_succeeds(
    fake: FakeOpenAI, client_for: Any, store: Store
) -> None:
    fake.script([http_error(429, retry_after=0), text("第二次成功")])
    result = client_for(make_config(fake.url, retries=2)).chat(HELLO)
    assert result.content == "第二次成功" and result.provider == "primary"
    assert len(fake.requests) == 2
    rows = list(reversed(store.llm_usage()))
    assert [r["ok"] for r in rows] == [0, 1]
    assert "rate limited" in rows[0]["error"]


def test_retries_are_bounded(fake: FakeOpenAI, client_for: Any) -> None:
    fake.script([http_error(500)] * 5)
    with pytest.raises(LLMError) as err:
        client_for(make_config(fake.url, retries=1)).chat(HELLO)
    assert len(fake.requests) == 2
    assert "server error (HTTP 500)" in str(err.value) and "after 2 attempts" in str(err.value)


def test_timeout_falls_back_to_the_second_provider(
    fake: FakeOpenAI,
    backup: FakeOpenAI,
    client_for: Any,
    store: Store,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake.script([delay(10, "too late")])
    backup.script([text("备用线路的回答")])
    # The fallback has a key of its own: the primary's goes only to the primary's endpoint.
    config = make_config(
        fake.url,
        retries=0,
        timeout=0.5,
        fallback={"base_url": backup.url, "model": "backup-model", "api_key": KEY},
    )
    llm = client_for(config)
    with caplog.at_level(logging.WARNING, logger="aios.llm.client"):
        result = llm.chat(HELLO, purpose="plan")
    assert result.content == "备用线路的回答"
    assert (result.provider, result.model) == ("fallback", "backup-model")
    assert backup.requests[0]["model"] == "backup-model"
    assert backup.headers[0]["authorization"] == f"Bearer {KEY}"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "timed out" in warnings[0].getMessage()
    rows = list(reversed(store.llm_usage()))
    assert [(r["provider"], r["ok"]) for r in rows] == [("primary", 0), ("fallback", 1)]
    assert "timed out after 0.5 s" in rows[0]["error"]
    assert llm.status()["provider"] == "fallback"


def test_a_fallback_on_another_endpoint_never_gets_the_primarys_key(
    fake: FakeOpenAI, client_for: Any
) -> None:
    with FakeOpenAI() as elsewhere:
        fake.default = http_error(500)
        config = make_config(
            fake.url, retries=0, fallback={"base_url": elsewhere.url, "model": "m2"}
        )
        client_for(config).chat(HELLO)
        assert elsewhere.headers and all(
            KEY not in h.get("authorization", "") for h in elsewhere.headers
        )


def test_every_provider_failing_names_each_cause(
    fake: FakeOpenAI, backup: FakeOpenAI, client_for: Any, store: Store
) -> None:
    fake.default = http_error(500)
    backup.api_key = "sk-other"  # the fallback, configured without a key, is refused there
    config = make_config(
        fake.url, retries=1, fallback={"base_url": backup.url, "model": "backup-model"}
    )
    llm = client_for(config)
    with pytest.raises(LLMError) as err:
        llm.chat(HELLO)
    msg = str(err.value)
    assert "primary LLM (deepseek-chat" in msg and "server error (HTTP 500)" in msg
    assert "fallback LLM (backup-model" in msg and "API key rejected" in msg
    assert (len(fake.requests), len(backup.requests)) == (2, 1)
    assert [r["ok"] for r in store.llm_usage()] == [0, 0, 0]
    assert llm.status()["last_error"] == msg


def test_unreachable_server_is_a_connection_error(client_for: Any) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = client_for(make_config(f"http://127.0.0.1:{port}/v1", retries=0), with_store=False)
    with pytest.raises(LLMError, match=f"cannot connect to http://127.0.0.1:{port}/v1"):
        llm.chat(HELLO)


def test_a_reply_without_choices_is_an_error_not_a_crash(fake: FakeOpenAI, client_for: Any) -> None:
    fake.script(
        [
            {
                "raw": {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [],
                }
            }
        ]
    )
    with pytest.raises(LLMError, match="invalid response"):
        client_for(make_config(fake.url, retries=3)).chat(HELLO)
    assert len(fake.requests) == 1


def test_a_200_whose_body_is_not_json_is_retried_like_a_server_error(
    fake: FakeOpenAI, client_for: Any, store: Store
) -> None:
    # The openai client lets json.decoder.JSONDecodeError escape on such a body.
    fake.script([not_json("<html>bad gateway</html>"), text("恢复了")])
    result = client_for(make_config(fake.url, retries=1)).chat(HELLO)
    assert result.content == "恢复了"
    rows = list(reversed(store.llm_usage()))
    assert [r["ok"] for r in rows] == [0, 1]
    assert "invalid response: JSONDecodeError" in rows[0]["error"]


def test_a_non_json_body_everywhere_falls_back_then_is_an_llm_error(
    fake: FakeOpenAI, backup: FakeOpenAI, client_for: Any
) -> None:
    fake.default = not_json()
    backup.script([not_json(), text("备用线路")])
    config = make_config(
        fake.url,
        retries=1,
        fallback={"base_url": backup.url, "model": "backup-model", "api_key": KEY},
    )
    assert client_for(config).chat(HELLO).provider == "fallback"
    backup.default = not_json()
    with pytest.raises(LLMError, match="primary LLM .*JSONDecodeError.*fallback LLM"):
        client_for(config).chat(HELLO)


def test_no_key_means_no_llm(fake: FakeOpenAI, client_for: Any) -> None:
    llm = client_for(make_config(fake.url, key=""))
    assert not llm.enabled
    with pytest.raises(LLMUnavailable, match="DEEPSEEK_API_KEY"):
        llm.chat(HELLO)
    assert fake.requests == []
    assert llm.status()["enabled"] is False


def test_deepseek_key_at_top_level_enables_the_client(fake: FakeOpenAI) -> None:
    config = Config.model_validate({"deepseek_api_key": KEY, "llm": {"base_url": fake.url}})
    llm = LLMClient(config)
    try:
        assert llm.chat(HELLO).content == "ok"
    finally:
        llm.close()


def test_bad_messages_are_refused_before_any_request(fake: FakeOpenAI, client_for: Any) -> None:
    llm = client_for(make_config(fake.url))
    with pytest.raises(LLMError, match="messages must be"):
        llm.chat([{"content": "no role"}])
    assert fake.requests == []


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://api.deepseek.com", "https://api.deepseek.com"),
        ("https://api.deepseek.com/v1/", "https://api.deepseek.com/v1"),
        ("https://api.deepseek.com/v1/chat/completions", "https://api.deepseek.com/v1"),
    ],
)
def test_base_url_forms(given: str, kept: str) -> None:
    assert normalize_base_url(given) == kept
