"""``/api/sys/*``: what apps call with their own token (the guards put its record in ``g``)."""

from __future__ import annotations

from flask import Blueprint, Response, g, jsonify, request

from aios.apphost.registry import AppRecord
from aios.duplex.replies import ReplyStream
from aios.errors import LLMError, LLMUnavailable
from aios.llm.client import APP_REPLY_MARGIN, LLMCancelled
from aios.runs.rights import Frame
from aios.runs.runs import Run
from aios.web.request import error, json_body, session, system
from aios.web.schemas import SysLLMBody, SysToolBody, parse

bp = Blueprint("sys_api", __name__, url_prefix="/api/sys")


def _caller() -> AppRecord:
    record: AppRecord = g.app_record
    return record


@bp.post("/tool")
def sys_tool() -> Response:
    body = parse(SysToolBody, json_body())
    result = system().app_api.call_tool(_caller(), body.tool, body.args, body.session_id)
    return jsonify(result.model_dump(mode="json", exclude_none=True))


@bp.post("/push")
def sys_push() -> Response:
    listeners = system().app_api.push(_caller(), json_body(), len(request.get_data(cache=True)))
    return jsonify({"ok": True, "listeners": listeners})


@bp.post("/llm")
def sys_llm() -> Response:
    body = parse(SysLLMBody, json_body())
    sys_, app_id = system(), _caller().id
    # Bounded by the time the app has left to answer the call it is working on, less a
    # moment for it to say it ran out of time: nobody would receive a later answer.
    app_deadline = sys_.controller.app_deadline(app_id)
    # the call is the app's, in the session and run it is acting for (its trace, its usage)
    frame = sys_.controller.acting.frame_for(app_id, None)
    run = frame.run if frame else None
    relay = _relay(body, frame, app_id)
    try:
        with sys_.tracer.bind(
            frame.session_id if frame else None, run.run_id if run else None, app_id
        ):
            result = sys_.llm.chat(
                body.messages,
                tools=body.tools,
                tool_choice=body.tool_choice,
                purpose=f"app:{app_id}",
                deadline=app_deadline - APP_REPLY_MARGIN if app_deadline is not None else None,
                stream=relay,
                cancel=run.cancel if relay is not None and run is not None else None,
            )
    except LLMUnavailable as e:
        return error(503, str(e))
    except LLMCancelled as e:
        if relay is not None:
            relay.cancelled()
        return error(504, str(e))
    except LLMError as e:
        if relay is not None:
            relay.error(str(e))
        return error(502, str(e))
    if relay is not None:
        relay.end()
    return jsonify(
        {
            "message": result.message,
            "usage": result.usage,
            "model": result.model,
            "provider": result.provider,
        }
    )


def _relay(body: SysLLMBody, frame: Frame[Run] | None, app_id: str) -> ReplyStream | None:
    """The panel's typing bubble for an answer meant for the user (``stream_to_user``), when
    the app works on the user's own instruction (not for another app) and streaming is on."""
    sys_ = system()
    if (
        not body.stream_to_user
        or frame is None
        or frame.run is None
        or frame.launchers
        or not sys_.config.duplex.stream_replies
    ):
        return None
    return ReplyStream(
        lambda event: sys_.bus.emit("reply_stream", event),
        session_id=frame.session_id,
        run_id=frame.run.run_id,
        app=app_id,
        flush_s=sys_.config.duplex.stream_flush_ms / 1000,
    )


@bp.get("/processes")
def sys_processes() -> Response:
    """The host's processes, read-only (pid, name, user, CPU, memory, start time); needs
    ``system.processes``."""
    return jsonify({"processes": system().app_api.process_list(_caller())})


@bp.post("/processes/<int:pid>/end")
def sys_end_process(pid: int) -> Response:
    """End one host process ("end task": SIGTERM, then SIGKILL); needs ``system.processes``,
    audited; refuses pid 1, kernel threads, the system's own process tree and other users'
    processes -> ``{pid, name, ended: true}``."""
    body = json_body()
    return jsonify(system().app_api.end_process(_caller(), pid, session(body)))


@bp.get("/disks")
def sys_disks() -> Response:
    """The host's disks (mount, total, used, free, percent); needs ``system.processes``."""
    return jsonify({"disks": system().app_api.disk_list(_caller())})


@bp.post("/ui")
def sys_ui() -> Response:
    app_api, record = system().app_api, _caller()
    app_api.require_ui_permission(record)  # refused before the body is even read
    applied = app_api.apply_ui_ops(record, json_body())
    return jsonify({"ok": True, "applied": applied, "listeners": app_api.listeners})
