"""``/api/traces/<session>`` and ``/api/usage`` (DESIGN §16): a session's trace as
JSONL (``?run=`` keeps one run's events) and the model calls' tokens and cost,
totalled per session, app, model or day.
"""

from __future__ import annotations

import json
import math

from flask import Blueprint, Response, jsonify, request

from aios.errors import BadRequest, NotFound
from aios.names import valid_session_id
from aios.store.audit import USAGE_GROUPS
from aios.traces.writer import trace_path
from aios.web.request import system

bp = Blueprint("traces_api", __name__, url_prefix="/api")

NDJSON = "application/x-ndjson"


@bp.get("/traces/<sid>")
def session_trace(sid: str) -> Response:
    sys_ = system()
    path = trace_path(sys_.trace_writer.directory, sid) if valid_session_id(sid) else None
    sys_.trace_writer.flush()  # what was emitted before this request is in the file
    if path is None or not path.is_file():
        raise NotFound(f"no trace for session {sid!r}")
    run = request.args.get("run") or None
    with path.open("r", encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    if run is not None:
        lines = [line for line in lines if _run_of(line) == run]
    return Response("".join(lines), mimetype=NDJSON)


@bp.get("/usage")
def usage() -> Response:
    by = request.args.get("by", "day")
    if by not in USAGE_GROUPS:
        raise BadRequest(
            f"query parameter 'by' must be one of {', '.join(USAGE_GROUPS)}, not {by!r}"
        )
    since_arg = request.args.get("since")
    since: float | None = None
    if since_arg:
        try:
            since = float(since_arg)
        except ValueError:
            since = math.nan
        if not math.isfinite(since) or since < 0:
            raise BadRequest(
                f"query parameter 'since' must be a Unix time in seconds, not {since_arg!r}"
            )
    groups = system().store.usage_totals(by, since=since)
    return jsonify({"by": by, "since": since, "groups": groups})


def _run_of(line: str) -> str | None:
    try:
        value = json.loads(line).get("run_id")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None
