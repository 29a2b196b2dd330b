"""``/api/*`` for the desktop page (DESIGN §8): apps, instructions, actions, memory, settings."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from flask import Blueprint, Response, jsonify, request
from pydantic import ValidationError

from aios.errors import BadRequest, ConfigError
from aios.protocol import ActionRequest, describe_validation_error
from aios.web import file_urls
from aios.web.request import error, int_arg, json_body, system
from aios.web.schemas import ActionBody, ConfigBody, InstructionBody, OpenBody, parse

bp = Blueprint("desktop_api", __name__, url_prefix="/api")

AUDIT_PAGE = 200
"""Audit rows ``GET /api/audit`` returns without ``?limit=``."""


def _version() -> str:
    try:
        return metadata.version("triton-aios")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


VERSION = _version()
"""The installed package's version, for the About box (``GET /api/health``)."""


@bp.get("/health")
def health() -> Response:
    sys_ = system()
    apps = {r.id: str(r.status) for r in sys_.launcher.apps()}
    # A failing store (full disk, I/O error, damaged file) outranks the apps: the
    # system cannot remember anything, so it is "degraded" and says why.
    store_failure = sys_.store.failure()
    status = "degraded" if store_failure else "ready" if sys_.launcher.ready() else "starting"
    return jsonify(
        {
            "status": status,
            "apps": apps,
            "llm": sys_.llm.status(),
            "store": store_failure or "ok",
            "version": VERSION,
        }
    )


@bp.get("/apps")
def list_apps() -> Response:
    return jsonify(system().launcher.public_apps())


@bp.post("/apps/<app_id>/permissions")
def app_permissions(app_id: str) -> Response:
    """``{grant: [...], revoke: [...]}`` -> the app's ``{requested, granted}`` (DESIGN §11.7)."""
    permissions = system().permissions.change(app_id, json_body())
    return jsonify({"app": app_id, "permissions": permissions})


@bp.get("/file-grants")
def file_grants() -> Response:
    """Per app, the ``exp``/``sig`` that open its files and icon for ``web.file_url_ttl`` s."""
    sys_ = system()
    ttl = sys_.config.web.file_url_ttl
    return jsonify(
        {
            "ttl": ttl,
            "grants": {r.id: file_urls.grant(sys_.token, r.id, ttl) for r in sys_.launcher.apps()},
        }
    )


@bp.post("/apps/<app_id>/restart")
def restart_app(app_id: str) -> Response:
    """The taskbar icon's "restart": the app's process starts afresh (its folder reloaded)."""
    sys_ = system()
    sys_.launcher.restart(app_id)
    rec = sys_.launcher.get(app_id)
    return jsonify({"app": app_id, "status": str(rec.status) if rec else "unknown"})


@bp.post("/apps/<app_id>/open")
def open_app(app_id: str) -> Response:
    body = parse(OpenBody, json_body())
    sid, outcome = system().controller.open_app(app_id, body.session_id, locale=body.locale)
    return jsonify(with_run(app_id, sid, outcome.response))


@bp.post("/action")
def action() -> Response:
    body = parse(ActionBody, json_body())
    try:
        req = ActionRequest.model_validate(body.action_request())
    except ValidationError as e:
        raise BadRequest(f"invalid action: {describe_validation_error(e)}") from e
    sid, outcome = system().controller.action(body.app, req, body.session_id, locale=body.locale)
    return jsonify(with_run(body.app, sid, outcome.response))


def with_run(app_id: str, sid: str, response: dict[str, Any]) -> dict[str, Any]:
    """The reply, with its run's id (and, paused, its state and pending cards) on top."""
    out: dict[str, Any] = {"app": app_id, "session_id": sid, "response": response}
    if "run_id" in response:
        out["run_id"] = response["run_id"]
    if isinstance(response.get("pending"), list):  # the run waits (an app's own "state" stays)
        out["state"], out["pending"] = "waiting", response["pending"]
    return out


@bp.post("/instruction")
def instruction() -> Response:
    body = parse(InstructionBody, json_body())
    limit = system().config.web.instruction_max_chars
    if len(body.text) > limit:
        raise BadRequest(f"instruction is longer than {limit} characters")
    return jsonify(
        system().controller.instruction(body.text.strip(), body.session_id, locale=body.locale)
    )


@bp.post("/ui/snapshot")
def ui_snapshot() -> Response:
    kept = system().ui_log.save_snapshot(json_body())
    return jsonify({"ok": True, "elements": kept})


@bp.get("/ui/ops")
def ui_ops() -> Response:
    """The UI changes still applied, oldest first: the desktop re-applies them on load."""
    return jsonify({"ops": system().ui_log.ops()})


@bp.get("/audit")
def audit() -> Response:
    try:
        limit = int(request.args.get("limit", AUDIT_PAGE))
    except ValueError as e:
        raise BadRequest("limit must be a number") from e
    rows = system().store.audit_rows(
        app=request.args.get("app") or None,
        session_id=request.args.get("session") or None,
        limit=limit,
    )
    return jsonify(rows)


@bp.get("/sessions/<sid>")
def session_memory(sid: str) -> Response:
    store_config = system().config.store
    before = int_arg("before", 1, None, None)
    limit = int_arg("limit", 1, store_config.history_page_max, store_config.history_page)
    mem = system().store.session(sid, before=before, limit=limit)
    if mem is None:
        return error(404, f"no session {sid!r}")
    return jsonify(mem)


@bp.get("/config")
def get_config() -> Response:
    return jsonify({"config": system().config.masked(), "llm": system().llm.status()})


@bp.post("/config")
def post_config() -> Response:
    updates = parse(ConfigBody, json_body()).updates
    try:
        system().update_config(updates)
    except ConfigError as e:
        raise BadRequest(str(e)) from e
    return jsonify({"config": system().config.masked(), "llm": system().llm.status()})


@bp.get("/openapi.json")
def openapi_document() -> Response:
    """The OpenAPI 3.1 document of this API (docs/openapi.json; prose in docs/api.md)."""
    from aios.web import openapi  # built from every route's models, on first request only

    return jsonify(openapi.document())
