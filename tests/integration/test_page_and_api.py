"""The page and the API under DESIGN §11's threat model, against the real system.

Each test is an attack that worked before (or a limit that did not exist), then the
positive control beside it: a key goes only to the endpoint it was entered for; JSON
nested too deep is a 400 JSON error (and an invalid reply when an app sends it); a slow
client cannot hold a thread; notifications name their app and are rate-limited; an app
cannot take another's name; manifest text fields are capped; the access log never
holds the launch token.
"""

from __future__ import annotations

import contextlib
import gc
import http.client
import json
import logging
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.errors import ToolRefused
from tests.fakes.fake_openai import FakeOpenAI, http_error, text
from tests.integration.conftest import SYSTEM_APPS, TOKEN, Running, copy_apps
from tests.util import wait_for

KEY = "sk-old-secret-key"
LLM_MSG = [{"role": "user", "content": "hi"}]


def app_token(running: Running, app: str) -> str:
    record = running.system.launcher.get(app)
    assert record is not None and record.token
    return record.token


def app_post(running: Running, app: str, path: str, body: Any) -> requests.Response:
    return requests.post(
        running.url + path,
        json=body,
        timeout=20,
        headers={"Authorization": f"Bearer {app_token(running, app)}"},
    )


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


@pytest.fixture
def recorder() -> Iterator[FakeOpenAI]:
    """Someone else's server: records every header it gets, answers anything."""
    with FakeOpenAI() as f:
        yield f


def bearers(server: FakeOpenAI) -> list[str]:
    return [h.get("authorization", "") for h in server.headers]


# ------------------------------------------------------------------ the LLM key


def test_a_base_url_change_without_the_key_clears_the_key(
    make_system: Callable[..., Running], fake: FakeOpenAI, recorder: FakeOpenAI
) -> None:
    running = make_system(
        ["echo"], llm={"base_url": fake.url, "model": "m", "api_key": KEY, "max_retries": 0}
    )
    fake.script([text("ok")])
    assert app_post(running, "echo", "/api/sys/llm", {"messages": LLM_MSG}).status_code == 200
    assert bearers(fake) == [f"Bearer {KEY}"]

    # The attack: point base_url elsewhere, keep the stored key, let an app call the LLM.
    r = running.post("/api/config", {"updates": {"llm": {"base_url": recorder.url}}})
    assert r.status_code == 200, r.text
    reply = app_post(running, "echo", "/api/sys/llm", {"messages": LLM_MSG})
    assert reply.status_code == 503 and "no language model" in reply.json()["error"]
    assert not any(KEY in b for b in bearers(recorder))
    assert KEY not in (running.data_dir / "settings.json").read_text()
    assert r.json()["config"]["llm"]["api_key"] == ""

    # Entering base_url and key together keeps the new key, which goes to that endpoint.
    r = running.post("/api/config", {"updates": {"llm": {"base_url": fake.url, "api_key": KEY}}})
    assert r.status_code == 200, r.text
    fake.script([text("ok again")])
    assert app_post(running, "echo", "/api/sys/llm", {"messages": LLM_MSG}).status_code == 200
    assert bearers(fake)[-1] == f"Bearer {KEY}"

    # The same for the fallback: a new fallback endpoint never gets the primary's key.
    r = running.post(
        "/api/config", {"updates": {"llm": {"fallback": {"base_url": recorder.url, "model": "m2"}}}}
    )
    assert r.status_code == 200, r.text
    fake.script([http_error(500, "down")])
    app_post(running, "echo", "/api/sys/llm", {"messages": LLM_MSG})
    assert recorder.headers, "the fallback was tried"
    assert not any(KEY in b for b in bearers(recorder))


# ------------------------------------------------------------------ JSON depth


def test_json_nested_too_deep_is_a_400_json_error(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"])
    for levels in (65, 100_000):  # the second one was a RecursionError (HTML 500)
        body = '{"text": "x", "deep": ' + '{"a": ' * levels + "1" + "}" * levels + "}"
        for url, headers in (
            (running.url + "/api/instruction", {"Authorization": f"Bearer {TOKEN}"}),
            (
                running.url + "/api/sys/tool",
                {"Authorization": f"Bearer {app_token(running, 'echo')}"},
            ),
        ):
            r = requests.post(
                url, data=body, timeout=20, headers={**headers, "Content-Type": "application/json"}
            )
            assert r.status_code == 400, (url, levels, r.text[:200])
            assert "nested deeper than 64 levels" in r.json()["error"]
    # positive control: 60 levels pass the check
    r = running.post(
        "/api/sys/tool",
        {"tool": "cache_set", "args": {"key": "k", "value": nested(55)}},
        headers={"Authorization": f"Bearer {app_token(running, 'echo')}"},
    )
    assert r.status_code == 200 and r.json()["status"] == "ok", r.text


def test_an_apps_reply_nested_too_deep_is_an_invalid_reply(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    apps = copy_apps(tmp_path / "apps", ["echo"])
    (apps / "echo" / "main.py").write_text(
        "from aios_sdk import AIOSAgent\n\n"
        "def deep(n):\n    v = 'leaf'\n    for _ in range(n):\n        v = [v]\n    return v\n\n"
        "class Deep(AIOSAgent):\n    def handle(self, instruction, context, action_request=None):\n"
        "        return {'status': 'ok', 'view_type': 'text', 'data': {'x': deep(200)}}\n\n"
        "if __name__ == '__main__':\n    Deep().run()\n"
    )
    running = make_system(apps_dir=apps)
    resp = running.open("echo")["response"]
    assert resp["status"] == "error"
    assert "nested deeper than 64 levels" in json.dumps(resp, ensure_ascii=False)


# ------------------------------------------------------------------ slow clients


def _request_threads() -> int:
    return sum(1 for t in threading.enumerate() if "process_request_thread" in t.name)


def test_slow_clients_time_out_and_the_server_keeps_answering(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], web={"request_timeout": 1.0})
    before = _request_threads()
    port = running.system.port
    held = []
    try:
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(f"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-A".encode())
            held.append(s)
        assert wait_for(lambda: _request_threads() >= before + 50, timeout=10)
        assert running.get("/api/health").status_code == 200  # still answers
        # every half-sent request is dropped after web.request_timeout
        assert wait_for(lambda: _request_threads() <= before, timeout=15), _request_threads()
        for s in held:
            assert s.recv(1) == b""  # closed by the server
    finally:
        for s in held:
            s.close()


def test_a_kept_connection_serves_request_after_request_and_closes_at_stop(
    make_system: Callable[..., Running],
) -> None:
    """A client that keeps its connection (the page, a ``requests`` session) is answered on
    it, by one server thread, request after request; stopping the server closes it."""
    running = make_system(["echo"])
    conn = http.client.HTTPConnection("127.0.0.1", running.system.port, timeout=10)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    try:
        conn.request("GET", "/api/health", headers=headers)
        first = conn.getresponse()
        assert first.status == 200 and json.loads(first.read())
        sock = conn.sock
        before = _request_threads()
        for i in range(5):  # an action's body read exactly: the next request follows it
            body = json.dumps({"app": "echo", "action_id": "again", "params": {"i": i}})
            conn.request("POST", "/api/action", body=body, headers=headers)
            reply = conn.getresponse()
            assert reply.status == 200 and reply.getheader("Connection") != "close"
            assert json.loads(reply.read())["response"]["status"] == "ok"
        assert conn.sock is sock  # the same connection all along
        assert _request_threads() == before  # and no new server thread
        running.server.shutdown()
        sock.settimeout(10)
        assert sock.recv(1) == b""  # the server closed it: no request reaches a stopped one
    finally:
        conn.close()


def test_an_idle_kept_connection_ends_quietly_and_a_dropped_client_leaves_none_open(
    make_system: Callable[..., Running], caplog: pytest.LogCaptureFixture
) -> None:
    """A kept connection nobody uses is closed after ``web.request_timeout`` without an
    error in the log (it is how kept connections end); a client an app made for one call
    and dropped without close() leaves no connection open on the desktop's side."""
    from aios_sdk.client import SystemClient

    running = make_system(["echo"], web={"request_timeout": 1.0})
    handler = running.server._handler
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        conn = http.client.HTTPConnection("127.0.0.1", running.system.port, timeout=10)
        try:
            conn.request("GET", "/api/health", headers={"Authorization": f"Bearer {TOKEN}"})
            assert conn.getresponse().read()
            assert conn.sock is not None
            assert conn.sock.recv(1) == b""  # closed by the server once idle past the timeout
        finally:
            conn.close()
        assert wait_for(lambda: not handler.connections, timeout=10)
        assert not [r for r in caplog.records if "timed out" in r.getMessage()]

    client = SystemClient(running.url, "not-a-token")  # refused, but its connection is kept
    with pytest.raises(ToolRefused):
        client.call_tool("file_read", {"path": "x"}, None)
    assert wait_for(lambda: len(handler.connections) == 1, timeout=10)
    del client
    gc.collect()
    assert wait_for(lambda: not handler.connections, timeout=10)


def test_a_large_body_left_unread_closes_the_kept_connection(
    make_system: Callable[..., Running],
) -> None:
    """A request refused before its body is read (no token) is not followed by reading
    4 MiB the server never wanted: the connection closes instead of being kept."""
    running = make_system(["echo"])
    body = b"x" * (4 << 20)
    sock = socket.create_connection(("127.0.0.1", running.system.port), timeout=10)
    head = (
        f"POST /api/action HTTP/1.1\r\nHost: 127.0.0.1:{running.system.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()

    def send() -> None:
        with contextlib.suppress(OSError):  # the server may close before all of it is sent
            sock.sendall(head + body)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = sock.recv(65536)
            assert chunk, f"no answer: {got!r}"
            got += chunk
        assert got.startswith(b"HTTP/1.1 401"), got[:200]
        ended = False
        try:  # the rest of the answer, then the end of the connection
            while sock.recv(65536):
                pass
            ended = True
        except ConnectionResetError:
            ended = True
        except TimeoutError:
            ended = False
        assert ended, "the server kept the connection (it read the unwanted body)"
    finally:
        sock.close()
        sender.join(timeout=10)


def test_a_content_length_in_other_digits_is_a_clear_error(
    make_system: Callable[..., Running],
) -> None:
    """``Content-Length: ²`` (a digit to str.isdigit, not to int) gets a JSON 400, not a
    traceback and a dropped connection."""
    running = make_system(["echo"])
    port = running.system.port
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            (
                f"POST /api/action HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
                "Content-Length: \u00b2\r\n\r\n{}"
            ).encode("latin-1")  # as HTTP headers are read
        )
        got = sock.recv(65536)
    assert got.startswith(b"HTTP/1.1 400"), got[:200]
    assert b"application/json" in got.split(b"\r\n\r\n", 1)[0]


# ------------------------------------------------------------------ notifications


def test_notifications_name_their_app_and_are_rate_limited(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"])
    # (make_system's first argument is named apps: the limits are set like the user would)
    r = running.post(
        "/api/config", {"updates": {"apps": {"notify_burst": 3, "notify_window": 600}}}
    )
    assert r.status_code == 200, r.text
    sub = running.system.bus.subscribe()
    try:
        results = [
            app_post(
                running,
                "echo",
                "/api/sys/tool",
                {"tool": "notify", "args": {"title": "系统 System", "body": f"n{i}"}},
            ).json()
            for i in range(5)
        ]
        assert [r["status"] for r in results[:3]] == ["ok"] * 3
        for r in results[3:]:
            assert r["status"] != "ok" and "notification rate limit" in r["error"], r
        shown = []
        while (e := sub.get(timeout=0.5)) is not None:
            if e["type"] == "notify":
                shown.append(e)
        assert [e["body"] for e in shown] == ["n0", "n1", "n2"]
        assert {e["app"] for e in shown} == {"echo"}
        assert {e["app_name"] for e in shown} == {"回声 Echo"}
    finally:
        sub.close()


# ------------------------------------------------------------------ names and manifests


def test_a_colliding_name_is_shown_with_the_id_and_loses_routing_ties(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    apps = copy_apps(tmp_path / "apps", ["echo"])
    running = make_system(apps_dir=apps)
    # installed later, and its id sorts first: before, it won every tie
    shutil.copytree(SYSTEM_APPS / "echo", apps / "aecho")
    running.system.launcher.rescan()
    assert wait_for(
        lambda: (r := running.system.launcher.get("aecho")) is not None and r.status == "running",
        timeout=20,
    )
    names = {a["id"]: a["name"] for a in running.get("/api/apps").json()}
    assert names == {"echo": "回声 Echo", "aecho": "回声 Echo (aecho)"}
    plan = running.instruct("echo hello")["plan"]
    assert [t["app"] for t in plan] == ["echo"], plan
    # "open <name>" is the desktop's own intent: it opens the app found first
    opened = running.instruct("打开回声 Echo")
    assert opened["intent"] == "open_app", opened
    assert [op.get("app") for op in opened["desktop"]] == ["echo"], opened


def test_manifest_text_fields_are_capped(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    apps = copy_apps(tmp_path / "apps", ["echo"])
    for app_id, field, value in (
        ("longicon", "icon", "🔁" * 5000),
        ("longname", "name", "N" * 500),
        ("longdesc", "description", "d" * 5000),
    ):
        shutil.copytree(SYSTEM_APPS / "echo", apps / app_id)
        manifest = json.loads((apps / app_id / "manifest.json").read_text())
        manifest[field] = value
        (apps / app_id / "manifest.json").write_text(json.dumps(manifest))
    running = make_system(apps_dir=apps)
    listed = {a["id"]: a for a in running.get("/api/apps").json()}
    for app_id, field in (("longicon", "icon"), ("longname", "name"), ("longdesc", "description")):
        assert listed[app_id]["status"] == "invalid"
        error = listed[app_id]["error"]
        assert field in error and ("at most" in error or "is longer than" in error), error
    assert listed["echo"]["status"] == "running"


# ------------------------------------------------------------------ access log


def test_the_launch_token_is_redacted_from_the_access_log(
    make_system: Callable[..., Running], caplog: pytest.LogCaptureFixture
) -> None:
    running = make_system(["echo"])
    with caplog.at_level(logging.INFO, logger="werkzeug"):
        assert requests.get(running.url + f"/?token={TOKEN}", timeout=10).status_code == 200
        assert wait_for(
            lambda: any("GET /?token=" in r.getMessage() for r in caplog.records), timeout=5
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert any("/?token=*** " in line for line in lines), lines
    assert not any(TOKEN in line for line in lines)
