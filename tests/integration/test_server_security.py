"""Every refusal of the loopback server is a 401/403 with a JSON reason."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
import simple_websocket

from tests.integration.conftest import TOKEN, Running
from tests.util import WsClient


@pytest.fixture
def system(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    from tests.integration.conftest import copy_apps

    apps = copy_apps(tmp_path / "apps", ["echo"])
    ctl = apps / "ctl"
    ctl.mkdir()
    (ctl / "manifest.json").write_text(
        json.dumps(
            {
                "name": "Control",
                "entry": "main.py",
                "role_prompt": "controls the desktop",
                "permissions": ["desktop.control"],
            }
        )
    )
    (ctl / "main.py").write_text((apps / "echo" / "main.py").read_text())
    running = make_system(apps_dir=apps)
    # a third-party app's request is not a grant: the user grants it
    r = running.post("/api/apps/ctl/permissions", {"grant": ["desktop.control"]})
    assert r.status_code == 200, r.text
    return running


def bare(system: Running, method: str, path: str, **kw: object) -> requests.Response:
    return requests.request(method, system.url + path, timeout=10, **kw)  # type: ignore[arg-type]


def app_token(system: Running, app: str) -> str:
    record = system.system.launcher.get(app)
    assert record is not None
    return record.token


def test_desktop_api_needs_the_launch_token(system: Running) -> None:
    r = bare(system, "GET", "/api/apps")
    assert r.status_code == 401 and "launch token" in r.json()["error"]
    r = bare(system, "GET", "/api/apps", headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401
    r = bare(system, "POST", "/api/instruction", json={"text": "echo hi"})
    assert r.status_code == 401
    assert bare(system, "GET", "/?token=wrong").status_code == 401


def test_opening_the_page_sets_no_cookie_the_token_goes_as_a_header(system: Running) -> None:
    # A cookie would reach every server on every loopback port (DESIGN §11).
    s = requests.Session()
    r = s.get(system.url + f"/?token={TOKEN}", timeout=10)
    assert r.status_code == 200 and "Triton AIOS" in r.text
    assert "Set-Cookie" not in r.headers and not s.cookies
    assert s.get(system.url + "/api/apps", timeout=10).status_code == 401
    assert (
        s.get(
            system.url + "/api/apps", timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}
        ).status_code
        == 200
    )
    # the page itself is public code: without a token it loads and says what to open
    assert bare(system, "GET", "/").status_code == 200
    csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "object-src 'none'" in csp
    assert "unsafe-inline" not in csp


def test_foreign_host_header_is_refused(system: Running) -> None:
    for host in (
        f"evil.example:{system.system.port}",
        "127.0.0.1:1",
        "attacker.localhost",
        f"127.0.0.1.evil.example:{system.system.port}",
    ):
        r = bare(
            system, "GET", "/api/apps", headers={"Host": host, "Authorization": f"Bearer {TOKEN}"}
        )
        assert r.status_code == 403, host
        assert "DNS rebinding" in r.json()["error"]


def test_cross_origin_writes_are_refused(system: Running) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}
    r = bare(system, "POST", "/api/instruction", json={"text": "echo hi"}, headers=headers)
    assert r.status_code == 403 and "origin" in r.json()["error"]
    ok = {"Authorization": f"Bearer {TOKEN}", "Origin": system.url}
    r = bare(system, "POST", "/api/apps/echo/open", json={}, headers=ok)
    assert r.status_code == 200


# simple_websocket's Client leaves its socket open when the handshake is refused.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_websocket_checks_origin_and_token(system: Running) -> None:
    ws_url = system.url.replace("http", "ws") + "/api/events"
    with pytest.raises(simple_websocket.ConnectionError):
        WsClient.open(ws_url + "?token=wrong", headers={"Origin": system.url})
    # a browser cannot set headers on a WebSocket: the page sends the token in the query
    ws = WsClient.open(ws_url + f"?token={TOKEN}", headers={"Origin": system.url})
    try:
        assert json.loads(ws.receive(timeout=5))["type"] == "hello"
    finally:
        ws.close()
    with pytest.raises(simple_websocket.ConnectionError):
        WsClient.open(
            ws_url, headers={"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}
        )
    with pytest.raises(simple_websocket.ConnectionError):
        WsClient.open(ws_url)
    ws = WsClient.open(ws_url, headers={"Authorization": f"Bearer {TOKEN}", "Origin": system.url})
    try:
        hello = json.loads(ws.receive(timeout=5))
        assert hello["type"] == "hello"
        assert {a["id"] for a in hello["apps"]} == {"echo", "ctl"}
    finally:
        ws.close()


def test_app_endpoints_need_the_apps_own_token(system: Running) -> None:
    body = {"tool": "cache_get", "args": {"key": "x"}}
    r = bare(system, "POST", "/api/sys/tool", json=body)
    assert r.status_code == 401 and "app token" in r.json()["error"]
    # the desktop's launch token is not an app token
    r = bare(
        system, "POST", "/api/sys/tool", json=body, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert r.status_code == 401
    r = bare(
        system,
        "POST",
        "/api/sys/tool",
        json=body,
        headers={"Authorization": f"Bearer {app_token(system, 'echo')}"},
    )
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_ui_operations_need_the_desktop_control_permission(system: Running) -> None:
    op = {"op": "move", "id": "clock", "x": 20, "y": 20}
    r = bare(
        system,
        "POST",
        "/api/sys/ui",
        json=op,
        headers={"Authorization": f"Bearer {app_token(system, 'echo')}"},
    )
    assert r.status_code == 403 and "desktop.control" in r.json()["error"]
    ctl = {"Authorization": f"Bearer {app_token(system, 'ctl')}"}
    sub = system.system.bus.subscribe()
    try:
        r = bare(system, "POST", "/api/sys/ui", json=op, headers=ctl)
        assert r.status_code == 200 and r.json()["applied"] == 1, r.text
        event = sub.get(timeout=2)
        while event is not None and event["type"] != "ui_op":
            event = sub.get(timeout=2)
        assert event is not None
        assert (event["op"], event["id"], event["x"], event["by"]) == ("move", "clock", 20, "ctl")
    finally:
        sub.close()
    for bad, needle in [
        ({"op": "explode", "id": "clock"}, "unknown UI operation"),
        ({"op": "move", "id": "clock", "x": "left", "y": 0}, "'x'"),
        ({"op": "resize", "id": "clock", "width": -5, "height": 9}, "positive"),
        ({"op": "change_color", "id": "clock"}, "'color'"),
    ]:
        r = bare(system, "POST", "/api/sys/ui", json=bad, headers=ctl)
        assert r.status_code == 400 and needle in r.json()["error"], bad
    # UI operations are in the audit log like tool calls, refused ones as denied
    rows = system.get("/api/audit?app=ctl").json()
    assert [r["status"] for r in rows if r["tool"] == "ui_op"][:1] == ["denied"]
    assert any(r["status"] == "ok" and '"move"' in r["args"] for r in rows)


def test_blank_change_text_is_refused_by_the_server_as_by_the_apps(system: Running) -> None:
    # One rule (aios.protocol.parse_ui_op): the server used to pass "   " on to the desktop.
    ctl = {"Authorization": f"Bearer {app_token(system, 'ctl')}"}
    for text in ("", "   "):
        r = bare(
            system,
            "POST",
            "/api/sys/ui",
            headers=ctl,
            json={"op": "change_text", "id": "clock", "text": text},
        )
        assert r.status_code == 400, r.text
        assert "change_text: field 'text'" in r.json()["error"]
    r = bare(
        system,
        "POST",
        "/api/sys/ui",
        headers=ctl,
        json={
            "ops": [
                {"op": "hide", "id": "clock"},
                {"op": "change_text", "id": "clock", "text": " "},
            ]
        },
    )
    assert r.status_code == 400 and "ops" not in r.json()["error"]
    rows = system.get("/api/audit?app=ctl").json()
    assert [row["status"] for row in rows if row["tool"] == "ui_op"][:1] == ["denied"]


def test_bad_requests_get_json_reasons(system: Running) -> None:
    r = system.http.post(
        system.url + "/api/instruction",
        data="{oops",
        timeout=10,
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 400 and "not valid JSON" in r.json()["error"]
    assert system.post("/api/instruction", {"text": ""}).status_code == 400
    r = system.post("/api/action", {"app": "echo"})
    assert r.status_code == 400 and "action_id" in r.json()["error"]
    r = system.get("/api/nope")
    assert r.status_code == 404 and "no such endpoint" in r.json()["error"]


def test_app_files_are_served_from_the_workdir_only(system: Running) -> None:
    ws = system.apps_dir / "echo" / "workspace"
    ws.mkdir(exist_ok=True)
    (ws / "cover.svg").write_text(
        "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"
    )
    r = system.get("/apps/echo/files/cover.svg")
    assert r.status_code == 200
    assert r.headers["Content-Security-Policy"].startswith("sandbox")
    r = system.get("/apps/echo/files/..%2Fmain.py")
    assert r.status_code in (403, 404) and "main.py" not in r.text.split("error")[0]
    assert system.get("/apps/nobody/files/x").status_code == 404


def test_settings_reach_the_next_tool_call_of_a_running_app(system: Running) -> None:
    echo = {"Authorization": f"Bearer {app_token(system, 'echo')}"}

    def shell(command: str) -> dict[str, object]:
        r = bare(
            system,
            "POST",
            "/api/sys/tool",
            headers=echo,
            json={"tool": "shell_exec", "args": {"cmd": command}},
        )
        assert r.status_code == 200, r.text
        return r.json()

    def settings(updates: dict[str, object]) -> None:
        r = system.post("/api/config", {"updates": updates})
        assert r.status_code == 200, r.text

    first = shell("uname")  # not on the whitelist (and the context is now cached)
    assert first["status"] == "error" and "whitelist" in str(first["error"]), first
    settings({"tool_sandbox": {"enable_shell_whitelist": False}})
    assert shell("uname")["status"] == "ok"
    # turning the whitelist back on is in force at once, not at the app's next launch
    settings({"tool_sandbox": {"enable_shell_whitelist": True}})
    refused = shell("uname")
    assert refused["status"] == "error" and "whitelist" in str(refused["error"])
    settings({"tool_timeout": {"shell_exec": 0.5}})
    slow = shell("python3 -c 'import time; time.sleep(5)'")
    assert slow["status"] == "error" and "0.5" in str(slow["error"])
    # no part is left with the old settings
    sysm = system.system
    assert sysm.controller.config is sysm.config and sysm.launcher.config is sysm.config
    assert sysm.recognizer.config is sysm.config and sysm.controller.llm is sysm.llm
    assert sysm.llm.config is sysm.config


@pytest.mark.parametrize("sid", ["../etc", "a b", "x" * 65])
def test_every_route_that_takes_a_session_id_checks_it(system: Running, sid: str) -> None:
    echo = {"Authorization": f"Bearer {app_token(system, 'echo')}"}
    r = bare(
        system,
        "POST",
        "/api/sys/tool",
        headers=echo,
        json={"tool": "cache_get", "args": {"key": "x"}, "session_id": sid},
    )
    assert r.status_code == 400 and "session_id" in r.json()["error"]
    for route in ("/api/voice/transcribe", "/api/voice/listen"):
        r = system.http.post(
            system.url + route,
            params={"run": "1", "session_id": sid},
            data=b"RIFF not audio",
            timeout=10,
        )
        assert r.status_code == 400 and "session_id" in r.json()["error"], route
    r = bare(
        system,
        "POST",
        "/api/sys/tool",
        headers=echo,
        json={"tool": "cache_get", "args": {"key": "x"}, "session_id": 7},
    )
    assert r.status_code == 400 and "session_id" in r.json()["error"]
