"""The bundled ``gallery`` app: every view type, every control, hostile data, steps, push."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.protocol import ACTION_TYPES, VIEW_TYPES
from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps

APP = "gallery"


@pytest.fixture
def gallery(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    return make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))


class Events:
    """The system's event stream (what the desktop would receive over /api/events)."""

    def __init__(self, system: Running):
        self._sub = system.system.bus.subscribe()
        self.seen: list[dict[str, Any]] = []

    def drain(self) -> list[dict[str, Any]]:
        while (e := self._sub.get(timeout=0.2)) is not None:
            self.seen.append(e)
        return self.seen

    def close(self) -> None:
        self._sub.close()


@pytest.fixture
def events(gallery: Running) -> Iterator[Events]:
    ev = Events(gallery)
    yield ev
    ev.close()


def act(system: Running, payload: dict[str, Any]) -> dict[str, Any]:
    return system.act(APP, payload)


def show(system: Running, **params: Any) -> dict[str, Any]:
    return act(system, {"action_id": "show", "params": params})


def test_home_lists_every_view_type_with_a_button(gallery: Running) -> None:
    resp = gallery.open(APP)["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "list"
    ids = [item["id"] for item in resp["data"]["items"]]
    assert set(VIEW_TYPES) | {"loading", "error", "controls", "hostile"} <= set(ids)
    shown = {a["params"]["view"] for a in resp["actions"] if a["action_id"] == "show"}
    assert set(ids) <= shown
    assert {"view": "table", "rows": 1000} in [a["params"] for a in resp["actions"]]


def test_every_view_type_occurs_with_realistic_data(gallery: Running) -> None:
    seen_views: set[str] = set()
    seen_actions: set[str] = set()
    for view in VIEW_TYPES:
        payload = {"action_id": "show", "params": {"view": view}}
        resp = act(gallery, payload)
        assert resp["status"] == "ok", resp
        assert resp["view_type"] == view
        assert resp["data"]["received"] == payload
        seen_views.add(resp["view_type"])
        seen_actions |= {a["type"] for a in resp["actions"]}
    resp = act(gallery, {"action_id": "show", "params": {"view": "controls"}})
    seen_actions |= {a["type"] for a in resp["actions"]}
    assert seen_views == set(VIEW_TYPES)
    assert seen_actions == set(ACTION_TYPES)

    table = show(gallery, view="table", rows=1000)
    assert len(table["data"]["rows"]) == 1000 and len(table["data"]["columns"]) == 7
    assert all(len(r) == 7 for r in table["data"]["rows"])
    assert len(show(gallery, view="list", items=25)["data"]["items"]) == 25
    for kind in ("bar", "line", "pie", "doughnut"):
        chart = show(gallery, view="chart", type=kind, points=9)
        assert chart["data"]["type"] == kind and len(chart["data"]["labels"]) == 9
        assert len(chart["data"]["values"]) == 9
    two = show(gallery, view="chart", type="line", series=2)["data"]
    assert len(two["datasets"]) == 2
    code = show(gallery, view="code")["data"]
    assert code["language"] == "python"
    compile(code["code"], "sample", "exec")  # the sample is real Python
    dash = show(gallery, view="dashboard")["data"]
    assert {w["type"] for w in dash["widgets"]} >= {"text", "chart", "table"}
    assert show(gallery, view="form")["actions"][0]["type"] == "submit_form"


def test_media_and_image_are_generated_into_the_workspace_by_custom_tools(gallery: Running) -> None:
    media = show(gallery, view="media")
    assert media["view_type"] == "media" and media["data"]["type"] == "audio"
    assert media["data"]["url"] == "/apps/gallery/files/tone.wav"
    wav = gallery.get(media["data"]["url"])
    assert wav.status_code == 200 and wav.content[:4] == b"RIFF" and wav.content[8:12] == b"WAVE"
    on_disk = gallery.apps_dir / APP / "workspace" / "tone.wav"
    assert on_disk.read_bytes() == wav.content
    image = show(gallery, view="image")
    assert image["data"]["url"] == "/apps/gallery/files/sample.png"
    png = gallery.get(image["data"]["url"])
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG\r\n\x1a\n")
    rows = gallery.get(f"/api/audit?app={APP}").json()
    assert {r["tool"] for r in rows} >= {"make_tone", "make_image"}
    # second time: the files exist, no step runs again
    assert show(gallery, view="media")["view_type"] == "media"
    assert len(gallery.get(f"/api/audit?app={APP}").json()) == len(rows)
    card = show(gallery, view="card")
    assert all(c["image"] == "/apps/gallery/files/sample.png" for c in card["data"]["cards"])


CONTROL_PAYLOADS: list[dict[str, Any]] = [
    {"action_id": "ctl_button", "params": {"n": 1, "who": "gallery"}},
    {"action_id": "ctl_form", "form_values": {"name": "李四", "age": 41, "color": "blue"}},
    {"action_id": "ctl_select", "selected": "cherry"},
    {"action_id": "ctl_checkbox", "checked": ["a", "c"]},
    {"action_id": "ctl_radio", "selected": "large"},
    {"action_id": "ctl_input", "value": "你好 <b>world</b>"},
    {"action_id": "ctl_link", "href": "https://example.com"},
    {"action_id": "ctl_toggle", "on": True},
    {"action_id": "ctl_slider", "value": 73},
    {"action_id": "ctl_datetime", "value": "2026-08-14T22:00"},
    {"action_id": "form_submit", "form_values": {"name": "张三", "newsletter": False}},
]


def test_controls_view_has_all_ten_and_every_action_is_echoed_exactly(gallery: Running) -> None:
    resp = show(gallery, view="controls")
    types = [a["type"] for a in resp["actions"] if a["action_id"].startswith("ctl_")]
    assert sorted(types) == sorted(ACTION_TYPES)
    by_type = {a["type"]: a for a in resp["actions"]}
    assert len(by_type["submit_form"]["fields"]) == 3
    assert by_type["link"]["href"] == "https://example.com"
    assert (by_type["slider"]["min"], by_type["slider"]["max"]) == (0, 100)
    ids = {a["action_id"] for a in resp["actions"]}
    for payload in CONTROL_PAYLOADS:
        assert payload["action_id"] in ids or payload["action_id"] == "form_submit"
        echo = act(gallery, payload)
        assert echo["status"] == "ok" and echo["view_type"] == "text"
        assert echo["data"]["received"] == payload
        assert json.loads(echo["data"]["content"]) == payload
        assert payload["action_id"] in echo["message"]
        assert sorted(
            a["type"] for a in echo["actions"] if a["action_id"].startswith("ctl_")
        ) == sorted(ACTION_TYPES)


def test_hostile_data_for_every_view_type(gallery: Running) -> None:
    for kind in VIEW_TYPES:
        payload = {"action_id": "show", "params": {"view": "hostile", "as": kind}}
        resp = act(gallery, payload)
        assert resp["status"] == "ok" and resp["view_type"] == kind
        text = json.dumps(resp, ensure_ascii=False)
        assert "window.__pwned=1" in json.dumps(resp["data"], ensure_ascii=False), kind
        assert "<img src=x onerror=window.__pwned=1>" in resp["message"]
        assert "javascript:window.__pwned=1" in [a.get("href") for a in resp["actions"]]
        assert "data:text/html,<script>" in text
        assert resp["data"]["received"] == payload
    echo = act(gallery, {"action_id": "ctl_link", "href": "javascript:window.__pwned=1"})
    assert echo["data"]["received"]["href"] == "javascript:window.__pwned=1"


def test_hostile_strings_cover_urls_css_and_svg(gallery: Running) -> None:
    everything = json.dumps(
        [
            show(gallery, view="hostile", **{"as": k})
            for k in ("card", "chart", "dashboard", "image")
        ],
        ensure_ascii=False,
    )
    for needle in (
        "<script>window.__pwned=1</script>",
        "javascript:window.__pwned=1",
        "data:text/html,",
        "data:image/svg+xml,",
        "data:image/svg+xml;base64,",
        "red;background:url(javascript:window.__pwned=1)",
        "</style><script>",
    ):
        assert needle in everything, needle
    menu = show(gallery, view="hostile")
    assert menu["view_type"] == "list"
    assert {a["params"]["as"] for a in menu["actions"] if a["action_id"] == "show"} == set(
        VIEW_TYPES
    )


def test_loading_runs_a_two_step_plan_then_shows_the_final_view(
    gallery: Running, events: Events
) -> None:
    resp = show(gallery, view="loading")
    assert resp["view_type"] == "text" and resp["status"] == "ok"
    assert resp["data"]["value"]["items"] == ["α", "β", "γ"]
    assert resp["data"]["steps"] == {"step_1": "ok", "step_2": "ok"}
    interim = [e for e in events.drain() if e["type"] == "view" and e.get("interim")]
    assert interim and interim[0]["response"]["view_type"] == "loading"
    assert [s["tool"] for s in interim[0]["response"]["steps"]] == ["cache_set", "cache_get"]
    tools = [r["tool"] for r in gallery.get(f"/api/audit?app={APP}").json()]
    assert tools[:2] == ["cache_get", "cache_set"]


def test_notify_and_push_reach_the_desktop_event_stream(gallery: Running, events: Events) -> None:
    resp = show(gallery, view="notify")
    assert resp["view_type"] == "text" and resp["data"]["delivered"] == [True, True]
    pushed = show(gallery, view="push")
    assert pushed["data"]["accepted"] == 4
    seen = events.drain()
    notes = [e for e in seen if e["type"] == "notify" and e.get("app") == APP]
    assert [n["level"] for n in notes] == ["info", "success"]
    progress = [e["data"]["progress"] for e in seen if e["type"] == "push" and e.get("app") == APP]
    assert progress == [0.25, 0.5, 0.75, 1.0]
    err = show(gallery, view="error")
    assert err["status"] == "error" and err["view_type"] == "error"
    assert "missing.txt" in err["data"]["message"]


@pytest.mark.parametrize(
    ("text", "view", "check"),
    [
        ("组件展示 表格 1000", "table", lambda d: len(d["rows"]) == 1000),
        ("gallery pie chart", "chart", lambda d: d["type"] == "pie"),
        ("组件展示 折线图 12", "chart", lambda d: d["type"] == "line" and len(d["labels"]) == 12),
        ("gallery hostile list", "list", lambda d: "window.__pwned" in json.dumps(d)),
        ("打开组件展示", "list", lambda d: any(i["id"] == "dashboard" for i in d["items"])),
    ],
)
def test_instructions_pick_the_view(
    gallery: Running, text: str, view: str, check: Callable[[dict[str, Any]], bool]
) -> None:
    out = gallery.instruct(text)
    [res] = out["results"]
    assert res["app"] == APP
    assert res["response"]["view_type"] == view
    assert check(res["response"]["data"])


BAD_PAYLOADS: list[tuple[dict[str, Any], str]] = [
    ({"action_id": "show"}, "params"),
    ({"action_id": "show", "params": {}}, "home"),
    ({"action_id": "show", "params": {"view": 5}}, "view"),
    ({"action_id": "show", "params": {"view": "hologram"}}, "'hologram'"),
    ({"action_id": "show", "params": {"view": "table", "rows": -1}}, "rows"),
    ({"action_id": "show", "params": {"view": "table", "rows": "many"}}, "'many'"),
    ({"action_id": "show", "params": {"view": "table", "rows": 10**9}}, "rows"),
    ({"action_id": "show", "params": {"view": "list", "items": True}}, "items"),
    ({"action_id": "show", "params": {"view": "chart", "type": "radar"}}, "'radar'"),
    ({"action_id": "show", "params": {"view": "chart", "points": [1]}}, "points"),
    ({"action_id": "show", "params": {"view": "hostile", "as": "<script>"}}, "as"),
    ({"action_id": "nope", "value": {"x": 1}}, "'nope'"),
    ({"action_id": "home", "on": False}, ""),
]


def test_bad_payloads_give_a_clear_error_and_the_app_keeps_answering(gallery: Running) -> None:
    for payload, needle in BAD_PAYLOADS:
        resp = act(gallery, payload)
        if needle == "home" or payload["action_id"] == "home":
            assert resp["view_type"] == "list" and resp["status"] == "ok", payload
        else:
            assert resp["status"] == "error" and resp["view_type"] == "error", payload
            assert needle in resp["message"], (payload, resp["message"])
        assert resp["data"]["received"] == payload
    assert act(gallery, {"action_id": "ctl_toggle", "on": False})["data"]["received"] == {
        "action_id": "ctl_toggle",
        "on": False,
    }


def test_row_controls_change_only_their_row_and_variants_are_explicit(gallery: Running) -> None:
    resp = show(gallery, view="rows")
    items = {item["id"]: item for item in resp["data"]["items"]}
    assert len(items) == 40 and not any(item["done"] for item in items.values())
    kinds = [a["type"] for a in items["t3"]["actions"]]
    assert kinds == ["checkbox", "toggle", "button"]
    assert items["t3"]["actions"][2]["variant"] == "danger"
    # What the desktop sends for a row's done box: the row's id and the box's value.
    resp = act(gallery, {"action_id": "row_done", "params": {"id": "t3", "value": True}})
    done = [item["id"] for item in resp["data"]["items"] if item["done"]]
    assert done == ["t3"]
    assert resp["data"]["title"] == "逐行控件"  # the same view: the desktop keeps its scroll
    resp = act(gallery, {"action_id": "row_delete", "params": {"id": "t4"}})
    assert "t4" not in [item["id"] for item in resp["data"]["items"]]
    resp = show(gallery, view="rows", items=0)
    assert resp["data"]["items"] == [] and resp["data"]["empty"]
    # Only the one button that asks to be primary is; the select's values are numbers.
    resp = show(gallery, view="variants")
    variants = {a["action_id"]: a.get("variant") for a in resp["actions"] if a["type"] == "button"}
    assert [k for k, v in variants.items() if v == "primary"] == ["var_primary"]
    assert variants["var_danger"] == "danger"
    size = next(a for a in resp["actions"] if a["action_id"] == "var_size")
    assert [o["value"] for o in size["options"]] == [10, 20, 40]
