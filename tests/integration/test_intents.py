"""System intents (aios/control/intents.py) through the real system: the first things people
type — help, open / close / switch to an app, Settings, the time, small talk, undo /
reset — are answered by the controller itself, in the language they were asked in (the
UI language when the words do not tell), the same with and without an LLM (the fake
model sees no request); app instructions still reach the apps.

The apps are copies of the echo fixture under the bundled apps' ids and names, so a
test sees exactly what an app received (its instruction and context)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_openai import FakeOpenAI, tool_call
from tests.integration.conftest import SYSTEM_APPS, Running, start_system

APPS: dict[str, dict[str, Any]] = {
    "music": {
        "name": "音乐",
        "name_en": "Music",
        "keywords": ["音乐", "歌", "播放", "静音", "music", "play", "mute"],
        "examples": {"zh-CN": ["播放音乐"], "en": ["play some music"]},
    },
    "notes": {
        "name": "记事本",
        "name_en": "Notes",
        "keywords": ["笔记", "记事本", "记一下", "notes", "note"],
        "examples": {"zh-CN": ["记一下明天开会"], "en": ["note: meeting tomorrow"]},
    },
    "files": {
        "name": "文件管理",
        "name_en": "Files",
        "keywords": ["文件", "文件管理", "files", "file"],
    },
    "system_agent": {
        "name": "系统控制",
        "name_en": "System control",
        "keywords": ["时钟", "任务栏", "隐藏", "clock", "hide", "taskbar"],
    },
}


def make_apps(dest: Path, ids: list[str]) -> Path:
    for app_id in ids:
        shutil.copytree(SYSTEM_APPS / "echo", dest / app_id)
        manifest = {
            "entry": "main.py",
            "description": app_id,
            "role_prompt": "你原样返回收到的内容。",
            **APPS[app_id],
        }
        (dest / app_id / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False))
    return dest


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("intents")
    running = start_system(make_apps(root / "apps", list(APPS)), root / "data")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test") as f:
        yield f


@pytest.fixture(scope="module")
def with_llm(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("intents_llm")
    running = start_system(
        make_apps(root / "apps", ["music", "notes"]),
        root / "data",
        llm={"api_key": "sk-test", "base_url": fake.url, "model": "fake-model", "max_retries": 0},
    )
    yield running
    running.stop()


def say(system: Running, text: str, **extra: Any) -> dict[str, Any]:
    r = system.post("/api/instruction", {"text": text, **extra})
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def no_id_list(out: dict[str, Any]) -> None:
    """The old "no app found" answer listed "名字（id）" pairs."""
    assert not re.search(r"（[a-z_]+）", out["message"]), out["message"]


# ------------------------------------------------------------------ answers

DESKTOP_INTENTS = [
    ("打开设置", "open_window", [{"op": "open_window", "window": "settings"}]),
    ("open settings", "open_window", [{"op": "open_window", "window": "settings"}]),
    ("设置", "open_window", [{"op": "open_window", "window": "settings"}]),
    ("审计日志", "open_window", [{"op": "open_window", "window": "audit"}]),
    ("关闭音乐", "close_app", [{"op": "close_app", "app": "music"}]),
    ("close the music app", "close_app", [{"op": "close_app", "app": "music"}]),
    ("切换到笔记", "focus_app", [{"op": "focus_app", "app": "notes"}]),
    ("switch to notes", "focus_app", [{"op": "focus_app", "app": "notes"}]),
]


@pytest.mark.parametrize(("text", "intent", "desktop"), DESKTOP_INTENTS)
def test_window_intents_tell_the_desktop_what_to_do(
    offline: Running, text: str, intent: str, desktop: list[dict[str, str]]
) -> None:
    out = say(offline, text)
    assert (out["source"], out["intent"], out["desktop"]) == ("system", intent, desktop)
    assert out["results"] == [] and out["plan"] == []  # no app was asked to do anything


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("打开音乐", "已打开「音乐」"),
        ("open music", "Opened Music"),  # asked in English: answered in English (issue 22)
        ("Open the Music app", "Opened Music"),
    ],
)
def test_opening_an_app_is_its_open_view(offline: Running, text: str, answer: str) -> None:
    out = say(offline, text)
    assert out["intent"] == "open_app" and out["desktop"] == [{"op": "open_app", "app": "music"}]
    (result,) = out["results"]
    # the app got what a click on its icon sends: an empty instruction
    assert result["app"] == "music" and result["response"]["data"]["instruction"] == ""
    assert out["message"] == answer


@pytest.mark.parametrize("text", ["你能做什么", "帮助"])
def test_help_lists_the_apps_with_an_example_each(offline: Running, text: str) -> None:
    out = say(offline, text)
    assert out["intent"] == "help" and out["results"] == []
    chips = {c["app"]: c["instruction"] for c in out["suggestions"]}
    assert set(chips) == set(APPS)
    assert chips["music"] == "播放音乐" and chips["notes"] == "记一下明天开会"
    assert chips["files"] == "打开文件管理"  # no examples: opening it is the example


def test_help_asked_in_english_lists_the_english_examples(offline: Running) -> None:
    """The UI is zh-CN, but "help" is English: a person answers in the language asked."""
    out = say(offline, "help")
    assert out["intent"] == "help" and out["results"] == []
    chips = {c["app"]: c["instruction"] for c in out["suggestions"]}
    assert set(chips) == set(APPS) and chips["music"] == "play some music"


def test_time_and_date_in_the_language_asked(offline: Running) -> None:
    before = datetime.now().astimezone()
    chinese = say(offline, "现在几点")
    english = say(offline, "what time is it")  # UI zh-CN, asked in English (issue 22)
    after = datetime.now().astimezone()
    stamps = {before.strftime("%H:%M"), after.strftime("%H:%M")}
    assert chinese["intent"] == english["intent"] == "time"
    assert re.fullmatch(r"现在是 \d\d:\d\d。", chinese["message"]), chinese["message"]
    assert re.fullmatch(r"It's \d\d:\d\d\.", english["message"]), english["message"]
    assert chinese["message"][4:9] in stamps and english["message"][5:10] in stamps
    days = {d.day for d in (before, after, after + timedelta(seconds=1))}
    out = say(offline, "今天几号")
    assert out["intent"] == "date" and any(f"月{d}日" in out["message"] for d in days)
    assert "星期" in out["message"]
    out = say(offline, "what's the date")
    assert out["intent"] == "date" and any(f" {d}, " in out["message"] for d in days)
    # asked in Chinese with an English UI: answered in Chinese
    assert say(offline, "现在几点", locale="en")["message"].startswith("现在是")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("你好", "你好"),
        ("hi", "你好"),  # too short to tell: the UI's language
        ("Hello!", "Hi!"),  # English: answered in English though the UI is zh-CN
        ("谢谢", "不客气"),
        ("thanks", "You're welcome"),
        ("你是谁", "Triton AIOS"),
    ],
)
def test_small_talk_gets_a_friendly_reply_with_suggestions(
    offline: Running, text: str, needle: str
) -> None:
    out = say(offline, text)
    assert out["intent"] == "small_talk" and needle in out["message"]
    chinese = re.search(r"[\u4e00-\u9fff]", out["message"])
    help_chip = "你能做什么？" if chinese else "What can you do?"
    assert out["suggestions"][0]["instruction"] == help_chip
    assert all(s["label"] and s["instruction"] for s in out["suggestions"])


@pytest.mark.parametrize("text", ["恢复", "恢复默认", "全部恢复默认", "reset", "undo", "撤销"])
def test_undo_and_reset_go_to_the_system_control_app(offline: Running, text: str) -> None:
    out = say(offline, text)
    assert out["intent"] == "ui_reset" and out["source"] == "system"
    (result,) = out["results"]
    assert result["app"] == "system_agent"
    assert result["response"]["data"]["instruction"] == text


# ------------------------------------------------------------------ not intents


@pytest.mark.parametrize(
    ("text", "app"),
    [
        ("打开文件 report.txt", "files"),
        ("播放音乐", "music"),
        ("关闭静音", "music"),
        ("start music", "music"),
        ("hide the clock", "system_agent"),
        ("关闭时钟", "system_agent"),  # a part of the desktop, not the app's window
        ("close the taskbar", "system_agent"),
        ("打开记事本然后播放音乐", "notes"),
        ("记一下明天开会", "notes"),
    ],
)
def test_app_instructions_still_reach_the_apps(offline: Running, text: str, app: str) -> None:
    out = say(offline, text)
    assert "intent" not in out and out["source"] == "offline", out
    first = out["results"][0]
    assert first["app"] == app and first["response"]["data"]["instruction"] != ""


def test_nothing_matches_offers_apps_and_a_start_menu_search(offline: Running) -> None:
    out = say(offline, "qwxzv 帮我订机票")
    assert out["intent"] == "no_match" and out["results"] == []
    assert out["desktop"] == [{"op": "search_menu", "query": "qwxzv 帮我订机票"}]
    assert out["suggestions"] and all(s["instruction"] for s in out["suggestions"])
    assert "qwxzv 帮我订机票" in out["message"]
    no_id_list(out)
    english = say(offline, "qwxzv", locale="en")
    assert english["message"].startswith("I don't know how to handle")
    no_id_list(english)


def test_locale_overrides_the_ui_language_for_one_request(offline: Running) -> None:
    # words of no clear language ("打开 music", "music"): the request's locale decides
    out = say(offline, "打开 music", locale="en")
    assert out["message"] == "Opened Music"
    assert out["results"][0]["response"]["data"]["context"]["locale"] == "en"
    routed = say(offline, "music", locale="en")
    assert routed["results"][0]["response"]["data"]["context"]["locale"] == "en"
    assert say(offline, "music")["results"][0]["response"]["data"]["context"]["locale"] == ("zh-CN")
    stop = say(offline, "stop", locale="en")
    assert stop["message"] == "Nothing is running"
    bad = offline.post("/api/instruction", {"text": "你好", "locale": "fr"})
    assert bad.status_code == 400 and "'locale'" in bad.json()["error"]


def test_the_timeline_shows_the_answer_and_its_suggestions(offline: Running) -> None:
    sid = say(offline, "你好")["session_id"]
    say(offline, "你能做什么？", session_id=sid)
    timeline = offline.get(f"/api/sessions/{sid}/timeline").json()["entries"]
    replies = [e for e in timeline if e["kind"] == "reply"]
    assert [r["intent"] for r in replies] == ["small_talk", "help"]
    assert "播放音乐" in [s["instruction"] for s in replies[1]["suggestions"]]
    assert [e["text"] for e in timeline if e["kind"] == "user"] == ["你好", "你能做什么？"]


# ------------------------------------------------------------------ with an LLM

FIRST_WORDS = (
    *("你好", "what can you do?", "你能做什么", "现在几点", "what time is it", "今天几号"),
    *("打开设置", "open settings", "关闭音乐", "close the music app", "open music", "切换到笔记"),
    *("谢谢", "who are you"),
)
"""The issue's first words that are system intents (undo / reset are checked on their own)."""


def test_with_an_llm_intents_never_ask_the_model(with_llm: Running, fake: FakeOpenAI) -> None:
    fake.script([])
    for text in FIRST_WORDS:
        out = say(with_llm, text)
        assert out["source"] == "system", (text, out)
    # no system control app here: undo / reset say so instead of failing
    for text in ("恢复默认", "reset"):
        reset = say(with_llm, text)
        assert reset["intent"] == "ui_reset" and "系统控制" in reset["message"]
        assert reset["results"] == []
    assert fake.requests == []


def test_with_an_llm_other_talk_goes_to_the_model(with_llm: Running, fake: FakeOpenAI) -> None:
    fake.script([tool_call("reply_directly", {"text": "有一只猫……"})])
    out = say(with_llm, "讲个笑话")
    assert out["source"] == "llm" and out["message"] == "有一只猫……"
    assert "intent" not in out and len(fake.requests) == 1
