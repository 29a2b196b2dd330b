"""The HTTP API's bodies and replies as pydantic models (docs/api.md, docs/openapi.json).

The routes parse their bodies with these very models (:func:`parse`), and
:mod:`aios.web.openapi` builds the OpenAPI document from them, so the document
cannot drift from what the server accepts. Request bodies ignore unknown
fields (the desktop may send more than a route reads); replies are open
(``additionalProperties``): the system may add fields, never remove them.
A bad body is a 400 whose ``error`` names each bad field on one line.

The bodies and replies are built on first use, not when the desktop starts (``defer_build``:
building their validators is about a tenth of the desktop's import time, and none is needed
before ``/api/health`` answers). Pydantic's own lazy build is not safe when two request
threads reach it at once, so every use goes through :func:`built`, which builds under a lock.
"""

from __future__ import annotations

import threading
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, field_validator

from aios.errors import BadRequest
from aios.memory.selfdoc import SELF_FILE_MAX
from aios.memory.store import MEMORY_TEXT_MAX, TAGS_MAX
from aios.names import SESSION_ID_RULE, ApprovalDecision, ApprovalRule, valid_session_id
from aios.protocol import (
    ACTION_ID_PATTERN,
    LOCALES,
    AgentResponse,
    Locale,
    OptionValue,
    ToolResult,
    UIOp,
)

# ------------------------------------------------------------------ parsing

M = TypeVar("M", bound=BaseModel)


_BUILD_LOCK = threading.Lock()


class _Body(BaseModel):
    """A request body: unknown fields are ignored, each field is checked."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


class _Reply(BaseModel):
    """A reply: the fields listed are always there (unless optional); more may come."""

    model_config = ConfigDict(extra="allow", defer_build=True)


def built(model: type[M]) -> type[M]:
    """``model`` with its validator built (once, under a lock: see the module's docstring)."""
    if not model.__pydantic_complete__:
        with _BUILD_LOCK:
            if not model.__pydantic_complete__:
                model.model_rebuild()
    return model


def describe(err: ValidationError, model: type[BaseModel]) -> str:
    """One line naming every bad field: ``field 'text' (the instruction) is required``."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        field = model.model_fields.get(str(e["loc"][0])) if e["loc"] else None
        hint = f" ({field.title})" if field is not None and field.title else ""
        if e["type"] == "missing":
            lines.append(f"field {loc!r}{hint} is required")
        elif e["type"] == "value_error":
            lines.append(str(e["ctx"]["error"]))
        else:
            lines.append(f"field {loc!r}{hint}: {e['msg']}")
    return "; ".join(dict.fromkeys(lines))


def parse(model: type[M], body: dict[str, Any]) -> M:
    """``body`` checked against ``model``; BadRequest naming each bad field."""
    try:
        return built(model).model_validate(body)
    except ValidationError as e:
        raise BadRequest(describe(e, model)) from None


# ------------------------------------------------------------ request bodies


class SessionBody(_Body):
    session_id: str | None = Field(
        None, description="the session to act in; absent: a new one (its id comes back)"
    )

    @field_validator("session_id", mode="before")
    @classmethod
    def _sid(cls, v: Any) -> Any:
        if v is not None and not valid_session_id(v):
            raise ValueError(SESSION_ID_RULE)
        return v


class LocaleBody(SessionBody):
    locale: Locale | None = Field(
        None,
        description="the language of this request's answer and of the apps' "
        "context.locale; absent: the saved setting config.language",
    )

    @field_validator("locale", mode="before")
    @classmethod
    def _locale(cls, v: Any) -> Any:
        if v is not None and v not in LOCALES:
            raise ValueError(f"field 'locale' must be {' or '.join(map(repr, LOCALES))}, not {v!r}")
        return v


class InstructionBody(LocaleBody):
    """``POST /api/instruction``: a typed instruction (at most ``web.instruction_max_chars``)."""

    text: str = Field(title="the instruction", description="what the user typed or said")

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        if not isinstance(v, str) or not v.strip():
            raise ValueError("field 'text' (the instruction) is required")
        return v


class OpenBody(LocaleBody):
    """``POST /api/apps/{app_id}/open``: the app answers an empty instruction."""


ACTION_FIELDS = ("action_id", "params", "form_values", "selected", "checked", "value", "href", "on")
"""The fields of an action body that are forwarded to the app as its ``action_request``."""


class ActionBody(LocaleBody):
    """``POST /api/action``: a control of a view fired; one payload field per control type."""

    app: str = Field(min_length=1, title="the app id")
    action_id: str = Field(pattern=ACTION_ID_PATTERN, description="the control's action_id")
    params: dict[str, Any] | None = Field(None, description="button (and per-row controls)")
    form_values: dict[str, Any] | None = Field(None, description="submit_form")
    selected: OptionValue | None = Field(None, description="select, radio: the option's value")
    checked: list[OptionValue] | None = Field(None, description="checkbox: the values checked")
    value: Any = Field(None, description="input, slider, datetime")
    href: str | None = Field(None, description="link")
    on: bool | None = Field(None, description="toggle")

    def action_request(self) -> dict[str, Any]:
        """The fields the body set, as the app's ``action_request``."""
        return self.model_dump(include=set(ACTION_FIELDS), exclude_unset=True)


class ConfigBody(_Body):
    """``POST /api/config``: settings to change (dotted paths or nested objects)."""

    updates: dict[str, Any] = Field(description='e.g. {"language": "en"}')


class PermissionsBody(_Body):
    """``POST /api/apps/{app_id}/permissions``."""

    grant: list[str] = Field(default_factory=list)
    revoke: list[str] = Field(default_factory=list)


class PolicyBody(RootModel[dict[str, ApprovalRule | None]]):
    """``POST /api/apps/{app_id}/policy``: per tool; null clears an override."""

    model_config = ConfigDict(defer_build=True)


class InteractionAnswer(_Body):
    """``POST /api/interactions/{id}``: approvals take ``decision``, the others ``value``."""

    decision: ApprovalDecision | None = None
    value: Any = None


class LayoutWindow(_Body):
    app: str
    x: float
    y: float
    w: float = Field(gt=0)
    h: float = Field(gt=0)
    z: float
    minimized: bool
    maximized: bool = False


class LayoutBody(_Body):
    """``PUT /api/sessions/{sid}/layout`` (checked field by field by aios/web/layout_api.py)."""

    windows: list[LayoutWindow]


class SnapshotBody(_Body):
    """``POST /api/ui/snapshot``: what the desktop shows, for system-control apps."""

    elements: list[dict[str, Any]] = Field(description="objects with a text id")
    viewport: Any = None


class SpeakBody(_Body):
    """``POST /api/voice/speak``."""

    text: str = Field(min_length=1)
    lang: str | None = Field(None, description="a voice language; absent: config.default_voice")


class SysToolBody(SessionBody):
    """``POST /api/sys/tool``: one atomic or own tool call (``call_tool``)."""

    tool: str = Field(title="the tool's name")
    args: dict[str, Any] = Field(default_factory=dict)


class PushProgress(_Reply):
    """A live update that is no view: the window's progress bar and whatever else the app sends."""

    progress: float | None = Field(None, ge=0, le=100, description="0..1, or a percentage")


class SysPushBody(RootModel[AgentResponse | PushProgress]):
    """``POST /api/sys/push``: a whole view (has ``view_type``) or a ``push`` event's data."""

    model_config = ConfigDict(defer_build=True)


class SysLLMBody(_Body):
    """``POST /api/sys/llm``: chat messages in the OpenAI format."""

    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    stream_to_user: bool = False
    """The answer is for the user: its words stream into the conversation panel of the
    instruction the app works on (a tool call or JSON never does)."""


class UIOps(_Body):
    ops: list[UIOp]


class SysUIBody(RootModel[UIOps | UIOp]):
    """``POST /api/sys/ui``: one UI operation or ``{"ops": [...]}``."""

    model_config = ConfigDict(defer_build=True)


# aios/web/memory_api.py checks the memory bodies itself (with the store's own rules);
# tests/integration/test_openapi.py holds its real requests and replies to these models.

SelfName = Literal["SOUL", "USER", "AGENTS", "MEMORY"]
"""``aios.memory.selfdoc.SELF_NAMES``; the path takes ``user`` and ``USER.md`` alike."""


class MemoryBody(_Body):
    """``POST /api/memories``: a fact the user keeps: active at once, ``source: "user"``."""

    text: str = Field(
        min_length=1, max_length=MEMORY_TEXT_MAX, title="what to remember", description=
        "the fact, stripped; the same text already kept in the scope returns that memory"
    )  # fmt: skip
    tags: list[str] = Field(
        default_factory=list, max_length=TAGS_MAX, description="words of 1-32 characters"
    )
    scope: str = Field("user", description="'user' (the default) or an app id")


class MemoryEdit(_Body):
    """``PATCH /api/memories/{memory_id}``: at least one of these; any other field is a 400.
    Only an active or proposed memory can be edited (else 409)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})

    text: str | None = Field(None, min_length=1, max_length=MEMORY_TEXT_MAX)
    tags: list[str] | None = Field(None, max_length=TAGS_MAX)
    pinned: bool | None = Field(None, description="pinned memories come first in prompts")


class SelfFileBody(_Body):
    """``PUT /api/self/{name}``: the file's whole new text."""

    text: str = Field(
        title="the file's new content", description=f"at most {SELF_FILE_MAX} bytes as UTF-8"
    )


# ------------------------------------------------------------------- replies


class ErrorReply(_Reply):
    """Every refusal and failure: 4xx/5xx with one line saying what went wrong."""

    error: str
    current: Any = Field(None, description="409 only: the state that won")


class HealthReply(_Reply):
    status: Literal["starting", "ready", "degraded"]
    apps: dict[str, str] = Field(description="app id -> status")
    llm: dict[str, Any]
    store: str = Field(description='"ok" or why the store fails')
    version: str


AppStatusName = Literal["invalid", "starting", "running", "restarting", "failed", "stopped", "idle"]


class AppInfo(_Reply):
    id: str
    name: str = Field(description="in the UI language")
    names: dict[str, str]
    icon: str
    description: str
    descriptions: dict[str, str]
    examples: list[str]
    status: AppStatusName
    port: int | None
    endpoint: str | None
    keywords: list[str]
    permissions: dict[str, list[str]] = Field(description="{requested, granted}")
    confined: bool
    error: str | None = None


class AppList(RootModel[list[AppInfo]]):
    """``GET /api/apps``."""

    model_config = ConfigDict(defer_build=True)


class AppReply(_Reply):
    """``open`` and ``action``: the app's final reply; paused runs add state and pending."""

    app: str
    session_id: str
    response: AgentResponse
    run_id: str | None = None
    state: Literal["waiting"] | None = None
    pending: list[dict[str, Any]] | None = None


class TaskResult(_Reply):
    app: str
    task: str | None = None
    response: AgentResponse


class Suggestion(_Reply):
    label: str
    instruction: str


class InstructionReply(_Reply):
    session_id: str
    plan: list[dict[str, Any]] = Field(description="the tasks {id, app, instruction, depends_on}")
    results: list[TaskResult]
    message: str
    source: str | None = Field(None, description="llm | offline | system | stop | …")
    intent: str | None = None
    notes: list[str] = Field(default_factory=list)
    run_id: str | None = None
    state: Literal["waiting"] | None = None
    pending: list[dict[str, Any]] | None = None
    suggestions: list[Suggestion] | None = None
    desktop: list[dict[str, Any]] | None = Field(None, description="ops the desktop carries out")
    cancelled: list[str] | None = None


class ConfigReply(_Reply):
    config: dict[str, Any] = Field(description="the settings, secrets masked")
    llm: dict[str, Any]


class PermissionsReply(_Reply):
    app: str
    permissions: dict[str, list[str]]


class RestartReply(_Reply):
    app: str
    status: str


class FileGrants(_Reply):
    ttl: float
    grants: dict[str, dict[str, str]] = Field(description="app id -> {exp, sig}")


class OkCount(_Reply):
    ok: bool
    elements: int


class UIOpsReply(_Reply):
    ops: list[dict[str, Any]]


class RunState(_Reply):
    run_id: str
    state: str


class Run(_Reply):
    run_id: str
    session_id: str | None
    app: str
    kind: Literal["instruction", "open", "action"]
    state: str
    steps: list[dict[str, Any]]


class Interaction(_Reply):
    id: str
    run_id: str | None = None
    app: str | None = None
    kind: str
    state: str | None = None


RiskClass = Literal["safe", "low", "medium", "high"]
"""``aios.tools.base.Risk`` (tests/unit/tools/test_toolspec.py checks they are the same)."""


class CatalogTool(BaseModel):
    model_config = ConfigDict(defer_build=True)

    tool: str
    risks: list[RiskClass]
    """Every class a call of it can get, least to most (two when its arguments decide)."""


class ApprovalsCatalog(BaseModel):
    """``GET /api/approvals/catalog``: what Settings → Approvals shows, from the tools'
    own specs (``aios.tools``) and the modes' levels (``aios.runs.approvals.ASKED_AT``)."""

    model_config = ConfigDict(defer_build=True)

    risks: list[RiskClass]
    """Least to most."""
    modes: dict[str, list[RiskClass]]
    """Per approvals mode, the risk classes it asks about by default."""
    tools: list[CatalogTool]
    """The atomic tools, riskiest first."""


class Instance(_Reply):
    instance_id: str
    app: str
    session_id: str
    state: str
    parent_instance_id: str | None
    started_at: float
    stopped_at: float | None = None
    error: str | None = None


class Layout(_Reply):
    windows: list[LayoutWindow]
    updated: float | None


class SessionReport(_Reply):
    session_id: str
    turns: int
    runs: int
    tools: int
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: float | None
    memories_added: int


class NewSession(_Reply):
    session_id: str
    report: SessionReport | None = Field(
        description="the report of the session this one ends (the newest), null when none"
    )


class UsageGroup(_Reply):
    key: str | None = Field(description="the session, app, model or UTC day (None: unknown)")
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: float | None = Field(description="dollars by llm.prices; None when no price applies")


class Usage(_Reply):
    by: Literal["session", "app", "model", "day"]
    since: float | None
    groups: list[UsageGroup]


class Heard(_Reply):
    text: str
    speak: bool
    result: InstructionReply | None = Field(None, description="with ?run=1")


class PushReply(_Reply):
    ok: bool
    listeners: int


class LLMReply(_Reply):
    message: dict[str, Any]
    usage: dict[str, Any] | None
    model: str | None
    provider: str | None


class ProcessesReply(_Reply):
    processes: list[dict[str, Any]]


class DisksReply(_Reply):
    disks: list[dict[str, Any]]


class EndedProcess(_Reply):
    pid: int
    name: str
    ended: bool


class UIReply(_Reply):
    ok: bool
    applied: int
    listeners: int


MemoryState = Literal["proposed", "active", "superseded", "deleted"]


class Memory(_Reply):
    """One memory (DESIGN §15, ``aios/memory/store.py``); times are unix seconds."""

    id: str = Field(description="m_ and 12 hex digits")
    scope: str = Field(description="'user' or an app id")
    text: str
    tags: list[str]
    source: str = Field(description="'user', 'app:<id>' or 'extracted:<session id>'")
    state: MemoryState
    created: float
    updated: float
    last_used: float | None = Field(description="when a search or a context last gave it")
    uses: int
    pinned: bool
    supersedes: str | None = Field(description="the memory this one replaced")
    superseded_by: str | None
    session_id: str | None = Field(description="extracted: the conversation it came from")
    turn: int | None = Field(description="extracted: the history entry it came from")
    key: str | None = Field(description="the slot a newer fact supersedes ('user.name')")
    score: float | None = Field(None, description="?search=1 only: the rank's score")


class MemoryList(_Reply):
    """``GET /api/memories``."""

    memories: list[Memory]
    proposed: int = Field(description="memories waiting for the user's yes (the badge)")


class McpToolRule(_Body):
    """The user's word on one tool of an MCP server (``mcp.servers.<name>.tools.<tool>``)."""

    risk: Literal["safe", "low", "medium", "high"] | None = Field(
        None, description="overrides the class from the annotations; null: the annotations'"
    )
    apps: list[str] | None = Field(None, description="apps offered it; null: the server's apps")
    enabled: bool = True


class McpServerPatch(_Body):
    """``PATCH /api/mcp/servers/{name}``: the fields to change (the config checks them)."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] | None = Field(None, description="a stdio server: program and arguments")
    env: dict[str, str] | None = None
    url: str | None = Field(None, description="a streamable-HTTP server's endpoint")
    headers: dict[str, str] | None = None
    token: str | None = Field(
        None,
        description="bearer token sent only to url; masked when read back; a changed url "
        "without a new token clears it",
    )
    enabled: bool | None = None
    network: bool | None = Field(
        None,
        description="a stdio server's network: its own namespace with user-mode NAT (pasta), "
        "never the host's loopback; without it none",
    )
    apps: list[str] | None = Field(None, description="apps its tools are offered to")
    tools: dict[str, McpToolRule] | None = Field(None, description="per tool: risk, apps, on")
    timeout: float | None = Field(None, gt=0, description="seconds one call may take")


class McpServerBody(McpServerPatch):
    """``POST /api/mcp/servers``: a new server, ``command`` or ``url``."""

    name: str = Field(
        title="the server's name", description="lower-case letters, digits, '_', '-' (≤ 32)"
    )


class McpServerView(_Reply):
    """One MCP server in Settings → MCP (``aios/mcp/client.py``)."""

    name: str
    transport: Literal["stdio", "http"]
    enabled: bool
    status: Literal["stopped", "starting", "ready", "failed"]
    error: str | None = Field(description="why it failed (while failed)")
    restarts: int
    retry_in: float | None = Field(description="seconds until it is started again")
    stderr: str = Field(description="the tail of a stdio server's stderr")
    last_failure: dict[str, Any] | None = Field(description="reason, stderr, at (unix seconds)")
    apps: list[str]
    tools: list[dict[str, Any]] = Field(
        description="name (mcp.<server>.<tool>), tool, title, description, input_schema, "
        "output_schema, annotations, risk"
    )
    config: dict[str, Any] = Field(description="its mcp.servers entry, the token masked")


class McpServerList(_Reply):
    """``GET /api/mcp/servers``."""

    servers: list[McpServerView]


class McpServerRemoved(_Reply):
    removed: str


class SelfFile(_Reply):
    """``GET`` / ``PUT /api/self/{name}``."""

    name: SelfName
    text: str


class Event(_Reply):
    """One message of ``/api/events`` (see docs/api.md "Events")."""

    type: str
    seq: int
    epoch: str
    ts: float | None = None


class McpTokenBody(_Body):
    """``POST /api/mcp/tokens``: a token for one MCP client (DESIGN §17)."""

    name: str = Field(
        min_length=1, max_length=60, title="the client it is for",
        description="named in the audit and the conversation panel, e.g. Claude Desktop",
    )  # fmt: skip
    scopes: list[str] | None = Field(
        default=None,
        description="instruction, app.* (every app), app.<id>, memory_search; "
        "absent: instruction and app.*",
    )


class McpToken(_Reply):
    """An MCP token as listed: never its secret."""

    id: str
    name: str
    scopes: list[str]
    created: float
    session_id: str | None = Field(description="the conversation its calls go to")


class McpTokenMade(McpToken):
    token: str = Field(description="the secret: shown in this reply only (kept hashed)")


class McpTokens(_Reply):
    """Settings → MCP server: the tokens, whether memory_search is offered, the /mcp URL."""

    tokens: list[McpToken]
    memory_search: bool
    url: str
    apps: list[str] = Field(description="the app ids a token may be scoped to")


class McpRevoked(_Reply):
    id: str
    revoked: bool


class AnyObject(RootModel[dict[str, Any]]):
    """A JSON object (its fields: docs/api.md)."""

    model_config = ConfigDict(defer_build=True)


class AnyList(RootModel[list[dict[str, Any]]]):
    """A JSON list of objects (their fields: docs/api.md)."""

    model_config = ConfigDict(defer_build=True)


ToolReply = ToolResult


# ------------------------------------------------- topics (DESIGN §18)


class TopicBody(LocaleBody):
    """``POST /api/sessions/{sid}/topics/{topic_id}/resume``: the answer's language (a
    ``session_id``, if given, must be the path's)."""


class Topic(_Reply):
    id: str
    parent: str | None = Field(description="the root topic of a sub-topic; null for a root")
    label: str
    labelled_by: Literal["rules", "llm"]
    state: Literal["active", "paused", "archived"]
    app: str
    terms: list[str] = Field(description="its key words, the heaviest first")
    turns: list[str] = Field(description="the timeline ids (h…) of its turns")
    view: str | None = Field(description="the timeline id of the app reply it last showed")
    instance: str | None = Field(description="the window instance it was in")
    started: float
    updated: float
    children: list[Topic] | None = Field(None, description="a root's sub-topics, oldest first")


class TopicTree(_Reply):
    session_id: str
    active: str | None = Field(description="the id of the topic the user is on")
    topics: list[Topic] = Field(description="the root topics, the most recently used first")


class TopicResumed(InstructionReply):
    topic: Topic | None = None


# ------------------------------------------------- automations (DESIGN §18)


class AutomationBody(LocaleBody):
    """``POST /api/automations``: ``text`` in words ("提醒我三点开会"), or ``what`` with
    ``at`` (unix time) or ``cron`` (five fields, local time)."""

    text: str | None = Field(None, description="a reminder or an automation in words")
    kind: Literal["reminder", "run"] = Field("run", description="say `what`, or run it")
    what: str | None = Field(None, description="what is said or run when due")
    at: float | None = Field(None, description="a one-off time (unix seconds)")
    cron: str | None = Field(None, description="minute hour day month weekday (local time)")


class AutomationPatch(_Body):
    """``PATCH /api/automations/{id}``: pause or resume, a new time, new words."""

    paused: bool | None = None
    at: float | None = Field(None, description="a new one-off time (unix seconds)")
    cron: str | None = Field(None, description="a new cron expression")
    what: str | None = Field(None, min_length=1, description="new words")


class Automation(_Reply):
    id: str
    session_id: str
    kind: Literal["reminder", "run"]
    what: str
    at: float | None
    cron: str | None
    paused: bool
    next_due: float | None = Field(description="unix time; null once a one-off is spent")
    last_due: float | None
    last_state: str | None
    runs: int
    missed: int
    when: dict[str, str] = Field(description="when it is due, in words, per locale")


class AutomationList(RootModel[list[Automation]]):
    model_config = ConfigDict(defer_build=True)


class AutomationCreated(_Reply):
    automation: Automation | None
    message: str


class AttentionBody(_Body):
    """``POST /api/attention``: the session the page's panel shows and whether the page is
    visible (the desktop announces what ends elsewhere, DESIGN §18)."""

    session_id: str | None = None
    visible: bool = True

    @field_validator("session_id", mode="before")
    @classmethod
    def _sid(cls, v: Any) -> Any:
        if v is not None and not valid_session_id(v):
            raise ValueError(SESSION_ID_RULE)
        return v
