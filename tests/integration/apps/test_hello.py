"""The bundled ``hello`` app (spec §8.4) in the real system: real launcher, real HTTP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps

APP = "hello"


@pytest.fixture
def hello(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    return make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))


def act(system: Running, payload: dict[str, Any], sid: str | None = None) -> dict[str, Any]:
    body = {"app": APP, **payload}
    if sid:
        body["session_id"] = sid
    r = system.post("/api/action", body)
    assert r.status_code == 200, r.text
    return r.json()


def test_open_greets_with_the_committed_greeting_and_offers_again(hello: Running) -> None:
    out = hello.open(APP)
    resp = out["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "text"
    assert resp["data"]["content"] == "你好，朋友"
    assert resp["message"] == "已回复"
    assert [(a["type"], a["label"], a["action_id"]) for a in resp["actions"]] == [
        ("button", "再说一次", "again")
    ]
    rows = hello.get(f"/api/audit?app={APP}").json()
    assert rows[0]["tool"] == "file_read" and rows[0]["status"] == "ok"
    assert "greeting.txt" in rows[0]["args"]


def test_instruction_and_again_repeat_the_greeting(hello: Running) -> None:
    out = hello.instruct("hello 世界")
    [res] = out["results"]
    assert res["app"] == APP
    assert res["response"]["data"]["content"] == "你好，世界"
    again = act(hello, {"action_id": "again", "params": {}}, out["session_id"])
    assert again["response"]["status"] == "ok"
    assert again["response"]["data"]["content"] == "你好，世界"
    # a changed greeting file is read again on every call
    (hello.apps_dir / APP / "workspace" / "greeting.txt").write_text("您好", encoding="utf-8")
    again = act(hello, {"action_id": "again"}, out["session_id"])
    assert again["response"]["data"]["content"] == "您好，世界"


def test_missing_greeting_file_is_an_error_view_naming_the_file(hello: Running) -> None:
    (hello.apps_dir / APP / "workspace" / "greeting.txt").unlink()
    resp = hello.open(APP)["response"]
    assert resp["status"] == "error" and resp["view_type"] == "error"
    assert "greeting.txt" in resp["message"] and "greeting.txt" in resp["data"]["message"]
    rows = hello.get(f"/api/audit?app={APP}").json()
    assert rows[0]["tool"] == "file_read" and rows[0]["status"] == "error"
    # the app did not crash: restoring the file makes it answer again
    (hello.apps_dir / APP / "workspace" / "greeting.txt").write_text("你好", encoding="utf-8")
    assert act(hello, {"action_id": "again"})["response"]["data"]["content"] == "你好，朋友"


@pytest.mark.parametrize(
    "payload",
    [
        {"action_id": "nope"},
        {"action_id": "again", "params": {"x": [1, 2]}, "value": {"deep": None}},
        {"action_id": "again", "form_values": {"a": 1}, "checked": [1, "x"], "on": False},
        {"action_id": "x-y.z", "href": "javascript:alert(1)"},
    ],
    ids=["unknown", "again-junk", "again-form", "odd-id"],
)
def test_garbage_payloads_never_crash(hello: Running, payload: dict[str, Any]) -> None:
    resp = act(hello, payload)["response"]
    if payload["action_id"] == "again":
        assert resp["status"] == "ok" and resp["data"]["content"] == "你好，朋友"
    else:
        assert resp["status"] == "error" and resp["view_type"] == "error"
        assert repr(payload["action_id"]) in resp["message"]
    assert hello.open(APP)["response"]["status"] == "ok"


def test_english_locale(make_system: Callable[..., Running], tmp_path: Path) -> None:
    system = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"), language="en"
    )
    resp = system.instruct("hello Alice")["results"][0]["response"]
    assert resp["data"]["content"] == "你好，Alice"  # the greeting file is Chinese
    assert resp["actions"][0]["label"] == "Say it again"
