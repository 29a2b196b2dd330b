"""``/api/sessions`` and a session's ``timeline`` (DESIGN §13 "Conversation panel").

The desktop lists the sessions, starts a new one, and reads one page of a
session's timeline at a time (``aios.desktop.conversation`` merges it from the stored
history, runs and interactions).
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from aios.desktop import conversation
from aios.errors import BadRequest, NotFound
from aios.names import valid_session_id
from aios.web.request import int_arg, system

bp = Blueprint("conversation_api", __name__, url_prefix="/api")

SESSIONS_PAGE = 50
"""Sessions ``GET /api/sessions`` lists without ``?limit=``."""
SESSIONS_PAGE_MAX = 500
"""Largest ``?limit=`` of ``GET /api/sessions``."""
TIMELINE_PAGE = 50
"""Timeline entries one page holds without ``?limit=`` (at most ``store.history_page_max``)."""
ENTRY_ID_MAX_CHARS = 200
"""A ``before`` cursor longer than this is no entry id."""


@bp.get("/sessions")
def list_sessions() -> Response:
    limit = int_arg("limit", 1, SESSIONS_PAGE_MAX, SESSIONS_PAGE)
    return jsonify(conversation.sessions(system().store, limit))


@bp.post("/sessions")
def new_session() -> Response:
    sys_ = system()
    newest = conversation.sessions(sys_.store, 1)
    report = None
    if newest:  # the conversation the user leaves ends (DESIGN §16: its report, shown)
        report = {
            "session_id": newest[0]["session_id"],
            **sys_.end_session(str(newest[0]["session_id"])),
        }
    # what was said so far is read for memories now (in the background: that model call is
    # traced in the session it reads, after its end)
    sys_.memory.new_conversation()
    sid = sys_.store.ensure_session(None)
    sys_.tracer.emit("session_start", session_id=sid)
    resp = jsonify({"session_id": sid, "report": report})
    resp.status_code = 201
    return resp


@bp.get("/sessions/<sid>/timeline")
def session_timeline(sid: str) -> Response:
    sys_ = system()
    if not valid_session_id(sid) or not sys_.store.session_exists(sid):
        raise NotFound(f"no session {sid!r}")
    page_max = sys_.config.store.history_page_max
    limit = int_arg("limit", 1, page_max, min(TIMELINE_PAGE, page_max))
    before = request.args.get("before") or None
    if before is not None and (len(before) > ENTRY_ID_MAX_CHARS or before[0] not in "hri"):
        raise BadRequest(
            f"query parameter 'before' must be a timeline entry id (h…, r… or i…), not {before!r}"
        )
    return jsonify(
        conversation.timeline(
            sys_.store, sys_.runstore, sid, before=before, limit=limit, page=page_max
        )
    )
