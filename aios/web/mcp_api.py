"""``/mcp`` and ``/api/mcp/*``: the desktop as an MCP server (DESIGN §17).

``/mcp`` is the SDK's streamable-HTTP transport (aios/mcp/server.py), reached once
the guards accepted the request's MCP token. ``/api/mcp/tokens`` is what Settings →
MCP uses to make, list and revoke those tokens (with the launch token, like every
desktop endpoint); a new token's secret is in the reply to its creation only.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.wrappers import Response as WerkzeugResponse

from aios.names import MCP_PATH
from aios.web.request import json_body, system
from aios.web.schemas import McpTokenBody, parse

if TYPE_CHECKING:
    from aios.mcp.server import DesktopMcp

bp = Blueprint("mcp_api", __name__)

EXTENSION = "aios_mcp"
_lock = threading.Lock()


def mcp_server() -> DesktopMcp:
    """This app's MCP server, built when the first client comes (the SDK is imported
    then, not at start) and closed when the system stops."""
    with _lock:
        server: DesktopMcp | None = current_app.extensions.get(EXTENSION)
        if server is None:
            from aios.mcp.server import DesktopMcp

            server = DesktopMcp(system())
            system().on_stop.append(server.close)
            current_app.extensions[EXTENSION] = server
        return server


@bp.route(MCP_PATH, methods=["GET", "POST", "DELETE"])
def mcp_endpoint() -> Any:
    # The transport reads the body and streams its answer (SSE) itself.
    return WerkzeugResponse.from_app(mcp_server().wsgi(), request.environ)


@bp.get("/api/mcp/tokens")
def list_tokens() -> Response:
    return jsonify(_state())


@bp.post("/api/mcp/tokens")
def create_token() -> Response:
    body = parse(McpTokenBody, json_body())
    made = system().mcp_tokens.create(body.name, body.scopes)
    resp = jsonify(made)
    resp.status_code = 201
    return resp


@bp.delete("/api/mcp/tokens/<token_id>")
def revoke_token(token_id: str) -> Response:
    return jsonify(system().mcp_tokens.revoke(token_id))


def _state() -> dict[str, Any]:
    sys_ = system()
    return {
        "tokens": sys_.mcp_tokens.listing(),
        "memory_search": sys_.config.mcp_server.memory_search,
        "url": f"{sys_.url}{MCP_PATH}",
        "apps": [r.id for r in sys_.launcher.apps()],
    }
