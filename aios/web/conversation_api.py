"""``/api/sessions``, a session's ``timeline`` (DESIGN §13 "Conversation panel") and its
``topics`` (DESIGN §18 "Topics").

The desktop lists the sessions, starts a new one, and reads one page of a
session's timeline at a time (``aios.desktop.conversation`` merges it from the stored
history, runs and interactions). The panel's topic tree is ``aios.control.topics``'s:
read, resumed (the window comes up with its last view, as "back to …" does) or archived.
"""

from __future__ import annotations

import re

from flask import Blueprint, Response, jsonify, request

from aios.desktop import conversation
from aios.errors import BadRequest, NotFound
from aios.names import valid_session_id
from aios.web.request import int_arg, json_body, system
from aios.web.schemas import TopicBody, parse

bp = Blueprint("conversation_api", __name__, url_prefix="/api")

SESSIONS_PAGE = 50
"""Sessions ``GET /api/sessions`` lists without ``?limit=``."""
SESSIONS_PAGE_MAX = 500
"""Largest ``?limit=`` of ``GET /api/sessions``."""
TIMELINE_PAGE = 50
"""Timeline entries one page holds without ``?limit=`` (at most ``store.history_page_max``)."""
ENTRY_ID_MAX_CHARS = 200
"""A ``before`` cursor longer than this is no entry id."""
TOPIC_ID = re.compile(r"topic_[0-9a-f]{16}")
"""A topic's id (``aios.names.new_id("topic")``)."""


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


def _session(sid: str) -> str:
    if not valid_session_id(sid) or not system().store.session_exists(sid):
        raise NotFound(f"no session {sid!r}")
    return sid


def _topic_id(topic_id: str) -> str:
    if not TOPIC_ID.fullmatch(topic_id):
        raise BadRequest(f"{topic_id[:ENTRY_ID_MAX_CHARS]!r} is no topic id (topic_ and 16 hex)")
    return topic_id


@bp.get("/sessions/<sid>/topics")
def session_topics(sid: str) -> Response:
    return jsonify(system().topics.tree(_session(sid)))


@bp.post("/sessions/<sid>/topics/<topic_id>/resume")
def resume_topic(sid: str, topic_id: str) -> Response:
    body = parse(TopicBody, json_body())
    if body.session_id not in (None, sid):
        raise BadRequest(f"field 'session_id' ({body.session_id}) is not the path's ({sid})")
    return jsonify(
        system().controller.resume_topic(_session(sid), _topic_id(topic_id), locale=body.locale)
    )


@bp.post("/sessions/<sid>/topics/<topic_id>/archive")
def archive_topic(sid: str, topic_id: str) -> Response:
    sys_ = system()
    sys_.topics.archive(_session(sid), _topic_id(topic_id))
    return jsonify(sys_.topics.tree(sid))


@bp.get("/sessions/<sid>/timeline")
def session_timeline(sid: str) -> Response:
    sys_ = system()
    _session(sid)
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
