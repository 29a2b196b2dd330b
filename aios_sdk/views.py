"""Reply builders for the two views every app shows: a text and an error.

Each returns a complete reply dict (``status``, ``view_type``, ``data``,
``actions``, ``message``) that ``handle`` can return as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

Status = Literal["ok", "error"]


def text_view(
    content: str,
    *,
    title: str | None = None,
    message: str | None = None,
    actions: Sequence[dict[str, Any]] = (),
    status: Status = "ok",
    state: Any = None,
    **data: Any,
) -> dict[str, Any]:
    """A ``text`` view of ``content``; ``message`` (spoken) defaults to the content.

    Extra keyword arguments go into ``data``; ``state`` (kept for the session)
    is added only when given.
    """
    body: dict[str, Any] = {} if title is None else {"title": title}
    body.update(content=content, **data)
    reply: dict[str, Any] = {
        "status": status,
        "view_type": "text",
        "data": body,
        "actions": list(actions),
        "message": content if message is None else message,
    }
    if state is not None:
        reply["state"] = state
    return reply


def error_view(
    message: str,
    *,
    title: str,
    actions: Sequence[dict[str, Any]] = (),
    state: Any = None,
    **data: Any,
) -> dict[str, Any]:
    """An ``error`` view (status ``error``) saying ``message`` under ``title``.

    Extra keyword arguments (``detail``, ``received``, …) go into ``data``.
    """
    reply: dict[str, Any] = {
        "status": "error",
        "view_type": "error",
        "data": {"title": title, "message": message, **data},
        "actions": list(actions),
        "message": message,
    }
    if state is not None:
        reply["state"] = state
    return reply


DESKTOP_TARGETS = (
    "settings",
    "settings#llm",
    "settings#permissions",
    "settings#approvals",
    "audit",
)
"""The desktop's own windows an app's button may open (docs/renderer.md, "desktop targets")."""


def desktop_button(
    label: str,
    target: str,
    *,
    action_id: str = "open_desktop",
    variant: Literal["primary", "secondary", "danger"] | None = "primary",
) -> dict[str, Any]:
    """A button that opens one of the desktop's own windows instead of calling the app.

    ``target`` is one of :data:`DESKTOP_TARGETS` (``"settings#llm"``: Settings at its
    language-model fields); the click never reaches the app. ValueError for any other target.
    """
    if target not in DESKTOP_TARGETS:
        raise ValueError(
            f"desktop target {target!r} does not exist: use one of {', '.join(DESKTOP_TARGETS)}"
        )
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "label": label,
        "desktop": target,
    }
    if variant is not None:
        button["variant"] = variant
    return button
