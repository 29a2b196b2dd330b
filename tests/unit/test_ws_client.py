"""The tests' WebSocket client keeps a frame that arrives in the same read as the ``101``.

simple_websocket 1.1.0's own client loses it (it made three event-stream tests fail on a
loaded machine: the ``hello`` never came). A real socket server sends the handshake's
reply and one text frame in a single write.
"""

from __future__ import annotations

import base64
import hashlib
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.util import WsClient

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@pytest.fixture
def glued_server() -> Iterator[str]:
    """ws://… of a server that answers each handshake and its first frame in one write."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                req = b""
                while b"\r\n\r\n" not in req:
                    req += conn.recv(4096)
                key = next(
                    line.split(b":", 1)[1].strip()
                    for line in req.split(b"\r\n")
                    if line.lower().startswith(b"sec-websocket-key")
                )
                accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
                reply = (
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
                )
                conn.sendall(reply + bytes([0x81, 5]) + b"hello")
                conn.recv(4096)  # until the client closes

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"ws://127.0.0.1:{port}/"
    srv.close()
    thread.join(5)


def test_the_first_frame_glued_to_the_handshake_is_received(glued_server: str) -> None:
    ws = WsClient.open(glued_server)
    try:
        assert ws.receive(timeout=5) == "hello"
    finally:
        ws.close()
