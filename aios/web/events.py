"""The ``/api/events`` WebSocket: a hello, the replay a reconnecting client asks for, then
every bus event; and, the other way, the command bar's drafts (DESIGN §18).

``?since=<seq>&epoch=<epoch>`` resumes a stream: the events after ``since`` that the
bus still holds come first, or a ``resync`` when it cannot give all of them (DESIGN
§12 "Events"). The hello carries the apps, the current ``seq`` and the ``epoch``.

What the page sends (a ``draft`` as the user types, ``draft_end``, ``duplex_mute``,
``duplex_dismiss``) is read on a thread of its own and handed to the draft listener
(aios/duplex/listener.py), whose answers (``draft_preview``, no ``seq``) share the socket
with the events under one lock. Drafts that queued up while one was answered are skipped
for the newest: a preview of what the user no longer has is worth nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from flask import Blueprint, g, request
from flask_sock import Sock
from wsproto.events import Message

from aios.duplex.listener import Listener
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
    lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        with lock:
            _send_all(ws, [message])

    try:
        hello = {
            "type": "hello",
            "apps": sys_.launcher.public_apps(),
            "seq": sub.start_seq,
            "epoch": sub.epoch,
        }
        send(hello)
        threading.Thread(
            target=_read, args=(ws, sys_.duplex, send), name="aios-events-read", daemon=True
        ).start()
        while not sys_.bus.closed.is_set():
            batch = sub.get_many(timeout=POLL_SECONDS, limit=BATCH_MAX)
            if not batch:
                if not ws.connected:
                    return
                if sub.ended:
                    break
                continue
            with lock:
                _send_all(ws, batch)
        with lock:
            hang_up(ws)
    except Exception as e:  # noqa: BLE001 - a dropped client is normal
        log.debug("event stream closed: %s", e)
    finally:
        sub.close()


def _read(ws: Any, listener: Listener, send: Callable[[dict[str, Any]], None]) -> None:
    """What the page sends, until it hangs up: each message to the draft listener."""
    try:
        while ws.connected:
            raw = ws.receive(timeout=POLL_SECONDS)
            if raw is None:
                continue
            batch = [raw]
            while (more := ws.receive(timeout=0)) is not None:
                batch.append(more)
            for message in _newest_drafts([_parse(r) for r in batch]):
                _answer(listener, message, send)
    except Exception as e:  # noqa: BLE001 - the client hung up mid-answer: nothing to do
        log.debug("event stream reader ended: %s", e)


def _parse(raw: Any) -> Any:
    if not isinstance(raw, str):
        return ValueError("messages must be text frames holding JSON")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        return ValueError(f"a message must be JSON: {e.msg} at character {e.pos}")


def _newest_drafts(messages: list[Any]) -> list[Any]:
    """``messages`` in order, without each draft that a later draft in the batch replaces."""
    last = max(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("type") == "draft"),
        default=-1,
    )
    return [
        m
        for i, m in enumerate(messages)
        if i >= last or not (isinstance(m, dict) and m.get("type") == "draft")
    ]


def _answer(listener: Listener, message: Any, send: Callable[[dict[str, Any]], None]) -> None:
    if isinstance(message, ValueError):
        send({"type": "duplex_error", "error": str(message)})
        return
    try:
        listener.handle(message, send)
    except ConnectionError:
        raise
    except Exception as e:  # noqa: BLE001 - one line, the stream goes on
        log.warning("a draft could not be previewed: %s", e)
        send({"type": "duplex_error", "error": f"the draft could not be previewed: {e}"})


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


def hang_up(ws: Any) -> None:
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
