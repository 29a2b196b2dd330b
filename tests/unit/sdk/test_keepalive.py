"""The keep-alive handler of an app's server and the system's channel (aios_sdk/_keepalive.py),
on a real Werkzeug server: requests follow each other on one connection, and a body the app
left unread is never taken for the next request."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator

import pytest
from flask import Flask, jsonify, request
from werkzeug.serving import BaseWSGIServer, make_server

from aios_sdk._keepalive import KeepAliveHandler

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def server() -> Iterator[tuple[BaseWSGIServer, list[str]]]:
    app = Flask("keepalive_test")
    seen: list[str] = []

    @app.post("/read")
    def read() -> object:
        seen.append(f"read {request.environ['REMOTE_PORT']}")
        return jsonify({"got": request.get_json(), "port": request.environ["REMOTE_PORT"]})

    @app.post("/ignore")
    def ignore() -> object:  # answers without reading its body
        seen.append("ignore")
        return jsonify({"ignored": True})

    @app.get("/stream")
    def stream() -> object:  # no length known: sent chunked as it is made
        seen.append(f"stream {request.environ['REMOTE_PORT']}")
        return app.response_class((f"part{i};" for i in range(3)), mimetype="text/plain")

    @app.get("/secret")
    def secret() -> object:
        seen.append("secret")
        return jsonify({"secret": True})

    srv = make_server("127.0.0.1", 0, app, threaded=True, request_handler=KeepAliveHandler)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    yield srv, seen
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=10)


def call(conn: http.client.HTTPConnection, path: str, body: bytes) -> http.client.HTTPResponse:
    conn.request("POST", path, body=body, headers=JSON)
    resp = conn.getresponse()
    resp.read()
    return resp


def test_requests_follow_each_other_on_one_connection(server) -> None:
    srv, seen = server
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=10)
    try:
        for n in range(3):
            conn.request("POST", "/read", body=json.dumps({"n": n}).encode(), headers=JSON)
            resp = conn.getresponse()
            assert json.loads(resp.read())["got"] == {"n": n}
            assert not resp.will_close
    finally:
        conn.close()
    assert len(set(seen)) == 1  # one client port: one connection for the three


def test_a_streamed_answer_is_chunked_and_the_connection_stays(server) -> None:
    srv, seen = server
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=10)
    try:
        for _ in range(2):
            conn.request("GET", "/stream")
            resp = conn.getresponse()
            assert resp.getheader("Transfer-Encoding") == "chunked"
            assert resp.read() == b"part0;part1;part2;"
    finally:
        conn.close()
    assert len(set(seen)) == 1


def test_a_body_the_app_left_unread_is_not_the_next_request(server) -> None:
    srv, seen = server
    # the unread body is a whole request of its own: it must be skipped, never served
    smuggled = b"GET /secret HTTP/1.1\r\nHost: x\r\n\r\n"
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=10)
    try:
        assert call(conn, "/ignore", smuggled).status == 200
        resp = call(conn, "/read", b'{"after": 1}')
        assert resp.status == 200
    finally:
        conn.close()
    assert seen[0] == "ignore" and seen[1].startswith("read")
    assert "secret" not in seen


def test_a_client_that_asks_to_close_gets_its_connection_closed(server) -> None:
    srv, seen = server
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_port, timeout=10)
    try:
        conn.request("POST", "/read", body=b"{}", headers={**JSON, "Connection": "close"})
        resp = conn.getresponse()
        assert resp.status == 200 and resp.will_close
        resp.read()
    finally:
        conn.close()
