"""The bundled apps together use all ten view types, all ten action types and all
twelve atomic tools — asserted from their real replies and the real audit log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aios.protocol import ACTION_TYPES, ATOMIC_TOOLS, VIEW_TYPES
from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps

BUNDLED = sorted(p.name for p in (ROOT / "apps").iterdir() if (p / "manifest.json").exists())


@pytest.fixture
def everything(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    return make_system(apps_dir=copy_apps(tmp_path / "apps", BUNDLED, source=ROOT / "apps"))


def test_bundled_apps_cover_every_view_action_and_tool(everything: Running) -> None:
    replies: list[dict[str, Any]] = []
    sub = everything.system.bus.subscribe()

    def act(app: str, payload: dict[str, Any]) -> dict[str, Any]:
        r = everything.post("/api/action", {"app": app, **payload})
        assert r.status_code == 200, r.text
        replies.append(r.json()["response"])
        return r.json()["response"]

    try:
        # every app's home view (§12.1)
        for app in BUNDLED:
            replies.append(everything.open(app)["response"])
        # the apps' own flows
        act(
            "files",
            {"action_id": "create", "form_values": {"name": "a.txt", "content": "x", "folder": ""}},
        )
        act("code", {"action_id": "run", "params": {"code": "print(1)"}})
        act("code", {"action_id": "run_bg", "params": {"code": "print(2)"}})
        act(
            "notes",
            {"action_id": "add", "form_values": {"title": "买牛奶", "body": "", "tag": "生活"}},
        )
        replies.extend(r["response"] for r in everything.instruct("搜索歌曲 周杰伦")["results"])
        # the gallery shows every view and every control
        for view in (*VIEW_TYPES, "controls", "notify", "memory"):
            act("gallery", {"action_id": "show", "params": {"view": view}})
    finally:
        events = []
        while (e := sub.get(timeout=0.1)) is not None:
            events.append(e)
        sub.close()
    replies.extend(e["response"] for e in events if e["type"] == "view")

    views = {r["view_type"] for r in replies}
    views |= {
        w.get("type")
        for r in replies
        if r["view_type"] == "dashboard"
        for w in (r["data"].get("widgets") or [])
        if isinstance(w, dict)
    }
    actions = {a["type"] for r in replies for a in r.get("actions", [])}
    tools = {row["tool"] for row in everything.get("/api/audit?limit=5000").json()}
    assert set(VIEW_TYPES) <= views, f"missing views: {set(VIEW_TYPES) - views}"
    assert set(ACTION_TYPES) <= actions, f"missing actions: {set(ACTION_TYPES) - actions}"
    assert set(ATOMIC_TOOLS) <= tools, f"missing tools: {set(ATOMIC_TOOLS) - tools}"
    # and not only the gallery: the other apps' own replies use most views too
    own = {r["view_type"] for r in replies[: len(BUNDLED)]}
    assert len(own - {"error", "loading"}) >= 5, own
