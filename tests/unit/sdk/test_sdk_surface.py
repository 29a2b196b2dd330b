"""The SDK's public surface is locked: a change here is a change for every app developer."""

from __future__ import annotations

import subprocess
import sys

import pytest

import aios_sdk
from aios.errors import (
    AIOSError,
    LLMError,
    LLMUnavailable,
    ProtocolError,
    ToolError,
    ToolFailed,
    ToolRefused,
)
from aios.protocol import parse_response
from tests.conftest import ROOT

PUBLIC = [
    "AIOSAgent",
    "AIOSError",
    "ATOMIC_TOOLS",
    "AppContext",
    "AppFailure",
    "DESKTOP_TARGETS",
    "LLMError",
    "LLMUnavailable",
    "Lang",
    "Messages",
    "ProtocolError",
    "StepResult",
    "ToolError",
    "ToolFailed",
    "ToolRefused",
    "UIOp",
    "action",
    "current_session_id",
    "desktop_button",
    "error_view",
    "find_content",
    "find_duration",
    "find_file_name",
    "find_folder",
    "find_name",
    "find_number",
    "find_quoted",
    "find_time",
    "form_view",
    "list_view",
    "locale_of",
    "parse_ui_op",
    "strip_filler",
    "table_view",
    "text_view",
    "tool",
    "tr",
]


def test_all_is_sorted_and_locked() -> None:
    assert aios_sdk.__all__ == sorted(aios_sdk.__all__)
    assert sorted(aios_sdk.__all__) == PUBLIC


def test_every_public_name_exists() -> None:
    for name in PUBLIC:
        assert getattr(aios_sdk, name, None) is not None, name


def test_errors_are_the_system_errors() -> None:
    # Apps catch the same classes the system raises, whichever mode they run in.
    assert aios_sdk.ToolError is ToolError
    assert aios_sdk.LLMUnavailable is LLMUnavailable
    assert aios_sdk.ProtocolError is ProtocolError
    assert aios_sdk.AIOSError is AIOSError
    assert aios_sdk.LLMError is LLMError
    assert aios_sdk.ToolFailed is ToolFailed
    assert aios_sdk.ToolRefused is ToolRefused


def test_importing_the_sdk_does_not_pull_in_the_system() -> None:
    code = (
        "import sys, aios_sdk; bad = [m for m in ('aios.web', 'aios.control.controller', "
        "'aios.apphost.registry', 'flask') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


AGENT_METHODS = [
    "after",
    "call_tool",
    "error_reply",
    "handle",
    "llm",
    "make_app",
    "plan_steps",
    "processes",
    "push",
    "registered_actions",
    "respond",
    "run",
    "ui",
]


def test_agent_methods_are_locked() -> None:
    for name in AGENT_METHODS:
        assert callable(getattr(aios_sdk.AIOSAgent, name, None)), name


def test_ui_outside_the_system_says_it_needs_the_desktop() -> None:
    class Standalone(aios_sdk.AIOSAgent):
        pass

    agent = Standalone()
    with pytest.raises(ToolError, match="UI operations need the running desktop"):
        agent.ui({"op": "hide", "id": "clock"})
    with pytest.raises(ProtocolError, match="ui expects an operation"):
        agent.ui("hide the clock")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("locale", "lang"),
    [
        ("en", "en"),
        ("en-US", "en"),
        ("EN", "en"),
        ("zh", "zh"),
        ("zh-CN", "zh"),
        ("", "zh"),
        (None, "zh"),
        (3, "zh"),
    ],
)
def test_locale_of_reads_the_context_one_way(locale: object, lang: str) -> None:
    assert aios_sdk.locale_of({"locale": locale}) == lang
    assert aios_sdk.AppContext.of({"locale": locale}).lang == lang
    assert aios_sdk.locale_of({}) == "zh"


def test_app_context_types_the_context_and_defaults_bad_fields() -> None:
    raw = {
        "app": "notes",
        "role": "r",
        "workdir": "/w",
        "cwd_state": {"files": ["a"]},
        "available_tools": ["read_file", 3],
        "session_id": "s1",
        "history_summary": "h",
        "tool_results": {"step_1": {}},
        "upstream": {},
        "locale": "en",
        "new_field": 1,
    }
    ctx = aios_sdk.AppContext.of(raw)
    assert (ctx.app, ctx.workdir, ctx.session_id, ctx.locale) == ("notes", "/w", "s1", "en")
    assert ctx.cwd_state == {"files": ["a"]} and ctx.available_tools == ["read_file"]
    assert ctx.raw["new_field"] == 1 and ctx.en and ctx.tr("你好", "Hi") == "Hi"
    bad = aios_sdk.AppContext.of({"cwd_state": "x", "session_id": 5, "tool_results": None})
    assert bad.cwd_state == {} and bad.session_id is None and bad.tool_results == {}
    assert aios_sdk.AppContext.of(None) == aios_sdk.AppContext()


def test_messages_pick_the_language_and_fill_fields() -> None:
    table = aios_sdk.Messages({"hi": ("你好，{who}", "Hello, {who}")})
    assert table("hi", "en", who="Ann") == "Hello, Ann"
    assert table("hi", "zh", who="安") == "你好，安"
    assert aios_sdk.tr("en", "是", "yes") == "yes" and aios_sdk.tr("zh", "是", "yes") == "是"


def test_view_helpers_build_replies_the_system_accepts() -> None:
    button = {"type": "button", "label": "Back", "action_id": "home"}
    text = aios_sdk.text_view("hi", title="T", actions=[button], state={"n": 1})
    assert text == {
        "status": "ok",
        "view_type": "text",
        "data": {"title": "T", "content": "hi"},
        "actions": [button],
        "message": "hi",
        "state": {"n": 1},
    }
    error = aios_sdk.error_view("no such file", title="Files: error", detail={"code": 1})
    assert error == {
        "status": "error",
        "view_type": "error",
        "data": {"title": "Files: error", "message": "no such file", "detail": {"code": 1}},
        "actions": [],
        "message": "no such file",
    }
    for reply in (text, error, aios_sdk.text_view("x", status="error", message="")):
        parse_response(reply)
