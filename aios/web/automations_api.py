"""``/api/automations`` and ``/api/attention`` (DESIGN §18): reminders and scheduled runs
(Settings → Automations lists, pauses, edits and deletes them), and where the page looks
(the thinker announces what ends where the user is not looking).

The rules are :class:`aios.duplex.automations.Scheduler`'s; these routes only read the
body and call it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Blueprint, Response, jsonify, request

from aios.duplex.automations import describe
from aios.duplex.when import When
from aios.errors import BadRequest
from aios.names import valid_session_id
from aios.protocol import LOCALES
from aios.web.request import json_body, system
from aios.web.schemas import AttentionBody, AutomationBody, AutomationPatch, parse

bp = Blueprint("automations_api", __name__, url_prefix="/api")


def public(row: dict[str, Any]) -> dict[str, Any]:
    """An automation as the API shows it: its fields and when it is due in words."""
    return {**row, "when": {loc: describe(row, loc) for loc in LOCALES}}


@bp.get("/automations")
def list_automations() -> Response:
    sid = request.args.get("session") or None
    if sid is not None and not valid_session_id(sid):
        raise BadRequest(f"query parameter 'session' is no session id: {sid!r}")
    return jsonify([public(r) for r in system().automations.store.all(sid)])


@bp.post("/automations")
def create_automation() -> Response:
    sys_ = system()
    body = parse(AutomationBody, json_body())
    lang = body.locale or sys_.config.language
    sid = sys_.store.ensure_session(body.session_id)
    if body.text is not None:
        reply = sys_.automations.from_words(body.text, sid, lang)
        if reply is None:
            raise BadRequest(f"no time in 'text' {body.text!r}: say when, e.g. 提醒我三点开会")
        if reply["automation"] is None:
            raise BadRequest(reply["message"])
        row, message = reply["automation"], reply["message"]
    else:
        if not body.what or not body.what.strip():
            raise BadRequest("field 'what' (what to say or run) or 'text' is required")
        at = datetime.fromtimestamp(body.at).astimezone() if body.at is not None else None
        when = When(body.kind, body.what.strip(), at=at, cron=body.cron)
        row = sys_.automations.create(sid, when, locale=lang)
        message = ""
    resp = jsonify({"automation": public(row), "message": message, "session_id": sid})
    resp.status_code = 201
    return resp


@bp.patch("/automations/<automation_id>")
def edit_automation(automation_id: str) -> Response:
    patch = parse(AutomationPatch, json_body()).model_dump(exclude_unset=True)
    return jsonify(public(system().automations.edit(automation_id, patch)))


@bp.delete("/automations/<automation_id>")
def delete_automation(automation_id: str) -> Response:
    system().automations.delete(automation_id)
    return jsonify({"ok": True})


@bp.post("/attention")
def attention() -> Response:
    body = parse(AttentionBody, json_body())
    system().thinker.set_attention(body.session_id, body.visible)
    return jsonify({"ok": True})
