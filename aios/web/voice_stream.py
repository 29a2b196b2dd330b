"""``/api/voice/stream``: conversation mode's open microphone (DESIGN §18).

The page sends the microphone as binary WebSocket messages of 16 kHz mono 16-bit
little-endian PCM (any length), and ``{"type": "playing", "on": bool}`` as text when the
desktop starts or stops speaking. The server runs the endpointer (aios/duplex/turns.py)
over it and answers, as JSON text:

- ``ready`` ``{sample_rate, frame_ms}`` once, or ``error`` and a close when conversation
  mode cannot run (the VAD package is missing: the error names it);
- ``speech_start`` ``{at_ms, barge_in}``: the user speaks (the page stops the desktop's
  voice at once: barge-in);
- ``partial`` ``{text}``: a pause that did not end the turn (it sounds unfinished);
- ``turn_end`` ``{text, reason, latency_ms, error?}``: the turn is over; the page submits
  ``text`` as a spoken instruction and keeps the microphone open for the next one.

``?source=server`` (the window, whose web engine cannot open a microphone): the server
listens on the machine's default microphone instead (aios/desktop/microphone.py) and the
page sends only ``playing``; no microphone is an ``error`` naming it, and a close.

Authenticated like the events socket (the launch token as ``?token=``, our Origin only:
aios/web/guards.py). One stream per page; nothing of the audio is kept.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any

from flask import Blueprint, g, request
from flask_sock import Sock

from aios.desktop.microphone import Microphone
from aios.desktop.voice import VoiceError, grammar_source
from aios.duplex.turns import (
    FRAME_MS,
    SAMPLE_RATE,
    Endpointer,
    Event as TurnEvent,
    Partial,
    SpeechStart,
    TurnEnd,
    TurnSettings,
    webrtc_vad,
)
from aios.errors import BadRequest
from aios.web.events import POLL_SECONDS, hang_up
from aios.web.guards import VOICE_STREAM_PATH
from aios.web.request import system

log = logging.getLogger(__name__)

bp = Blueprint("voice_stream", __name__)
sock = Sock()

MAX_MESSAGE_BYTES = 64_000
"""A binary message longer than this (2 s of audio) is refused: the page sends ~128 ms."""
_SOURCES = ("page", "server")
_LANG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$")


@bp.before_request
def _check_query() -> None:
    # the handshake is done before the route runs: refuse a bad query while it is HTTP
    lang = request.args.get("lang")
    if lang is not None and not _LANG.match(lang):
        raise BadRequest(f"lang must be a language tag such as zh-CN or en-US, got {lang!r}")
    g.voice_lang = lang or system().config.default_voice
    source = request.args.get("source", "page")
    if source not in _SOURCES:
        raise BadRequest(f"source must be page or server, got {source!r}")
    g.voice_source = source


@sock.route(VOICE_STREAM_PATH, bp=bp)  # type: ignore[untyped-decorator]
def voice_stream(ws: Any) -> None:
    sys_ = system()
    lock = threading.Lock()  # one feed and one send at a time (the microphone's thread)

    def send(message: dict[str, Any]) -> None:
        with lock:
            _send(ws, message)

    mic: Microphone | None = None
    try:
        endpointer = _endpointer(g.voice_lang)
        if g.voice_source == "server":
            mic = Microphone(sys_.config, FRAME_MS)
    except VoiceError as e:
        send({"type": "error", "error": str(e)})
        hang_up(ws)
        return
    stop = threading.Event()
    try:
        send({"type": "ready", "sample_rate": SAMPLE_RATE, "frame_ms": FRAME_MS})
        if mic is not None:
            threading.Thread(
                target=_listen, args=(mic, endpointer, lock, ws, stop), daemon=True
            ).start()
        while ws.connected and not sys_.bus.closed.is_set() and not stop.is_set():
            message = ws.receive(timeout=POLL_SECONDS)
            if message is not None:
                with lock:
                    for out in _handle(endpointer, message, audio=mic is None):
                        _send(ws, out)
        if ws.connected:
            hang_up(ws)
    except Exception as e:  # noqa: BLE001 - a page that went away is normal
        log.debug("voice stream closed: %s", e)
    finally:
        stop.set()


def _endpointer(lang: str) -> Endpointer:
    sys_ = system()
    is_speech = webrtc_vad(sys_.config.voice.vad_aggressiveness)
    source = grammar_source(sys_.launcher.apps())

    def transcribe(pcm: bytes) -> str:
        return sys_.recognizer.transcribe_pcm(pcm, source, language=lang)

    return Endpointer(TurnSettings.of(sys_.config.voice), is_speech, transcribe)


def _listen(
    mic: Microphone, endpointer: Endpointer, lock: threading.Lock, ws: Any, stop: threading.Event
) -> None:
    """The machine's microphone into the endpointer until the stream ends; closed after."""
    try:
        while not stop.is_set() and ws.connected:
            pcm = mic.read()
            with lock:
                for event in endpointer.feed(pcm):
                    _send(ws, _wire(event))
    except Exception as e:  # noqa: BLE001 - the device went away or the page did: one line
        log.info("conversation mode stopped listening on the microphone: %s", e)
    finally:
        stop.set()
        mic.close()


def _handle(endpointer: Endpointer, message: Any, *, audio: bool) -> list[dict[str, Any]]:
    if isinstance(message, str):
        return _control(endpointer, message)
    if not audio:
        return [_error("this stream listens on the server's microphone: send no audio")]
    if len(message) > MAX_MESSAGE_BYTES:
        return [_error(f"an audio message must be at most {MAX_MESSAGE_BYTES} bytes")]
    return [_wire(e) for e in endpointer.feed(bytes(message))]


def _control(endpointer: Endpointer, text: str) -> list[dict[str, Any]]:
    try:
        message = json.loads(text)
    except json.JSONDecodeError as e:
        return [_error(f"a text message must be JSON: {e.msg} at character {e.pos}")]
    if not isinstance(message, dict) or message.get("type") != "playing":
        return [_error('text messages are {"type": "playing", "on": true|false}')]
    if not isinstance(message.get("on"), bool):
        return [_error('"on" must be true or false')]
    endpointer.set_playing(message["on"])
    return []


def _error(text: str) -> dict[str, Any]:
    return {"type": "error", "error": text}


def _wire(event: TurnEvent) -> dict[str, Any]:
    if isinstance(event, SpeechStart):
        return {"type": "speech_start", "at_ms": event.at_ms, "barge_in": event.barge_in}
    if isinstance(event, Partial):
        return {"type": "partial", "text": event.text}
    assert isinstance(event, TurnEnd)
    out: dict[str, Any] = {
        "type": "turn_end",
        "text": event.text,
        "reason": event.reason,
        "latency_ms": event.at_ms - event.last_voice_ms,
    }
    if event.error:
        out["error"] = event.error
    return out


def _send(ws: Any, message: dict[str, Any]) -> None:
    ws.send(json.dumps(message, ensure_ascii=False))
