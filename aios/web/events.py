"""The ``/api/events`` WebSocket: a hello, the replay a reconnecting client asks for, then
every bus event.

``?since=<seq>&epoch=<epoch>`` resumes a stream: the events after ``since`` that the
bus still holds come first, or a ``resync`` when it cannot give all of them (DESIGN
§12 "Events"). The hello carries the apps, the current ``seq`` and the ``epoch``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
from typing import Any

from flask import Blueprint, g, request
from flask_sock import Sock
from wsproto.events import Message

from aios.errors import BadRequest
from aios.web.request import system

log = logging.getLogger(__name__)

bp = Blueprint("events", __name__)
sock = Sock()

POLL_SECONDS = 0.5
"""How long one wait for an event lasts before the connection is checked again."""
CLOSE_WAIT_SECONDS = 2.0
"""How long a hang-up by the server waits for the client's closing frame."""
BATCH_MAX = 256
"""Events framed into one socket write at most (a replay, a burst)."""
EPOCH_MAX_CHARS = 64
"""An ``epoch`` longer than this is not one the bus ever made: a 400."""


def parse_since(raw: str | None) -> int | None:
    """``?since=``: a non-negative integer, or absent; BadRequest naming the problem."""
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()):
        raise BadRequest(f"since must be a non-negative integer (an event's seq), got {raw!r}")
    return int(raw)


@bp.before_request
def _check_query() -> None:
    # flask-sock completes the handshake before the route runs: a bad query must be
    # refused here, as a JSON 400, while it is still plain HTTP.
    g.events_since = parse_since(request.args.get("since"))
    epoch = request.args.get("epoch")
    if epoch is not None and (not epoch or len(epoch) > EPOCH_MAX_CHARS):
        raise BadRequest(f"epoch must be 1 to {EPOCH_MAX_CHARS} characters (the hello's epoch)")
    g.events_epoch = epoch


# flask-sock has no type hints
@sock.route("/api/events", bp=bp)  # type: ignore[untyped-decorator]
def events(ws: Any) -> None:
    sys_ = system()
    sub = sys_.bus.subscribe(since=g.events_since, epoch=g.events_epoch)
    try:
        hello = {
            "type": "hello",
            "apps": sys_.launcher.public_apps(),
            "seq": sub.start_seq,
            "epoch": sub.epoch,
        }
        ws.send(json.dumps(hello, ensure_ascii=False))
        while not sys_.bus.closed.is_set():
            batch = sub.get_many(timeout=POLL_SECONDS, limit=BATCH_MAX)
            if not batch:
                if not ws.connected:
                    return
                if sub.ended:
                    break
                continue
            _send_all(ws, batch)
        _hang_up(ws)
    except Exception as e:  # noqa: BLE001 - a dropped client is normal
        log.debug("event stream closed: %s", e)
    finally:
        sub.close()


def _send_all(ws: Any, batch: list[dict[str, Any]]) -> None:
    """The events as text frames, in one write.

    simple_websocket's ``send()`` writes each frame on its own: a thousand system calls
    (and GIL hand-overs) for a thousand replayed events. Its connection keeps the
    wsproto state machine as ``.ws`` and the socket as ``.sock``; should a later version
    not, the events go out one ``send()`` each.
    """
    texts = [json.dumps(e, ensure_ascii=False, default=str) for e in batch]
    proto, sock_ = getattr(ws, "ws", None), getattr(ws, "sock", None)
    if proto is None or sock_ is None:
        for text in texts:
            ws.send(text)
        return
    if not ws.connected:
        raise ConnectionError("the client has gone")
    sock_.sendall(b"".join(proto.send(Message(data=text)) for text in texts))


def _hang_up(ws: Any) -> None:
    """Close the stream from our side, cleanly for a browser.

    Under Werkzeug, flask-sock writes an HTTP response onto the connection once the route
    returns; arriving after the closing frame, those bytes make Chrome fail the socket
    ("Invalid frame header") instead of seeing a normal close. So: send the closing
    frame, wait for the client's (which ends the reader thread), then shut the socket so
    that the late response meets a closed pipe, which Werkzeug drops quietly.
    """
    ws.close()
    ws.thread.join(CLOSE_WAIT_SECONDS)
    with contextlib.suppress(OSError):
        ws.sock.shutdown(socket.SHUT_RDWR)
