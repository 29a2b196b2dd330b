"""``create_app(system)``: the Flask app with every blueprint registered."""

from __future__ import annotations

from flask import Flask

from aios.system import System
from aios.web import (
    automations_api,
    conversation_api,
    desktop_api,
    events,
    guards,
    instances_api,
    layout_api,
    mcp_api,
    mcp_servers_api,
    memory_api,
    pages,
    runs_api,
    sys_api,
    traces_api,
    voice,
    voice_stream,
)
from aios.web.request import EXTENSION


def create_app(system: System) -> Flask:
    """The desktop's HTTP API around ``system`` (kept in ``app.extensions["aios"]``)."""
    app = Flask(__name__, static_folder=None)
    app.json.sort_keys = False  # type: ignore[attr-defined]  # app replies go on as sent
    app.config["MAX_CONTENT_LENGTH"] = system.config.web.max_upload_bytes
    app.extensions[EXTENSION] = system
    for blueprint in (
        guards.bp,
        pages.bp,
        desktop_api.bp,
        instances_api.bp,
        layout_api.bp,
        mcp_api.bp,
        runs_api.bp,
        memory_api.bp,
        mcp_servers_api.bp,
        conversation_api.bp,
        automations_api.bp,
        sys_api.bp,
        traces_api.bp,
        voice.bp,
        voice_stream.bp,
        events.bp,
    ):
        app.register_blueprint(blueprint)
    # Confined apps reach this API through their own sockets (DESIGN §11).
    system.launcher.channel_app = app
    return app
