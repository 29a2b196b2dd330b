"""The HTTP face of an app: ``/handle``, ``/tools/<name>``, ``/tools``, ``/health``.

Thin Flask routes around an :class:`~aios_sdk.agent.AIOSAgent`; the system's own
``POST /handle`` calls skip Flask's request machinery (:class:`_FastHandle`), with the
same checks and the same answer. Whatever the app's code does, the reply is
JSON: an exception in ``handle`` becomes an ``error`` view (HTTP 200, traceback
in the app's log) and the app keeps serving; values JSON cannot encode (a stray
datetime) are sent as text. The system validates replies; the app side
validates nothing else.

Only the system may drive an app (DESIGN §11): a request whose ``Host`` is
not ``127.0.0.1``, ``localhost`` or ``[::1]`` on the app's own port is
refused with 403 (a page that rebinds a DNS name to 127.0.0.1 sends its own
name), and when the app was launched with ``AIOS_LAUNCH_SECRET``,
``/handle`` and ``/tools*`` answer 401 unless ``aios.names.LAUNCH_SECRET_HEADER``
carries it. ``/health`` stays open to local callers (the launcher's
liveness probe counts any HTTP answer) and tells only that the app is up
and its display name, which the desktop shows anyway.
"""

from __future__ import annotations

import functools
import hmac
import inspect
import json
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from flask import Flask, Response, request

from aios.errors import ToolError
from aios.names import APP_TOKEN_HEADER, ENV_APP_TOKEN, SESSION_HEADER, error_response
from aios.protocol import app_secret
from aios_sdk._session import bind_session, unbind_session
from aios_sdk.boot import APP_SOCKET_ENV
from aios_sdk.context import locale_of
from aios_sdk.messages import tr

log = logging.getLogger(__name__)


# What the routes need of an agent and its tools, so this module does not import
# aios_sdk.agent (whose make_app imports this one).
class _ServedTool(Protocol):
    @property
    def attr(self) -> str: ...

    def describe(self) -> dict[str, Any]: ...


class _Served(Protocol):
    @property
    def display_name(self) -> str: ...

    def custom_tools(self) -> Mapping[str, _ServedTool]: ...

    def respond(
        self,
        instruction: str | None,
        context: Mapping[str, Any] | None,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]: ...


def _json(payload: Any, status: int = 200) -> Response:
    return Response(_encoded(payload), status=status, mimetype="application/json")


def _tool_error(message: str, status: int = 200, **extra: Any) -> Response:
    return _json({"status": "error", "error": message, **extra}, status)


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
"""The only host names a request to an app may carry in ``Host``."""
DEFAULT_HTTP_PORT = 80
OPEN_PATHS = frozenset({"/health"})
"""Routes that need no launch secret."""


def _refuse(message: str, status: int) -> Response:
    # read the body first: answering before it is read can reset the
    # connection under the client, which then sees no answer at all
    request.get_data()
    # an error view (what /handle answers) that also says ``error`` (what /tools/* answer)
    return _json({**error_response(message, title="refused"), "error": message}, status)


def _served_port(server_port: str | None) -> str | None:
    """The port a request's ``Host`` must name: the server's, or ``APP_PORT`` on a Unix socket.

    A confined app serves ``AIOS_APP_SOCKET`` (DESIGN §11), and the system still
    addresses it as ``127.0.0.1:APP_PORT``.
    """
    if os.environ.get(APP_SOCKET_ENV):
        return os.environ.get("APP_PORT")
    return server_port


def _host_allowed(host: str, server_port: str | None) -> bool:
    """Whether ``Host`` names a loopback address on the port this server listens on."""
    try:
        parts = urlsplit(f"//{host}")
        name, port = parts.hostname, parts.port or DEFAULT_HTTP_PORT
    except ValueError:
        return False
    return name in LOOPBACK_NAMES and str(port) == _served_port(server_port)


def _secret_allowed(path: str, given: str | None, expected: str) -> bool:
    """Whether the request carries this launch's secret, or needs none (DESIGN §11 item 6)."""
    return not expected or path in OPEN_PATHS or app_secret.matches(given, expected)


def _only_the_system(secret: str) -> Callable[[], Response | None]:
    """The check run before every route: the Host, then (when launched with one) the secret."""

    def check() -> Response | None:
        if not _host_allowed(request.host, request.environ.get("SERVER_PORT")):
            return _refuse(
                f"refused: Host {request.host[:100]!r} is not this app's loopback "
                "address; only the system may call an app",
                403,
            )
        given = request.headers.get(app_secret.LAUNCH_SECRET_HEADER)
        if not _secret_allowed(request.path, given, secret):
            return _refuse(
                f"missing or wrong {app_secret.LAUNCH_SECRET_HEADER}: only the system "
                "that launched this app may call it",
                401,
            )
        return None

    return check


def _names_of(agent: Any) -> dict[str, str]:
    """The app's name per locale from its manifest.json (``{}`` when it has none).

    Read as plain JSON: the models (pydantic) are not loaded for this at start.
    """
    folder = getattr(agent, "app_dir", None)
    if not callable(folder):
        return {}
    try:
        raw = json.loads((folder() / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return {}
    given = raw.get("name") if isinstance(raw, dict) else None
    names = dict(given) if isinstance(given, dict) else {"zh-CN": given}
    if isinstance(raw, dict) and raw.get("name_en"):
        names["en"] = raw["name_en"]
    return {k: v for k, v in names.items() if isinstance(k, str) and isinstance(v, str) and v}


def _answer(
    agent: _Served, name: str, names: dict[str, str], body: Any
) -> tuple[dict[str, Any], int]:
    """``/handle``'s reply to a request body (None: not JSON) and its HTTP status."""
    if not isinstance(body, dict):
        return (
            error_response(
                "the request body must be a JSON object with instruction, context, action_request"
            ),
            400,
        )
    context = body.get("context")
    context = context if isinstance(context, dict) else {}
    session_id = body.get("session_id") or context.get("session_id")
    token = bind_session(session_id if isinstance(session_id, str) else None)
    try:
        reply = agent.respond(body.get("instruction"), context, body.get("action_request"))
    except Exception as e:  # noqa: BLE001 - the app must keep serving
        log.exception("%s.handle raised", type(agent).__name__)
        lang = locale_of(context)
        shown = names.get("en" if lang == "en" else "zh-CN") or name
        title = tr(lang, f"{shown}出错了", f"{shown} ran into an error")
        return error_response(f"{type(e).__name__}: {e}", title=title), 200
    finally:
        unbind_session(token)
    if not isinstance(reply, dict):
        got = "None (no return statement?)" if reply is None else type(reply).__name__
        return (
            error_response(
                f"{type(agent).__name__}.handle returned {got}; it must "
                "return a dict with view_type, data, actions",
                title=f"{name}: bad reply",
            ),
            200,
        )
    return reply, 200


def create_app(agent: _Served) -> Flask:
    """A Flask app serving ``agent``; see the module docstring for the routes."""
    app = Flask(f"aios_app.{type(agent).__name__}")
    name = agent.display_name
    names = _names_of(agent)
    tools = agent.custom_tools()
    secret = os.environ.get(app_secret.LAUNCH_SECRET_ENV, "")
    app.before_request(_only_the_system(secret))

    answer = functools.partial(_answer, agent, name, names)

    @app.post("/handle")
    def handle() -> Response:
        return _json(*answer(request.get_json(silent=True)))

    @app.get("/tools")
    def list_tools() -> Response:
        return _json([info.describe() for info in tools.values()])

    @app.post("/tools/<tool_name>")
    def call_tool(tool_name: str) -> Response:
        expected = os.environ.get(ENV_APP_TOKEN)
        if expected:
            given = request.headers.get(APP_TOKEN_HEADER, "")
            if not hmac.compare_digest(given.encode(), expected.encode()):
                # read the body first: answering before it is read can reset the
                # connection under the client, which then sees no answer at all
                request.get_data()
                return _tool_error(
                    f"custom tool {tool_name!r}: missing or wrong "
                    f"{APP_TOKEN_HEADER}; only the system may call it",
                    403,
                )
        info = tools.get(tool_name)
        if info is None:
            return _tool_error(
                f"unknown tool {tool_name!r}; this app's custom tools: "
                f"{', '.join(tools) or 'none'}",
                404,
            )
        args = request.get_json(silent=True) if request.content_length else {}
        if not isinstance(args, dict):
            return _tool_error(
                f"bad arguments for {tool_name}: the body must be a JSON object "
                "of keyword arguments"
            )
        method = getattr(agent, info.attr)
        try:
            inspect.signature(method).bind(**args)
        except TypeError as e:
            return _tool_error(f"bad arguments for {tool_name}: {e}")
        session = request.headers.get(SESSION_HEADER) or None
        token = bind_session(session)
        try:
            result = method(**args)
        except ToolError as e:
            return _tool_error(e.error, result=e.result, meta=e.meta or None)
        except Exception as e:  # noqa: BLE001 - a tool's bug is that call's error, not the app's
            log.exception("custom tool %s raised", tool_name)
            return _tool_error(f"{tool_name}: {type(e).__name__}: {e}")
        finally:
            unbind_session(token)
        return _json({"status": "ok", "result": result})

    @app.get("/health")
    def health() -> Response:
        return _json({"status": "ok", "app": name})

    app.wsgi_app = _FastHandle(app.wsgi_app, answer, secret)  # type: ignore[method-assign]
    return app


def _encoded(payload: Any) -> bytes:
    """``payload`` as the JSON :func:`_json` sends."""
    try:
        text = json.dumps(payload, ensure_ascii=False, default=str)
    except (TypeError, ValueError) as e:  # e.g. a circular reference
        text = json.dumps(
            error_response(f"the reply cannot be encoded as JSON: {e}"), ensure_ascii=False
        )
    return text.encode()


class _FastHandle:
    """``POST /handle`` without Flask's request machinery, for the system's own calls.

    Every round of a plan is one ``/handle`` call, so what Flask does per request
    (its request context, URL matching, the hooks, a Response object) is a good part
    of a mediated step (issue 27 item 4). A request the system sends (JSON with its
    length, the right ``Host`` and secret) is answered here by the same ``answer``
    the Flask route calls; anything else, refused or unusual, goes to Flask, whose
    routes and checks answer it as before.
    """

    def __init__(
        self,
        wsgi_app: Callable[..., Any],
        answer: Callable[[Any], tuple[dict[str, Any], int]],
        secret: str,
    ) -> None:
        self.wsgi_app = wsgi_app
        self.answer = answer
        self.secret = secret
        self.secret_key = "HTTP_" + app_secret.LAUNCH_SECRET_HEADER.upper().replace("-", "_")

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        length = environ.get("CONTENT_LENGTH") or ""
        if (
            environ.get("REQUEST_METHOD") != "POST"
            or environ.get("PATH_INFO") != "/handle"
            or not length.isdecimal()
            or environ.get("CONTENT_TYPE", "").split(";")[0].strip() != "application/json"
            or not _host_allowed(environ.get("HTTP_HOST", ""), environ.get("SERVER_PORT"))
            or not _secret_allowed("/handle", environ.get(self.secret_key), self.secret)
        ):
            return self.wsgi_app(environ, start_response)
        raw = environ["wsgi.input"].read(int(length))
        try:
            body = json.loads(raw)
        except ValueError:  # as Flask's get_json(silent=True): not JSON is None
            body = None
        reply, status = self.answer(body)
        data = _encoded(reply)
        start_response(
            f"{status} {'OK' if status == 200 else 'BAD REQUEST'}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
        )
        return [data]
