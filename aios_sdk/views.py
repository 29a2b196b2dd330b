"""Reply builders for the common views: text, list, table, form, and the error view.

Each returns a complete reply dict (``status``, ``view_type``, ``data``,
``actions``, ``message``) that ``handle`` can return as it is. The data shapes
are the renderer's (docs/protocol.md §2, "views"); ``list_view``, ``table_view``
and ``form_view`` check what they are given and raise ValueError naming the bad
item, row or field, so a mistake shows where it was made rather than as a blank
window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

Status = Literal["ok", "error"]


def _reply(
    view_type: str,
    data: dict[str, Any],
    message: str,
    actions: Sequence[dict[str, Any]],
    status: Status,
    state: Any,
) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "status": status,
        "view_type": view_type,
        "data": data,
        "actions": list(actions),
        "message": message,
    }
    if state is not None:
        reply["state"] = state
    return reply


def _head(title: str | None, extra: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {} if title is None else {"title": title}
    body.update(extra)
    return body


def list_view(
    items: Sequence[str | Mapping[str, Any]],
    *,
    title: str | None = None,
    empty: str | None = None,
    message: str | None = None,
    actions: Sequence[dict[str, Any]] = (),
    status: Status = "ok",
    state: Any = None,
    **data: Any,
) -> dict[str, Any]:
    """A ``list`` view: each item a text or ``{title, sub?, image?, duration?, done?, id?,
    actions?}``; ``empty`` is shown when there are none. ``message`` defaults to the title."""
    checked: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            checked.append(item)
        elif isinstance(item, Mapping):
            if not isinstance(item.get("title", item.get("name", "")), str):
                raise ValueError(f"list_view: item {i}'s title must be a text, got {item!r:.60}")
            checked.append(dict(item))
        else:
            raise ValueError(
                f"list_view: item {i} must be a text or a dict with a title, got {item!r:.60}"
            )
    body = _head(title, data)
    body["items"] = checked
    if empty is not None:
        body["empty"] = empty
    return _reply(
        "list", body, (title or "") if message is None else message, actions, status, state
    )


def table_view(
    columns: Sequence[str | Mapping[str, Any]],
    rows: Sequence[Sequence[Any] | Mapping[str, Any]],
    *,
    title: str | None = None,
    empty: str | None = None,
    message: str | None = None,
    actions: Sequence[dict[str, Any]] = (),
    status: Status = "ok",
    state: Any = None,
    **data: Any,
) -> dict[str, Any]:
    """A ``table`` view: ``columns`` (texts, or ``{key, label, align?, nowrap?}``) and ``rows``
    (one value per column, or a dict keyed by column). ``message`` defaults to the title."""
    cols: list[Any] = []
    for i, col in enumerate(columns):
        if isinstance(col, str):
            cols.append(col)
        elif isinstance(col, Mapping) and "key" in col:
            cols.append(dict(col))
        else:
            raise ValueError(f"table_view: column {i} must be a text or a dict with a key")
    table: list[Any] = []
    for i, row in enumerate(rows):
        if isinstance(row, Mapping):
            table.append(dict(row))
        elif isinstance(row, Sequence) and not isinstance(row, str):
            if len(row) != len(cols):
                raise ValueError(
                    f"table_view: row {i} has {len(row)} values for {len(cols)} columns"
                )
            table.append(list(row))
        else:
            raise ValueError(f"table_view: row {i} must be a list of values or a dict")
    body = _head(title, data)
    body.update(columns=cols, rows=table)
    if empty is not None:
        body["empty"] = empty
    return _reply(
        "table", body, (title or "") if message is None else message, actions, status, state
    )


def form_view(
    fields: Sequence[Mapping[str, Any]],
    *,
    submit: Mapping[str, Any] | None = None,
    title: str | None = None,
    description: str | None = None,
    message: str | None = None,
    actions: Sequence[dict[str, Any]] = (),
    status: Status = "ok",
    state: Any = None,
    **data: Any,
) -> dict[str, Any]:
    """A ``form`` view of ``fields`` (``{name, label, type, options?, value?, placeholder?,
    required?}``, checked as the system checks a ``submit_form``'s fields).

    ``submit`` (``{"action_id", "label"}``) adds the ``submit_form`` control that sends the
    values as ``form_values``; without it, give one in ``actions``.
    """
    from aios.errors import ProtocolError
    from aios.protocol.actions import FormField  # pydantic loads on first use, not at start
    from aios.protocol.base import parse_as

    checked = [dict(f) for f in fields]
    for i, field in enumerate(checked):
        try:
            parse_as(FormField, field, f"form_view field {i}")
        except ProtocolError as e:
            raise ValueError(str(e)) from None
    body = _head(title, data)
    if description is not None:
        body["description"] = description
    body["fields"] = checked
    controls = list(actions)
    if submit is not None:
        controls.insert(0, {"type": "submit_form", **submit})
    return _reply(
        "form", body, (title or "") if message is None else message, controls, status, state
    )


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
    body = _head(title, data)
    body["content"] = content
    return _reply("text", body, content if message is None else message, actions, status, state)


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
