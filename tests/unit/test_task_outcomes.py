"""bench/task_outcomes.py's checkers and the task set bench/tasks.jsonl.

Each checker is shown a right outcome (no problem) and a wrong one (a problem naming what
was there): a checker that cannot fail would count every task as done. The real state is
real here too: files in a workspace folder, a notes.db made with the Notes app's schema.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SET_MIN = 200
NOTES_SCHEMA = (
    "CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, "
    "body TEXT NOT NULL DEFAULT '', tag TEXT NOT NULL DEFAULT 'other', "
    "done INTEGER NOT NULL DEFAULT 0, created TEXT NOT NULL)"
)


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


oc = _load("task_outcomes")


def found(tmp_path: Path, **kw: Any) -> Any:
    return oc.Found(tmp_path, **kw)


def problems(expect: dict[str, Any], f: Any, lang: str = "en") -> list[str]:
    result: list[str] = oc.check(expect, f, lang)
    return result


def write(tmp_path: Path, app: str, rel: str, text: str) -> None:
    path = tmp_path / app / "workspace" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ------------------------------------------------------------------ file


def test_file_exists_with_its_content(tmp_path: Path) -> None:
    write(tmp_path, "files", "hello.txt", "你好\n")
    f = found(tmp_path)
    assert problems({"file": {"path": "hello.txt", "content": "你好"}}, f) == []
    assert problems({"file": {"path": "hello.txt", "contains": "你"}}, f) == []
    wrong = problems({"file": {"path": "hello.txt", "content": "hello"}}, f)
    assert wrong and "你好" in wrong[0]


def test_a_file_made_under_another_name_is_a_failure_that_names_it(tmp_path: Path) -> None:
    write(tmp_path, "files", "a", "")
    [problem, *_] = problems({"file": {"path": "todo.txt"}}, found(tmp_path))
    assert "todo.txt" in problem and '"a"' in problem


def test_a_file_that_should_be_gone(tmp_path: Path) -> None:
    write(tmp_path, "files", "junk.log", "x")
    assert problems({"file": {"path": "junk.log", "exists": False}}, found(tmp_path))
    assert problems({"file": {"path": "other.log", "exists": False}}, found(tmp_path)) == []


def test_a_folder(tmp_path: Path) -> None:
    (tmp_path / "files" / "workspace" / "photos").mkdir(parents=True)
    write(tmp_path, "files", "archive", "a file, not a folder")
    assert problems({"file": {"path": "photos", "folder": True}}, found(tmp_path)) == []
    assert problems({"file": {"path": "archive", "folder": True}}, found(tmp_path))


# ------------------------------------------------------------------ note


def notes_db(tmp_path: Path, *rows: tuple[str, str, int]) -> None:
    folder = tmp_path / "notes" / "workspace"
    folder.mkdir(parents=True)
    con = sqlite3.connect(folder / "notes.db")
    con.execute(NOTES_SCHEMA)
    for title, tag, done in rows:
        con.execute(
            "INSERT INTO notes (title, tag, done, created) VALUES (?, ?, ?, '')",
            (title, tag, done),
        )
    con.commit()
    con.close()


def test_note_with_text_tag_and_done(tmp_path: Path) -> None:
    notes_db(tmp_path, ("明天买牛奶", "shopping", 0), ("call grandma", "life", 1))
    f = found(tmp_path)
    assert problems({"note": {"text": "买牛奶", "tag": "shopping"}}, f) == []
    assert problems({"note": {"text": "Call Grandma", "done": True}}, f) == []
    assert problems({"note": {"text": "买牛奶", "tag": "work"}}, f)
    assert problems({"note": {"text": "买牛奶", "done": True}}, f)
    assert problems({"note": {"text": "买面包"}}, f)
    assert problems({"note": {"text": "call grandma", "exists": False}}, f)
    assert problems({"note": {"text": "买面包", "exists": False}}, f) == []


def test_no_notes_database_means_no_note(tmp_path: Path) -> None:
    assert problems({"note": {"text": "anything"}}, found(tmp_path))


# ------------------------------------------------------------------ views


def code_view(stdout: str | None, message: str = "") -> tuple[str, dict[str, Any]]:
    data = {} if stdout is None else {"stdout": stdout, "exit_code": 0}
    return ("code", {"status": "ok", "view_type": "code", "data": data, "message": message})


def test_code_output(tmp_path: Path) -> None:
    assert (
        problems({"code_output": {"contains": "3"}}, found(tmp_path, views=[code_view("3\n")]))
        == []
    )
    assert problems({"code_output": {"contains": "3"}}, found(tmp_path, views=[code_view("4\n")]))
    shown = found(tmp_path, views=[code_view(None, "检查后点运行")])
    [problem, *_] = problems({"code_output": {"contains": "3"}}, shown)
    assert "检查后点运行" in problem


def media(title: str, autoplay: bool = True, volume: int = 80) -> tuple[str, dict[str, Any]]:
    return (
        "music",
        {
            "status": "ok",
            "view_type": "media",
            "data": {"title": title, "autoplay": autoplay},
            "state": {"volume": volume, "now": {"title": title}},
        },
    )


def test_player_song_playing_and_volume(tmp_path: Path) -> None:
    f = found(tmp_path, views=[media("Evening Breeze", volume=40)])
    assert problems({"player": {"title": "evening breeze", "playing": True, "volume": 40}}, f) == []
    assert problems({"player": {"title": "Little Waltz"}}, f)
    assert problems({"player": {"playing": False}}, f)
    assert problems({"player": {"volume": 50}}, f)
    paused = found(tmp_path, views=[media("Evening Breeze"), media("Evening Breeze", False)])
    assert problems({"player": {"playing": False}}, paused) == []
    text_only = ("music", {"status": "ok", "view_type": "text", "message": "没听懂"})
    assert problems({"player": {"playing": True}}, found(tmp_path, views=[text_only]))


def test_reply_only_is_words_in_the_users_language_and_no_app(tmp_path: Path) -> None:
    def reply(message: str, **kw: Any) -> Any:
        return found(tmp_path, reply={"plan": [], "results": [], "message": message, **kw})

    assert problems({"reply_only": True}, reply("You're welcome!"), "en") == []
    assert problems({"reply_only": True}, reply("不客气！"), "zh-CN") == []
    assert problems({"reply_only": True}, reply("不客气！"), "en")  # asked in English
    assert problems({"reply_only": True}, reply('{"name": "reply_directly"}'), "en")
    assert problems({"reply_only": True}, reply(""), "en")
    called = reply("ok", plan=[{"app": "monitor"}])
    assert problems({"reply_only": True}, called, "en")
    card = {"kind": "choice", "prompt": "monitor or notes?", "options": []}
    asked = found(tmp_path, reply={"plan": [], "message": "Which?"}, cards=[card])
    assert problems({"reply_only": True}, asked, "en")


def test_asked_with_these_options(tmp_path: Path) -> None:
    options = [{"value": "music", "label": "音乐"}, {"value": "files", "label": "文件管理"}]
    card = {"kind": "choice", "prompt": "?", "options": options}
    f = found(tmp_path, cards=[card])
    assert problems({"asked": {"options": ["music", "文件管理"]}}, f) == []
    assert problems({"asked": {"options": ["notes"]}}, f)
    assert problems({"asked": {"kind": "choice"}}, f) == []
    assert problems({"asked": {"kind": "confirm"}}, f)  # asked which app, not "delete it?"
    approval = {"kind": "approval", "prompt": "run?", "options": ["allow", "deny"]}
    assert problems({"asked": {}}, found(tmp_path, cards=[approval]))  # an approval asks nothing


def test_view_of_an_app_with_its_texts(tmp_path: Path) -> None:
    ok = (
        "files",
        {"status": "ok", "view_type": "table", "data": {"rows": [{"name": "report.txt"}]}},
    )
    err = ("files", {"status": "error", "view_type": "text", "message": "找不到"})
    f = found(tmp_path, views=[ok])
    assert problems({"view": {"app": "files", "contains": ["REPORT.txt"]}}, f) == []
    assert problems({"view": {"app": "files", "view_type": "table"}}, f) == []
    assert problems({"view": {"app": "files", "view_type": "list"}}, f)
    assert problems({"view": {"app": "files", "contains": ["plan.md"]}}, f)
    assert problems({"view": {"app": "notes"}}, f)
    assert problems({"view": {"app": "files"}}, found(tmp_path, views=[err]))


def test_a_notice_to_set_up_a_model_is_no_answer(tmp_path: Path) -> None:
    settings = {"type": "button", "action_id": "open_settings", "desktop": "settings#llm"}
    notice = ("assistant", {"status": "ok", "view_type": "text", "actions": [settings]})
    answer = ("assistant", {"status": "ok", "view_type": "text", "data": {"content": "Paris"}})
    spec = {"view": {"app": "assistant", "answered": True}}
    assert problems(spec, found(tmp_path, views=[notice]))
    assert problems(spec, found(tmp_path, views=[answer])) == []
    assert problems({"view": {"app": "assistant"}}, found(tmp_path, views=[notice])) == []


def test_words_quoted_back_are_no_language_of_the_reply(tmp_path: Path) -> None:
    said = {"message": "Here is what I know about you:\n- “我喜欢喝乌龙茶”"}
    assert problems({"reply_only": True}, found(tmp_path, reply=said)) == []
    mixed = {"message": "Here is what I know: 我喜欢喝乌龙茶"}
    assert problems({"reply_only": True}, found(tmp_path, reply=mixed))


def test_a_memory_in_its_state_and_named_in_the_reply(tmp_path: Path) -> None:
    kept = [
        {"text": "我对花生过敏", "state": "active", "scope": "user"},
        {"text": "The user is called Jordan", "state": "proposed", "scope": "user"},
        {"text": "my gym is on Baker Street", "state": "deleted", "scope": "user"},
    ]
    f = found(tmp_path, memories=kept, reply={"message": "我记得：我对花生过敏"})
    assert problems({"memory": {"text": "花生", "in_reply": True}}, f) == []
    assert problems({"memory": {"text": "Jordan"}}, f)  # proposed, not believed yet
    assert problems({"memory": {"text": "jordan", "state": "proposed"}}, f) == []
    assert problems({"memory": {"text": "Baker Street", "exists": False}}, f) == []
    assert problems({"memory": {"text": "花生", "exists": False}}, f)
    assert problems({"memory": {"text": "花生", "scope": "notes"}}, f)
    assert problems({"memory": {"text": "Jordan", "state": "proposed", "in_reply": True}}, f)


def test_ui_op(tmp_path: Path) -> None:
    f = found(tmp_path, ui_ops=[{"op": "hide", "id": "clock"}])
    assert problems({"ui_op": {"op": "hide", "id": "clock"}}, f) == []
    assert problems({"ui_op": {"op": "hide", "id": "taskbar"}}, f)
    assert problems({"ui_op": {"op": "hide"}}, found(tmp_path))


def test_every_outcome_must_hold_and_a_send_error_fails(tmp_path: Path) -> None:
    write(tmp_path, "files", "a.txt", "")
    f = found(tmp_path, ui_ops=[{"op": "hide", "id": "clock"}])
    both = {"file": {"path": "a.txt"}, "ui_op": {"op": "hide", "id": "clock"}}
    assert problems(both, f) == []
    assert problems({**both, "file": [{"path": "a.txt"}, {"path": "b.txt"}]}, f)
    assert problems(both, found(tmp_path, error="HTTP 500"))


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"id": "x", "lang": "en", "kind": "k", "app": "a", "say": "s"}, "no 'expect'"),
        ({"id": "x", "lang": "fr", "kind": "k", "app": "a", "say": "s", "expect": {}}, "lang"),
        (
            {"id": "x", "lang": "en", "kind": "k", "app": "a", "say": "s", "expect": {"lbl": 1}},
            "unknown outcomes",
        ),
    ],
)
def test_a_malformed_task_is_refused(task: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        oc.validate_task(task)


# ------------------------------------------------------------------ the set


def tasks() -> list[dict[str, Any]]:
    lines = (ROOT / "bench" / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_set_is_large_bilingual_and_valid() -> None:
    every = tasks()
    for task in every:
        oc.validate_task(task)
    assert len(every) >= SET_MIN
    assert len({t["id"] for t in every}) == len(every)
    zh = sum(t["lang"] == "zh-CN" for t in every)
    assert abs(zh - (len(every) - zh)) <= len(every) // 10  # about half each
    in_lang: Callable[[str, str], bool] = oc.in_lang
    odd = [t["say"] for t in every if not in_lang(t["say"], t["lang"])]
    assert odd == [], "a task's language is the one it is written in"
    bundled = {p.parent.name for p in (ROOT / "apps").glob("*/manifest.json")}
    assert bundled <= {t["app"] for t in every}, "every bundled app has tasks"


def test_no_instruction_is_shared_with_the_routing_set() -> None:
    """The router's labelled set and this one stay apart, so neither is tuned to the other."""
    lines = (ROOT / "bench" / "routing_set.jsonl").read_text(encoding="utf-8").splitlines()
    routed = {json.loads(line)["text"].strip().casefold() for line in lines if line.strip()}
    shared = [t["say"] for t in tasks() if t["say"].strip().casefold() in routed]
    assert shared == []
