"""The ``/api/events`` WebSocket: a hello with the app list, then every bus event."""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import Blueprint
from flask_sock import Sock

from aios.web.request import system

log = logging.getLogger(__name__)

bp = Blueprint("events", __name__)
sock = Sock()

POLL_SECONDS = 0.5
"""How long one wait for an event lasts before the connection is checked again."""


# flask-sock has no type hints
@sock.route("/api/events", bp=bp)  # type: ignore[untyped-decorator]
def events(ws: Any) -> None:
    sys_ = system()
    sub = sys_.bus.subscribe()
    try:
        ws.send(json.dumps({"type": "hello", "apps": sys_.public_apps()}, ensure_ascii=False))
        while not sys_.bus.closed.is_set():
            event = sub.get(timeout=POLL_SECONDS)
            if event is None:
                if not ws.connected:
                    break
                continue
            ws.send(json.dumps(event, ensure_ascii=False, default=str))
    except Exception as e:  # noqa: BLE001 - a dropped client is normal
        log.debug("event stream closed: %s", e)
    finally:
        sub.close()
