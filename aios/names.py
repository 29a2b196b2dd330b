"""The protocol's vocabulary: names and patterns, and the system's error reply.

Plain Python, no pydantic: an app process imports this at start, while the
models of :mod:`aios.protocol` load only when something is validated.
"""

from __future__ import annotations

from typing import Any

VIEW_TYPES: tuple[str, ...] = (
    "text", "list", "card", "table", "form", "media", "image", "chart", "code", "dashboard",
)
"""The ten view types of spec §6.2."""

SYSTEM_VIEW_TYPES: tuple[str, ...] = ("loading", "error")
"""Placeholder (§8.2) and the system's own error view."""

ACTION_TYPES: tuple[str, ...] = (
    "button", "submit_form", "select", "checkbox", "radio",
    "input", "link", "toggle", "slider", "datetime",
)
"""The ten action controls of spec §6.3."""

ATOMIC_TOOLS: tuple[str, ...] = (
    "http_request", "file_read", "file_write", "file_list", "shell_exec",
    "process_start", "db_query", "cache_get", "cache_set", "notify",
)
"""The ten atomic tools of spec §7.2."""

ACTION_ID_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$"
TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


def error_response(message: str, *, title: str = "", detail: Any = None) -> dict[str, Any]:
    """The reply the system shows when something failed (status error, view ``error``)."""
    data: dict[str, Any] = {"title": title or "错误 / Error", "message": message}
    if detail is not None:
        data["detail"] = detail
    return {"status": "error", "view_type": "error", "data": data, "actions": [],
            "steps": [], "message": message}
