"""``/api/sessions/<sid>/layout``: the desktop's windows per session (DESIGN §13 "Layout recovery").

The page saves where its windows are (position, size, z-order, minimised and
maximised state) and reads it back after a refresh or a restart. The layout is
one value of the session's context (``Store.set_context_var``), so it lives and
is pruned with the session. The body is checked here, field by field, so a bad
one is refused with a line naming the field instead of being stored.
"""

from __future__ import annotations

import math
import re
from typing import Any

from flask import Blueprint, Response, jsonify

from aios.errors import BadRequest, NotFound
from aios.names import APP_ID_PATTERN, SESSION_ID_RULE, valid_session_id
from aios.web.request import json_body, system

bp = Blueprint("layout_api", __name__, url_prefix="/api")

CONTEXT_KEY = "layout"
"""The session context variable that holds the layout."""
MAX_WINDOWS = 64
"""Windows one layout may hold (the desktop opens one per app)."""
COORD_LIMIT = 100_000
"""Positions, sizes and z-indexes are pixels (or ranks) within ±this."""
NUMBER_FIELDS = ("x", "y", "w", "h", "z")
FLAG_FIELDS = ("minimized", "maximized")
"""``minimized`` is required, ``maximized`` optional (false when absent)."""

_APP_ID = re.compile(APP_ID_PATTERN)


def _number(where: str, name: str, value: Any) -> float | int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or abs(value) > COORD_LIMIT
    ):
        raise BadRequest(
            f"{where}.{name} must be a finite number within ±{COORD_LIMIT}, got {value!r}"
        )
    if name in ("w", "h") and value <= 0:
        raise BadRequest(f"{where}.{name} must be greater than 0, got {value!r}")
    return value


def _window(index: int, raw: Any) -> dict[str, Any]:
    where = f"windows[{index}]"
    if not isinstance(raw, dict):
        raise BadRequest(f"{where} must be an object {{app, x, y, w, h, z, minimized}}")
    app = raw.get("app")
    if not isinstance(app, str) or not _APP_ID.fullmatch(app):
        raise BadRequest(
            f"{where}.app must be an app id (lower-case letters, digits, '_' and '-'), got {app!r}"
        )
    out: dict[str, Any] = {"app": app}
    for name in NUMBER_FIELDS:
        if name not in raw:
            raise BadRequest(f"{where}.{name} is required")
        out[name] = _number(where, name, raw[name])
    for name in FLAG_FIELDS:
        value = raw.get(name, False if name == "maximized" else None)
        if not isinstance(value, bool):
            raise BadRequest(f"{where}.{name} must be true or false, got {value!r}")
        out[name] = value
    return out


def check_layout(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The body's windows, checked, with only the known fields; BadRequest names the bad one."""
    windows = body.get("windows")
    if not isinstance(windows, list):
        raise BadRequest("field 'windows' must be a list of {app, x, y, w, h, z, minimized}")
    if len(windows) > MAX_WINDOWS:
        raise BadRequest(f"field 'windows' holds {len(windows)} windows; at most {MAX_WINDOWS}")
    out = [_window(i, raw) for i, raw in enumerate(windows)]
    seen: set[str] = set()
    for i, w in enumerate(out):
        if w["app"] in seen:
            raise BadRequest(f"windows[{i}].app {w['app']!r} appears twice (one window per app)")
        seen.add(w["app"])
    return out


def _known_session(sid: str) -> str:
    if not valid_session_id(sid):
        raise BadRequest(SESSION_ID_RULE)
    if not system().store.session_exists(sid):
        raise NotFound(f"no session {sid!r}")
    return sid


@bp.get("/sessions/<sid>/layout")
def get_layout(sid: str) -> Response:
    """``{windows: [...], updated}``; no windows and ``updated: null`` before the first save."""
    store = system().store
    saved = store.context_vars(_known_session(sid)).get(CONTEXT_KEY)
    if not isinstance(saved, dict):
        saved = {"windows": [], "updated": None}
    return jsonify(saved)


@bp.put("/sessions/<sid>/layout")
def put_layout(sid: str) -> Response:
    """Replace the session's layout with the body's ``windows``; answers what was stored."""
    store = system().store
    _known_session(sid)
    layout = {"windows": check_layout(json_body()), "updated": store.clock()}
    store.set_context_var(sid, CONTEXT_KEY, layout)
    return jsonify(layout)
