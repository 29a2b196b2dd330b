"""记事本's own tests through the SDK's fixtures (aios_sdk/pytest_plugin.py) only.

The notes live in ``notes.db`` in the workdir: with ``aios_app`` that is a
temporary folder, so the app's real ``workspace/`` is never written.
Run them alone with ``pytest apps/notes/tests``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from aios_sdk.testing import AppHarness, RunningSystem


def rows(app: AppHarness) -> list[tuple[Any, ...]]:
    with sqlite3.connect(app.workdir / "notes.db") as conn:
        return conn.execute("SELECT title, done FROM notes ORDER BY id").fetchall()


def add(app: AppHarness, title: str) -> dict[str, Any]:
    return app.action("add", form_values={"title": title, "body": "", "tag": ""}, locale="en")


def test_a_note_said_in_chinese_is_kept_in_the_workdir(aios_app: AppHarness) -> None:
    reply = aios_app.instruct("记一下 买牛奶")
    assert reply["status"] == "ok" and reply["view_type"] == "list"
    assert [item["title"] for item in reply["data"]["items"]] == ["买牛奶"]
    assert rows(aios_app) == [("买牛奶", 0)]


def test_the_done_box_of_a_row_marks_that_note_done(aios_app: AppHarness) -> None:
    add(aios_app, "call mum")
    reply = add(aios_app, "buy bread")
    first = next(i for i in reply["data"]["items"] if i["title"] == "call mum")
    (box,) = [a for a in first["actions"] if a["action_id"] == "done"]
    reply = aios_app.action("done", {**box["params"], "value": True}, locale="en")
    done = {i["title"]: i["done"] for i in reply["data"]["items"]}
    assert done == {"call mum": True, "buy bread": False}


def test_delete_asks_first_and_deletes_only_after_yes(aios_app: AppHarness) -> None:
    note_id = add(aios_app, "old note")["data"]["items"][0]["id"]
    asked = aios_app.action("delete", {"id": note_id}, locale="en")
    (step,) = asked["steps"]
    assert step["tool"] == "ask" and step["args"]["kind"] == "confirm"
    kept = aios_app.run_steps(asked, answers={step["step_id"]: False})
    assert not kept["steps"] and rows(aios_app) == [("old note", 0)]
    gone = aios_app.action("delete", {"id": note_id}, follow=True, answers={"confirm_delete": True})
    assert gone["status"] == "ok" and rows(aios_app) == []


def test_the_real_system_opens_notes_with_its_list(aios_system: RunningSystem) -> None:
    reply = aios_system.open("notes")
    assert reply["app"] == "notes" and reply["response"]["view_type"] == "list"
    added = aios_system.action(
        "notes", "add", form_values={"title": "buy milk", "body": "", "tag": ""}
    )
    assert [i["title"] for i in added["data"]["items"]] == ["buy milk"]
