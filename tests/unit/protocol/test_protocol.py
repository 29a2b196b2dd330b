"""The wire protocol: the spec's own examples validate, broken variants are
rejected with the field named, and the checked-in JSON Schemas match the models."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import TypeAdapter

from aios.errors import ProtocolError
from aios.protocol import (
    ACTION_TYPES,
    SCHEMA_DIR,
    Action,
    Context,
    HandleRequest,
    ToolResult,
    error_response,
    forwardable_reply,
    generate_schemas,
    parse_action_request,
    parse_manifest,
    parse_response,
    parse_steps,
)

SPEC = Path(__file__).resolve().parents[2] / "fixtures" / "spec_messages"


def load(name: str) -> Any:
    return json.loads((SPEC / name).read_text(encoding="utf-8"))


def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))


# ------------------------------------------------------------- spec examples


def test_spec_6_3_actions_validate() -> None:
    actions = [TypeAdapter(Action).validate_python(a) for a in load("actions_6_3.json")]
    assert [a.type for a in actions] == ["button", "select", "submit_form"]
    assert actions[0].params == {"song_id": "s_001"}
    assert actions[1].options == ["标准", "高品", "无损"]
    assert actions[2].fields[0].name == "keyword"


@pytest.mark.parametrize("name", ["response_6_5.json", "response_7_4.json", "response_13_3.json"])
def test_spec_replies_validate(name: str) -> None:
    reply = parse_response(load(name))
    jsonschema.validate(load(name), schema("agent_response"))
    assert reply.view_type in ("list", "text", "loading")


def test_spec_8_2_loading_example_omits_the_required_status() -> None:
    # §6.1 requires status; the §8.2 example leaves it out, so the spec's own
    # example is refused with the field named (the rest of it is valid).
    raw = load("response_8_2_loading.json")
    with pytest.raises(ProtocolError, match="invalid reply: status: Field required"):
        parse_response(raw)
    assert parse_response({"status": "ok", **raw}).view_type == "loading"


def test_forwarded_reply_is_the_apps_own_json() -> None:
    raw = {
        "view_type": "form",
        "status": "ok",
        "data": {"z": 1, "a": None},
        "actions": [
            {
                "type": "submit_form",
                "action_id": "save",
                "fields": [{"name": "title", "label": "Title", "type": "text"}],
            }
        ],
        "state": {"n": 1},
    }
    forwarded = forwardable_reply(copy.deepcopy(raw))
    assert json.dumps(forwarded) == json.dumps({**raw, "steps": []})
    assert forwardable_reply({"status": "error", "view_type": "text"}) == {
        "status": "error",
        "view_type": "text",
        "data": {},
        "actions": [],
        "steps": [],
    }
    with pytest.raises(ProtocolError, match="status"):
        forwardable_reply({"view_type": "text"})


def test_spec_6_5_keeps_opaque_data_and_repeated_action_ids() -> None:
    raw = load("response_6_5.json")
    reply = parse_response(raw)
    assert reply.data == raw["data"]  # data is a black box: forwarded untouched
    assert [a.action_id for a in reply.actions] == ["play", "play", "filter"]


@pytest.mark.parametrize("name", ["steps_6_4.json", "steps_7_4.json"])
def test_spec_steps_validate(name: str) -> None:
    steps = parse_steps(load(name))
    assert [s.key for s in steps][:2] == ["step_1", "step_2"]
    for raw in load(name):
        jsonschema.validate(raw, schema("step"))


def test_spec_tool_results_and_context_validate() -> None:
    for key, raw in load("tool_results_8_2.json").items():
        assert ToolResult.model_validate(raw).status == "ok", key
        jsonschema.validate(raw, schema("tool_result"))
    ctx = Context.model_validate(load("context_4_3.json"))
    assert ctx.cwd_state["last_played"] == "周杰伦 - 七里香"
    jsonschema.validate(load("context_4_3.json"), schema("context"))


def test_spec_13_4_handle_request_and_13_2_manifest_validate() -> None:
    req = HandleRequest.model_validate(load("handle_request_13_4.json"))
    assert req.instruction is None and req.action_request is not None
    assert req.action_request.params == {"song_id": "s_001"}
    manifest = parse_manifest(load("manifest_13_2.json"))
    assert (manifest.entry, manifest.workdir, manifest.handle_endpoint) == (
        "main.py",
        "workspace",
        "/handle",
    )
    jsonschema.validate(load("manifest_13_2.json"), schema("manifest"))


def test_every_action_type_has_its_own_fields() -> None:
    examples: dict[str, dict[str, Any]] = {
        "button": {"params": {"k": 1}},
        "submit_form": {"fields": [{"name": "q"}]},
        "select": {"options": ["a", {"label": "B", "value": "b"}]},
        "checkbox": {"options": ["a", "b"], "value": ["a"]},
        "radio": {"options": ["x", "y"]},
        "input": {"placeholder": "..."},
        "link": {"href": "https://example.com"},
        "toggle": {"value": True},
        "slider": {"min": 0, "max": 10, "step": 0.5, "value": 5},
        "datetime": {"value": "2026-08-14T22:00"},
    }
    assert set(examples) == set(ACTION_TYPES)
    for kind, extra in examples.items():
        raw = {"type": kind, "label": kind, "action_id": f"a_{kind}", **extra}
        action = TypeAdapter(Action).validate_python(raw)
        assert action.type == kind
        jsonschema.validate(raw, schema("action"))


# ------------------------------------------------------------ broken variants


CROSS_FIELD_RULES = {"steps", "actions.3.slider"}
"""Rules only the models enforce (unique step ids, slider range); JSON Schema cannot."""


def _broken(base: str, mutate: Any) -> Any:
    raw = copy.deepcopy(load(base))
    mutate(raw)
    return raw


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.pop("view_type"), "view_type"),
        (lambda r: r.update(view_type="hologram"), "view_type"),
        (lambda r: r.update(status="maybe"), "status"),
        (lambda r: r.pop("status"), "status"),
        (lambda r: r["actions"][0].update(type="knob"), "actions.0"),
        (lambda r: r["actions"][0].pop("action_id"), "actions.0.button.action_id"),
        (lambda r: r["actions"][0].update(action_id="has space"), "actions.0.button.action_id"),
        (lambda r: r["actions"].append({"type": "link", "action_id": "l"}), "actions.3.link.href"),
        (
            lambda r: r["actions"].append({"type": "select", "action_id": "s", "options": []}),
            "actions.3.select.options",
        ),
        (
            lambda r: r["actions"].append({"type": "slider", "action_id": "v", "min": 5, "max": 1}),
            "actions.3.slider",
        ),
        (lambda r: r.update(steps=[{"tool": "file_read"}]), "steps.0.step_id"),
        (lambda r: r.update(steps=[{"step_id": 1, "tool": "rm -rf"}]), "steps.0.tool"),
        (
            lambda r: r.update(steps=[{"step_id": 1, "tool": "a"}, {"step_id": 1, "tool": "b"}]),
            "steps",
        ),
        (
            lambda r: r.update(steps=[{"step_id": 1, "tool": "a", "on_error": "ignore"}]),
            "steps.0.on_error",
        ),
        (lambda r: r.update(message=["not", "text"]), "message"),
    ],
)
def test_broken_replies_name_the_field(mutate: Any, field: str) -> None:
    raw = _broken("response_6_5.json", mutate)
    with pytest.raises(ProtocolError) as err:
        parse_response(raw)
    assert field in str(err.value)
    if field not in CROSS_FIELD_RULES:
        # the published schema rejects it too
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(raw, schema("agent_response"))


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"name": "x"}, "entry"),
        ({"name": "", "entry": "main.py"}, "name"),
        ({"name": "x", "entry": "/usr/bin/python3"}, "entry"),
        ({"name": "x", "entry": "main.py", "workdir": "../../etc"}, "workdir"),
        ({"name": "x", "entry": "main.py", "port": 80}, "port"),
        ({"name": "x", "entry": "main.py", "handle_endpoint": "handle"}, "handle_endpoint"),
        ({"name": "x", "entry": "main.py", "permissions": ["root"]}, "permissions.0"),
    ],
)
def test_broken_manifests_name_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_manifest(raw)
    assert str(err.value).startswith("invalid manifest: " + field)


def test_action_request_shapes() -> None:
    assert parse_action_request({"action_id": "vol", "value": 75}).value == 75
    assert parse_action_request({"action_id": "t", "on": False}).on is False
    assert parse_action_request({"action_id": "c", "checked": ["a", "b"]}).checked == ["a", "b"]
    with pytest.raises(ProtocolError, match="action_id"):
        parse_action_request({"params": {}})
    with pytest.raises(ProtocolError, match="checked"):
        parse_action_request({"action_id": "c", "checked": "a"})


def test_error_response_is_a_valid_reply() -> None:
    reply = parse_response(error_response("app crashed", detail={"code": 1}))
    assert reply.status == "error" and reply.view_type == "error"
    assert reply.data["message"] == "app crashed"


# ------------------------------------------------------------------- schemas


def test_checked_in_schemas_match_the_models() -> None:
    generated = generate_schemas()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in SCHEMA_DIR.glob("*.json")}
    assert set(on_disk) == set(generated), "run `python -m aios.protocol` to regenerate"
    for name, text in generated.items():
        assert on_disk[name] == text, f"{name} drifted: run `python -m aios.protocol`"
