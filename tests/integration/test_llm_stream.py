"""Streamed LLM replies (issue 26): the real openai client streams from the fake server over
HTTP; the words reach a real ReplyStream (the panel's events); usage lands in real SQLite.

The system-level test at the end runs the assistant app in its sandbox: its answer in
words streams to the bus as ``reply_stream`` events of the instruction's run, its trace
and usage say it was streamed and what it cost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.config import Config
from aios.duplex.replies import ReplyStream
from aios.errors import LLMError
from aios.llm.client import STOPPED_BY_USER, LLMCancelled, LLMClient
from aios.store import Store
from tests.conftest import ROOT
from tests.fakes.fake_openai import FakeOpenAI, http_error, streamed, text, tool_call
from tests.integration.conftest import Running, copy_apps
from tests.util import wait_for

KEY = "sk-test"
HELLO = [{"role": "user", "content": "讲个故事"}]
STORY = "Once upon a time a small robot learned to sing, and the whole town came to listen."


class Panel:
    """What the conversation panel receives: the ``reply_stream`` events, in order."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def emit(self, event: dict[str, Any]) -> None:
        with self.lock:
            self.events.append(event)

    def phases(self) -> list[str]:
        with self.lock:
            return [e["phase"] for e in self.events]

    def text(self) -> str:
        with self.lock:
            return "".join(e.get("text", "") for e in self.events if e["phase"] == "delta")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


@pytest.fixture
def backup() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY, model="backup-model") as f:
        yield f


@pytest.fixture
def client(fake: FakeOpenAI, backup: FakeOpenAI, store: Store) -> Iterator[LLMClient]:
    config = Config.model_validate(
        {
            "llm": {
                "base_url": fake.url,
                "model": "deepseek-chat",
                "api_key": KEY,
                "timeout": 10,
                "max_retries": 1,
                "fallback": {"base_url": backup.url, "model": "backup-model", "api_key": KEY},
            }
        }
    )
    c = LLMClient(config, store)
    yield c
    c.close()


def relay(panel: Panel, flush_s: float = 0.0) -> ReplyStream:
    return ReplyStream(panel.emit, session_id="s1", run_id="r1", app="assistant", flush_s=flush_s)


def test_words_stream_as_they_come_and_the_whole_message_and_usage_are_kept(
    fake: FakeOpenAI, client: LLMClient, store: Store
) -> None:
    gate = threading.Event()
    fake.script([streamed(STORY, chunk_delay=0.01, hold=gate)])
    panel = Panel()
    sink = relay(panel)
    answer: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: answer.update(r=client.chat(HELLO, stream=sink)), daemon=True
    )
    worker.start()
    # the words are shown while the provider still holds the last of them
    wait_for(lambda: panel.text().startswith("Once upon a time"), "the first words shown", 10)
    assert not panel.text().endswith("listen.") and worker.is_alive()
    gate.set()
    worker.join(10)
    sink.end()
    result = answer["r"]
    assert result.content == STORY and result.finish_reason == "stop"
    assert panel.text() == STORY and panel.phases()[-1] == "end"
    assert all(e["run_id"] == "r1" and e["session_id"] == "s1" for e in panel.events)
    body = fake.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    # the usage the server sent in its last chunk, recorded as for a whole completion
    [sent] = fake.usages
    assert result.usage["prompt_tokens"] == sent["prompt_tokens"]
    assert result.usage["cached_tokens"] == sent["cached"]
    [row] = store.llm_usage()
    assert row["ok"] == 1 and row["completion_tokens"] == sent["completion_tokens"]


def test_a_tool_call_answer_is_never_shown_and_comes_back_whole(
    fake: FakeOpenAI, client: LLMClient
) -> None:
    fake.script([tool_call("file_write", {"path": "workspace/a.txt", "content": "x" * 40})])
    panel = Panel()
    sink = relay(panel)
    result = client.chat(HELLO, tools=[_tool("file_write")], stream=sink)
    sink.end()
    [call] = result.tool_calls
    assert call["function"]["name"] == "file_write"
    assert call["function"]["arguments"] == (
        '{"path": "workspace/a.txt", "content": "' + "x" * 40 + '"}'
    )
    assert result.finish_reason == "tool_calls" and panel.events == []


@pytest.mark.parametrize(
    "content",
    [
        '{"name": "file_write", "arguments": {"path": "a.txt"}}',
        '```json\n{"tasks": []}\n```',
        '<tool_call>{"name": "x"}</tool_call>',
        "dispatch_tasks: the plan",
    ],
)
def test_json_markup_and_the_planners_words_are_never_shown(
    fake: FakeOpenAI, client: LLMClient, content: str
) -> None:
    fake.script([streamed(content)])
    panel = Panel()
    sink = relay(panel)
    assert client.chat(HELLO, stream=sink).content == content
    sink.end()
    assert panel.events == []


@pytest.mark.parametrize(
    "content",
    [
        'Let me look that up for you. <tool_call>{"name": "web"}',
        "Alright, I will now call dispatch_tasks with the plan",
    ],
)
def test_words_that_turn_into_a_call_are_taken_back(
    fake: FakeOpenAI, client: LLMClient, content: str
) -> None:
    fake.script([streamed(content)])
    panel = Panel()
    sink = relay(panel)
    client.chat(HELLO, stream=sink)
    sink.end()
    assert panel.phases()[0] == "delta" and panel.phases()[-1] == "retract"


def test_cancelling_the_run_closes_the_stream_and_records_it(
    fake: FakeOpenAI, client: LLMClient, store: Store
) -> None:
    fake.script([streamed(STORY * 4, chunk_delay=0.05)])
    panel = Panel()
    sink = relay(panel)
    cancel = threading.Event()
    failure: list[BaseException] = []

    def ask() -> None:
        try:
            client.chat(HELLO, stream=sink, cancel=cancel)
        except LLMError as e:
            failure.append(e)
            sink.cancelled()

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    wait_for(lambda: panel.text(), "the first words shown", 10)
    cancel.set()
    worker.join(10)
    assert not worker.is_alive()
    [e] = failure
    assert isinstance(e, LLMCancelled) and STOPPED_BY_USER in str(e)
    assert panel.phases()[-1] == "cancelled" and len(panel.text()) < len(STORY * 4)
    wait_for(lambda: fake.closed == 1, "the provider's connection closed", 10)
    assert len(fake.requests) == 1  # not retried
    [row] = store.llm_usage()
    assert row["ok"] == 0 and row["error"] == STOPPED_BY_USER


def test_an_error_mid_stream_is_one_line_and_nothing_else_is_asked(
    fake: FakeOpenAI, backup: FakeOpenAI, client: LLMClient
) -> None:
    fake.script([streamed(STORY, fail_after=3)])
    panel = Panel()
    sink = relay(panel)
    with pytest.raises(LLMError, match="failed mid-answer") as caught:
        client.chat(HELLO, stream=sink)
    sink.error(str(caught.value))
    # the user read part of this answer: no retry and no fallback's other answer
    assert len(fake.requests) == 1 and backup.requests == []
    assert panel.phases()[-1] == "error"
    line = panel.events[-1]["error"]
    assert "\n" not in line and "failed mid-answer" in line


def test_a_failure_before_any_word_was_shown_still_falls_back(
    fake: FakeOpenAI, backup: FakeOpenAI, client: LLMClient
) -> None:
    fake.script([http_error(500), http_error(500)])
    backup.script([streamed("The backup answers in words.")])
    panel = Panel()
    sink = relay(panel)
    result = client.chat(HELLO, stream=sink)
    sink.end()
    assert result.provider == "fallback" and panel.text() == "The backup answers in words."


def test_a_server_that_cannot_stream_answers_whole(
    fake: FakeOpenAI, backup: FakeOpenAI, client: LLMClient
) -> None:
    fake.streaming = backup.streaming = False
    fake.script(["Words from a server that does not stream."])
    panel = Panel()
    result = client.chat(HELLO, stream=relay(panel))
    assert result.content == "Words from a server that does not stream."
    assert [bool(r.get("stream")) for r in fake.requests] == [True, False]
    assert panel.events == []


def test_a_short_answer_is_shown_at_the_end(fake: FakeOpenAI, client: LLMClient) -> None:
    fake.script([streamed("好的。")])
    panel = Panel()
    sink = relay(panel)
    client.chat(HELLO, stream=sink)
    assert panel.events == []  # too short to judge until it is complete
    sink.end()
    assert panel.text() == "好的。" and panel.phases() == ["delta", "end"]


# ------------------------------------------------------------------ the system


def test_the_assistants_answer_streams_to_its_run_with_trace_and_usage(
    make_system: Callable[..., Running], fake: FakeOpenAI, tmp_path: Path
) -> None:
    apps = copy_apps(tmp_path / "apps", ["assistant"], source=ROOT / "apps")
    running = make_system(
        apps_dir=apps,
        llm={
            "api_key": KEY,
            "base_url": fake.url,
            "model": "fake",
            "max_retries": 0,
            "planner": "offline",
        },
    )
    fake.default = text("用户在使用智能助手")  # the controller's own summaries, unscripted
    fake.script([streamed(STORY, chunk_delay=0.01)])
    reader = running.system.bus.reader()
    opened = running.open("assistant")
    sid = opened["session_id"]
    reply = running.post(
        "/api/action",
        {"app": "assistant", "action_id": "ask", "value": "tell me a story", "session_id": sid},
    ).json()
    assert reply["response"]["data"]["content"] == STORY
    events = []
    while (ev := reader.get(0.5)) is not None:
        if ev["type"] == "reply_stream":
            events.append(ev)
    reader.close()
    assert "".join(e.get("text", "") for e in events) == STORY
    assert events[-1]["phase"] == "end" and {e["session_id"] for e in events} == {sid}
    assert {e["run_id"] for e in events} == {reply["run_id"]}
    usage = running.get("/api/usage?by=app").json()
    row = next(r for r in usage["groups"] if r["key"] == "assistant")
    assert row["calls"] == 1 and row["completion_tokens"] > 0
    trace = running.get(f"/api/traces/{sid}").text
    assert '"stream": true' in trace and '"first_delta_ms"' in trace


def test_stopping_the_instruction_stops_its_stream(
    make_system: Callable[..., Running], fake: FakeOpenAI, tmp_path: Path
) -> None:
    apps = copy_apps(tmp_path / "apps", ["assistant"], source=ROOT / "apps")
    running = make_system(
        apps_dir=apps,
        handle_timeout=30,
        llm={"api_key": KEY, "base_url": fake.url, "model": "fake", "max_retries": 0},
    )
    fake.script([streamed(STORY * 10, chunk_delay=0.05)])  # ~5 s of words
    reader = running.system.bus.reader()
    sid = running.open("assistant")["session_id"]
    body = {"app": "assistant", "action_id": "ask", "value": "a long story", "session_id": sid}
    asked = threading.Thread(target=running.post, args=("/api/action", body), daemon=True)
    asked.start()
    first = reader.get(20)
    while first is not None and not (first["type"] == "reply_stream" and first["phase"] == "delta"):
        first = reader.get(20)
    assert first is not None, "no words streamed"
    assert running.post(f"/api/runs/{first['run_id']}/cancel").status_code == 200
    phases = []
    while (ev := reader.get(20)) is not None:
        if ev["type"] == "reply_stream":
            phases.append(ev["phase"])
            if ev["phase"] != "delta":
                break
    reader.close()
    asked.join(20)
    assert phases[-1] == "cancelled"
    wait_for(lambda: fake.closed == 1, "the provider's connection closed", 10)
    [row] = [r for r in running.system.store.llm_usage() if r["purpose"] == "app:assistant"]
    assert row["error"] == STOPPED_BY_USER


def _tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }
