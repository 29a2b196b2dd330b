"""An app's reply and what the system sends it: steps, tool results, context, requests
(docs/protocol.md §2-§3), and the checks the system runs on a reply before forwarding it."""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

from pydantic import Field, TypeAdapter, ValidationError, field_validator

from aios.errors import ProtocolError
from aios.names import ACTION_ID_PATTERN, STEP_TOOL_PATTERN, TOOL_NAME_PATTERN, ViewType
from aios.protocol.actions import Action, OptionValue
from aios.protocol.base import _Model, _Open, describe_validation_error, parse_as

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


# ----------------------------------------------------------------------- steps


class Step(_Model):
    step_id: int | str
    tool: str = Field(pattern=STEP_TOOL_PATTERN)
    args: dict[str, Any] = Field(default_factory=dict)
    on_error: Literal["stop", "continue"] = "stop"
    timeout: float | None = Field(default=None, gt=0)
    """Seconds; never more than the tool's configured timeout."""

    @field_validator("step_id")
    @classmethod
    def _step_id(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 0:
            raise ValueError(f"step_id must not be negative (got {v})")
        if isinstance(v, str) and not _TOOL_NAME.match(v) and not v.isdigit():
            raise ValueError(f"step_id must be a number or an identifier (got {v!r})")
        return v

    @property
    def key(self) -> str:
        """The name this step's result has in ``tool_results`` and templates."""
        return f"step_{self.step_id}"


def _unique_steps(steps: list[Step]) -> list[Step]:
    seen: set[str] = set()
    for step in steps:
        if step.key in seen:
            raise ValueError(f"step_id {step.step_id!r} is used twice")
        seen.add(step.key)
    return steps


# -------------------------------------------------------------------- replies


class AgentResponse(_Open):
    """What an app's ``handle`` returns (docs/protocol.md §2)."""

    status: Literal["ok", "error"]
    """Required: a reply that leaves it out is invalid, never assumed ``ok``."""
    view_type: ViewType
    data: Any = Field(default_factory=dict)
    actions: list[Action] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    message: str | None = None

    @field_validator("steps")
    @classmethod
    def _steps(cls, v: list[Step]) -> list[Step]:
        return _unique_steps(v)


class ToolResult(_Model):
    """One entry of ``context.tool_results`` (DESIGN §5)."""

    tool: str
    status: Literal["ok", "error"]
    result: Any = None
    error: str | None = None
    meta: dict[str, Any] | None = None
    duration_ms: float = 0.0
    code: Literal["denied", "expired", "cancelled"] | None = None
    """Why a step did not run or was stopped by the user (DESIGN §12)."""


class ActionRequest(_Open):
    """What the desktop forwards when a control fires (docs/protocol.md §3)."""

    action_id: str = Field(pattern=ACTION_ID_PATTERN)
    params: dict[str, Any] | None = None
    form_values: dict[str, Any] | None = None
    selected: OptionValue | None = None
    checked: list[OptionValue] | None = None
    value: Any = None
    href: str | None = None
    on: bool | None = None


class Context(_Open):
    """What the system injects before each call (docs/app-guide.md §2)."""

    app: str = ""
    role: str = ""
    workdir: str = ""
    cwd_state: dict[str, Any] = Field(default_factory=dict)
    available_tools: list[str] = Field(default_factory=list)
    mcp_tools: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The MCP tools among ``available_tools`` (DESIGN §17): ``mcp.<server>.<tool>`` ->
    ``{tool, title, description, input_schema, output_schema, annotations, risk}``."""
    session_id: str | None = None
    history_summary: str = ""
    tool_results: dict[str, ToolResult] = Field(default_factory=dict)
    upstream: dict[str, Any] = Field(default_factory=dict)
    locale: str = "zh-CN"
    memory: list[dict[str, Any]] = Field(default_factory=list)
    """The app's memories relevant to the instruction, the user's too with ``memory.read``
    (DESIGN §15): ``{id, text, tags, scope}`` each."""
    self_block: str = Field(default="", alias="self")
    """With ``memory.read``: the user's self files and memories, quoted as data."""


class HandleRequest(_Open):
    """The body POSTed to an app's handle endpoint (DESIGN §5)."""

    instruction: str | None = None
    context: Context = Field(default_factory=Context)
    action_request: ActionRequest | None = None
    session_id: str | None = None


def parse_response(payload: Any) -> AgentResponse:
    """Validate an app's reply; raises ProtocolError naming each bad field."""
    return parse_as(AgentResponse, payload, "reply")


SYSTEM_REPLY_FIELDS: frozenset[str] = frozenset(
    {
        # a run's own fields: the cards of a paused run are drawn from these (DESIGN §12)
        "pending",
        "run_id",
        "interaction",
        "interactions",
        "answer",
        "cancelled",
        "resume",
        # the envelope of an entry point's reply and of the events that carry a view
        "app",
        "apps",
        "session_id",
        "results",
        "plan",
        "interim",
        "pushed",
        "type",
        "seq",
        "epoch",
        # a system intent's answer: its desktop operations and chips (aios/control/intents.py)
        "source",
        "intent",
        "suggestions",
        "desktop",
    }
)
"""Fields only the system may set on a reply (DESIGN §14.3): an app's reply or push never
carries them on. ``state`` is not one: it is the app's own stored state (docs/protocol.md
§2); the ``state`` of a waiting run is set by the system on its own reply's envelope."""


def without_system_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """An app's reply or push with every field only the system may set taken out.

    The one place (DESIGN §14.3): everything an app sends the desktop passes here before
    anything else sees it; the system adds its own fields afterwards.
    """
    return {k: v for k, v in payload.items() if k not in SYSTEM_REPLY_FIELDS}


def forwardable_reply(payload: Any) -> dict[str, Any]:
    """Validate an app's reply and return what the system forwards: the app's own JSON.

    The models only judge the reply. Re-serialising it from them would add
    defaults the app never sent (a form field gaining ``"required": false``)
    and reorder keys, so ``data``, ``actions`` and every other field go on
    exactly as sent; only an absent ``data`` / ``actions`` / ``steps`` is filled
    with its empty default, and the fields only the system may set
    (:data:`SYSTEM_REPLY_FIELDS`) are dropped. Raises ProtocolError naming each
    bad field.
    """
    parse_response(payload)
    reply = without_system_fields(payload)
    reply.setdefault("data", {})
    reply.setdefault("actions", [])
    reply.setdefault("steps", [])
    return reply


def parse_action_request(payload: Any) -> ActionRequest:
    return parse_as(ActionRequest, payload, "action_request")


@functools.cache
def _steps_adapter() -> TypeAdapter[list[Step]]:
    return TypeAdapter(list[Step])


def parse_steps(payload: Any) -> list[Step]:
    try:
        return _unique_steps(_steps_adapter().validate_python(payload))
    except ValidationError as e:
        raise ProtocolError(f"invalid steps: {describe_validation_error(e)}") from e
    except ValueError as e:
        raise ProtocolError(f"invalid steps: {e}") from e
