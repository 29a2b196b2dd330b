"""The system's HTTP API (DESIGN §8): the only package that knows the Flask routes.

One blueprint per area, each module thin (parse, call the System, shape the reply):

    guards       host / origin / token checks, security headers, JSON error replies
    pages        the desktop page, its static files, an app's files and icon
    desktop_api  /api/* for the desktop (apps, instruction, action, audit, config, …)
    sys_api      /api/sys/* for apps (tool, push, llm, ui), with the app's own token
    voice        /api/voice/*
    events       the /api/events WebSocket
    serving      ServerThread: Werkzeug on 127.0.0.1
"""

from __future__ import annotations

from aios.web.app import create_app
from aios.web.guards import WINDOW_UA_MARK, csp_header
from aios.web.serving import ServerThread

__all__ = ["WINDOW_UA_MARK", "ServerThread", "create_app", "csp_header"]
