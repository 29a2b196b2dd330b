"""The system's HTTP API (DESIGN §8): the only module that knows the Flask routes.

Security, in the order it is checked:
1. Bound to 127.0.0.1 only.
2. Host header must name the loopback address and our port (DNS rebinding).
3. State-changing requests and the WebSocket must come from our own Origin
   when a browser sends one.
4. Desktop endpoints need the launch token (cookie set by ``/?token=``, or
   ``Authorization: Bearer``); ``/api/sys/*`` needs the calling app's own
   token; ``/api/sys/ui`` also needs the ``desktop.control`` permission.
Every refusal is a 401/403 with a JSON ``{"error": ...}`` naming the rule.
Routes stay thin: they parse, call the System, and shape the reply.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
import mimetypes
import threading
from typing import Any

from flask import Flask, Response, g, jsonify, make_response, request, send_file
from flask_sock import Sock
from pydantic import ValidationError
from werkzeug.exceptions import HTTPException
from werkzeug.serving import BaseWSGIServer, make_server

from aios.config import PROJECT_ROOT
from aios.errors import (
    AIOSError,
    AppError,
    ConfigError,
    LLMError,
    LLMUnavailable,
    StoreError,
    ToolRefused,
)
from aios.launcher import AppRecord
from aios.protocol import ActionRequest, describe_validation_error, icon_file
from aios.sandbox import resolve_path
from aios.system import System
from aios.tools import audit_args, invoke
from aios.voice import VoiceError, grammar_source, grammar_words, synthesize

log = logging.getLogger(__name__)

RENDERER_DIR = PROJECT_ROOT / "renderer"
COOKIE = "aios_token"
ACTION_PAYLOAD_KEYS = ("params", "form_values", "selected", "checked", "value", "href", "on")
UI_OPS = {
    "move": {"x": float, "y": float},
    "resize": {"width": float, "height": float},
    "hide": {},
    "show": {},
    "change_color": {"color": str},
    "change_text": {"text": str},
    "rotate": {"degrees": float},
}
MAX_JSON_BODY = 2_000_000


def _error(status: int, message: str, **extra: Any) -> Response:
    resp = jsonify({"error": message, **extra})
    resp.status_code = status
    return resp


def _json_body() -> dict[str, Any]:
    if request.content_length and request.content_length > MAX_JSON_BODY:
        raise _BadRequest(f"request body exceeds {MAX_JSON_BODY} bytes")
    raw = request.get_data(cache=True)
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _BadRequest(f"request body is not valid JSON: {e}") from e
    if not isinstance(body, dict):
        raise _BadRequest("request body must be a JSON object")
    return body


class _BadRequest(Exception):
    pass


WINDOW_UA_MARK = "TritonAIOS-Window/"
"""The desktop window (pywebview) identifies itself with this in its User-Agent."""


def csp_header(port: int, *, window: bool = False) -> str:
    # pywebview's JS bridge (evaluate_js, the "loaded" event) is built on eval, so
    # the window alone gets 'unsafe-eval'. Nothing in the renderer evaluates
    # strings, and app data never reaches the DOM as markup, so eval adds no path
    # for app data to run.
    script = "script-src 'self' 'unsafe-eval'" if window else "script-src 'self'"
    return (f"default-src 'self'; {script}; style-src 'self'; "
            "img-src 'self' data: http: https:; media-src 'self' blob: data: http: https:; "
            f"connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}; "
            "font-src 'self'; object-src 'none'; base-uri 'none'; frame-src 'none'; "
            "frame-ancestors 'none'; form-action 'self'")


PROGRESS_MAX = 100
"""A push's ``progress`` is a fraction 0..1, or a percentage up to this."""


def _check_progress(body: dict[str, Any]) -> None:
    """A push's ``progress``: a number from 0 to 1 (or a percentage up to 100), or null."""
    if "progress" not in body or body["progress"] is None:
        return
    value = body["progress"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 <= value <= PROGRESS_MAX:
        raise _BadRequest(f"field 'progress' must be a number from 0 to 1 (or a percentage up to "
                          f"{PROGRESS_MAX}), or null to clear the bar; got {value!r}")


def create_app(system: System) -> Flask:
    app = Flask(__name__, static_folder=None)
    app.json.sort_keys = False  # type: ignore[attr-defined]  # app replies go on as sent
    app.config["MAX_CONTENT_LENGTH"] = 50_000_000
    sock = Sock(app)
    app.extensions["aios_system"] = system

    def allowed_hosts() -> set[str]:
        # A DNS-rebinding page carries the attacker's name in Host; loopback
        # names without a port (some WebSocket clients omit it) are still ours.
        return {f"127.0.0.1:{system.port}", f"localhost:{system.port}", "127.0.0.1",
                "localhost"}

    def allowed_origins() -> set[str]:
        return {f"http://127.0.0.1:{system.port}", f"http://localhost:{system.port}"}

    def token_ok() -> bool:
        supplied = request.cookies.get(COOKIE, "")
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            supplied = auth[7:].strip()
        return bool(supplied) and hmac.compare_digest(supplied.encode(), system.token.encode())

    @app.before_request
    def _guard() -> Response | None:
        if request.host not in allowed_hosts():
            return _error(403, f"host {request.host!r} is not allowed: the desktop answers only "
                               "on the loopback address (DNS rebinding protection)")
        origin = request.headers.get("Origin")
        is_ws = request.headers.get("Upgrade", "").lower() == "websocket"
        if (request.method not in ("GET", "HEAD", "OPTIONS") or is_ws) and origin \
                and origin not in allowed_origins():
            return _error(403, f"origin {origin!r} is not allowed")
        path = request.path
        if path.startswith("/api/sys/"):
            auth = request.headers.get("Authorization", "")
            record = system.launcher.by_token(auth[7:].strip()) \
                if auth.startswith("Bearer ") else None
            if record is None:
                return _error(401, "app token missing or invalid (Authorization: Bearer "
                                   "<AIOS_APP_TOKEN>)")
            g.app_record = record
            return None
        if path == "/" and request.args.get("token"):
            return None  # the page handler checks it and sets the cookie
        if path.startswith("/static/") or path == "/favicon.ico":
            return None
        if not token_ok():
            return _error(401, "launch token missing or invalid: open the desktop with the "
                               "URL printed at start (…/?token=…)")
        return None

    @app.after_request
    def _headers(resp: Response) -> Response:
        resp.headers.setdefault("Content-Security-Policy", csp_header(
            system.port, window=WINDOW_UA_MARK in request.headers.get("User-Agent", "")))
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["X-Frame-Options"] = "DENY"
        if request.path.startswith("/api/"):
            resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.errorhandler(_BadRequest)
    def _bad(e: _BadRequest) -> Response:
        return _error(400, str(e))

    @app.errorhandler(AppError)
    def _app_error(e: AppError) -> Response:
        return _error(e.http_status if e.http_status != 200 else 502, str(e))

    @app.errorhandler(StoreError)
    def _store_error(e: StoreError) -> Response:
        log.error("%s %s: %s", request.method, request.path, e)  # one line, no traceback
        return _error(e.http_status, str(e))

    @app.errorhandler(Exception)
    def _unexpected(e: Exception) -> Response:
        # Whatever escaped a route is still answered in JSON, never Werkzeug's HTML page.
        if isinstance(e, HTTPException):
            return _error(e.code or 500, e.description or e.name)
        log.error("%s %s failed", request.method, request.path, exc_info=e)
        return _error(500, f"internal error ({type(e).__name__}: {e}); the log has the details")

    @app.errorhandler(404)
    def _not_found(e: Exception) -> Response:
        return _error(404, f"no such endpoint: {request.method} {request.path}")

    @app.errorhandler(405)
    def _bad_method(e: Exception) -> Response:
        return _error(405, f"method {request.method} not allowed on {request.path}")

    @app.errorhandler(413)
    def _too_large(e: Exception) -> Response:
        return _error(413, "request body too large")

    # ------------------------------------------------------------- the page

    @app.get("/")
    def index() -> Response:
        supplied = request.args.get("token", "")
        if supplied and not hmac.compare_digest(supplied.encode(), system.token.encode()):
            return _error(401, "launch token invalid")
        index_file = RENDERER_DIR / "index.html"
        if not index_file.exists():
            return _error(500, "renderer/index.html is missing")
        resp = make_response(send_file(index_file, mimetype="text/html", max_age=0))
        if supplied:
            resp.set_cookie(COOKIE, system.token, httponly=True, samesite="Strict",
                            path="/")
        return resp

    @app.get("/static/<path:rel>")
    def static_file(rel: str) -> Response:
        target = (RENDERER_DIR / rel).resolve()
        if RENDERER_DIR.resolve() not in target.parents or not target.is_file():
            return _error(404, f"no such file: {rel}")
        mime = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if target.suffix == ".js":
            mime = "text/javascript"
        return send_file(target, mimetype=mime, max_age=0)

    @app.get("/apps/<app_id>/files/<path:rel>")
    def app_file(app_id: str, rel: str) -> Response:
        """An app's own files, from its workdir only, never executable in our origin."""
        try:
            ctx = system.tool_context(app_id)
        except KeyError:
            return _error(404, f"no app named {app_id!r}")
        try:
            target = resolve_path(ctx.policy, rel, must_exist=True)
        except ToolRefused as e:
            return _error(403 if "confinement" in str(e) else 404, str(e))
        if not target.is_file():
            return _error(404, f"not a file: {rel}")
        resp = send_file(target, conditional=True, max_age=0)
        resp.headers["Content-Security-Policy"] = "sandbox; default-src 'none'; " \
            "img-src 'self'; media-src 'self'"
        return resp

    @app.get("/apps/<app_id>/icon")
    def app_icon(app_id: str) -> Response:
        """The image file an app's manifest names as its icon, from the app folder only."""
        record = system.launcher.get(app_id)
        if record is None or record.manifest is None:
            return _error(404, f"no app named {app_id!r}")
        rel = icon_file(record.manifest.icon)
        if rel is None:
            return _error(404, f"app {app_id!r} names no icon file (icon "
                               f"{record.manifest.icon!r})")
        folder = record.path.resolve()
        target = (folder / rel).resolve()
        if not target.is_relative_to(folder) or not target.is_file():
            return _error(404, f"icon file {rel!r} not found in the folder of app {app_id!r}")
        resp = send_file(target, conditional=True, max_age=0)
        resp.headers["Content-Security-Policy"] = "sandbox; default-src 'none'"
        return resp

    # ----------------------------------------------------------- desktop API

    @app.get("/api/health")
    def health() -> Response:
        apps = {r.id: str(r.status) for r in system.launcher.apps()}
        # A failing store (full disk, I/O error, damaged file) outranks the apps: the
        # system cannot remember anything, so it is "degraded" and says why.
        store_failure = system.store.failure()
        status = "degraded" if store_failure else \
            "ready" if system.launcher.ready() else "starting"
        return jsonify({"status": status, "apps": apps, "llm": system.llm.status(),
                        "store": store_failure or "ok"})

    @app.get("/api/apps")
    def list_apps() -> Response:
        return jsonify([r.public() for r in system.launcher.apps()])

    @app.post("/api/apps/<app_id>/open")
    def open_app(app_id: str) -> Response:
        body = _json_body()
        sid, outcome = system.controller.open_app(app_id, _session(body))
        return jsonify({"app": app_id, "session_id": sid, "response": outcome.response})

    @app.post("/api/action")
    def action() -> Response:
        body = _json_body()
        app_id = body.get("app")
        if not isinstance(app_id, str) or not app_id:
            raise _BadRequest("field 'app' (the app id) is required")
        payload = {k: body[k] for k in ("action_id", *ACTION_PAYLOAD_KEYS) if k in body}
        try:
            req = ActionRequest.model_validate(payload)
        except ValidationError as e:
            raise _BadRequest(f"invalid action: {describe_validation_error(e)}") from e
        sid, outcome = system.controller.action(app_id, req, _session(body))
        return jsonify({"app": app_id, "session_id": sid, "response": outcome.response})

    @app.post("/api/instruction")
    def instruction() -> Response:
        body = _json_body()
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _BadRequest("field 'text' (the instruction) is required")
        if len(text) > 4000:
            raise _BadRequest("instruction is longer than 4000 characters")
        return jsonify(system.controller.instruction(text.strip(), _session(body)))

    @app.post("/api/ui/snapshot")
    def ui_snapshot() -> Response:
        body = _json_body()
        elements = body.get("elements")
        if not isinstance(elements, list) or len(elements) > 5000:
            raise _BadRequest("field 'elements' must be a list (at most 5000)")
        clean = [e for e in elements if isinstance(e, dict) and isinstance(e.get("id"), str)]
        system.store.cache_set("desktop", "ui_snapshot", {"elements": clean,
                                                          "viewport": body.get("viewport")})
        return jsonify({"ok": True, "elements": len(clean)})

    @app.get("/api/audit")
    def audit() -> Response:
        try:
            limit = int(request.args.get("limit", 200))
        except ValueError as e:
            raise _BadRequest("limit must be a number") from e
        rows = system.store.audit_rows(app=request.args.get("app") or None,
                                       session_id=request.args.get("session") or None,
                                       limit=limit)
        return jsonify(rows)

    @app.get("/api/sessions/<sid>")
    def session(sid: str) -> Response:
        before = _int_arg("before", 1, None, None)
        limit = _int_arg("limit", 1, system.config.store.history_page_max,
                         system.config.store.history_page)
        mem = system.store.session(sid, before=before, limit=limit)
        if mem is None:
            return _error(404, f"no session {sid!r}")
        return jsonify(mem)

    @app.get("/api/config")
    def get_config() -> Response:
        return jsonify({"config": system.config.masked(), "llm": system.llm.status()})

    @app.post("/api/config")
    def post_config() -> Response:
        body = _json_body()
        updates = body.get("updates")
        if not isinstance(updates, dict):
            raise _BadRequest("field 'updates' must be an object")
        try:
            system.update_config(updates)
        except ConfigError as e:
            return _error(400, str(e))
        return jsonify({"config": system.config.masked(), "llm": system.llm.status()})

    # --------------------------------------------------------- app-facing API

    @app.post("/api/sys/tool")
    def sys_tool() -> Response:
        record: AppRecord = g.app_record
        body = _json_body()
        name, args = body.get("tool"), body.get("args", {})
        if not isinstance(name, str):
            raise _BadRequest("field 'tool' is required")
        sid = _session(body)
        result = invoke(name, args, system.tool_context(record.id, sid))
        return jsonify(result.model_dump(mode="json", exclude_none=True))

    @app.post("/api/sys/push")
    def sys_push() -> Response:
        record: AppRecord = g.app_record
        body = _json_body()
        if "view_type" in body:
            from aios.protocol import forwardable_reply
            try:
                view = forwardable_reply(body)
            except AIOSError as e:
                raise _BadRequest(str(e)) from e
            system.bus.emit("view", {"app": record.id, "response": view, "pushed": True})
        else:
            _check_progress(body)
            system.bus.emit("push", {"app": record.id, "data": body})
        return jsonify({"ok": True, "listeners": system.bus.subscribers})

    @app.post("/api/sys/llm")
    def sys_llm() -> Response:
        record: AppRecord = g.app_record
        body = _json_body()
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _BadRequest("field 'messages' must be a non-empty list")
        try:
            result = system.llm.chat(messages, tools=body.get("tools"),
                                     tool_choice=body.get("tool_choice"),
                                     purpose=f"app:{record.id}")
        except LLMUnavailable as e:
            return _error(503, str(e))
        except LLMError as e:
            return _error(502, str(e))
        return jsonify({"message": result.message, "usage": result.usage,
                        "model": result.model, "provider": result.provider})

    @app.post("/api/sys/ui")
    def sys_ui() -> Response:
        record: AppRecord = g.app_record
        if record.manifest is None or "desktop.control" not in record.manifest.permissions:
            return _error(403, f"app {record.id!r} lacks the 'desktop.control' permission")
        body = _json_body()
        ops = body.get("ops") if isinstance(body.get("ops"), list) else [body]
        try:
            checked = [validate_ui_op(op) for op in ops]
        except _BadRequest as e:
            system.store.audit(app=record.id, tool="ui_op", args=audit_args(ops),
                               status="denied", duration_ms=0.0, error=str(e))
            raise
        for op in checked:
            system.bus.emit("ui_op", {**op, "by": record.id})
            system.store.audit(app=record.id, tool="ui_op", args=audit_args(op), status="ok",
                               duration_ms=0.0)
        return jsonify({"ok": True, "applied": len(checked), "listeners": system.bus.subscribers})

    # ---------------------------------------------------------------- events

    @sock.route("/api/events")
    def events(ws: Any) -> None:
        sub = system.bus.subscribe()
        try:
            ws.send(json.dumps({"type": "hello", "apps": [r.public()
                                                          for r in system.launcher.apps()]},
                               ensure_ascii=False))
            while not system.bus.closed.is_set():
                event = sub.get(timeout=0.5)
                if event is None:
                    if not ws.connected:
                        break
                    continue
                ws.send(json.dumps(event, ensure_ascii=False, default=str))
        except Exception as e:  # noqa: BLE001 - a dropped client is normal
            log.debug("event stream closed: %s", e)
        finally:
            sub.close()

    # ----------------------------------------------------------------- voice

    def _voice_language(body_lang: Any = None) -> str:
        return body_lang if isinstance(body_lang, str) and body_lang else \
            system.config.default_voice

    def _voice_session() -> str | None:
        # checked before any audio is decoded, like the body's session_id elsewhere
        return _session({"session_id": request.args.get("session_id")})

    def _heard(text: str, sid: str | None) -> Response:
        out: dict[str, Any] = {"text": text}
        if request.args.get("run") in ("1", "true"):
            out["result"] = system.controller.instruction(text, sid)
        return jsonify(out)

    @app.post("/api/voice/transcribe")
    def voice_transcribe() -> Response:
        sid = _voice_session()
        try:
            text = system.recognizer.transcribe(
                request.get_data(cache=False), grammar_source(system.launcher.apps()),
                language=_voice_language(request.args.get("lang")))
        except VoiceError as e:
            return _error(422, str(e))
        return _heard(text, sid)

    @app.post("/api/voice/listen")
    def voice_listen() -> Response:
        sid = _voice_session()
        try:
            text = system.recognizer.listen_once(grammar_source(system.launcher.apps()),
                                                 language=_voice_language())
        except VoiceError as e:
            return _error(422, str(e))
        return _heard(text, sid)

    @app.post("/api/voice/speak")
    def voice_speak() -> Response:
        body = _json_body()
        text = body.get("text")
        if not isinstance(text, str) or not text.strip():
            raise _BadRequest("field 'text' is required")
        try:
            wav = synthesize(text, language=_voice_language(body.get("lang")),
                             config=system.config)
        except VoiceError as e:
            return _error(422, str(e))
        return Response(wav, mimetype="audio/wav")

    @app.get("/api/voice/status")
    def voice_status() -> Response:
        source = grammar_source(system.launcher.apps())
        return jsonify({"stt": {"engine": system.recognizer.engine(),
                                "commands": grammar_words(source)},
                        "tts": {"engine": system.config.voice.tts_engine,
                                "rate": system.config.voice_rate,
                                "voice": system.config.voice.mandarin_voice},
                        "welcome": system.config.voice.welcome})

    return app


def _int_arg(name: str, low: int, high: int | None, default: int | None) -> int | None:
    """The query parameter ``name`` as an int in [low, high], or ``default`` when absent."""
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _BadRequest(f"query parameter {name!r} must be a whole number, not {raw!r}") \
            from None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise _BadRequest(f"query parameter {name!r} must be {bound} (got {value})")
    return value


def _session(body: dict[str, Any]) -> str | None:
    sid = body.get("session_id")
    if sid is None:
        return None
    if not isinstance(sid, str) or not sid.replace("_", "").isalnum() or len(sid) > 64:
        raise _BadRequest("session_id must be letters, digits and '_' (at most 64)")
    return sid


def validate_ui_op(op: Any) -> dict[str, Any]:
    """Check one UI operation (spec §9.4) before it reaches the desktop."""
    if not isinstance(op, dict):
        raise _BadRequest("a UI operation must be an object")
    name = op.get("op")
    if name not in UI_OPS:
        raise _BadRequest(f"unknown UI operation {name!r} (known: {', '.join(UI_OPS)})")
    target = op.get("id")
    if not isinstance(target, str) or not target or len(target) > 128:
        raise _BadRequest(f"{name}: field 'id' (the element id) is required")
    out: dict[str, Any] = {"op": name, "id": target}
    if isinstance(op.get("window"), str):
        out["window"] = op["window"]
    for field, kind in UI_OPS[name].items():
        value = op.get(field)
        if kind is float:
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value):
                raise _BadRequest(f"{name}: field {field!r} must be a finite number")
            if field in ("width", "height") and value <= 0:
                raise _BadRequest(f"{name}: field {field!r} must be positive")
            out[field] = value
        else:
            if not isinstance(value, str) or not value or len(value) > 200:
                raise _BadRequest(f"{name}: field {field!r} must be text of 1-200 characters")
            out[field] = value
    return out


class ServerThread(threading.Thread):
    """Werkzeug's threaded server on 127.0.0.1 (flask-sock needs Werkzeug).

    The socket is bound first (port 0 = any free port), so the System can be
    built knowing its real port; the Flask app is attached afterwards.
    """

    def __init__(self, port: int = 0):
        super().__init__(name="aios-http", daemon=True)
        self._app: Flask | None = None
        self.server: BaseWSGIServer = make_server("127.0.0.1", port, self._dispatch,
                                                  threaded=True)
        self.port = self.server.server_port

    def _dispatch(self, environ: Any, start_response: Any) -> Any:
        if self._app is None:
            start_response("503 Service Unavailable", [("Content-Type", "application/json")])
            return [b'{"error": "the system is starting"}']
        return self._app(environ, start_response)

    def attach(self, app: Flask) -> None:
        self._app = app

    def run(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()

