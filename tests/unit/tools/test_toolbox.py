"""The toolbox registry: exactly the spec's ten tools, each with a schema."""

from __future__ import annotations

from aios.protocol import ATOMIC_TOOLS
from aios.tools import tool_schemas, tools


def test_registry_holds_exactly_the_ten_atomic_tools() -> None:
    assert sorted(tools()) == sorted(ATOMIC_TOOLS)


def test_every_tool_publishes_a_function_schema() -> None:
    schemas = tool_schemas()
    assert [s["function"]["name"] for s in schemas] == list(ATOMIC_TOOLS)
    for s in schemas:
        assert s["function"]["description"], s["function"]["name"]
        assert s["function"]["parameters"]["type"] == "object"
