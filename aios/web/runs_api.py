"""``/api/runs``, ``/api/interactions`` and app policies (DESIGN §12), for the desktop page.

The user watches and stops runs, answers the approval cards, and sets per
app which tools run without asking, ask first, or never run.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from aios.errors import AppNotFound, Conflict, NotFound
from aios.protocol import ActionRequest
from aios.runs.approvals import ASKED_AT
from aios.store.runs import SUMMARY_STEP_KEYS
from aios.tools import ATOMIC_TOOLS, tools
from aios.tools.risk import RISK_ORDER
from aios.web.desktop_api import with_run
from aios.web.request import int_arg, json_body, system

bp = Blueprint("runs_api", __name__, url_prefix="/api")

RUNS_PAGE = 50
RUNS_PAGE_MAX = 500
"""Runs ``GET /api/runs`` returns without ``?limit=``."""


def _flag(name: str) -> bool:
    return request.args.get(name, "") in ("1", "true", "yes")


def _live(row: dict[str, Any], *, summary: bool) -> dict[str, Any]:
    """A stored run, with the live step statuses of a run still at work ("started")."""
    run = system().runs.get(str(row.get("run_id")))
    if run is None:
        return row
    stored = {str(s.get("step_id")): s for s in row.get("steps") or []}
    steps = []
    for key, live in run.steps.items():
        merged = {**stored.get(key, {}), **live}
        steps.append(
            {k: merged[k] for k in SUMMARY_STEP_KEYS if k in merged} if summary else merged
        )
    return {**row, "steps": steps, "pending": list(run.pending)}


@bp.get("/runs")
def list_runs() -> Response:
    store = system().runstore
    rows = store.runs(
        session=request.args.get("session") or None,
        active=_flag("active"),
        limit=int_arg("limit", 1, RUNS_PAGE_MAX, RUNS_PAGE),
    )
    return jsonify([_live(r, summary=True) for r in rows])


@bp.get("/runs/<run_id>")
def get_run(run_id: str) -> Response:
    row = system().runstore.run(run_id)
    if row is None:
        raise NotFound(f"no run {run_id!r}")
    return jsonify(_live(row, summary=False))


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
    locale = req.get("locale") if isinstance(req.get("locale"), str) else None
    if req.get("kind") == "instruction":
        return jsonify(ctl.instruction(str(req.get("text", "")), sid, locale=locale))
    app_id = str(req.get("app", ""))
    if req.get("kind") == "open":
        sid, outcome = ctl.open_app(app_id, sid, locale=locale)
    else:
        action = ActionRequest.model_validate(req.get("action") or {})
        sid, outcome = ctl.action(app_id, action, sid, locale=locale)
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


@bp.get("/approvals/catalog")
def approvals_catalog() -> Response:
    return jsonify(catalog())


def catalog() -> dict[str, Any]:
    """Each atomic tool with its risk classes, and the classes each mode asks about:
    served so that the renderer keeps no copy of either (issue 21, rule 1)."""
    specs = tools()

    def riskiest_first(name: str) -> tuple[int, int, int]:
        ranks = [RISK_ORDER.index(r) for r in specs[name].risk_classes()]
        return (-max(ranks), -min(ranks), ATOMIC_TOOLS.index(name))

    return {
        "risks": list(RISK_ORDER),
        "modes": {mode: [r for r in RISK_ORDER if r in asked] for mode, asked in ASKED_AT.items()},
        "tools": [
            {"tool": name, "risks": list(specs[name].risk_classes())}
            for name in sorted(ATOMIC_TOOLS, key=riskiest_first)
        ],
    }


@bp.get("/apps/<app_id>/policy")
def get_policy(app_id: str) -> Response:
    return jsonify(system().approvals.policy(_known(app_id)))


@bp.post("/apps/<app_id>/policy")
def set_policy(app_id: str) -> Response:
    return jsonify(system().approvals.set_policy(_known(app_id), json_body()))
