"""The OpenAPI document (docs/openapi.json, aios/web/openapi.py) against the real server:
every Flask route is in it and nothing else, the checked-in file is the generated one,
and real requests and replies validate against its schemas; per-request ``locale``
on open, action and retry (docs/api.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from aios.web import openapi
from tests.integration.conftest import Running, copy_apps, start_system

DOC_FILE = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
_IGNORED_METHODS = {"HEAD", "OPTIONS"}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("openapi")
    r = start_system(copy_apps(root / "apps", ["echo"]), root / "data")
    yield r
    r.stop()


def _check(name: str, instance: Any) -> None:
    """``instance`` is valid against the document's ``components.schemas[name]``."""
    doc = openapi.document()
    schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    Draft202012Validator(schema).validate(instance)


def test_every_route_is_documented_and_every_documented_route_exists(running: Running) -> None:
    app = running.system.launcher.channel_app
    assert app is not None
    served = {
        (method.lower(), openapi.openapi_path(rule.rule))
        for rule in app.url_map.iter_rules()
        if rule.endpoint != "static"
        for method in (rule.methods or set()) - _IGNORED_METHODS
    }
    documented = {(m, p) for p, ops in openapi.document()["paths"].items() for m in ops}
    assert served - documented == set(), "routes missing from aios/web/openapi.py ROUTES"
    assert documented - served == set(), "documented routes the server does not have"


def test_the_checked_in_document_is_the_generated_one(running: Running) -> None:
    assert DOC_FILE.read_text(encoding="utf-8") == openapi.dumps(), (
        "docs/openapi.json is stale: python3 -m aios.web.openapi > docs/openapi.json"
    )
    served = running.get("/api/openapi.json")
    assert served.status_code == 200 and served.json() == json.loads(openapi.dumps())
    Draft202012Validator.check_schema(openapi.document()["components"]["schemas"]["AppReply"])


def test_real_requests_and_replies_validate_against_the_document(running: Running) -> None:
    health = running.get("/api/health").json()
    _check("HealthReply", health)
    apps = running.get("/api/apps").json()
    _check("AppList", apps)
    assert [a["id"] for a in apps] == ["echo"]

    body = {"text": "echo hello", "locale": "en"}
    _check("InstructionBody", body)
    reply = running.post("/api/instruction", body)
    assert reply.status_code == 200, reply.text
    _check("InstructionReply", reply.json())

    bad = running.post("/api/instruction", {"text": "  "})
    assert bad.status_code == 400
    _check("ErrorReply", bad.json())
    assert bad.json()["error"] == "field 'text' (the instruction) is required"
    with pytest.raises(SchemaError):
        _check("InstructionBody", {"text": "hi", "locale": "fr"})


def test_locale_per_request_reaches_the_app_on_open_action_and_retry(running: Running) -> None:
    opened = running.post("/api/apps/echo/open", {"locale": "en"})
    assert opened.status_code == 200, opened.text
    _check("AppReply", opened.json())
    assert opened.json()["response"]["data"]["context"]["locale"] == "en"
    sid = opened.json()["session_id"]

    body = {"app": "echo", "action_id": "again", "session_id": sid, "locale": "en"}
    _check("ActionBody", body)
    acted = running.post("/api/action", body)
    assert acted.status_code == 200, acted.text
    _check("AppReply", acted.json())
    assert acted.json()["response"]["data"]["context"]["locale"] == "en"
    default = running.act("echo", {"action_id": "again"}, sid)
    assert default["data"]["context"]["locale"] == "zh-CN"  # config.language

    again = running.post(f"/api/runs/{opened.json()['run_id']}/retry")
    assert again.status_code == 200, again.text
    assert again.json()["response"]["data"]["context"]["locale"] == "en"

    refused = running.post("/api/action", {"app": "echo", "action_id": "again", "locale": "de"})
    assert refused.status_code == 400
    assert refused.json()["error"] == "field 'locale' must be 'zh-CN' or 'en', not 'de'"
    no_app = running.post("/api/action", {"action_id": "again"})
    assert no_app.json()["error"] == "field 'app' (the app id) is required"


def test_memory_requests_and_replies_validate_against_the_document(running: Running) -> None:
    """aios/web/memory_api.py checks its bodies itself: held here to the documented models."""
    body = {"text": "用户喜欢爵士乐", "tags": ["music"]}
    _check("MemoryBody", body)
    added = running.post("/api/memories", body)
    assert added.status_code == 201, added.text
    _check("Memory", added.json())
    mid = added.json()["id"]

    listed = running.get("/api/memories?scope=user")
    _check("MemoryList", listed.json())
    found = running.get("/api/memories", params={"q": "爵士", "search": "1"}).json()
    _check("MemoryList", found)
    assert found["memories"][0]["score"] > 0

    edit = {"pinned": True}
    _check("MemoryEdit", edit)
    edited = running.http.patch(f"{running.url}/api/memories/{mid}", json=edit, timeout=20)
    _check("Memory", edited.json())
    with pytest.raises(SchemaError):
        _check("MemoryEdit", {"state": "active"})
    refused = running.http.patch(
        f"{running.url}/api/memories/{mid}", json={"state": "x"}, timeout=20
    )
    assert refused.status_code == 400
    _check("ErrorReply", refused.json())

    conflict = running.post(f"/api/memories/{mid}/accept")
    assert conflict.status_code == 409 and conflict.json()["current"]["state"] == "active"
    _check("ErrorReply", conflict.json())
    deleted = running.http.delete(f"{running.url}/api/memories/{mid}", timeout=20)
    _check("Memory", deleted.json())
    assert running.post(f"/api/memories/{mid}/reject").status_code == 409
    missing = running.http.delete(f"{running.url}/api/memories/m_000000000000", timeout=20)
    assert missing.status_code == 404
    _check("ErrorReply", missing.json())

    _check("SelfFile", running.get("/api/self/user.md").json())
    put = {"text": "# USER.md\n\nCall me Lin.\n"}
    _check("SelfFileBody", put)
    written = running.http.put(f"{running.url}/api/self/USER", json=put, timeout=20)
    _check("SelfFile", written.json())
    assert written.json() == {"name": "USER", "text": put["text"]}
    bad = running.get("/api/self/diary")
    assert bad.status_code == 400
    _check("ErrorReply", bad.json())
