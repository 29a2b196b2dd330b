"""Hello小AI: the spec's §8.4 example as a bundled app.

It reads ``workspace/greeting.txt`` through the ``file_read`` atomic tool and
answers a text view with a "再说一次" button. What it said last is kept in
the session state, so the button repeats it. A missing or unreadable
greeting file is reported as an error view naming the file, not a crash.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from aios_sdk import (
    AIOSAgent,
    AppContext,
    AppFailure,
    Messages,
    ToolError,
    action,
    error_view,
    text_view,
)

log = logging.getLogger(__name__)

GREETING_FILE = "greeting.txt"
MAX_NAME_CHARS = 200
"""Longer instructions are cut: a greeting is not the place to echo an essay."""

# Routing words the controller leaves in the instruction ("打开 hello", "hello 世界").
_ROUTING = re.compile(
    r"^\s*(?:请|帮我)?(?:打开|启动|open\s+|launch\s+|start\s+)?"
    r"(?:hello(?:\s*小?ai)?(?![a-z])|hi(?![a-z])|greet(?:ing)?(?![a-z])|打招呼|问候|问好)"
    r"[\s,，:：!！]*",
    re.IGNORECASE,
)


def who_from(instruction: str | None) -> str:
    """The part of the instruction to greet, routing words removed."""
    text = (instruction or "").strip()
    text = _ROUTING.sub("", text, count=1).strip()
    return text[:MAX_NAME_CHARS]


class HelloAgent(AIOSAgent):
    name = "Hello小AI"
    description = "打招呼"
    icon = "👋"
    role_prompt = "你是一个友好的小AI，负责打招呼"
    messages = Messages(
        {
            "no_greeting": (
                "读不到问候语文件 {file}：{error}。"
                "请在工作区里放一个 {file}，写上问候语（例如「你好」）。",
                "cannot read the greeting file {file}: {error}. Put a {file} with a greeting "
                "(e.g. 'Hello') in the workspace.",
            )
        }
    )

    def handle(
        self,
        instruction: str | None,
        context: AppContext,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return self._greet(context, who_from(instruction))

    @action("again")
    def again(self, ctx: AppContext) -> dict[str, Any]:
        said = ctx.cwd_state.get("said")
        return self._greet(ctx, said if isinstance(said, str) else "")

    def _greet(self, ctx: AppContext, who: str) -> dict[str, Any]:
        try:
            greeting = self.call_tool("file_read", path=GREETING_FILE)
        except ToolError as e:
            raise AppFailure("no_greeting", file=GREETING_FILE, error=e.error) from e
        greeting = str(greeting).strip() or ctx.tr("你好", "Hello")
        target = who or ctx.tr("朋友", "friend")
        # the comma follows the greeting's script: the file's 你好 to Bob is "你好，Bob"
        comma = "，" if re.search(r"[\u3400-\u9fff]", greeting) else ", "
        content = f"{greeting}{comma}{target}"
        return text_view(
            content,
            message=ctx.tr("已回复", "Replied"),
            actions=[
                {
                    "type": "button",
                    "label": ctx.tr("再说一次", "Say it again"),
                    "action_id": "again",
                }
            ],
            state={"said": who},
        )

    def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
        return error_view(
            message,
            title=ctx.tr("Hello小AI 出错了", "Hello: something went wrong"),
            actions=[
                {"type": "button", "label": ctx.tr("再试一次", "Try again"), "action_id": "again"}
            ],
        )


if __name__ == "__main__":
    HelloAgent().run()
