"""The app guide's first app runs as written: its manifest and main.py, taken from
docs/app-guide.md, as a real app in the real system (real launcher, real HTTP).

Both language versions of the guide must show the same code, so one run covers both.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import Running

GUIDES = {"en": ROOT / "docs" / "app-guide.md", "zh-CN": ROOT / "docs" / "app-guide.zh-CN.md"}
APP = "todo_lite"
"""The app id the guide's scaffold command creates."""
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def first_blocks(guide: Path, section: int) -> dict[str, str]:
    """The first code block of each language in section ``section`` of ``guide``."""
    text = guide.read_text(encoding="utf-8")
    body = text.split(f"\n## {section}.", 1)[1].split(f"\n## {section + 1}.", 1)[0]
    blocks: dict[str, str] = {}
    for lang, code in _BLOCK.findall(body):
        blocks.setdefault(lang, code)
    return blocks


def first_app_files(guide: Path) -> tuple[str, str]:
    """``(manifest.json, main.py)``: the first json and python blocks of section 1."""
    blocks = first_blocks(guide, 1)
    assert "json" in blocks and "python" in blocks, f"{guide.name} §1 lost its example"
    return blocks["json"], blocks["python"]


def write_first_app(apps_dir: Path) -> Path:
    manifest, main = first_app_files(GUIDES["en"])
    folder = apps_dir / APP
    (folder / "workspace").mkdir(parents=True)
    json.loads(manifest)  # the guide's manifest is valid JSON
    (folder / "manifest.json").write_text(manifest, encoding="utf-8")
    (folder / "main.py").write_text(main, encoding="utf-8")
    return folder


def act(system: Running, sid: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A control of the app fired, as the desktop sends it, answered in English."""
    body = {"app": APP, "session_id": sid, "locale": "en", **payload}
    r = system.post("/api/action", body)
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()["response"]
    return reply


def items(reply: dict[str, Any]) -> list[dict[str, Any]]:
    assert reply["status"] == "ok" and reply["view_type"] == "list", reply
    found: list[dict[str, Any]] = reply["data"]["items"]
    return found


def test_the_guides_first_app_answers_in_the_real_system(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    manifest, main = first_app_files(GUIDES["en"])
    assert first_app_files(GUIDES["zh-CN"]) == (manifest, main), (
        "app-guide.zh-CN.md §1 shows other code than app-guide.md"
    )
    write_first_app(tmp_path / "apps")
    system = make_system(apps_dir=tmp_path / "apps")
    apps = {a["id"]: a for a in system.get("/api/apps").json()}
    assert apps[APP]["status"] == "running", apps[APP]

    opened = system.post(f"/api/apps/{APP}/open", {"locale": "en"}).json()
    assert items(opened["response"]) == []
    assert opened["response"]["data"]["empty"] == "Nothing to do yet"
    sid = opened["session_id"]

    out = system.post(
        "/api/instruction", {"text": "to-do lite: buy milk", "session_id": sid, "locale": "en"}
    ).json()
    [result] = out["results"]
    assert result["app"] == APP
    [added] = items(result["response"])
    assert added["title"] == "buy milk" and added["done"] is False  # routed.text: the name stripped
    done_box, delete = added["actions"]
    assert done_box["type"] == "checkbox" and delete["variant"] == "danger"

    # the row's checkbox, as the desktop sends it: params.id and params.value
    payload = {"action_id": "done", "params": {"id": added["id"], "value": True}}
    [ticked] = items(act(system, sid, payload))
    assert ticked["done"] is True and ticked["actions"][0]["value"] is True

    typed = act(system, sid, {"action_id": "add", "value": "call mum"})
    assert [i["title"] for i in items(typed)][-1] == "call mum"
    gone = act(system, sid, {"action_id": "delete", "params": {"id": added["id"]}})
    assert [i["title"] for i in items(gone)] == ["call mum"]
    assert gone["message"] == "To-dos: 1"


def test_the_guides_test_kit_example_passes_on_the_first_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§13's pytest example, run as written from the project root's place."""
    code = first_blocks(GUIDES["en"], 13)["python"]
    assert first_blocks(GUIDES["zh-CN"], 13)["python"] == code
    write_first_app(tmp_path / "apps")
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    exec(compile(code, "app-guide.md §13", "exec"), scope)
    scope["test_add_and_tick"](tmp_path / "kit")
