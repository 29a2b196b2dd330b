"""The SDK's public surface is locked: a change here is a change for every app developer."""

from __future__ import annotations

import subprocess
import sys

import pytest

import aios_sdk
from aios.errors import LLMUnavailable, ProtocolError, ToolError
from tests.conftest import ROOT

PUBLIC = [
    "AIOSAgent",
    "ATOMIC_TOOLS",
    "LLMUnavailable",
    "ProtocolError",
    "ToolError",
    "current_session_id",
    "tool",
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


def test_importing_the_sdk_does_not_pull_in_the_system() -> None:
    code = ("import sys, aios_sdk; bad = [m for m in ('aios.server', 'aios.controller', "
            "'aios.launcher', 'flask') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


AGENT_METHODS = ["call_tool", "handle", "llm", "make_app", "plan_steps", "push", "run", "ui"]


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
