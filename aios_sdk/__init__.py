"""The Triton AIOS app SDK (spec §8): write a "small AI" as one class.

    from aios_sdk import AIOSAgent, tool

    class MyAgent(AIOSAgent):
        name = "..."; description = "..."; icon = "📦"; role_prompt = "..."

        def handle(self, instruction, context, action_request=None):
            return {"status": "ok", "view_type": "text", "data": {"content": "hi"},
                    "actions": [], "message": "hi"}

    if __name__ == "__main__":
        MyAgent().run()

This module only re-exports the public names; ``tests/unit/test_sdk_surface.py``
fails when they drift.
"""

from __future__ import annotations

from aios.errors import LLMUnavailable, ProtocolError, ToolError
from aios.names import ATOMIC_TOOLS
from aios_sdk.agent import AIOSAgent, current_session_id, tool

__all__ = [
    "AIOSAgent",
    "ATOMIC_TOOLS",
    "LLMUnavailable",
    "ProtocolError",
    "ToolError",
    "current_session_id",
    "tool",
]
