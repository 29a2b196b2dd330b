"""Only the system can drive an app (DESIGN §11 item 6): the per-launch secret and the Host check.

An SDK app launched by the real launcher is called directly on its port, as
any local process (or a DNS-rebinding page) could: without the launch
secret, or with a wrong one, ``/handle`` and ``/tools*`` answer 401 JSON;
with a foreign ``Host`` the answer is 403 JSON whatever the headers. The
system's own calls (``/handle``, ``GET /tools``, a custom tool step, the
liveness probe) still work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psutil
import requests

from aios.protocol.app_secret import LAUNCH_SECRET_ENV, LAUNCH_SECRET_HEADER
from tests.integration.conftest import Running
from tests.util import wait_for

UNCONFINED = {"confinement": "off"}
"""The secret is what guards an app where it cannot run confined (a confined app has
no TCP port at all: test_confinement.py)."""
BODY = {"instruction": "hi", "context": {}, "action_request": None}


def call(
    port: int, method: str, path: str, headers: dict[str, str] | None = None, body: Any = None
) -> requests.Response:
    return requests.request(
        method, f"http://127.0.0.1:{port}{path}", json=body, headers=headers or {}, timeout=10
    )


def assert_refused(r: requests.Response, status: int, words: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    body = r.json()
    assert body["status"] == "error" and words in body["error"], body
    assert "echo" not in r.text.lower()  # nothing of the app's own answer


def test_handle_and_tools_refuse_a_caller_without_the_launch_secret(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo", "stepper"], apps_config=UNCONFINED)
    rec = running.system.launcher.get("echo")
    assert rec is not None and rec.port is not None and rec.launch_secret
    port, secret = rec.port, rec.launch_secret
    assert secret != rec.token  # a secret of its own, not the token the app calls with
    for method, path, body in (
        ("POST", "/handle", BODY),
        ("GET", "/tools", None),
        ("POST", "/tools/shout", {"text": "x"}),
    ):
        assert_refused(call(port, method, path, body=body), 401, LAUNCH_SECRET_HEADER)
        assert_refused(
            call(port, method, path, {LAUNCH_SECRET_HEADER: "not-the-secret"}, body),
            401,
            LAUNCH_SECRET_HEADER,
        )
        # the app's own token (which every app and its tools hold) is not the secret
        assert_refused(
            call(port, method, path, {"X-AIOS-App-Token": rec.token}, body),
            401,
            LAUNCH_SECRET_HEADER,
        )
    # another app's secret does not open this one
    other = running.system.launcher.get("stepper")
    assert other is not None and other.launch_secret not in ("", secret)
    assert_refused(
        call(port, "POST", "/handle", {LAUNCH_SECRET_HEADER: other.launch_secret}, BODY),
        401,
        LAUNCH_SECRET_HEADER,
    )
    # positive control: with the secret it answers, directly and through the system
    ok = call(port, "POST", "/handle", {LAUNCH_SECRET_HEADER: secret}, BODY)
    assert ok.status_code == 200 and ok.json()["data"]["instruction"] == "hi"
    assert running.open("echo")["response"]["message"] == "echo ready"
    assert running.system.custom_tools("echo") == ["shout"]
    out = running.instruct("stepper shout hello")
    assert out["results"][0]["response"]["data"]["content"] == "HELLO"
    # /health stays open for local probes and tells nothing but that the app is up
    health = call(port, "GET", "/health")
    assert health.status_code == 200 and set(health.json()) == {"status", "app"}
    assert secret not in health.text and rec.token not in health.text


def test_a_foreign_host_header_is_refused_even_with_the_secret(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], apps_config=UNCONFINED)
    rec = running.system.launcher.get("echo")
    assert rec is not None and rec.port is not None
    port, good = rec.port, {LAUNCH_SECRET_HEADER: rec.launch_secret}
    for host in (
        f"rebind.attacker.example:{port}",
        "rebind.attacker.example",
        f"127.0.0.1:{port + 1}",
        "127.0.0.1.attacker.example",
        f"localhost:{port}x",
    ):
        for method, path, body in (("POST", "/handle", BODY), ("GET", "/health", None)):
            r = call(port, method, path, {**good, "Host": host}, body)
            assert_refused(r, 403, "Host")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        r = call(port, "POST", "/handle", {**good, "Host": host}, BODY)
        assert r.status_code == 200, (host, r.text)


def test_the_secret_changes_with_every_launch_and_never_reaches_the_desktop(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], apps_config=UNCONFINED)
    rec = running.system.launcher.get("echo")
    assert rec is not None and rec.pid is not None
    first, env_name = rec.launch_secret, LAUNCH_SECRET_ENV
    assert psutil.Process(rec.pid).environ()[env_name] == first
    listed = running.get("/api/apps").json()
    assert first not in str(listed)
    assert [a["confined"] for a in listed if a["id"] == "echo"] == [False]
    running.system.launcher.restart("echo")
    wait_for(
        lambda: rec.status == "running" and rec.launch_secret not in ("", first),
        "echo to run again with a new secret",
    )
    old = call(rec.port or 0, "POST", "/handle", {LAUNCH_SECRET_HEADER: first}, BODY)
    assert_refused(old, 401, LAUNCH_SECRET_HEADER)
    assert running.open("echo")["response"]["message"] == "echo ready"
