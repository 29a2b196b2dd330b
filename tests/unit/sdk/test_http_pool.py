"""The keep-alive pool both ends of the request path use (aios_sdk/_http.py), against real
servers on Unix sockets: connections kept and reused, and never reused when unsound."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aios_sdk._http import Connections, PeerTimeout, PeerUnreachable
from tests.util import wait_for

OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


class Server:
    """Accepts on a Unix socket; ``answer(n)`` gives the bytes for the n-th request (None:
    answer nothing); ``keep`` says whether a connection stays open after an answer."""

    def __init__(self, path: Path, answer: Callable[[int], bytes | None], keep: bool) -> None:
        self.answer, self.keep = answer, keep
        self.connections = 0
        self.requests = 0
        self.closed = 0
        self._lock = threading.Lock()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(8)
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._held.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        while True:
            while b"\r\n\r\n" not in buf:
                try:
                    got = conn.recv(65536)
                except OSError:
                    return
                if not got:
                    return
                buf += got
            head, _, rest = buf.partition(b"\r\n\r\n")
            length = next(
                (
                    int(h.split(b":")[1])
                    for h in head.split(b"\r\n")
                    if h.lower().startswith(b"content-length:")
                ),
                0,
            )
            while len(rest) < length:
                rest += conn.recv(65536)
            buf = rest[length:]
            with self._lock:
                self.requests += 1
                n = self.requests
            reply = self.answer(n)
            if reply is None:
                continue  # hold the connection, answer nothing
            conn.sendall(reply)
            if not self.keep:
                conn.close()  # without saying "Connection: close"
                with self._lock:
                    self.closed += 1
                return

    def close(self) -> None:
        self._sock.close()
        with self._lock:
            for c in self._held:
                c.close()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., tuple[Server, Connections]]]:
    made: list[tuple[Server, Connections]] = []

    def make(answer: Callable[[int], bytes | None] = lambda n: OK, keep: bool = True):
        path = tmp_path / f"s{len(made)}.sock"
        pair = Server(path, answer, keep), Connections("127.0.0.1", 4242, str(path))
        made.append(pair)
        return pair

    yield make
    for server, pool in made:
        pool.close()
        server.close()


def post(pool: Connections, limit: int | None = None, read_timeout: float = 10.0):
    return pool.request(
        "POST",
        "/handle",
        b"{}",
        {"Content-Type": "application/json"},
        connect_timeout=10.0,
        read_timeout=read_timeout,
        limit=limit,
    )


def test_calls_to_one_peer_share_one_kept_connection(serve) -> None:
    server, pool = serve()
    for _ in range(5):
        reply = post(pool)
        assert (reply.status, reply.body) == (200, b"ok")
    assert server.requests == 5
    assert server.connections == 1


def test_a_connection_the_peer_closed_is_never_written_to_again(serve) -> None:
    server, pool = serve(keep=False)  # closes after each answer, without saying so
    for n in range(1, 4):
        assert post(pool).body == b"ok"
        wait_for(lambda n=n: server.closed == n, "the server's close")
    assert server.connections == 3  # each call found the kept one closed and opened anew
    assert server.requests == 3  # and no request was lost or sent twice


def test_an_answer_nobody_asked_for_is_never_taken_for_the_next_one(serve) -> None:
    created = b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"
    server, pool = serve(answer=lambda n: OK + OK if n == 1 else created)
    assert post(pool).status == 200
    assert post(pool).status == 201  # its own answer, not the stray second "200 ok"
    assert server.requests == 2


def test_a_reply_over_the_limit_gives_no_body_and_its_connection_goes(serve) -> None:
    big = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 100
    server, pool = serve(answer=lambda n: big if n == 1 else OK)
    assert post(pool, limit=10).body is None
    assert post(pool, limit=10).body == b"ok"
    assert server.connections == 2


def test_a_peer_that_never_answers_times_out(serve) -> None:
    server, pool = serve(answer=lambda n: None)
    with pytest.raises(PeerTimeout):
        post(pool, read_timeout=0.2)
    assert server.requests == 1


def test_nobody_listening_is_unreachable(tmp_path: Path) -> None:
    pool = Connections("127.0.0.1", 4242, str(tmp_path / "nobody.sock"))
    with pytest.raises(PeerUnreachable, match="cannot connect"):
        post(pool)
