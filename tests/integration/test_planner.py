"""The intent planner: one LLM function call, validated, corrected once, else offline."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from aios.config import Config
from aios.control.planner import (
    Plan,
    PlanInvalid,
    history_extract,
    plan_instruction,
    summarize_history,
    validate_tasks,
)
from aios.control.router import AppProfile, OfflineRouter
from aios.llm.client import LLMClient
from aios.llm.providers import remember_schema_support
from aios.store import Store
from tests.fakes.fake_openai import FakeOpenAI, http_error, text, tool_call

KEY = "sk-test"
APPS = [
    AppProfile("notes", "记事本", "记录和查看笔记", ["笔记", "记", "note"], "你是记事本小AI"),
    AppProfile(
        "music", "音乐", "搜索和播放音乐、歌曲", ["歌", "播放", "music", "play"], "你是音乐小AI"
    ),
    AppProfile(
        "weather", "天气", "查询城市天气和预报", ["天气", "下雨", "weather"], "你是天气小AI"
    ),
]
ROUTER = OfflineRouter(APPS)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY, json_schema=False) as f:
        # these tests are about function calling: the endpoint is known to take no schema
        # (constrained decoding: tests/integration/test_planner_real_models.py)
        remember_schema_support(f.url, False)
        yield f


@pytest.fixture
def llm(fake: FakeOpenAI, store: Store) -> Iterator[LLMClient]:
    config = Config.model_validate(
        {"llm": {"base_url": fake.url, "model": "deepseek-chat", "api_key": KEY, "max_retries": 1}}
    )
    client = LLMClient(config, store)
    yield client
    client.close()


def dispatch(*tasks: dict[str, Any]) -> Any:
    return tool_call("dispatch_tasks", {"tasks": list(tasks)})


def task(tid: str, app: str, instruction: str, deps: list[str] | None = None) -> dict[str, Any]:
    return {"id": tid, "app": app, "instruction": instruction, "depends_on": deps or []}


def plan(text_: str, llm: LLMClient | None, summary: str = "") -> Plan:
    return plan_instruction(text_, APPS, llm=llm, router=ROUTER, history_summary=summary)


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] in ("tool", "user")][1:]


# ------------------------------------------------------------------ with LLM


def test_valid_plan_from_one_function_call(fake: FakeOpenAI, llm: LLMClient, store: Store) -> None:
    fake.script(
        [
            dispatch(
                task("t1", "weather", "查北京明天的天气"),
                task("t2", "notes", "把北京明天的天气记下来", ["t1"]),
            )
        ]
    )
    p = plan("查一下北京明天天气然后记到记事本里", llm, summary="用户刚听了七里香")
    assert p.source == "llm" and p.reply is None and p.notes == []
    assert [(t.id, t.app, t.depends_on) for t in p.tasks] == [
        ("t1", "weather", []),
        ("t2", "notes", ["t1"]),
    ]
    [req] = fake.requests
    assert {t["function"]["name"] for t in req["tools"]} == {"dispatch_tasks", "reply_directly"}
    system, user = req["messages"]
    assert user == {"role": "user", "content": "查一下北京明天天气然后记到记事本里"}
    assert all(f"- {a.id}: {a.name}" in system["content"] for a in APPS)
    assert "用户刚听了七里香" in system["content"]
    assert store.llm_usage()[0]["purpose"] == "plan"


def test_unknown_app_is_sent_back_once_then_the_corrected_plan_is_used(
    fake: FakeOpenAI, llm: LLMClient
) -> None:
    fake.script(
        [dispatch(task("t1", "spotify", "播放七里香")), dispatch(task("t1", "music", "播放七里香"))]
    )
    p = plan("播放七里香", llm)
    assert p.source == "llm" and [t.app for t in p.tasks] == ["music"]
    assert len(fake.requests) == 2
    second = fake.requests[1]["messages"]
    # The model sees its own call and, answering it, the validation error.
    assert (
        second[2]["role"] == "assistant"
        and second[2]["tool_calls"][0]["function"]["name"] == "dispatch_tasks"
    )
    assert (
        second[3]["role"] == "tool"
        and second[3]["tool_call_id"] == second[2]["tool_calls"][0]["id"]
    )
    assert "unknown app 'spotify'" in second[3]["content"] and "music" in second[3]["content"]
    assert any("corrected" in n for n in p.notes)


def test_invalid_twice_falls_back_to_the_offline_router(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script(
        [
            dispatch(task("t1", "spotify", "播放")),
            dispatch(task("t1", "radio", "播放")),
            text("never asked"),
        ]
    )
    p = plan("帮我播放周杰伦的歌", llm)
    assert p.source == "offline" and [t.app for t in p.tasks] == ["music"]
    assert p.tasks[0].instruction == "帮我播放周杰伦的歌"
    assert len(fake.requests) == 2
    assert "unknown app 'spotify'" in tool_messages(fake.requests[1])[0]
    [note] = p.notes
    assert note.startswith("LLM plan invalid: unknown app 'radio'")
    assert note.endswith("used offline router")


def test_an_unknown_dependency_is_dropped_not_sent_back(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script([dispatch(task("t1", "music", "播放", ["t9"]))])
    p = plan("帮我播放周杰伦的歌", llm)
    assert p.source == "llm-normalised" and [(t.app, t.depends_on) for t in p.tasks] == [
        ("music", [])
    ]
    assert len(fake.requests) == 1
    assert any("dropped depends_on ['t9']" in n for n in p.notes)


def test_malformed_arguments_are_retried(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script(
        [
            tool_call("dispatch_tasks", '{"tasks": [{"id": "t1", "app": "music", "instr'),
            dispatch(task("t1", "music", "播放音乐")),
        ]
    )
    p = plan("放点音乐", llm)
    assert p.source == "llm" and [t.app for t in p.tasks] == ["music"]
    assert "not valid JSON" in tool_messages(fake.requests[1])[0]


def test_truncated_arguments_closed_when_unambiguous(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script([tool_call("dispatch_tasks", '{"tasks": [{"id": "t1", "app": "music",')])
    p = plan("放点音乐", llm)
    assert p.source == "llm-normalised" and len(fake.requests) == 1
    assert [(t.app, t.instruction) for t in p.tasks] == [("music", "放点音乐")]
    assert any("repaired the arguments" in n for n in p.notes)


def test_unknown_function_is_retried(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script(
        [tool_call("run_shell", {"cmd": "rm -rf /"}), tool_call("reply_directly", {"text": "好的"})]
    )
    p = plan("随便聊聊", llm)
    assert p.reply == "好的" and p.tasks == []
    assert "unknown function 'run_shell'" in tool_messages(fake.requests[1])[0]


def test_reply_directly(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script([tool_call("reply_directly", {"text": "你好！我是 Triton AIOS。"})])
    p = plan("你好", llm)
    assert p == Plan(reply="你好！我是 Triton AIOS。", source="llm")


def test_plain_text_answer_counts_as_a_direct_reply(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script([text("现在是下午三点。")])
    assert plan("几点了", llm).reply == "现在是下午三点。"


def test_llm_server_errors_fall_back_with_a_note(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.default = http_error(500)
    p = plan("打开记事本然后播放音乐", llm)
    assert p.source == "offline"
    assert [(t.app, t.depends_on) for t in p.tasks] == [("notes", []), ("music", [])]
    [note] = p.notes
    assert note.startswith("LLM unavailable:") and "HTTP 500" in note
    assert len(fake.requests) == 2  # max_retries=1, then no second plan attempt


def test_out_of_order_plan_is_sorted_and_renumbered(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.script(
        [dispatch(task("save", "notes", "记下天气", ["look"]), task("look", "weather", "查天气"))]
    )
    p = plan("查天气并记下来", llm)
    assert [(t.id, t.app, t.depends_on) for t in p.tasks] == [
        ("t1", "weather", []),
        ("t2", "notes", ["t1"]),
    ]


# --------------------------------------------------------------- without LLM


def test_without_llm_the_offline_router_plans() -> None:
    p = plan("打开记事本然后播放音乐", None)
    assert p.source == "offline" and p.notes == []
    assert [t.app for t in p.tasks] == ["notes", "music"]


def test_disabled_llm_is_not_called(fake: FakeOpenAI) -> None:
    client = LLMClient(Config.model_validate({"llm": {"base_url": fake.url, "api_key": ""}}))
    assert plan("播放音乐", client).source == "offline"
    assert fake.requests == []


def test_nothing_to_do_gives_an_empty_plan() -> None:
    assert plan("asdfgh", None) == Plan(source="none")
    assert plan("   ", None).tasks == []


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ([], "non-empty list"),
        ("t1", "non-empty list"),
        ([task("t1", "music", "a"), task("t1", "notes", "b")], "used twice"),
        ([task("t1", "music", "a", ["t1"])], "depends on itself"),
        ([task("t1", "music", "a", ["t2"]), task("t2", "notes", "b", ["t1"])], "cycle"),
        ([task("t1", "nope", "a")], "unknown app 'nope'"),
        ([task("t1", "music", "   ")], "empty instruction"),
        ([task(f"t{i}", "music", "a") for i in range(20)], "too many tasks"),
    ],
)
def test_validation_names_the_broken_rule(raw: Any, problem: str) -> None:
    with pytest.raises(PlanInvalid, match=problem):
        validate_tasks(raw, APPS)


def test_validation_accepts_display_names_and_missing_depends_on() -> None:
    tasks = validate_tasks([{"id": 1, "app": "音乐", "instruction": " 播放 "}], APPS)
    assert [(t.id, t.app, t.instruction, t.depends_on) for t in tasks] == [
        ("t1", "music", "播放", [])
    ]


# ------------------------------------------------------------------ history

HISTORY = [
    {"role": "user", "content": "帮我播放周杰伦的歌"},
    {"role": "app", "app": "music", "content": {"message": "正在播放 七里香", "data": {}}},
    {"role": "user", "content": "记下来这首歌"},
    {"role": "app", "app": "notes", "content": {"message": "已记录：七里香"}},
]


def test_history_extract_keeps_the_newest_exchanges_within_bounds() -> None:
    full = history_extract(HISTORY, 1000)
    assert full.splitlines() == [
        "用户: 帮我播放周杰伦的歌 → music: 正在播放 七里香",
        "用户: 记下来这首歌 → notes: 已记录：七里香",
    ]
    short = summarize_history(HISTORY, None, 30)
    assert short == "用户: 记下来这首歌 → notes: 已记录：七里香"
    tiny = summarize_history(HISTORY * 50, None, 10)
    assert len(tiny) <= 10 and tiny.startswith("用户")
    assert summarize_history([], None, 100) == ""


def test_history_summary_by_llm_is_bounded(fake: FakeOpenAI, llm: LLMClient, store: Store) -> None:
    fake.script([text("用户在听周杰伦的七里香，并记在了记事本。" * 10)])
    summary = summarize_history(HISTORY, llm, 40)  # the exchanges do not fit in 40
    assert summary.startswith("用户在听周杰伦的七里香") and len(summary) <= 40
    sent = fake.requests[0]["messages"]
    assert "七里香" in sent[1]["content"] and "40" in sent[0]["content"]
    assert store.llm_usage()[0]["purpose"] == "summary"


def test_history_summary_falls_back_to_the_extract(fake: FakeOpenAI, llm: LLMClient) -> None:
    fake.default = http_error(401)
    summary = summarize_history(HISTORY, llm, 40)  # the 59-character extract does not fit
    assert fake.requests  # the LLM was asked, failed, and the newest lines were used
    assert 0 < len(summary) <= 40 and summary in history_extract(HISTORY, 1000)


def test_a_short_history_is_passed_verbatim_without_asking_the_llm(
    fake: FakeOpenAI, llm: LLMClient
) -> None:
    assert summarize_history(HISTORY, llm, 1000) == history_extract(HISTORY, 1000)
    assert fake.requests == []


def test_plan_serialises_for_the_api() -> None:
    p = plan("打开记事本然后播放音乐", None)
    data = json.loads(p.model_dump_json())
    assert data["tasks"][1] == {
        "id": "t2",
        "app": "music",
        "instruction": "播放音乐",
        "depends_on": [],  # "然后" is order; nothing of t1's result is used
    }
