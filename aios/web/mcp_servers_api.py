"""``/api/mcp/servers``: Settings → MCP, the MCP servers whose tools apps use (DESIGN §17).

The user adds a server by command (stdio, started confined) or URL (streamable
HTTP, optional headers and a bearer token stored like the LLM key: masked here,
sent only to that URL), enables or disables it, grants it to apps per server and
per tool, overrides a tool's risk class, and sees each server's status, its
last failure with the stderr tail, and its tools with their annotations. Every
change is a settings change (``mcp.servers`` in ``<data_dir>/settings.json``),
validated by the config (:class:`aios.config.McpServerConfig`).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from aios.errors import BadRequest, ConfigError, Conflict, NotFound
from aios.web.request import json_body, system
from aios.web.schemas import McpServerBody, McpServerPatch, parse

bp = Blueprint("mcp_servers_api", __name__, url_prefix="/api")


def _views() -> list[dict[str, Any]]:
    sys_ = system()
    configs = sys_.config.masked()["mcp"]["servers"]
    return [{**s, "config": configs.get(s["name"], {})} for s in sys_.mcp.status()]


def _view(name: str) -> dict[str, Any]:
    found = next((v for v in _views() if v["name"] == name), None)
    if found is None:
        raise NotFound(f"no MCP server {name!r} (Settings → MCP)")
    return found


def _update(name: str, value: dict[str, Any] | None) -> None:
    try:
        system().update_config({"mcp": {"servers": {name: value}}})
    except ConfigError as e:
        raise BadRequest(str(e)) from e


@bp.get("/mcp/servers")
def list_servers() -> Response:
    return jsonify({"servers": _views()})


@bp.post("/mcp/servers")
def add_server() -> tuple[Response, int]:
    body = parse(McpServerBody, json_body())
    if body.name in system().config.mcp.active():
        raise Conflict(f"there is already an MCP server {body.name!r}: change it instead")
    _update(body.name, body.model_dump(exclude={"name"}, exclude_none=True))
    return jsonify(_view(body.name)), 201


@bp.patch("/mcp/servers/<name>")
def change_server(name: str) -> Response:
    if name not in system().config.mcp.active():
        raise NotFound(f"no MCP server {name!r} (Settings → MCP)")
    body = parse(McpServerPatch, json_body())
    _update(name, body.model_dump(exclude_unset=True))
    return jsonify(_view(name))


@bp.delete("/mcp/servers/<name>")
def remove_server(name: str) -> Response:
    if name not in system().config.mcp.active():
        raise NotFound(f"no MCP server {name!r} (Settings → MCP)")
    _update(name, None)
    return jsonify({"removed": name})
