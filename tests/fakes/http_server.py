"""A real HTTP server on 127.0.0.1 for tool tests, run in a thread of the test process.

Every request is recorded (method, path, query, headers, body) *before* it is
answered, so tests can assert what reached the server — and what never did.

Routes (all methods, HEAD answers headers only):

    /json                 JSON object with Chinese text
    /text                 UTF-8 text/plain with a charset
    /html                 UTF-8 text/html without a charset
    /latin1               text/plain; charset=iso-8859-1
    /binary               application/octet-stream bytes
    /gzip                 gzip-encoded JSON
    /bad-json             application/json that does not parse
    /echo                 JSON describing the request it received
    /status/<code>        that status with a JSON body
    /redirect?to=U&code=C redirect (default 302) to U
    /chain/<n>            n redirects, then JSON {"done": true}
    /big?size=N&length=0  N bytes of text; length=0 omits Content-Length
    /slow?delay=S         answers after S seconds
    /drip?n=N&interval=S  Content-Length N, one byte every S seconds
    /truncated?size=N     announces N bytes, sends half, closes
    /cookie               sets a cookie
    /page/<name>          the text set with ``srv.pages[name] = text`` (text/html)

``FakeHTTPServer(host="127.0.0.2")`` listens on another loopback address: a second
destination (an "attacker") beside one on 127.0.0.1.
"""

from __future__ import annotations

import gzip
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes = field(repr=False)

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeHTTPServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout, body cap) breaks the pipe; that is the test's point.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    # ------------------------------------------------------------- plumbing

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        owner = self.server.owner
        rec = RecordedRequest(
            self.command,
            parts.path,
            parse_qs(parts.query),
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        with owner.lock:
            owner.requests.append(rec)
        q = {k: v[0] for k, v in rec.query.items()}
        segs = [s for s in parts.path.split("/") if s]
        route = segs[0] if segs else ""
        handler = getattr(self, "_r_" + route.replace("-", "_"), None)
        if handler is None:
            self._send(
                404, json.dumps({"error": f"no route {parts.path}"}).encode(), "application/json"
            )
            return
        handler(rec, q, segs[1:])

    def _send(
        self,
        status: int,
        body: bytes,
        ctype: str | None,
        headers: dict[str, str] | None = None,
        *,
        length: bool = True,
    ) -> None:
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        if length:
            self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"), "application/json")

    # --------------------------------------------------------------- routes

    def _r_json(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._json({"hello": "世界", "items": [1, 2, 3]})

    def _r_text(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(200, "你好, world".encode(), "text/plain; charset=utf-8")

    def _r_html(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(200, "<p>七里香</p>".encode(), "text/html")

    def _r_latin1(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")

    def _r_binary(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(200, BINARY_BODY, "application/octet-stream")

    def _r_gzip(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(
            200,
            gzip.compress(b'{"zipped": true}'),
            "application/json",
            {"Content-Encoding": "gzip"},
        )

    def _r_bad_json(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(200, b"{not json", "application/json")

    def _r_echo(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._json(
            {
                "method": rec.method,
                "path": rec.path,
                "query": rec.query,
                "headers": rec.headers,
                "body": rec.body.decode("utf-8", "replace"),
            }
        )

    def _r_status(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        code = int(rest[0]) if rest else 500
        self._json({"error": "not here" if code == 404 else "status", "code": code}, code)

    def _r_page(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        with self.server.owner.lock:
            page = self.server.owner.pages.get("/".join(rest))
        if page is None:
            self._json({"error": "no such page"}, 404)
        else:
            self._send(200, page.encode("utf-8"), "text/html; charset=utf-8")

    def _r_redirect(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(
            int(q.get("code", "302")), b"moved", "text/plain", {"Location": q.get("to", "/json")}
        )

    def _r_chain(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        n = int(rest[0]) if rest else 0
        if n <= 0:
            self._json({"done": True})
        else:
            self._send(302, b"", "text/plain", {"Location": f"/chain/{n - 1}"})

    def _r_big(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        size = int(q.get("size", "1000"))
        self._send(200, b"a" * size, "text/plain; charset=utf-8", length=q.get("length") != "0")

    def _r_slow(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self.server.owner.stopping.wait(float(q.get("delay", "5")))
        self._json({"slow": True})

    def _r_drip(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        n, interval = int(q.get("n", "100")), float(q.get("interval", "0.1"))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        for _ in range(n):
            if self.server.owner.stopping.wait(interval):
                return
            self.wfile.write(b"x")
            self.wfile.flush()

    def _r_truncated(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        size = int(q.get("size", "10000"))
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.write(b"\x00" * (size // 2))
        self.wfile.flush()
        self.close_connection = True

    def _r_cookie(self, rec: RecordedRequest, q: dict[str, str], rest: list[str]) -> None:
        self._send(200, b"ok", "text/plain", {"Set-Cookie": "sid=abc123; Path=/"})


BINARY_BODY = bytes(range(256)) * 4


class FakeHTTPServer:
    """``with FakeHTTPServer() as srv: srv.url("/json")``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.requests: list[RecordedRequest] = []
        self.pages: dict[str, str] = {}
        """``/page/<name>`` -> its HTML (set by the test)."""
        self.host = host
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = _Server((host, 0), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str = "/", host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    def paths(self) -> list[str]:
        with self.lock:
            return [r.path for r in self.requests]

    def last(self) -> RecordedRequest:
        with self.lock:
            return self.requests[-1]

    def start(self) -> FakeHTTPServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeHTTPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
