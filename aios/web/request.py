"""What every handler needs: the System, the JSON body, checked arguments, error replies.

Request errors are :class:`~aios.errors.BadRequest` (HTTP 400); the guards
blueprint turns every error of the tree into a JSON ``{"error": ...}`` reply.
"""

from __future__ import annotations

import json
from typing import Any, cast, overload

from flask import Response, current_app, jsonify, request

from aios.errors import BadRequest
from aios.names import SESSION_ID_RULE, valid_session_id
from aios.protocol import jsondepth
from aios.system import System

EXTENSION = "aios"
"""The key of the System in ``app.extensions``."""


def system() -> System:
    """The System this app serves."""
    return cast(System, current_app.extensions[EXTENSION])


def error(status: int, message: str, **extra: Any) -> Response:
    resp = jsonify({"error": message, **extra})
    resp.status_code = status
    return resp


def json_body() -> dict[str, Any]:
    """The request's JSON object ({} when empty); BadRequest when too large or not an object."""
    limit = system().config.web.max_json_body
    if request.content_length and request.content_length > limit:
        raise BadRequest(f"request body exceeds {limit} bytes")
    raw = request.get_data(cache=True)
    if not raw:
        return {}
    try:
        body = jsondepth.loads(raw, system().config.web.max_json_depth)
    except jsondepth.TooDeep as e:
        raise BadRequest(f"request body: {e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"request body is not valid JSON: {e}") from e
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    return body


def session(body: dict[str, Any]) -> str | None:
    """The body's ``session_id``, checked; None when absent."""
    sid = body.get("session_id")
    if sid is None:
        return None
    if not valid_session_id(sid):
        raise BadRequest(SESSION_ID_RULE)
    return cast(str, sid)


def text_field(body: dict[str, Any], name: str, what: str) -> str:
    """A required non-blank text field."""
    text = body.get(name)
    if not isinstance(text, str) or not text.strip():
        raise BadRequest(f"field {name!r}{what} is required")
    return text


@overload
def int_arg(name: str, low: int, high: int | None, default: int) -> int: ...


@overload
def int_arg(name: str, low: int, high: int | None, default: None) -> int | None: ...


def int_arg(name: str, low: int, high: int | None, default: int | None) -> int | None:
    """The query parameter ``name`` as an int in [low, high], or ``default`` when absent."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"query parameter {name!r} must be a whole number, not {raw!r}") from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadRequest(f"query parameter {name!r} must be {bound} (got {value})")
    return value
