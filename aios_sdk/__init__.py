"""The Triton AIOS app SDK (docs/app-guide.md): write a "small AI" as one class.

    from aios_sdk import AIOSAgent, tool

    class MyAgent(AIOSAgent):
        name = "..."; description = "..."; icon = "📦"; role_prompt = "..."

        def handle(self, instruction, context, action_request=None):
            return {"status": "ok", "view_type": "text", "data": {"content": "hi"},
                    "actions": [], "message": "hi"}

    if __name__ == "__main__":
        MyAgent().run()

Besides the agent, the SDK gives an app the errors it handles (the system's
own classes, from ``aios.errors``), :class:`AppContext` and :func:`locale_of`
for the request's context (with :class:`StepResult`, a step's result), :func:`tr` /
:class:`Messages` for bilingual messages, :func:`action` for a method that answers
one control, :class:`AppFailure` for an error view from the app's messages, the
``find_*`` slot helpers and :func:`strip_filler` (:mod:`aios_sdk.slots`) to read names,
contents, folders, numbers and times out of a plain request,
:func:`text_view`, :func:`list_view`, :func:`table_view`, :func:`form_view` /
:func:`error_view` for the common views and :func:`desktop_button` for a button
that opens one of the desktop's windows (Settings); apps import nothing from ``aios``.

This module only re-exports the public names; ``tests/unit/sdk/test_sdk_surface.py``
fails when they drift.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from aios.errors import (
    AIOSError,
    LLMError,
    LLMUnavailable,
    ProtocolError,
    ToolError,
    ToolFailed,
    ToolRefused,
)
from aios.names import ATOMIC_TOOLS
from aios_sdk._session import current_session_id
from aios_sdk.actions import action
from aios_sdk.agent import AIOSAgent, tool
from aios_sdk.context import AppContext, Lang, StepResult, locale_of
from aios_sdk.failures import AppFailure
from aios_sdk.messages import Messages, tr
from aios_sdk.views import (
    DESKTOP_TARGETS,
    desktop_button,
    error_view,
    form_view,
    list_view,
    table_view,
    text_view,
)

if TYPE_CHECKING:
    from aios.protocol import UIOp, parse_ui_op
    from aios_sdk.slots import (
        find_content,
        find_duration,
        find_file_name,
        find_folder,
        find_name,
        find_number,
        find_quoted,
        find_time,
        strip_filler,
    )

__all__ = [
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

_SLOTS = (
    "find_content",
    "find_duration",
    "find_file_name",
    "find_folder",
    "find_name",
    "find_number",
    "find_quoted",
    "find_time",
    "strip_filler",
)
_LAZY = {
    "UIOp": "aios.protocol",
    "parse_ui_op": "aios.protocol",
    **dict.fromkeys(_SLOTS, "aios_sdk.slots"),
}
"""Names imported when an app first uses them, not at every app's start: the protocol's
(its module loads pydantic) and the slot helpers' (their module compiles some forty
patterns, about a fifth of the SDK's own import time)."""


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'aios_sdk' has no attribute {name!r}")
