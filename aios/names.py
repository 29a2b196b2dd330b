"""The protocol's vocabulary: names and patterns, and the system's error reply.

Plain Python, no pydantic: an app process imports this at start, while the
models of :mod:`aios.protocol` load only when something is validated.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal, get_args

AppViewType = Literal[
    "text",
    "list",
    "card",
    "table",
    "form",
    "media",
    "image",
    "chart",
    "code",
    "dashboard",
]
"""The ten view types (docs/protocol.md §2): what an app's reply may show."""

SystemViewType = Literal["loading", "error"]
"""Placeholder (§8.2) and the system's own error view."""

ViewType = Literal[AppViewType, SystemViewType]
"""Every ``view_type`` a reply may carry (the one definition; the tuples derive from it)."""

VIEW_TYPES: tuple[str, ...] = get_args(AppViewType)
SYSTEM_VIEW_TYPES: tuple[str, ...] = get_args(SystemViewType)

ACTION_TYPES: tuple[str, ...] = (
    "button",
    "submit_form",
    "select",
    "checkbox",
    "radio",
    "input",
    "link",
    "toggle",
    "slider",
    "datetime",
)
"""The ten action controls (docs/protocol.md §3)."""

ATOMIC_TOOLS: tuple[str, ...] = (
    "http_request",
    "file_read",
    "file_write",
    "file_list",
    "shell_exec",
    "process_start",
    "db_query",
    "cache_get",
    "cache_set",
    "notify",
    "memory_store",
    "memory_search",
)
"""The twelve atomic tools (docs/protocol.md §5): the ten of the first design and the two
memory tools (DESIGN §15), which the same approvals, audit and policies cover."""

ASK_TOOL = "ask"
"""The system primitive that asks the user (choice / confirm / input), DESIGN §13."""
LAUNCH_TOOL = "launch"
"""The system primitive that opens another app as a child instance, maybe for a result."""
SYSTEM_PRIMITIVES: tuple[str, ...] = (ASK_TOOL, LAUNCH_TOOL)
"""Plan steps the system itself answers, besides the ten atomic tools."""

ACTION_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$"
TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
MCP_TOOL_PREFIX = "mcp."
"""A plan step's tool ``mcp.<server>.<tool>``: a tool of an MCP server (DESIGN §17)."""
MCP_SERVER_PATTERN = r"^[a-z0-9_][a-z0-9_-]{0,31}$"
"""An MCP server's name in ``mcp.servers`` (and in its tools' names)."""
MCP_TOOL_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$"
"""A tool's name as an MCP server lists it (the MCP specification's characters)."""
STEP_TOOL_PATTERN = (
    r"^(?:[A-Za-z_][A-Za-z0-9_]{0,63}"
    r"|mcp\.[a-z0-9_][a-z0-9_-]{0,31}\.[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127})$"
)
"""A plan step's tool: an atomic tool, a primitive, the app's own ``@tool``, or an MCP tool."""
"""An atomic tool, an app's ``@tool``, a step id that is not a number."""
APP_ID_PATTERN = r"^[a-z0-9_][a-z0-9_-]*$"
"""An app id: the name of its folder under ``apps/``."""

SESSION_ID_MAX = 64


def valid_session_id(sid: object) -> bool:
    """A session id: letters, digits and '_' (at least one letter or digit), at most 64."""
    return isinstance(sid, str) and sid.replace("_", "").isalnum() and len(sid) <= SESSION_ID_MAX


SESSION_ID_RULE = f"session_id must be letters, digits and '_' (at most {SESSION_ID_MAX})"
"""The one-line refusal for a bad session id."""


def error_response(message: str, *, title: str = "", detail: Any = None) -> dict[str, Any]:
    """The reply the system shows when something failed (status error, view ``error``)."""
    data: dict[str, Any] = {"title": title or "错误 / Error", "message": message}
    if detail is not None:
        data["detail"] = detail
    return {
        "status": "error",
        "view_type": "error",
        "data": data,
        "actions": [],
        "steps": [],
        "message": message,
    }


# ---------------------------------------------------------------- approvals

ApprovalRule = Literal["allow", "ask", "never"]
"""What applies to a step: run it, ask the user first, or refuse it (DESIGN §12)."""
APPROVAL_RULES: tuple[ApprovalRule, ...] = get_args(ApprovalRule)
ApprovalMode = Literal["auto", "smart", "manual"]
"""``approvals.mode``: ``auto`` asks nothing, ``smart`` asks for ``high`` steps,
``manual`` for ``medium`` and ``high`` ones."""
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
ApprovalDecision = Literal["allow", "allow_session", "allow_always", "deny"]
"""The user's answer to an approval card: once, for this session, always (persisted), no."""
APPROVAL_DECISIONS: tuple[ApprovalDecision, ...] = get_args(ApprovalDecision)


# ------------------------------------------------------------------ wire names
# The names that cross a process boundary, defined once: the HTTP headers between the
# system and its apps, and the environment an app (or the desktop) is started with.

LAUNCH_SECRET_HEADER = "X-AIOS-Launch-Secret"
"""The per-launch secret the system sends on every call to an app (DESIGN §11.6)."""
APP_TOKEN_HEADER = "X-AIOS-App-Token"
"""The app's own token, on its calls to the system and the system's calls to its tools."""
SESSION_HEADER = "X-AIOS-Session-Id"
"""The session a call to the system is made in (a claim the system checks, §14.4)."""

ENV_APP_ID = "AIOS_APP_ID"
ENV_APP_SOCKET = "AIOS_APP_SOCKET"
ENV_APP_TOKEN = "AIOS_APP_TOKEN"
ENV_DEV_DB = "AIOS_DEV_DB"
ENV_DIR = "AIOS_DIR"
ENV_LAUNCH_SECRET = "AIOS_LAUNCH_SECRET"
ENV_LLM_API_KEY = "AIOS_LLM_API_KEY"
ENV_LLM_BASE_URL = "AIOS_LLM_BASE_URL"
ENV_LLM_MODEL = "AIOS_LLM_MODEL"
ENV_LOG_LEVEL = "AIOS_LOG_LEVEL"
ENV_MCP_TOKEN = "AIOS_MCP_TOKEN"
"""The MCP token ``triton-aios mcp`` relays with (made in Settings → MCP server)."""
ENV_READY_FD = "AIOS_READY_FD"
ENV_SYSTEM_SOCKET = "AIOS_SYSTEM_SOCKET"
ENV_SYSTEM_URL = "AIOS_SYSTEM_URL"
ENV_TOKEN = "AIOS_TOKEN"
ENV_WORKDIR = "AIOS_WORKDIR"
MCP_SERVER_NAME = "triton-aios"
"""The name the desktop's MCP server gives itself (``/mcp`` and ``triton-aios mcp``)."""
MCP_PATH = "/mcp"
"""Where the desktop serves MCP over streamable HTTP (DESIGN §17)."""


# ------------------------------------------------------------------ permissions, locales, ids

Permission = Literal[
    "conversation.read",
    "desktop.control",
    "network",
    "system.processes",
    "memory.read",
    "memory.write",
]
"""What a manifest may request (DESIGN §11.7): the whole conversation in
``history_summary`` (other apps' turns too, §14.8), UI operations, direct outside
network, the host's process list (served read-only by the system), the user's memories
(read; write, which proposes)."""
PERMISSIONS: tuple[str, ...] = get_args(Permission)
CONVERSATION_READ = "conversation.read"
DESKTOP_CONTROL = "desktop.control"
NETWORK = "network"
SYSTEM_PROCESSES = "system.processes"
MEMORY_READ = "memory.read"
"""Search the user's memories (DESIGN §15), not only the app's own."""
MEMORY_WRITE = "memory.write"
"""Propose memories to the user's scope (they wait for the user's yes)."""
SETTINGS_PAGE = "Settings → App permissions"
"""Where the user grants and revokes them."""


def not_granted(app_id: str, permission: str) -> str:
    """The refusal of a use of ``permission`` that ``app_id`` was not granted."""
    return f"permission {permission!r} is not granted to {app_id}; grant it in {SETTINGS_PAGE}"


Locale = Literal["zh-CN", "en"]
"""A UI language (``config.language``): the keys of a manifest's per-locale texts."""
LOCALES: tuple[str, ...] = get_args(Locale)
DEFAULT_LOCALE = "zh-CN"
"""The locale of a text given as a plain string, and the fallback of a missing one."""


def lang_of(value: str | None) -> Locale:
    """``"en"`` for any English locale ("en", "en-US"), else zh-CN."""
    return "en" if str(value or "").lower().startswith("en") else "zh-CN"


def new_id(prefix: str) -> str:
    """A fresh id with a readable prefix (``run_…``, ``ia_…``, ``inst_…``)."""
    return f"{prefix}_{secrets.token_hex(8)}"
