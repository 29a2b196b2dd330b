"""Manifests per locale (issue 13, DESIGN §3): an app's name, description and examples in
Chinese and English, /api/apps in the UI language (config.language) with every locale's,
a clear error for a bad locale, every bundled app in both languages, and the system's
own messages in the UI language."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.runs.runs import waiting_view
from tests.conftest import ROOT
from tests.integration.conftest import Running, start_system

STEADY = ROOT / "tests" / "fixtures" / "apps_limits" / "steady"
BUNDLED = sorted(p.parent for p in (ROOT / "apps").glob("*/manifest.json"))
CJK = re.compile(r"[\u3400-\u9fff]")
LATIN_PHRASE = re.compile(r"[A-Za-z]+(?:[ ,;:]+[A-Za-z]+){2,}")
"""Three Latin words in a row: an English phrase inside a Chinese text ("中文 (english)")."""

APPS: dict[str, dict[str, Any]] = {
    "per_locale": {
        "name": {"zh-CN": "便签", "en": "Sticky"},
        "description": {"zh-CN": "贴一张便签", "en": "Pin a sticky note"},
        "examples": {"zh-CN": ["贴一张便签"], "en": ["pin a note", "show my notes"]},
    },
    "flat": {"name": "计算器", "name_en": "Calculator", "description_en": "Adds numbers"},
    "bad_locale": {"name": {"zh": "坏"}},
    "bad_type": {"name": "Bad", "description": {"en": 42}},
}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("i18n")
    for app_id, fields in APPS.items():
        folder = tmp / "apps" / app_id
        shutil.copytree(STEADY, folder)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        manifest.pop("name")
        manifest.pop("description")
        (folder / "manifest.json").write_text(json.dumps({**manifest, **fields}), "utf-8")
    system = start_system(tmp / "apps", tmp / "data", language="en")
    yield system
    system.stop()


def listed(running: Running) -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in running.get("/api/apps").json()}


def set_language(running: Running, lang: str) -> None:
    r = running.post("/api/config", {"updates": {"language": lang}})
    assert r.status_code == 200, r.text


def test_apps_are_listed_in_the_ui_language_with_every_locale(running: Running) -> None:
    apps = listed(running)
    sticky, calc = apps["per_locale"], apps["flat"]
    assert (sticky["name"], sticky["description"]) == ("Sticky", "Pin a sticky note")
    assert sticky["examples"] == ["pin a note", "show my notes"]
    assert sticky["names"] == {"zh-CN": "便签", "en": "Sticky"}
    assert sticky["descriptions"] == {"zh-CN": "贴一张便签", "en": "Pin a sticky note"}
    assert (calc["name"], calc["names"]) == ("Calculator", {"zh-CN": "计算器", "en": "Calculator"})
    set_language(running, "zh-CN")
    try:
        apps = listed(running)
        assert (apps["per_locale"]["name"], apps["per_locale"]["examples"]) == (
            "便签",
            ["贴一张便签"],
        )
        # a locale the manifest does not give falls back to the one it gives
        assert (apps["flat"]["name"], apps["flat"]["description"]) == ("计算器", "Adds numbers")
    finally:
        set_language(running, "en")


def test_a_bad_locale_key_or_type_is_an_error_naming_the_field(running: Running) -> None:
    apps = listed(running)
    assert apps["bad_locale"]["status"] == "invalid"
    assert "name: " in apps["bad_locale"]["error"]
    assert "unknown locale 'zh' in name: use 'zh-CN' or 'en'" in apps["bad_locale"]["error"]
    assert apps["bad_type"]["status"] == "invalid"
    assert (
        "description must be a string or an object of locale -> string"
        in (apps["bad_type"]["error"])
    )


def test_a_waiting_run_speaks_the_ui_language(running: Running) -> None:
    runs = running.system.runs
    english = runs.start("open", "per_locale", "sess_i18n")
    chinese = runs.start("instruction", "per_locale", "sess_i18n", request={"locale": "zh-CN"})
    try:
        assert waiting_view(english)["message"] == "Waiting for your approval"
        assert waiting_view(chinese)["message"] == "等待你的确认"
    finally:
        for run in (english, chinese):
            runs.finish(run, None)


@pytest.mark.parametrize("folder", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_app_is_named_and_described_in_both_languages(folder: Path) -> None:
    raw = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    for field in ("name", "description", "examples"):
        value = raw.get(field)
        assert isinstance(value, dict) and set(value) == {"zh-CN", "en"}, (field, value)
    for zh in [raw["description"]["zh-CN"], *raw["examples"]["zh-CN"]]:
        assert CJK.search(zh) and not LATIN_PHRASE.search(zh), f"not plain Chinese: {zh!r}"
    for en in [raw["name"]["en"], raw["description"]["en"], *raw["examples"]["en"]]:
        assert not CJK.search(en), f"Chinese in the English text: {en!r}"
    assert all(2 <= len(raw["examples"][loc]) <= 4 for loc in ("zh-CN", "en"))
