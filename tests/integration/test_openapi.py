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
