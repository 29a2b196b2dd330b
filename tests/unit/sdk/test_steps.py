"""``ctx.result(step)`` and ``self.after(...)``: use a step's result, or return the steps first."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aios.errors import ProtocolError
from aios.protocol import parse_response
from aios_sdk import AIOSAgent, AppContext, StepResult, text_view

ASK = {"step_id": "ok", "tool": "ask", "args": {"kind": "confirm", "prompt": "Delete?"}}


class Deleter(AIOSAgent):
    name = "Deleter"

    def handle(
        self, instruction: str | None, context: AppContext, action_request: Any = None
    ) -> dict[str, Any]:
        return self.after(context, [ASK], then=lambda got: text_view(f"yes={got.answer}"))


def test_the_first_round_returns_the_steps_then_the_result_is_used() -> None:
    first = Deleter().respond("delete", {})
    parse_response(first)
    assert first["view_type"] == "loading" and first["steps"] == [ASK]
    answered = {
        "tool_results": {"step_ok": {"tool": "ask", "status": "ok", "result": {"value": True}}}
    }
    assert Deleter().respond("delete", answered)["message"] == "yes=True"


def test_after_shows_the_given_view_while_the_steps_run() -> None:
    waiting = text_view("asking…")
    reply = Deleter().after(AppContext(), [ASK], then=lambda got: {}, view=waiting)
    assert reply["message"] == "asking…" and reply["steps"] == [ASK] and "steps" not in waiting
    with pytest.raises(ProtocolError, match="unknown tool"):
        Deleter().after(AppContext(), [{"tool": "rm_rf", "args": {}}], then=lambda got: {})


def test_a_step_result_says_what_happened() -> None:
    ctx = AppContext.of(
        {
            "tool_results": {
                "step_1": {"tool": "file_read", "status": "ok", "result": "text"},
                "step_ask": {"tool": "ask", "status": "error", "result": None, "code": "expired"},
                "step_2": {"tool": "http_request", "status": "error", "error": "offline"},
                "step_bad": "not an entry",
            }
        }
    )
    assert ctx.result(1) == StepResult("1", ok=True, value="text")
    expired = ctx.result("ask")
    assert expired is not None and not expired.ok and expired.code == "expired"
    assert expired.answer is None and expired.error == "expired"
    failed = ctx.result(2)
    assert failed is not None and failed.error == "offline" and failed.value is None
    assert ctx.result(3) is None and ctx.result("bad") is None


def test_the_context_is_the_dict_apps_already_index() -> None:
    raw = {"app": "notes", "cwd_state": {"files": []}, "locale": "en", "new": 1}
    ctx = AppContext.of(raw)
    assert isinstance(ctx, dict) and ctx["app"] == "notes" and ctx.get("new") == 1
    assert ctx == raw and json.loads(json.dumps(ctx)) == raw
    assert AppContext.of(ctx) is ctx and ctx.raw == raw
    assert ctx.routed == {} and AppContext.of({"routed": {"text": "x"}}).routed == {"text": "x"}
