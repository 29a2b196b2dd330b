"""Reply builders for the two views every app shows: a text and an error (spec §6.2).

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
