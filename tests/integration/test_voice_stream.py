"""Conversation mode's microphone over ``/api/voice/stream`` (aios/web/voice_stream.py): real
speech (espeak-ng) streamed as the page streams it, WebRTC's VAD and pocketsphinx on the
server, the turn's end coming back by itself; and what the socket refuses."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
import simple_websocket

from tests.integration.conftest import TOKEN, Running
from tests.speech import espeak, utterance
from tests.util import WsClient

pytestmark = pytest.mark.skipif(espeak() is None, reason="espeak-ng is not installed")

WAIT = 20.0
UPGRADE = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
           "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}  # fmt: skip
"""A WebSocket handshake's headers, for what is refused before it."""
CHUNK = 4096 * 2
"""Bytes per message: what the page's worklet sends (4096 samples)."""


@pytest.fixture
def running(make_system: Callable[..., Running]) -> Running:
    return make_system([], language="en")


@contextmanager
def stream(running: Running, query: str = "lang=en-US") -> Iterator[WsClient]:
    url = running.url.replace("http://", "ws://") + f"/api/voice/stream?token={TOKEN}&{query}"
    ws = WsClient.open(url, headers={"Origin": running.url})
    try:
        yield ws
    finally:
        if ws.connected:
            ws.close()


def receive(ws: WsClient) -> dict[str, Any]:
    raw = ws.receive(timeout=WAIT)
    assert raw is not None, f"no message within {WAIT}s"
    msg: dict[str, Any] = json.loads(raw)
    return msg


def until(ws: WsClient, kind: str) -> list[dict[str, Any]]:
    got = [receive(ws)]
    while got[-1]["type"] != kind:
        got.append(receive(ws))
    return got


def send_audio(ws: WsClient, pcm: bytes) -> None:
    for i in range(0, len(pcm), CHUNK):
        ws.send(pcm[i : i + CHUNK])


def test_a_spoken_command_comes_back_as_a_turn_and_the_stream_stays_open(
    running: Running,
) -> None:
    first, _ = utterance(500, "open the clock", 1500)
    second, _ = utterance("show the music", 1500)
    with stream(running) as ws:
        assert receive(ws) == {"type": "ready", "sample_rate": 16000, "frame_ms": 20}
        send_audio(ws, first)
        got = until(ws, "turn_end")
        assert [m["type"] for m in got] == ["speech_start", "turn_end"]
        assert got[0]["barge_in"] is False
        end = got[-1]
        assert end["text"] == "open the clock" and end["reason"] == "complete"
        assert 700 <= end["latency_ms"] < 2000
        send_audio(ws, second)  # the microphone stays open: the next turn
        assert until(ws, "turn_end")[-1]["text"] == "show the music"


def test_while_the_desktop_speaks_speech_is_a_barge_in(running: Running) -> None:
    pcm, _ = utterance(500, "open the clock", 1000)
    with stream(running) as ws:
        receive(ws)
        ws.send(json.dumps({"type": "playing", "on": True}))
        send_audio(ws, pcm)
        start = until(ws, "speech_start")[-1]
        assert start["barge_in"] is True


def test_bad_messages_get_an_error_and_the_stream_goes_on(running: Running) -> None:
    pcm, _ = utterance(500, "open the clock", 1500)
    with stream(running) as ws:
        receive(ws)
        ws.send(b"\0" * 70_000)
        assert receive(ws) == {
            "type": "error",
            "error": "an audio message must be at most 64000 bytes",
        }
        ws.send("not json")
        assert receive(ws)["error"].startswith("a text message must be JSON")
        ws.send(json.dumps({"type": "playing", "on": "yes"}))
        assert receive(ws)["error"] == '"on" must be true or false'
        send_audio(ws, pcm)
        assert until(ws, "turn_end")[-1]["text"] == "open the clock"


def test_the_stream_needs_the_launch_token_and_our_origin(running: Running) -> None:
    base = running.url + "/api/voice/stream"
    headers = UPGRADE
    r = requests.get(base, headers=headers, timeout=10)
    assert r.status_code == 401 and "launch token" in r.json()["error"]
    r = requests.get(
        f"{base}?token={TOKEN}", headers={**headers, "Origin": "http://evil.example"}, timeout=10
    )
    assert r.status_code == 403
    assert r.json()["error"] == "origin 'http://evil.example' is not allowed"
    r = requests.get(f"{base}?token={TOKEN}&lang=<script>", headers=headers, timeout=10)
    assert r.status_code == 400 and r.json()["error"].startswith("lang must be a language tag")


def test_without_the_vad_package_the_stream_says_what_to_install(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "webrtcvad", None)
    with stream(running) as ws:
        msg = receive(ws)
        assert msg["type"] == "error"
        assert "conversation mode needs webrtcvad-wheels" in msg["error"]
        with pytest.raises(simple_websocket.ConnectionClosed):  # closed by the server
            ws.receive(timeout=WAIT)


def test_the_servers_microphone_when_there_is_none_is_one_friendly_error(
    running: Running,
) -> None:
    """The window's engine (WebKitGTK) cannot open a microphone: the server listens. This
    machine has none, as many have: the user reads one sentence, and the stream closes."""
    with stream(running, "lang=en-US&source=server") as ws:
        msg = receive(ws)
        assert msg == {
            "type": "error",
            "error": "No microphone found — connect one or type your instruction",
        }
        with pytest.raises(simple_websocket.ConnectionClosed):
            ws.receive(timeout=WAIT)


def test_an_unknown_source_is_refused_before_the_handshake(running: Running) -> None:
    url = f"{running.url}/api/voice/stream?token={TOKEN}&source=file"
    r = requests.get(url, headers=UPGRADE, timeout=10)
    assert r.status_code == 400
    assert r.json()["error"] == "source must be page or server, got 'file'"
