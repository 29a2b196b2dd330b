"""``/api/runs``, ``/api/interactions`` and app policies (DESIGN §12), for the desktop page.

The user watches and stops runs, answers the approval cards, and sets per
app which tools run without asking, ask first, or never run.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from aios.errors import AppNotFound, NotFound
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
