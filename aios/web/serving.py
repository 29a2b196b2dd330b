"""``ServerThread``: Werkzeug's threaded server on 127.0.0.1 (flask-sock needs Werkzeug)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from werkzeug.serving import BaseWSGIServer, make_server

HOST = "127.0.0.1"
POLL_INTERVAL = 0.2
"""Seconds between two checks for shutdown while serving."""


class ServerThread(threading.Thread):
    """The HTTP server in a daemon thread.

    The socket is bound first (port 0 = any free port), so the System can be
    built knowing its real port; the Flask app is attached afterwards.
    """

    def __init__(self, port: int = 0):
        super().__init__(name="aios-http", daemon=True)
        self._app: Flask | None = None
        self.server: BaseWSGIServer = make_server(HOST, port, self._dispatch, threaded=True)
        self.port = self.server.server_port

    def _dispatch(self, environ: dict[str, Any],
                  start_response: Callable[..., Any]) -> Iterable[bytes]:
        if self._app is None:
            start_response("503 Service Unavailable", [("Content-Type", "application/json")])
            return [b'{"error": "the system is starting"}']
        result: Iterable[bytes] = self._app(environ, start_response)
        return result

    def attach(self, app: Flask) -> None:
        self._app = app

    def run(self) -> None:
        self.server.serve_forever(poll_interval=POLL_INTERVAL)

    def shutdown(self) -> None:
        self.server.shutdown()
        self.server.server_close()
