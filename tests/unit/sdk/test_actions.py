"""``@action`` routing and ``AppFailure``: what an app author gets from ``AIOSAgent.respond``."""

from __future__ import annotations

from typing import Any

import pytest

from aios.protocol import parse_response
from aios_sdk import AIOSAgent, AppContext, AppFailure, Messages, action, text_view


class Player(AIOSAgent):
    name = "Player"
    messages = Messages(
        {
            "need_query": ("要搜索什么？", "Search for what?"),
            "gone": ("找不到「{id}」", "{id} is gone"),
        }
    )

    def handle(
        self, instruction: str | None, context: AppContext, action_request: Any = None
    ) -> dict[str, Any]:
        if instruction == "fail":
            raise AppFailure("gone", id="x.mp3")
        return text_view(f"home {context.lang} {context['app']}")

    @action("play")
    def play(self, ctx: AppContext, id: str, times: int = 1) -> dict[str, Any]:
        return text_view(f"play {id} x{times}")

    @action("volume")
    def volume(self, ctx: AppContext, value: float) -> dict[str, Any]:
        return text_view(f"volume {value!r}")

    @action("search")
    def search(self, ctx: AppContext, value: str | None = None) -> dict[str, Any]:
        if not value:
            raise AppFailure("need_query")
        return text_view(f"search {value}")

    @action("raw")
    def raw(self, ctx: AppContext, request: dict[str, Any], **rest: Any) -> dict[str, Any]:
        return text_view(f"{request['action_id']} {sorted(rest)}")

    @action("like", "unlike")
    def like(self, ctx: AppContext, request: dict[str, Any]) -> dict[str, Any]:
        return text_view(request["action_id"])

    @action("oops")
    def oops(self, ctx: AppContext) -> dict[str, Any]:
        raise AppFailure("not_in_table", path="a.txt")


EN = {"locale": "en", "app": "player"}
ZH = {"locale": "zh-CN", "app": "player"}


def answer(request: dict[str, Any] | None, context: dict[str, Any] = EN, text: Any = None) -> Any:
    reply = Player().respond(text, context, request)
    parse_response(reply)
    return reply


def test_an_action_calls_its_method_with_params_and_the_control_fields() -> None:
    assert answer({"action_id": "play", "params": {"id": "s1"}})["data"]["content"] == "play s1 x1"
    assert (
        answer({"action_id": "play", "params": {"id": "s1", "times": 2, "junk": [1]}})["message"]
        == "play s1 x2"
    )
    # a slider's number arrives as the control's "value"; an int fits a float parameter
    assert answer({"action_id": "volume", "value": 30})["message"] == "volume 30.0"
    assert answer({"action_id": "raw", "params": {"a": 1}, "on": True})["message"] == (
        "raw ['a', 'on']"
    )
    assert answer({"action_id": "unlike"})["message"] == "unlike"  # one method, two ids


def test_without_an_action_request_handle_answers_with_an_app_context() -> None:
    assert answer(None, text="hi")["message"] == "home en player"
    assert answer(None, ZH, text="hi")["message"] == "home zh player"


@pytest.mark.parametrize(
    ("request_", "context", "words"),
    [
        (
            {"action_id": "nope"},
            EN,
            ["unknown action 'nope'", "play, volume, search, raw, like, unlike"],
        ),
        ({"action_id": "nope"}, ZH, ["未知的操作 'nope'", "可用的操作：play, volume"]),
        ({"params": {}}, EN, ["cannot handle the action ?", "action_id is missing"]),
        ("junk", ZH, ["无法处理操作 ?", "缺少 action_id"]),
        ({"action_id": "play"}, EN, ["cannot handle the action 'play'", "id is missing"]),
        ({"action_id": "play", "params": {"id": 3}}, EN, ["id must be a text, got 3"]),
        ({"action_id": "play", "params": {"id": "a", "times": "2"}}, ZH, ["times 应该是整数"]),
        ({"action_id": "volume", "value": True}, EN, ["value must be a number, got True"]),
        ({"action_id": "play", "params": [1]}, EN, ["params must be an object"]),
    ],
)
def test_unknown_and_malformed_actions_get_the_standard_error_view(
    request_: Any, context: dict[str, Any], words: list[str]
) -> None:
    reply = answer(request_, context)
    assert reply["status"] == "error" and reply["view_type"] == "error"
    for word in words:
        assert word in reply["message"], reply["message"]
    assert reply["data"]["title"] in ("Player ran into an error", "Player出错了")


def test_an_app_failure_is_an_error_view_in_the_users_language() -> None:
    assert answer({"action_id": "search"})["message"] == "Search for what?"
    assert answer({"action_id": "search", "value": ""}, ZH)["message"] == "要搜索什么？"
    assert answer(None, ZH, text="fail")["message"] == "找不到「x.mp3」"
    assert answer(None, EN, text="fail")["data"]["message"] == "x.mp3 is gone"


def test_an_unknown_failure_key_still_answers_naming_the_key() -> None:
    reply = answer({"action_id": "oops"})
    assert reply["status"] == "error"
    assert reply["message"] == "Something went wrong: not_in_table (path: a.txt)"
    assert answer({"action_id": "oops"}, ZH)["message"] == "出错了：not_in_table（path: a.txt）"
    # a field the text names but the raise did not give: the fallback, not a KeyError
    assert AppFailure("gone").message(Player.messages, "en") == "Something went wrong: gone"


def test_an_app_without_actions_gets_every_action_in_handle() -> None:
    class Plain(AIOSAgent):
        def handle(
            self, instruction: str | None, context: AppContext, action_request: Any = None
        ) -> dict[str, Any]:
            assert isinstance(context, dict) and context.get("locale") == "en"
            return text_view(f"handled {action_request}")

    reply = Plain().respond(None, {"locale": "en"}, {"action_id": "anything"})
    assert reply["message"] == "handled {'action_id': 'anything'}"


def test_an_app_may_give_its_errors_its_own_view() -> None:
    class Titled(Player):
        def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
            reply = super().error_reply(ctx, message)
            reply["data"]["title"] = ctx.tr("播放器", "Player")
            return reply

    reply = Titled().respond(None, EN, {"action_id": "nope"})
    assert reply["data"]["title"] == "Player" and "unknown action" in reply["message"]


def test_registering_is_checked_when_the_class_is_made() -> None:
    with pytest.raises(ValueError, match="@action name must be an action_id"):
        action("has space")
    with pytest.raises(TypeError, match="registered twice"):

        class Twice(AIOSAgent):
            @action("a")
            def one(self, ctx: AppContext) -> dict[str, Any]:
                return {}

            @action("a")
            def two(self, ctx: AppContext) -> dict[str, Any]:
                return {}

    assert sorted(Player.registered_actions()) == [
        "like",
        "oops",
        "play",
        "raw",
        "search",
        "unlike",
        "volume",
    ]
