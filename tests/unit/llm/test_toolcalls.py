"""aios/llm/toolcalls.py: calls out of whatever a model answered (issue 15)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aios.control.planner import DISPATCH_TOOL, REPLY_TOOL
from aios.llm.toolcalls import extract, extract_calls, looks_like_code, repair_json

TOOLS = [DISPATCH_TOOL, REPLY_TOOL]
TASKS = {"tasks": [{"id": "t1", "app": "notes", "instruction": "记一下买牛奶"}]}
CALL = json.dumps({"name": "dispatch_tasks", "arguments": TASKS}, ensure_ascii=False)


def content(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@pytest.mark.parametrize(
    "text",
    [
        CALL,
        f"Sure!\n```json\n{CALL}\n```",
        f"<tool_call>\n{CALL}\n</tool_call>",
        f"<tool_call>\n{CALL}",
        json.dumps({"function": {"name": "dispatch_tasks", "arguments": json.dumps(TASKS)}}),
        json.dumps({"tool": "dispatch_tasks", "args": TASKS}),
        json.dumps({"name": "dispatch_tasks", "arguments": TASKS["tasks"]}),  # a list
        json.dumps(TASKS),  # the arguments alone
        CALL[:-2],  # truncated
        CALL.replace("]}}", "}}"),  # a forgotten ]
    ],
    ids=[
        "bare",
        "fenced",
        "tags",
        "tag-unclosed",
        "function-string-args",
        "tool-args",
        "list",
        "args-only",
        "truncated",
        "mismatched",
    ],
)
def test_every_shape_gives_the_same_call(text: str) -> None:
    calls, notes = extract_calls(content(text), TOOLS)
    assert calls == [("dispatch_tasks", TASKS)], notes
    assert notes[0] == "the model wrote its call as text, not as a tool call"


def test_native_tool_calls_win_and_string_arguments_are_parsed() -> None:
    msg = {
        "content": "ignored",
        "tool_calls": [{"function": {"name": "reply_directly", "arguments": '{"text": "hi"'}}],
    }
    ex = extract(msg, TOOLS)
    assert ex.native and ex.calls == [("reply_directly", {"text": "hi"})]
    assert "repaired the arguments of reply_directly" in ex.notes[0]


def test_glued_objects_come_in_order() -> None:
    glued = CALL + json.dumps({"name": "reply_directly", "arguments": {"text": "ok"}})
    names = [n for n, _ in extract_calls(content(glued), TOOLS)[0]]
    assert names == ["dispatch_tasks", "reply_directly"]


def test_invented_names_are_refused_and_never_returned() -> None:
    text = json.dumps({"name": "hello", "arguments": {}}) + CALL
    ex = extract(content(text), ["dispatch_tasks"])
    assert ex.calls == [("dispatch_tasks", TASKS)] and ex.refused == ["hello"]
    assert any("refused a call to 'hello'" in n for n in ex.notes)
    alone = extract(content(json.dumps({"name": "echo", "arguments": {"text": "x"}})), TOOLS)
    assert alone.calls == [] and alone.text is None


@pytest.mark.parametrize(
    "text", ["```json", '{"foo": 1}', "[1, 2]", CALL[:40] + '"unterminated', "<tool_call>"]
)
def test_json_looking_text_is_never_a_reply(text: str) -> None:
    ex = extract(content(text), TOOLS)
    assert ex.calls == [] and ex.text is None and ex.notes


def test_plain_words_are_a_reply_even_with_braces() -> None:
    ex = extract(content("Use {name} in a template."), TOOLS)
    assert ex.calls == [] and ex.text == "Use {name} in a template." and ex.notes == []
    assert extract(content(""), TOOLS).text is None


def test_repair_refuses_to_guess() -> None:
    assert repair_json('{"a": [1, {"b": 2}') == ({"a": [1, {"b": 2}]}, "closed ']}'")
    assert repair_json('{"a": "cut in the mid') is None  # inside a string
    assert repair_json('{"a":') is None  # after a key
    assert repair_json('{"a": 1]') is None  # a closer with nothing to match
    assert looks_like_code(" ```json") and not looks_like_code("好的")
