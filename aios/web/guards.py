"""Checks every request passes before a handler runs, headers every reply gets, and the
JSON error replies (never Werkzeug's HTML page).

Security, in the order it is checked:
1. Bound to 127.0.0.1 only (:mod:`aios.web.serving`).
2. Host header must name the loopback address and our port (DNS rebinding).
3. State-changing requests and the WebSocket must come from our own Origin
   when a browser sends one.
4. Desktop endpoints need the launch token as ``Authorization: Bearer`` —
   never a cookie, which servers on every other loopback port would receive
   too (browsers don't isolate cookies by port). The WebSockets (events, the
   voice stream), which a browser cannot give headers, take it as ``?token=``;
   an app's files and icon take a signed ``?exp=&sig=`` (:mod:`aios.web.file_urls`); the page
   itself and its static files are public code. ``/api/sys/*`` needs the
   calling app's own token; ``/api/sys/ui`` also needs ``desktop.control``.
   A request through a confined app's channel (its runtime dir's socket,
   DESIGN §11) may only call ``/api/sys/*``, and only with that app's token.
   ``/mcp`` takes an MCP token only (aios/mcp/tokens.py, DESIGN §17): never the
   launch token, which opens everything else.
Every refusal is a 401/403 with a JSON ``{"error": ...}`` naming the rule.
"""

from __future__ import annotations

import errno
import hmac
import logging

from flask import Blueprint, Response, g, request
from werkzeug.exceptions import HTTPException

from aios.apphost.confinement import CHANNEL_ENVIRON_KEY
from aios.errors import (
    AppError,
    BadRequest,
    Conflict,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    StoreError,
)
from aios.names import MCP_PATH
from aios.web import file_urls
from aios.web.request import error, system

log = logging.getLogger(__name__)

bp = Blueprint("guards", __name__)

WINDOW_UA_MARK = "TritonAIOS-Window/"
"""The desktop window (pywebview) identifies itself with this in its User-Agent."""
_BEARER = "Bearer "
EVENTS_PATH = "/api/events"
"""The WebSocket: a browser cannot set its headers, so it may carry ``?token=``."""
VOICE_STREAM_PATH = "/api/voice/stream"
"""Conversation mode's microphone (aios/web/voice_stream.py): a WebSocket too."""
_QUERY_TOKEN_PATHS = (EVENTS_PATH, VOICE_STREAM_PATH)
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def csp_header(port: int, *, window: bool = False) -> str:
    # pywebview's JS bridge (evaluate_js, the "loaded" event) is built on eval, so
    # the window alone gets 'unsafe-eval'. Nothing in the renderer evaluates
    # strings, and app data never reaches the DOM as markup, so eval adds no path
    # for app data to run.
    script = "script-src 'self' 'unsafe-eval'" if window else "script-src 'self'"
    return (
        f"default-src 'self'; {script}; style-src 'self'; "
        "img-src 'self' data: http: https:; media-src 'self' blob: data: http: https:; "
        f"connect-src 'self' ws://127.0.0.1:{port} ws://localhost:{port}; "
        "font-src 'self'; object-src 'none'; base-uri 'none'; frame-src 'none'; "
        "frame-ancestors 'none'; form-action 'self'"
    )


def _allowed_hosts(port: int) -> set[str]:
    # A DNS-rebinding page carries the attacker's name in Host; loopback
    # names without a port (some WebSocket clients omit it) are still ours.
    return {f"127.0.0.1:{port}", f"localhost:{port}", "127.0.0.1", "localhost"}


def _allowed_origins(port: int) -> set[str]:
    return {f"http://127.0.0.1:{port}", f"http://localhost:{port}"}


def _bearer() -> str | None:
    auth = request.headers.get("Authorization", "")
    return auth[len(_BEARER) :].strip() if auth.startswith(_BEARER) else None


def token_ok(supplied: str) -> bool:
    """``supplied`` is the launch token (compared in constant time)."""
    return bool(supplied) and hmac.compare_digest(supplied.encode(), system().token.encode())


def _origin_refused() -> Response | None:
    sys_ = system()
    if request.host not in _allowed_hosts(sys_.port):
        return error(
            403,
            f"host {request.host!r} is not allowed: the desktop answers only "
            "on the loopback address (DNS rebinding protection)",
        )
    origin = request.headers.get("Origin")
    is_ws = request.headers.get("Upgrade", "").lower() == "websocket"
    if (
        (request.method not in _SAFE_METHODS or is_ws)
        and origin
        and origin not in _allowed_origins(sys_.port)
    ):
        return error(403, f"origin {origin!r} is not allowed")
    return None


def _app_token_refused() -> Response | None:
    token = _bearer()
    record = system().launcher.by_token(token) if token is not None else None
    if record is None:
        return error(401, "app token missing or invalid (Authorization: Bearer <AIOS_APP_TOKEN>)")
    channel = request.environ.get(CHANNEL_ENVIRON_KEY)
    if channel is not None and channel != record.id:
        return error(
            403,
            f"this token belongs to app {record.id!r}, but the call came through "
            f"app {channel!r}'s channel: an app may act only as itself",
        )
    g.app_record = record
    return None


def _mcp_token_refused() -> Response | None:
    bearer = _bearer()
    if bearer is None:
        return error(
            401,
            "MCP token missing: send Authorization: Bearer <token made in Settings → MCP server>",
        )
    if token_ok(bearer):
        return error(
            401,
            "the launch token does not open /mcp: make an MCP token for this client "
            "in Settings → MCP server",
        )
    token = system().mcp_tokens.verify(bearer)
    if token is None:
        return error(401, "MCP token invalid or revoked: make a new one in Settings → MCP server")
    g.mcp_token = token
    return None


@bp.before_app_request
def _guard() -> Response | None:
    refused = _origin_refused()
    if refused is not None:
        return refused
    path = request.path
    if path.startswith("/api/sys/"):
        return _app_token_refused()
    if CHANNEL_ENVIRON_KEY in request.environ:
        return error(403, f"{path} is not part of the API apps may call (/api/sys/...)")
    if path == MCP_PATH:
        return _mcp_token_refused()
    if path == "/" or path.startswith("/static/") or path == "/favicon.ico":
        return None  # public code; the page checks a ?token= itself
    bearer = _bearer()
    if bearer is None and path in _QUERY_TOKEN_PATHS:
        bearer = request.args.get("token")
    if bearer is None and (m := file_urls.APP_PATH.match(path)):
        why = file_urls.check(
            system().token, m.group(1), request.args.get("exp", ""), request.args.get("sig", "")
        )
        return error(401, why) if why else None
    if not token_ok(bearer or ""):
        return error(
            401,
            "launch token missing or invalid: open the desktop with the "
            "URL printed at start (…/?token=…)",
        )
    return None


@bp.after_app_request
def _headers(resp: Response) -> Response:
    resp.headers.setdefault(
        "Content-Security-Policy",
        csp_header(system().port, window=WINDOW_UA_MARK in request.headers.get("User-Agent", "")),
    )
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["X-Frame-Options"] = "DENY"
    if request.path.startswith("/api/"):
        resp.headers["Cache-Control"] = "no-store"
    return resp


# ------------------------------------------------------------ error replies


@bp.app_errorhandler(BadRequest)
@bp.app_errorhandler(PermissionDenied)
def _refused(e: BadRequest | PermissionDenied) -> Response:
    return error(e.http_status, str(e))


@bp.app_errorhandler(QuotaExceeded)
def _over_quota(e: QuotaExceeded) -> Response:
    return error(e.http_status, str(e), quota=e.quota)


@bp.app_errorhandler(NotFound)
def _no_such(e: NotFound) -> Response:
    return error(404, str(e))


@bp.app_errorhandler(Conflict)
def _conflict(e: Conflict) -> Response:
    return error(409, str(e), current=e.current)


@bp.app_errorhandler(AppError)
def _app_error(e: AppError) -> Response:
    return error(e.http_status if e.http_status != 200 else 502, str(e))


@bp.app_errorhandler(StoreError)
def _store_error(e: StoreError) -> Response:
    log.error("%s %s: %s", request.method, request.path, e)  # one line, no traceback
    return error(e.http_status, str(e))


@bp.app_errorhandler(Exception)
def _unexpected(e: Exception) -> Response:
    # Whatever escaped a route is still answered in JSON, never Werkzeug's HTML page.
    if isinstance(e, HTTPException):
        return error(e.code or 500, e.description or e.name)
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f"the disk holding {e.filename}" if e.filename else "the disk"
        log.error("%s %s: %s is full", request.method, request.path, where)  # one line
        return error(503, f"{where} is full: free some space and try again")
    log.error("%s %s failed", request.method, request.path, exc_info=e)
    return error(500, f"internal error ({type(e).__name__}: {e}); the log has the details")


@bp.app_errorhandler(404)
def _not_found(e: Exception) -> Response:
    return error(404, f"no such endpoint: {request.method} {request.path}")


@bp.app_errorhandler(405)
def _bad_method(e: Exception) -> Response:
    return error(405, f"method {request.method} not allowed on {request.path}")


@bp.app_errorhandler(413)
def _too_large(e: Exception) -> Response:
    return error(413, "request body too large")
