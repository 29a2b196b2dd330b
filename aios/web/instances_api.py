"""``/api/instances`` (DESIGN §13): the open apps of a session, and the desktop's focus.

The page reports the user's focus changes and window closes here; the
system answers with ``focus`` / ``instance`` events (a closed child hands
the focus back to its parent).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from aios.web.request import json_body, system
from aios.web.schemas import SessionBody, parse

bp = Blueprint("instances_api", __name__, url_prefix="/api")


@bp.get("/instances")
def list_instances() -> Response:
    return jsonify(system().instances.list(request.args.get("session") or None))


@bp.post("/instances/<instance_id>/focus")
def focus_instance(instance_id: str) -> Response:
    """404 for an instance of another session than the body's ``session_id``."""
    sid = parse(SessionBody, json_body()).session_id
    return jsonify(system().instances.focus(instance_id, sid).public())


@bp.post("/instances/<instance_id>/close")
def close_instance(instance_id: str) -> Response:
    sid = parse(SessionBody, json_body()).session_id
    return jsonify(system().instances.close(instance_id, sid).public())
