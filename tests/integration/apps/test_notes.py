"""The bundled ``notes`` app: notes in a real SQLite file through db_query, across restarts."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.events import Subscription
from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps, final_view

APP = "notes"
WAIT = 20.0
"""Seconds a test waits for the final view of a run that asked the user."""


@pytest.fixture
def notes(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    return make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))


@pytest.fixture
def views(notes: Running) -> Iterator[Subscription]:
    """The desktop's event stream: where the final view of a run that waited arrives."""
    sub = notes.system.bus.subscribe()
    yield sub
    sub.close()


def ask_delete(system: Running, note_id: int, sid: str | None = None) -> dict[str, Any]:
    """Click a note's Delete: the run waits on a confirm card; the whole reply."""
    body: dict[str, Any] = {"app": APP, "action_id": "delete", "params": {"id": note_id}}
    if sid:
        body["session_id"] = sid
    r = system.post("/api/action", body)
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    assert reply.get("state") == "waiting", reply
    return reply


def answer(system: Running, sub: Subscription, waiting: dict[str, Any], value: Any) -> Any:
    (card,) = waiting["pending"]
    r = system.post(f"/api/interactions/{card['id']}", {"value": value})
    assert r.status_code == 200 and r.json()["answer"] == {"value": value}, r.text
    return final_view(sub, waiting["run_id"])


def db_rows(system: Running) -> list[tuple[Any, ...]]:
    path = system.apps_dir / APP / "workspace" / "notes.db"
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT id, title, body, tag, done FROM notes ORDER BY id").fetchall()


def act(system: Running, payload: dict[str, Any], sid: str | None = None) -> dict[str, Any]:
    return system.act(APP, payload, sid)


def titles(resp: dict[str, Any]) -> list[str]:
    """Each note as the list shows it: its title, ``✓`` after a done one (struck through)."""
    return [i["title"] + (" ✓" if i["done"] else "") for i in resp["data"]["items"]]


def toggle(system: Running, note_id: int, value: Any, sid: str | None = None) -> dict[str, Any]:
    """A note's own done switch, as the desktop sends a row's control (C1)."""
    return act(system, {"action_id": "done", "params": {"id": note_id, "value": value}}, sid)


def add(
    system: Running, title: str, body: str = "", tag: str = "other", sid: str | None = None
) -> dict[str, Any]:
    return act(
        system, {"action_id": "add", "form_values": {"title": title, "body": body, "tag": tag}}, sid
    )


def test_first_open_creates_the_table_and_shows_an_empty_list(notes: Running) -> None:
    resp = notes.open(APP)["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "list"
    # one empty message: the view's own (data.empty), not repeated in the message line
    assert resp["data"]["items"] == [] and resp["data"]["empty"] == "还没有笔记，添加第一条吧"
    assert "message" not in resp
    types = {a["type"]: a for a in resp["actions"]}
    assert set(types) >= {"input", "select", "submit_form"}
    assert types["submit_form"]["variant"] == "primary"
    assert [f["name"] for f in types["submit_form"]["fields"]] == ["title", "body", "tag"]
    tag_field = types["submit_form"]["fields"][2]
    assert tag_field["type"] == "text"  # free text; the suggestions in its placeholder
    assert tag_field["placeholder"] == "例如：工作, 生活, 购物, 学习, 其他"
    assert [o["value"] for o in types["select"]["options"]] == [
        "all",
        "work",
        "life",
        "shopping",
        "study",
        "other",
    ]
    assert db_rows(notes) == []
    audit = notes.get(f"/api/audit?app={APP}").json()
    assert audit and all(r["tool"] == "db_query" for r in audit)
    assert any("CREATE TABLE" in r["args"] for r in audit)


def test_add_toggle_filter_search_and_delete(notes: Running, views: Subscription) -> None:
    sid = notes.open(APP)["session_id"]
    resp = add(notes, "买牛奶", "两盒，低脂", "shopping", sid)
    assert resp["status"] == "ok" and "买牛奶" in resp["message"]
    add(notes, "写周报", "周五前", "work", sid)
    resp = add(notes, "Read SICP", "chapter 3", "study", sid)
    assert titles(resp) == ["Read SICP", "写周报", "买牛奶"]
    assert db_rows(notes) == [
        (1, "买牛奶", "两盒，低脂", "shopping", 0),
        (2, "写周报", "周五前", "work", 0),
        (3, "Read SICP", "chapter 3", "study", 0),
    ]
    # no switch in the action bar: each note's row carries its own
    assert not [a for a in resp["actions"] if a["type"] in ("toggle", "checkbox")]
    switches = {i["id"]: i["actions"] for i in resp["data"]["items"]}
    assert switches[1] == [
        {
            "type": "checkbox",
            "label": "完成",
            "action_id": "done",
            "value": False,
            "params": {"id": 1},
        }
    ]
    deletes = [a for a in resp["actions"] if a["action_id"] == "delete"]
    assert sorted(a["params"]["id"] for a in deletes) == [1, 2, 3]
    assert not any("confirm" in a for a in deletes)  # the app asks itself, with a card
    assert {a["variant"] for a in deletes} == {"danger"}

    resp = toggle(notes, 1, True, sid)
    assert resp["message"] == "已完成：买牛奶"
    assert titles(resp) == ["Read SICP", "写周报", "买牛奶 ✓"]  # only that note; it sinks
    assert resp["data"]["items"][-1]["actions"][0]["value"] is True
    assert [r[4] for r in db_rows(notes)] == [1, 0, 0]
    resp = toggle(notes, 1, False, sid)
    assert [r[4] for r in db_rows(notes)] == [0, 0, 0]
    resp = act(notes, {"action_id": "done.1", "on": True}, sid)  # the older form still works
    assert [r[4] for r in db_rows(notes)] == [1, 0, 0]
    toggle(notes, 1, False, sid)

    resp = act(notes, {"action_id": "filter_tag", "selected": "work"}, sid)
    assert titles(resp) == ["写周报"] and resp["data"]["tag"] == "work"
    # the filter is kept in the session: a toggle on the filtered list keeps it
    resp = toggle(notes, 2, True, sid)
    assert titles(resp) == ["写周报 ✓"]
    resp = act(notes, {"action_id": "filter_tag", "selected": "all"}, sid)
    assert len(resp["data"]["items"]) == 3

    resp = act(notes, {"action_id": "search", "value": "低脂"}, sid)
    assert titles(resp) == ["买牛奶"] and "找到 1 条" in resp["message"]
    resp = act(notes, {"action_id": "search", "value": "100%_"}, sid)
    assert resp["data"]["items"] == [] and resp["data"]["empty"] == "没有找到符合条件的笔记"
    show_all = [a for a in resp["actions"] if a["action_id"] == "show_all"]
    assert show_all
    resp = act(notes, {"action_id": "show_all"}, sid)
    assert len(resp["data"]["items"]) == 3

    waiting = ask_delete(notes, 3, sid)
    (card,) = waiting["pending"]
    assert card["kind"] == "confirm" and card["prompt"] == "删除笔记「Read SICP」？删除后无法恢复。"
    assert [r[0] for r in db_rows(notes)] == [1, 2, 3]  # asking deletes nothing
    resp = answer(notes, views, waiting, True)
    assert resp["message"] == "已删除：Read SICP" and "Read SICP" not in titles(resp)
    assert [r[0] for r in db_rows(notes)] == [1, 2]
    again = notes.post(f"/api/interactions/{card['id']}", {"value": False})
    assert again.status_code == 409 and again.json()["current"]["answer"] == {"value": True}


def test_delete_answered_no_keeps_the_note(notes: Running, views: Subscription) -> None:
    add(notes, "keep me")
    waiting = ask_delete(notes, 1)
    resp = answer(notes, views, waiting, False)
    assert resp["status"] == "ok" and resp["message"] == "没有删除：keep me（你选择了不删除）"
    assert titles(resp) == ["keep me"]
    assert db_rows(notes) == [(1, "keep me", "", "other", 0)]
    audit = notes.get(f"/api/audit?app={APP}").json()
    assert not any("DELETE" in r["args"] for r in audit if r["tool"] == "db_query")


def test_an_unanswered_delete_expires_and_a_cancelled_one_deletes_nothing(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    system = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"),
        approvals={"timeout": 1},
        language="en",
    )
    add(system, "keep me")
    sub = system.system.bus.subscribe()
    try:
        waiting = ask_delete(system, 1)
        assert (
            waiting["pending"][0]["prompt"] == "Delete the note 'keep me'? This cannot be undone."
        )
        view = final_view(sub, waiting["run_id"])
        assert view["message"] == "Not deleted: keep me (the question expired unanswered)"
        waiting = ask_delete(system, 1)
        assert system.post(f"/api/runs/{waiting['run_id']}/cancel").ok
        view = final_view(sub, waiting["run_id"])
        assert view["message"] == "Not deleted: keep me (it was cancelled)"
    finally:
        sub.close()
    assert db_rows(system) == [(1, "keep me", "", "other", 0)]


ADD_BY_INSTRUCTION = [
    ("记一下明天买牛奶", "明天买牛奶", "shopping"),
    ("add note buy milk", "buy milk", "shopping"),
    ("notes add prepare the meeting #work", "prepare the meeting", "work"),
    ("记事本 记下 给妈妈打电话", "给妈妈打电话", "life"),
    ("remind me to buy milk", "buy milk", "shopping"),
    ("提醒我买牛奶 #急事 #家", "买牛奶", "急事,家"),  # free tags, as typed
]


def test_instructions_add_notes(notes: Running) -> None:
    for n, (text, title, tag) in enumerate(ADD_BY_INSTRUCTION, start=1):
        out = notes.instruct(text)
        [res] = out["results"]
        assert res["app"] == APP and res["response"]["status"] == "ok", text
        assert title in titles(res["response"]), text
        assert db_rows(notes)[-1] == (n, title, "", tag, 0), text


def test_instructions_search_and_open(notes: Running) -> None:
    notes.instruct("记一下明天买牛奶")
    notes.instruct("add note buy milk")
    notes.instruct("记一下 交电费")
    zh = notes.instruct("搜索 牛奶")["results"][0]["response"]
    assert titles(zh) == ["明天买牛奶"]
    en = notes.instruct("search milk")["results"][0]["response"]
    assert titles(en) == ["buy milk"]
    for text in ("打开记事本", "open notes"):
        resp = notes.instruct(text)["results"][0]["response"]
        assert len(resp["data"]["items"]) == 3, text


def test_notes_survive_a_system_restart(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    first = make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))
    first.instruct("记一下明天买牛奶")
    toggle(first, 1, True)
    first.stop()
    second = make_system(apps_dir=first.apps_dir, data_dir=first.data_dir)
    resp = second.open(APP)["response"]
    assert titles(resp) == ["明天买牛奶 ✓"]
    assert resp["data"]["items"][0]["done"] is True


GARBAGE: list[tuple[dict[str, Any], str]] = [
    ({"action_id": "add"}, "form_values"),
    ({"action_id": "add", "form_values": {"title": "", "tag": "work"}}, "标题不能为空"),
    ({"action_id": "add", "form_values": {"title": 5}}, "标题必须是文字"),
    ({"action_id": "add", "form_values": {"title": "x", "tag": {"t": 1}}}, "标签必须是文字"),
    ({"action_id": "add", "form_values": {"title": "x", "tag": "t" * 31}}, "太长"),
    ({"action_id": "add", "form_values": {"title": "x", "tag": "a,b,c,d,e,f"}}, "标签太多"),
    ({"action_id": "add", "form_values": {"title": "x", "body": ["a"]}}, "内容必须是文字"),
    ({"action_id": "add", "form_values": {"title": "x" * 20_000}}, "标题太长"),
    ({"action_id": "search", "value": {"q": 1}}, "搜索内容必须是文字"),
    ({"action_id": "filter_tag", "selected": 3}, "int"),
    ({"action_id": "filter_tag", "selected": "a,b"}, "'a,b'"),
    ({"action_id": "filter_tag"}, "标签"),
    ({"action_id": "done.1"}, "None"),
    ({"action_id": "done.1", "value": "yes"}, "None"),
    ({"action_id": "done", "params": {"id": 1, "value": "yes"}}, "'yes'"),
    ({"action_id": "done", "params": {"value": True}}, "None"),
    ({"action_id": "done", "params": {"id": 999, "value": True}}, "999"),
    ({"action_id": "done.999", "on": True}, "999"),
    ({"action_id": "done.abc", "on": True}, "'abc'"),
    ({"action_id": "done.", "on": True}, "''"),
    ({"action_id": "delete"}, "None"),
    ({"action_id": "delete", "params": {"id": "1; DROP TABLE notes"}}, "DROP"),
    ({"action_id": "delete", "params": {"id": -1}}, "-1"),
    ({"action_id": "delete", "params": {"id": True}}, "True"),
    ({"action_id": "explode", "value": 1}, "'explode'"),
]


def test_garbage_payloads_give_clear_errors_and_the_data_is_intact(notes: Running) -> None:
    add(notes, "keep me")
    for payload, needle in GARBAGE:
        resp = act(notes, payload)
        assert resp["status"] == "error" and resp["view_type"] == "error", payload
        assert needle in resp["message"], (payload, resp["message"])
        assert resp["actions"][0]["action_id"] == "show_all"
    assert db_rows(notes) == [(1, "keep me", "", "other", 0)]
    resp = notes.open(APP)["response"]
    assert resp["status"] == "ok" and titles(resp) == ["keep me"]


def test_free_tags_and_english_answers(make_system: Callable[..., Running], tmp_path: Path) -> None:
    system = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"), language="en"
    )
    empty = system.open(APP)["response"]
    assert empty["data"]["empty"] == "No notes yet; add the first one" and "message" not in empty
    resp = add(system, "Plan the trip", tag="Travel, 工作,  urgent ,travel")
    assert resp["message"] == "Noted: Plan the trip (#Travel #Work #urgent)"
    add(system, "Buy milk", tag="")  # no tag typed: guessed
    assert [r[3] for r in db_rows(system)] == ["Travel,work,urgent", "shopping"]
    [select] = [a for a in resp["actions"] if a["type"] == "select"]
    assert {"Travel", "urgent"} <= {o["value"] for o in select["options"]}  # tags in use
    only = act(system, {"action_id": "filter_tag", "selected": "urgent"})
    assert titles(only) == ["Plan the trip"] and only["data"]["tag"] == "urgent"
    assert only["data"]["items"][0]["sub"].startswith("#Travel #Work #urgent")
    none = act(system, {"action_id": "filter_tag", "selected": "urg"})  # whole tags only
    assert none["data"]["items"] == [] and none["data"]["empty"] == "No notes match"
    done = toggle(system, 2, True)
    assert done["message"] == "Done: Buy milk" and [r[4] for r in db_rows(system)] == [0, 1]
    text = str(empty) + str(resp) + str(only) + str(none) + str(done)
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in text), text  # English only


# ---------------------------------------------------------------- plain requests (issue 22)

PLAIN_ADDS = [
    ("remember to water the plants", "water the plants", "other"),
    ("please jot down: renew car insurance", "renew car insurance", "other"),
    ("note that the meeting moved to 3pm", "the meeting moved to 3pm", "work"),
    ("帮我记住周五交房租", "周五交房租", "other"),
    ("添加笔记 买面包", "买面包", "shopping"),
    ("记一下 写周报 标签 工作", "写周报", "work"),
    ("add a note call the bank, tag work", "call the bank", "work"),
]


def test_plain_requests_add_notes(notes: Running) -> None:
    for n, (text, title, tag) in enumerate(PLAIN_ADDS, start=1):
        out = notes.instruct(text)
        assert [r["app"] for r in out["results"]] == [APP], (text, out)
        resp = out["results"][0]["response"]
        assert resp["status"] == "ok" and title in titles(resp), (text, resp)
        assert db_rows(notes)[-1] == (n, title, "", tag, 0), text


def say(system: Running, text: str) -> dict[str, Any]:
    out = system.instruct(text)
    assert [r["app"] for r in out["results"]] == [APP], (text, out)
    resp: dict[str, Any] = out["results"][0]["response"]
    return resp


def done_of(system: Running) -> dict[str, int]:
    return {r[1]: r[4] for r in db_rows(system)}


def test_marking_a_note_done_by_the_words_it_contains(notes: Running) -> None:
    for title in ("dentist at 3pm", "买牛奶", "写周报"):
        add(notes, title)
    resp = say(notes, "mark the dentist note as done")
    assert resp["message"] == "Done: dentist at 3pm"  # asked in English
    assert done_of(notes) == {"dentist at 3pm": 1, "买牛奶": 0, "写周报": 0}
    resp = say(notes, "把买牛奶那条标记为完成")
    assert resp["message"] == "已完成：买牛奶"
    assert done_of(notes) == {"dentist at 3pm": 1, "买牛奶": 1, "写周报": 0}
    say(notes, "周报那条搞定了")
    assert done_of(notes) == {"dentist at 3pm": 1, "买牛奶": 1, "写周报": 1}
    say(notes, "mark the dentist note as not done")
    assert done_of(notes)["dentist at 3pm"] == 0
    # words no note contains: nothing changes, and the reply says so
    resp = say(notes, "mark the unicorn note as done")
    assert resp["message"] == "No note mentions 'unicorn'"
    assert done_of(notes) == {"dentist at 3pm": 0, "买牛奶": 1, "写周报": 1}


def test_deleting_a_note_by_its_words_asks_first(notes: Running, views: Subscription) -> None:
    for title in ("buy milk", "dentist at 3pm", "交电费"):
        add(notes, title)
    out = notes.instruct("delete the note about milk")
    assert out.get("state") == "waiting", out
    (card,) = out["pending"]
    assert card["kind"] == "confirm" and "buy milk" in card["prompt"]
    assert len(db_rows(notes)) == 3  # asking deletes nothing
    resp = answer(notes, views, out, True)
    assert resp["message"] == "Deleted: buy milk"  # asked in English
    assert [r[1] for r in db_rows(notes)] == ["dentist at 3pm", "交电费"]
    out = notes.instruct("把交电费那条删了")
    assert out.get("state") == "waiting", out
    resp = answer(notes, views, out, False)
    assert resp["message"].startswith("没有删除：交电费")
    assert [r[1] for r in db_rows(notes)] == ["dentist at 3pm", "交电费"]


def test_several_notes_match_so_the_app_asks_which(notes: Running, views: Subscription) -> None:
    for title in ("买牛奶", "牛奶过期了要扔掉", "写周报"):
        add(notes, title)
    out = notes.instruct("删掉关于牛奶的笔记")
    assert out.get("state") == "waiting", out
    (card,) = out["pending"]
    assert card["kind"] == "choice" and "牛奶" in card["prompt"]
    labels = {o["label"]: o["value"] for o in card["options"]}
    assert set(labels) == {"买牛奶", "牛奶过期了要扔掉", "都不删"}
    assert len(db_rows(notes)) == 3
    resp = answer(notes, views, out, labels["牛奶过期了要扔掉"])
    assert resp["message"] == "已删除：牛奶过期了要扔掉"
    assert [r[1] for r in db_rows(notes)] == ["买牛奶", "写周报"]

    add(notes, "牛奶 low fat")
    out = notes.instruct("mark the 牛奶 note as done")
    (card,) = out["pending"]
    assert card["kind"] == "choice"
    labels = {o["label"]: o["value"] for o in card["options"]}
    resp = answer(notes, views, out, labels["买牛奶"])
    assert resp["message"] == "Done: 买牛奶"  # asked in English
    assert done_of(notes) == {"买牛奶": 1, "写周报": 0, "牛奶 low fat": 0}
    # "done" again: only one of them is not done yet, so no question
    resp = say(notes, "牛奶完成了")
    assert resp["message"] == "已完成：牛奶 low fat"
    # "none of them" deletes nothing
    out = notes.instruct("delete the note about 牛奶")
    resp = answer(notes, views, out, "cancel")
    assert len(db_rows(notes)) == 3 and "No note was changed" in resp["message"]  # asked in English
    # no particular note named: the reply says how, and nothing is deleted
    resp = say(notes, "删除所有笔记")
    assert resp["message"].startswith("请说出笔记里的几个字") and len(db_rows(notes)) == 3


def test_plain_requests_list_and_search(notes: Running) -> None:
    for title in ("buy milk", "明天买牛奶", "dentist at 3pm"):
        add(notes, title)
    for text in ("show my notes", "我的笔记", "看看所有笔记"):
        assert len(say(notes, text)["data"]["items"]) == 3, text
    assert titles(say(notes, "find notes about milk")) == ["buy milk"]
    assert titles(say(notes, "搜一下牛奶")) == ["明天买牛奶"]
    assert titles(say(notes, "search my notes for dentist")) == ["dentist at 3pm"]
    assert titles(say(notes, "有没有关于牛奶的笔记")) == ["明天买牛奶"]
