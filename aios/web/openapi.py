"""The OpenAPI 3.1 document of the HTTP API, built from the models of :mod:`aios.web.schemas`.

:data:`ROUTES` lists every route the server answers, with its body and reply
models; tests/integration/test_openapi.py fails when a Flask route is missing
here (or listed here but gone), and when docs/openapi.json is not what
:func:`document` builds. Regenerate it with::

    python3 -m aios.web.openapi > docs/openapi.json

The prose (auth, errors, events, curl examples) is docs/api.md.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from aios.events import EVENT_TYPES, RESYNC
from aios.protocol import LOCALES
from aios.web import schemas as s

OPENAPI_VERSION = "3.1.0"
REF_TEMPLATE = "#/components/schemas/{model}"

Auth = Literal["desktop", "app", "public", "signed", "desktop-query", "mcp"]
"""desktop: the launch token as a Bearer header; app: the calling app's own token;
signed: ``?exp=&sig=`` from /api/file-grants; desktop-query: the launch token as
``?token=`` (the WebSocket, which cannot send headers); mcp: an MCP token made in
Settings → MCP server (never the launch token); public: none."""


@dataclass(frozen=True)
class Query:
    name: str
    description: str
    kind: Literal["string", "integer"] = "string"


@dataclass(frozen=True)
class Route:
    method: Literal["get", "post", "put", "patch", "delete"]
    path: str
    """As Flask spells it (``/api/apps/<app_id>/open``)."""
    summary: str
    auth: Auth = "desktop"
    body: type[BaseModel] | None = None
    reply: type[BaseModel] | str | None = None
    """A model (JSON), a media type (``audio/wav``), or None (101 for the WebSocket)."""
    errors: tuple[int, ...] = ()
    query: tuple[Query, ...] = ()
    tag: str = "desktop"
    status: int = 200
    """The status of a success (201 for what creates)."""


_SESSION_Q = Query("session", "only this session's")
_LIMIT_Q = Query("limit", "at most this many", "integer")

ROUTES: tuple[Route, ...] = (
    # pages (aios/web/pages.py)
    Route(
        "get",
        "/",
        "The desktop page (?token= once, then kept in memory).",
        "public",
        reply="text/html",
        errors=(401,),
        query=(Query("token", "the launch token"),),
        tag="pages",
    ),
    Route(
        "get",
        "/static/<path:rel>",
        "The renderer's files (public code).",
        "public",
        reply="application/octet-stream",
        errors=(404,),
        tag="pages",
    ),
    Route(
        "get",
        "/apps/<app_id>/files/<path:rel>",
        "A file of the app's workdir.",
        "signed",
        reply="application/octet-stream",
        errors=(401, 403, 404),
        tag="pages",
        query=(Query("exp", "expiry (unix time)"), Query("sig", "HMAC signature")),
    ),
    Route(
        "get",
        "/apps/<app_id>/icon",
        "The image file the manifest names as icon.",
        "signed",
        reply="application/octet-stream",
        errors=(401, 404),
        tag="pages",
        query=(Query("exp", "expiry (unix time)"), Query("sig", "HMAC signature")),
    ),
    # apps and instructions (aios/web/desktop_api.py)
    Route(
        "get", "/api/health", "Readiness, app statuses, LLM, store, version.", reply=s.HealthReply
    ),
    Route("get", "/api/apps", "Every app as the desktop sees it.", reply=s.AppList),
    Route(
        "post",
        "/api/apps/<app_id>/open",
        "The app's reply to an empty instruction.",
        body=s.OpenBody,
        reply=s.AppReply,
        errors=(400, 404, 502, 503, 504),
    ),
    Route(
        "post",
        "/api/action",
        "Forward a control's payload to its app.",
        body=s.ActionBody,
        reply=s.AppReply,
        errors=(400, 404, 502, 503, 504),
    ),
    Route(
        "post",
        "/api/instruction",
        "Route and run a typed instruction.",
        body=s.InstructionBody,
        reply=s.InstructionReply,
        errors=(400,),
    ),
    Route(
        "post",
        "/api/apps/<app_id>/restart",
        "Restart the app's process.",
        reply=s.RestartReply,
        errors=(404,),
    ),
    Route(
        "post",
        "/api/apps/<app_id>/permissions",
        "Grant or revoke requested permissions.",
        body=s.PermissionsBody,
        reply=s.PermissionsReply,
        errors=(400, 404),
    ),
    Route(
        "get",
        "/api/file-grants",
        "Per app, the exp/sig that open its files and icon.",
        reply=s.FileGrants,
    ),
    Route(
        "post",
        "/api/ui/snapshot",
        "The desktop reports what it shows.",
        body=s.SnapshotBody,
        reply=s.OkCount,
        errors=(400,),
    ),
    Route("get", "/api/ui/ops", "The UI changes still applied, oldest first.", reply=s.UIOpsReply),
    Route(
        "get",
        "/api/audit",
        "Audit rows, newest first.",
        reply=s.AnyList,
        errors=(400,),
        query=(Query("app", "only this app's"), _SESSION_Q, _LIMIT_Q),
    ),
    Route(
        "get",
        "/api/sessions/<sid>",
        "A session's memory (history page, context).",
        reply=s.AnyObject,
        errors=(400, 404),
        query=(Query("before", "history ids below this", "integer"), _LIMIT_Q),
    ),
    Route(
        "get",
        "/api/config",
        "The settings (secrets masked) and the LLM's status.",
        reply=s.ConfigReply,
    ),
    Route(
        "post",
        "/api/config",
        "Change validated settings.",
        body=s.ConfigBody,
        reply=s.ConfigReply,
        errors=(400,),
    ),
    Route("get", "/api/openapi.json", "This document.", reply=s.AnyObject),
    # conversation (aios/web/conversation_api.py, layout_api.py)
    Route(
        "get",
        "/api/sessions",
        "The sessions, newest first.",
        reply=s.AnyList,
        errors=(400,),
        query=(_LIMIT_Q,),
        tag="conversation",
    ),
    Route(
        "post",
        "/api/sessions",
        "Start a new session.",
        reply=s.NewSession,
        tag="conversation",
        status=201,
    ),
    Route(
        "get",
        "/api/traces/<sid>",
        "The session's trace, one JSON event a line (DESIGN §16).",
        reply="application/x-ndjson",
        errors=(404,),
        tag="conversation",
        query=(Query("run", "only this run's events"),),
    ),
    Route(
        "get",
        "/api/usage",
        "Model calls, tokens and cost per session, app, model or day.",
        reply=s.Usage,
        errors=(400,),
        tag="conversation",
        query=(
            Query("by", "session, app, model or day (UTC)"),
            Query("since", "a Unix time in seconds", "integer"),
        ),
    ),
    Route(
        "get",
        "/api/sessions/<sid>/timeline",
        "One page of a session's timeline.",
        reply=s.AnyObject,
        errors=(400, 404),
        tag="conversation",
        query=(Query("before", "an entry id (h…, r…, i…)"), _LIMIT_Q),
    ),
    Route(
        "get",
        "/api/sessions/<sid>/topics",
        "The session's topic tree (DESIGN §18).",
        reply=s.TopicTree,
        errors=(404,),
        tag="conversation",
    ),
    Route(
        "post",
        "/api/sessions/<sid>/topics/<topic_id>/resume",
        "Resume a topic: its window comes up with its last view.",
        body=s.TopicBody,
        reply=s.TopicResumed,
        errors=(400, 404),
        tag="conversation",
    ),
    Route(
        "post",
        "/api/sessions/<sid>/topics/<topic_id>/archive",
        "Archive a topic (a root with its sub-topics); the tree.",
        reply=s.TopicTree,
        errors=(400, 404),
        tag="conversation",
    ),
    Route(
        "get",
        "/api/sessions/<sid>/layout",
        "The session's saved windows.",
        reply=s.Layout,
        errors=(400, 404),
        tag="conversation",
    ),
    Route(
        "put",
        "/api/sessions/<sid>/layout",
        "Replace the session's saved windows.",
        body=s.LayoutBody,
        reply=s.Layout,
        errors=(400, 404),
        tag="conversation",
    ),
    # automations and attention (aios/web/automations_api.py, DESIGN §18)
    Route(
        "get",
        "/api/automations",
        "Reminders and scheduled runs, the next due first.",
        reply=s.AutomationList,
        errors=(400,),
        tag="automations",
        query=(_SESSION_Q,),
    ),
    Route(
        "post",
        "/api/automations",
        "Schedule a reminder or a run: in words (text) or what + at | cron.",
        body=s.AutomationBody,
        reply=s.AutomationCreated,
        errors=(400, 409),
        tag="automations",
        status=201,
    ),
    Route(
        "patch",
        "/api/automations/<automation_id>",
        "Pause, resume, or change an automation's time or words.",
        body=s.AutomationPatch,
        reply=s.Automation,
        errors=(400, 404),
        tag="automations",
    ),
    Route(
        "delete",
        "/api/automations/<automation_id>",
        "Delete an automation.",
        reply=s.AnyObject,
        errors=(404,),
        tag="automations",
    ),
    Route(
        "post",
        "/api/attention",
        "Where the page looks: the session its panel shows, and whether it is visible.",
        body=s.AttentionBody,
        reply=s.AnyObject,
        errors=(400,),
        tag="automations",
    ),
    # instances (aios/web/instances_api.py)
    Route(
        "get",
        "/api/instances",
        "Open app instances.",
        reply=s.AnyList,
        query=(_SESSION_Q,),
        tag="instances",
    ),
    Route(
        "post",
        "/api/instances/<instance_id>/focus",
        "The user focused a window.",
        body=s.SessionBody,
        reply=s.Instance,
        errors=(400, 404),
        tag="instances",
    ),
    Route(
        "post",
        "/api/instances/<instance_id>/close",
        "The user closed a window.",
        body=s.SessionBody,
        reply=s.Instance,
        errors=(400, 404),
        tag="instances",
    ),
    # runs (aios/web/runs_api.py)
    Route(
        "get",
        "/api/runs",
        "Runs, newest first.",
        reply=s.AnyList,
        errors=(400,),
        query=(_SESSION_Q, Query("active", "1: only running or waiting"), _LIMIT_Q),
        tag="runs",
    ),
    Route(
        "get",
        "/api/runs/<run_id>",
        "One run with steps and results.",
        reply=s.Run,
        errors=(404,),
        tag="runs",
    ),
    Route(
        "post",
        "/api/runs/<run_id>/cancel",
        "Stop a run.",
        reply=s.RunState,
        errors=(404, 409),
        tag="runs",
    ),
    Route(
        "post",
        "/api/runs/<run_id>/retry",
        "Send an ended run's request again.",
        reply=s.AnyObject,
        errors=(404, 409),
        tag="runs",
    ),
    Route(
        "get",
        "/api/interactions",
        "Approval, choice, confirm and input cards.",
        reply=s.AnyList,
        tag="runs",
        query=(Query("pending", "1: only unanswered"), _SESSION_Q),
    ),
    Route(
        "post",
        "/api/interactions/<ia_id>",
        "Answer a card (idempotent).",
        body=s.InteractionAnswer,
        reply=s.Interaction,
        errors=(400, 404, 409),
        tag="runs",
    ),
    Route(
        "get",
        "/api/approvals/catalog",
        "Each atomic tool's risk classes and the classes each approvals mode asks about.",
        reply=s.ApprovalsCatalog,
        tag="runs",
    ),
    Route(
        "get",
        "/api/apps/<app_id>/policy",
        "The app's per-tool overrides.",
        reply=s.AnyObject,
        errors=(404,),
        tag="runs",
    ),
    Route(
        "post",
        "/api/apps/<app_id>/policy",
        "Set or clear per-tool overrides.",
        body=s.PolicyBody,
        reply=s.AnyObject,
        errors=(400, 404),
        tag="runs",
    ),
    # memory and the self files (aios/web/memory_api.py)
    Route(
        "get",
        "/api/memories",
        "Memories, newest first (?search=1: ranked by q), and the proposals waiting.",
        reply=s.MemoryList,
        errors=(400,),
        query=(
            Query("scope", "'user' or an app id"),
            Query("state", "proposed, active, superseded or deleted; absent: all but deleted"),
            Query("source", "a prefix of the source: user, app:, app:<id>, extracted:"),
            Query("q", "text or tags containing this (normalized)"),
            Query("search", "1: q ranked as the assistant searches (active only, limit ≤ 20)"),
            _LIMIT_Q,
            Query("offset", "skip this many (not with search)", "integer"),
        ),
        tag="memory",
    ),
    Route(
        "post",
        "/api/memories",
        "Keep a fact the user gives (active at once).",
        body=s.MemoryBody,
        reply=s.Memory,
        errors=(400,),
        tag="memory",
        status=201,
    ),
    Route(
        "patch",
        "/api/memories/<memory_id>",
        "Edit a memory's text, tags or pin.",
        body=s.MemoryEdit,
        reply=s.Memory,
        errors=(400, 404, 409),
        tag="memory",
    ),
    Route(
        "delete",
        "/api/memories/<memory_id>",
        "Delete a memory in any state (again: unchanged).",
        reply=s.Memory,
        errors=(404,),
        tag="memory",
    ),
    Route(
        "post",
        "/api/memories/<memory_id>/accept",
        "A proposed memory becomes active.",
        reply=s.Memory,
        errors=(404, 409),
        tag="memory",
    ),
    Route(
        "post",
        "/api/memories/<memory_id>/reject",
        "A proposed memory is deleted.",
        reply=s.Memory,
        errors=(404, 409),
        tag="memory",
    ),
    Route(
        "get",
        "/api/self/<name>",
        "A self file's text (SOUL, USER, AGENTS, MEMORY).",
        reply=s.SelfFile,
        errors=(400,),
        tag="memory",
    ),
    Route(
        "put",
        "/api/self/<name>",
        "Replace a self file; MEMORY.md is parsed back (the user's edit wins).",
        body=s.SelfFileBody,
        reply=s.SelfFile,
        errors=(400,),
        tag="memory",
    ),
    # Settings → MCP: the MCP servers apps use (aios/web/mcp_servers_api.py, DESIGN §17)
    Route(
        "get",
        "/api/mcp/servers",
        "Each MCP server: status, last failure and stderr tail, tools with annotations.",
        reply=s.McpServerList,
        tag="mcp",
    ),
    Route(
        "post",
        "/api/mcp/servers",
        "Add a server by command (stdio, confined) or URL (streamable HTTP).",
        body=s.McpServerBody,
        reply=s.McpServerView,
        errors=(400, 409),
        tag="mcp",
        status=201,
    ),
    Route(
        "patch",
        "/api/mcp/servers/<name>",
        "Enable or disable, grant to apps (per server, per tool), override a tool's risk.",
        body=s.McpServerPatch,
        reply=s.McpServerView,
        errors=(400, 404),
        tag="mcp",
    ),
    Route(
        "delete",
        "/api/mcp/servers/<name>",
        "Remove a server (it is stopped).",
        reply=s.McpServerRemoved,
        errors=(404,),
        tag="mcp",
    ),
    # voice (aios/web/voice.py)
    Route(
        "post",
        "/api/voice/transcribe",
        "Audio (the body) to text; ?run=1 also runs it.",
        reply=s.Heard,
        errors=(400, 413, 422),
        tag="voice",
        query=(
            Query("lang", "a voice language"),
            Query("session_id", "the session"),
            Query("run", "1: run the text as an instruction"),
        ),
    ),
    Route(
        "post",
        "/api/voice/listen",
        "Listen once on the microphone.",
        reply=s.Heard,
        errors=(400, 422),
        tag="voice",
        query=(Query("session_id", "the session"), Query("run", "1: run it")),
    ),
    Route(
        "post",
        "/api/voice/speak",
        "Text to speech.",
        body=s.SpeakBody,
        reply="audio/wav",
        errors=(400, 422),
        tag="voice",
    ),
    Route(
        "get",
        "/api/voice/status",
        "The speech engines and the command words.",
        reply=s.AnyObject,
        tag="voice",
    ),
    # conversation mode (aios/web/voice_stream.py)
    Route(
        "get",
        "/api/voice/stream",
        "WebSocket: conversation mode's microphone; 16 kHz mono PCM16 in (binary), "
        "speech_start / partial / turn_end out (docs/api.md §7).",
        "desktop-query",
        reply=None,
        errors=(400, 401, 403),
        tag="voice",
        query=(
            Query("token", "the launch token"),
            Query("lang", "the recogniser's language (zh-CN, en-US)"),
            Query("source", "page (default: the page sends audio) or server (its microphone)"),
        ),
    ),
    # events (aios/web/events.py)
    Route(
        "get",
        "/api/events",
        "WebSocket: a hello, the replay asked for, then live events; the page's drafts "
        "the other way, each answered by a draft_preview (docs/api.md §8).",
        "desktop-query",
        reply=None,
        errors=(400, 401, 403),
        tag="events",
        query=(
            Query("token", "the launch token"),
            Query("since", "the last seq the client saw", "integer"),
            Query("epoch", "the epoch of that seq"),
        ),
    ),
    # the app channel (aios/web/sys_api.py)
    Route(
        "post",
        "/api/sys/tool",
        "Run one tool through the sandbox (call_tool).",
        "app",
        body=s.SysToolBody,
        reply=s.ToolReply,
        errors=(400, 401, 403),
        tag="sys",
    ),
    Route(
        "post",
        "/api/sys/push",
        "A live update or a whole view to the app's window.",
        "app",
        body=s.SysPushBody,
        reply=s.PushReply,
        errors=(400, 401),
        tag="sys",
    ),
    Route(
        "post",
        "/api/sys/llm",
        "Ask the system's LLM.",
        "app",
        body=s.SysLLMBody,
        reply=s.LLMReply,
        errors=(400, 401, 502, 503),
        tag="sys",
    ),
    Route(
        "get",
        "/api/sys/processes",
        "The host's processes (system.processes).",
        "app",
        reply=s.ProcessesReply,
        errors=(401, 403),
        tag="sys",
    ),
    Route(
        "post",
        "/api/sys/processes/<int:pid>/end",
        "End a host process (system.processes).",
        "app",
        body=s.SessionBody,
        reply=s.EndedProcess,
        errors=(400, 401, 403, 404),
        tag="sys",
    ),
    Route(
        "get",
        "/api/sys/disks",
        "The host's disks (system.processes).",
        "app",
        reply=s.DisksReply,
        errors=(401, 403),
        tag="sys",
    ),
    Route(
        "post",
        "/api/sys/ui",
        "UI operations on the desktop (desktop.control).",
        "app",
        body=s.SysUIBody,
        reply=s.UIReply,
        errors=(400, 401, 403),
        tag="sys",
    ),
)

_MCP_METHODS: tuple[tuple[Literal["get", "post", "delete"], str], ...] = (
    ("post", "a JSON-RPC message; the answer as JSON or an SSE stream"),
    ("get", "the server's own SSE stream"),
    ("delete", "end the session"),
)
_MCP_ROUTES: tuple[Route, ...] = tuple(
    Route(
        method,
        "/mcp",
        f"MCP over streamable HTTP ({what}; docs/mcp.md).",
        "mcp",
        reply="text/event-stream",
        errors=(401, 403),
        tag="mcp",
    )
    for method, what in _MCP_METHODS
) + (
    Route(
        "get",
        "/api/mcp/tokens",
        "Settings → MCP server: the tokens (never their secrets) and the memory_search switch.",
        reply=s.McpTokens,
        tag="mcp",
    ),
    Route(
        "post",
        "/api/mcp/tokens",
        "Make a token for one MCP client; its secret is in this reply only.",
        body=s.McpTokenBody,
        reply=s.McpTokenMade,
        errors=(400,),
        tag="mcp",
        status=201,
    ),
    Route(
        "delete",
        "/api/mcp/tokens/<token_id>",
        "Revoke a token: its next call is refused.",
        reply=s.McpRevoked,
        errors=(404,),
        tag="mcp",
    ),
)
ROUTES = ROUTES + _MCP_ROUTES

_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")
_SECURITY: dict[str, list[dict[str, list[str]]]] = {
    "desktop": [{"desktopToken": []}],
    "app": [{"appToken": []}],
    "desktop-query": [{"desktopQueryToken": []}],
    "mcp": [{"mcpToken": []}],
    "signed": [],
    "public": [],
}
_STATUS_TEXT = {
    400: "bad request: the error names the field",
    401: "token missing or invalid",
    403: "refused by a guard (host, origin, channel, permission)",
    404: "no such app, run, session, interaction, memory or file",
    409: "already answered / ended otherwise / not in that state: current holds the state",
    413: "body too large",
    422: "speech engine error",
    502: "the app (or LLM) answered badly",
    503: "the app is not running / no LLM configured",
    504: "the app exceeded handle_timeout",
}


def openapi_path(flask_path: str) -> str:
    """``/api/apps/<app_id>/open`` -> ``/api/apps/{app_id}/open``."""
    return _PARAM.sub(lambda m: "{" + m.group(2) + "}", flask_path)


def _parameters(route: Route) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for conv, name in _PARAM.findall(route.path):
        kind = "integer" if conv == "int" else "string"
        out.append({"name": name, "in": "path", "required": True, "schema": {"type": kind}})
    for q in route.query:
        out.append(
            {
                "name": q.name,
                "in": "query",
                "description": q.description,
                "schema": {"type": q.kind},
            }
        )
    return out


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF_TEMPLATE.format(model=_name(model))}


def _name(model: type[BaseModel]) -> str:
    return model.__name__


def _operation(route: Route) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": route.summary,
        "operationId": f"{route.method}_{openapi_path(route.path)}",
        "tags": [route.tag],
        "security": _SECURITY[route.auth],
        "x-auth": route.auth,
    }
    if params := _parameters(route):
        op["parameters"] = params
    if route.body is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(route.body)}},
        }
    responses: dict[str, Any] = {}
    if route.reply is None:
        responses["101"] = {"description": "switching to the WebSocket; see docs/api.md"}
    elif isinstance(route.reply, str):
        responses["200"] = {"description": "OK", "content": {route.reply: {}}}
    else:
        responses[str(route.status)] = {
            "description": "OK",
            "content": {"application/json": {"schema": _ref(route.reply)}},
        }
    for status in route.errors:
        responses[str(status)] = {
            "description": _STATUS_TEXT[status],
            "content": {"application/json": {"schema": _ref(s.ErrorReply)}},
        }
    op["responses"] = responses
    return op


def _models() -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    for route in ROUTES:
        for m in (route.body, route.reply):
            if isinstance(m, type):
                seen[_name(m)] = m
    seen[_name(s.ErrorReply)] = s.ErrorReply
    seen[_name(s.Event)] = s.Event
    return [s.built(m) for m in seen.values()]


def _schemas() -> dict[str, Any]:
    models = _models()
    mapping, top = models_json_schema(
        [(m, "validation") for m in models], ref_template=REF_TEMPLATE
    )
    out: dict[str, Any] = dict(top.get("$defs", {}))
    for m in models:
        schema = mapping[(m, "validation")]
        if "$ref" not in schema:  # a RootModel's own schema
            out[_name(m)] = schema
    out[_name(s.Event)]["properties"]["type"]["enum"] = sorted({*EVENT_TYPES, RESYNC, "hello"})
    return dict(sorted(out.items()))


@functools.cache
def document() -> dict[str, Any]:
    """The whole OpenAPI 3.1 document (built once per process)."""
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(openapi_path(route.path), {})[route.method] = _operation(route)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Triton AIOS HTTP API",
            "version": "1",
            "description": "The desktop's and the apps' endpoints on 127.0.0.1; prose, "
            f"events and curl examples in docs/api.md. Locales: {', '.join(LOCALES)}.",
        },
        "servers": [{"url": "http://127.0.0.1:{port}", "variables": {"port": {"default": "8765"}}}],
        "paths": paths,
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "desktopToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "the launch token (AIOS_TOKEN or printed at start)",
                },
                "appToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "the app's own AIOS_APP_TOKEN",
                },
                "mcpToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "an MCP client's token (Settings → MCP server, DESIGN §17)",
                },
                "desktopQueryToken": {
                    "type": "apiKey",
                    "in": "query",
                    "name": "token",
                    "description": "the launch token, for the WebSocket",
                },
            },
        },
    }


def dumps() -> str:
    """The document as docs/openapi.json holds it."""
    return json.dumps(document(), ensure_ascii=False, indent=2) + "\n"


if __name__ == "__main__":
    sys.stdout.write(dumps())
