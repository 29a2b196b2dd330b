"""``/api/runs``, ``/api/interactions`` and app policies (DESIGN §12), for the desktop page.

The user watches and stops runs, answers the approval cards, and sets per
app which tools run without asking, ask first, or never run.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from aios.errors import AppNotFound, Conflict, NotFound
from aios.protocol import ActionRequest
from aios.web.desktop_api import with_run
from aios.web.request import int_arg, json_body, system

bp = Blueprint("runs_api", __name__, url_prefix="/api")

RUNS_PAGE = 50
RUNS_PAGE_MAX = 500
"""Runs ``GET /api/runs`` returns without ``?limit=``."""


def _flag(name: str) -> bool:
    return request.args.get(name, "") in ("1", "true", "yes")


@bp.get("/runs")
def list_runs() -> Response:
    store = system().runstore
    return jsonify(
        store.runs(
            session=request.args.get("session") or None,
            active=_flag("active"),
            limit=int_arg("limit", 1, RUNS_PAGE_MAX, RUNS_PAGE),
        )
    )


@bp.get("/runs/<run_id>")
def get_run(run_id: str) -> Response:
    row = system().runstore.run(run_id)
    if row is None:
        raise NotFound(f"no run {run_id!r}")
    return jsonify(row)


@bp.post("/runs/<run_id>/cancel")
def cancel_run(run_id: str) -> Response:
    return jsonify(system().runs.cancel(run_id))


@bp.post("/runs/<run_id>/retry")
def retry_run(run_id: str) -> Response:
    """Send an ended run's instruction, open or action again, as a new run (DESIGN §12).

    409 while the run is still active; nothing is ever re-run without this call.
    """
    sys_ = system()
    row = sys_.runstore.run(run_id)
    if row is None:
        raise NotFound(f"no run {run_id!r}")
    if row.get("state") in ("running", "waiting"):
        raise Conflict(f"run {run_id} is still {row['state']}", current=row)
    req = row.get("request")
    if not isinstance(req, dict):
        raise Conflict(f"run {run_id} kept nothing to send again", current=row)
    sid = row.get("session_id")
    ctl = sys_.controller
    if req.get("kind") == "instruction":
        return jsonify(ctl.instruction(str(req.get("text", "")), sid))
    app_id = str(req.get("app", ""))
    if req.get("kind") == "open":
        sid, outcome = ctl.open_app(app_id, sid)
    else:
        action = ActionRequest.model_validate(req.get("action") or {})
        sid, outcome = ctl.action(app_id, action, sid)
    return jsonify(with_run(app_id, sid, outcome.response))


@bp.get("/interactions")
def list_interactions() -> Response:
    return jsonify(
        system().runstore.interactions(
            pending=_flag("pending"), session=request.args.get("session") or None
        )
    )


@bp.post("/interactions/<ia_id>")
def answer_interaction(ia_id: str) -> Response:
    return jsonify(system().approvals.answer(ia_id, json_body()))


def _known(app_id: str) -> str:
    if system().launcher.get(app_id) is None:
        raise AppNotFound(f"no app {app_id!r}")
    return app_id


@bp.get("/apps/<app_id>/policy")
def get_policy(app_id: str) -> Response:
    return jsonify(system().approvals.policy(_known(app_id)))


@bp.post("/apps/<app_id>/policy")
def set_policy(app_id: str) -> Response:
    return jsonify(system().approvals.set_policy(_known(app_id), json_body()))
