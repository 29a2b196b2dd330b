"""The JSON Schemas in ``aios/protocol/schemas/``, generated from the models
(``python -m aios.protocol``); a test fails when the checked-in files drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from aios.protocol.actions import Action
from aios.protocol.manifest import Manifest
from aios.protocol.replies import (
    ActionRequest,
    AgentResponse,
    Context,
    HandleRequest,
    Step,
    ToolResult,
)
from aios.protocol.ui_ops import UIOp

SCHEMA_DIR = Path(__file__).with_name("schemas")


def schema_models() -> dict[str, Any]:
    """Schema name -> model (or TypeAdapter), in file order."""
    return {
        "manifest": Manifest,
        "agent_response": AgentResponse,
        "action": TypeAdapter(Action),
        "action_request": ActionRequest,
        "step": Step,
        "context": Context,
        "handle_request": HandleRequest,
        "tool_result": ToolResult,
        "ui_op": TypeAdapter(UIOp),
    }


def generate_schemas() -> dict[str, str]:
    """Schema file name -> JSON text, exactly as checked in."""
    out = {}
    for name, model in schema_models().items():
        schema = (
            model.json_schema() if isinstance(model, TypeAdapter) else model.model_json_schema()
        )
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{name}.schema.json",
            **schema,
        }
        out[f"{name}.schema.json"] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return out


def write_schemas(directory: Path = SCHEMA_DIR) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for fname, text in generate_schemas().items():
        (directory / fname).write_text(text, encoding="utf-8")
