"""The bundled ``files`` app: browse, preview, create, rename, delete — on a real disk."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.events import Subscription
from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps, final_view

APP = "files"
WAIT = 20.0
"""Seconds a test waits for the final view of a run that asked the user."""
PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00"
    b"\x00\x90wS\xde\x00\x00\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe"
    b"\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82"
)


@pytest.fixture
def files(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    return make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))


def ws(system: Running) -> Path:
    return system.apps_dir / APP / "workspace"


def act(system: Running, payload: dict[str, Any], sid: str | None = None) -> dict[str, Any]:
    return system.act(APP, payload, sid)


def row_ids(resp: dict[str, Any]) -> list[str]:
    return [r["id"] for r in resp["data"]["rows"]]


@pytest.fixture
def views(files: Running) -> Iterator[Subscription]:
    """The desktop's event stream: where the final view of a run that waited arrives."""
    sub = files.system.bus.subscribe()
    yield sub
    sub.close()


def ask_delete(system: Running, path: str, sid: str | None = None) -> dict[str, Any]:
    """Click Delete: the run waits on a confirm card; the whole reply (state, pending)."""
    body: dict[str, Any] = {"app": APP, "action_id": "delete", "params": {"path": path}}
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


def buttons_for(resp: dict[str, Any], path: str) -> dict[str, dict[str, Any]]:
    return {
        a["action_id"]: a
        for a in resp["actions"]
        if a["type"] == "button" and a.get("params", {}).get("path") == path
    }


def test_empty_workspace_then_create_and_browse_into_a_subfolder(files: Running) -> None:
    home = files.open(APP)["response"]
    assert home["status"] == "ok" and home["view_type"] == "table"
    assert home["data"]["rows"] == [] and "空" in home["message"]
    assert home["data"]["empty"] == "这个文件夹是空的"  # the one empty message
    # the list keeps the window: "New file" (the main action) opens the form as a view
    assert not [a for a in home["actions"] if a["type"] == "submit_form"]
    [new] = [a for a in home["actions"] if a["action_id"] == "new_file"]
    assert new["variant"] == "primary" and new["label"] == "新建文件"
    form = act(files, {"action_id": "new_file", "params": new["params"]})
    assert form["view_type"] == "form"
    assert [f["name"] for f in form["data"]["fields"]] == ["name", "content", "folder"]
    assert form["data"]["fields"][1]["monospace"] is True
    assert [a["action_id"] for a in form["actions"]] == ["create", "open_folder"]

    resp = act(
        files,
        {
            "action_id": "create",
            "form_values": {"name": "购物.txt", "content": "牛奶\n面包\n", "folder": ""},
        },
    )
    assert resp["status"] == "ok" and "购物.txt" in resp["message"]
    assert (ws(files) / "购物.txt").read_text(encoding="utf-8") == "牛奶\n面包\n"
    [row] = resp["data"]["rows"]
    assert row["name"] == "购物.txt" and row["size"] == "14 B" and row["type"] == "文本"
    assert resp["data"]["count"] == "1 项"
    mine = buttons_for(resp, "购物.txt")
    assert set(mine) == {"preview", "rename", "delete"}
    assert "confirm" not in mine["delete"]  # the app asks itself, with a card
    assert mine["delete"]["variant"] == "danger"

    resp = act(
        files,
        {
            "action_id": "create",
            "form_values": {"name": "docs/readme.md", "content": "# hi", "folder": ""},
        },
    )
    assert row_ids(resp) == ["docs/readme.md"]  # shows the folder it was created in
    assert (ws(files) / "docs" / "readme.md").read_text() == "# hi"
    root = act(files, {"action_id": "open_folder", "params": {"path": ""}})
    assert row_ids(root) == ["docs", "购物.txt"]  # folders first
    assert root["message"] == "「workspace」里有 2 项" and root["data"]["count"] == "2 项"
    assert root["data"]["rows"][0]["name"] == "docs/"
    assert buttons_for(root, "docs")["open_folder"]["label"] == "打开"
    inside = act(files, {"action_id": "open_folder", "params": {"path": "docs"}})
    crumbs = [a["params"]["path"] for a in inside["actions"] if a["action_id"] == "open_folder"]
    assert crumbs[:2] == ["", "docs"]
    # creating over an existing file is refused and keeps the file
    resp = act(
        files,
        {"action_id": "create", "form_values": {"name": "购物.txt", "content": "x", "folder": ""}},
    )
    assert resp["status"] == "error" and "已经存在" in resp["message"]
    assert resp["view_type"] == "table" and row_ids(resp) == ["docs", "购物.txt"]
    assert (ws(files) / "购物.txt").read_text(encoding="utf-8") == "牛奶\n面包\n"
    tools = {r["tool"] for r in files.get(f"/api/audit?app={APP}").json()}
    assert {"file_list", "file_write"} <= tools


def test_preview_by_file_type(files: Running) -> None:
    (ws(files) / "a.txt").write_text("第一行\nline 2", encoding="utf-8")
    (ws(files) / "run.py").write_text("print('hi')\n")
    (ws(files) / "pic.png").write_bytes(PNG)
    (ws(files) / "beep.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    (ws(files) / "blob.bin").write_bytes(bytes(range(256)))
    text = act(files, {"action_id": "preview", "params": {"path": "a.txt"}})
    assert text["view_type"] == "text" and text["data"]["content"] == "第一行\nline 2"
    links = [a for a in text["actions"] if a["type"] == "link"]
    assert links and all(a["href"] == "/apps/files/files/a.txt" for a in links)
    assert files.get(links[0]["href"]).text == "第一行\nline 2"
    follow = act(files, {"action_id": links[0]["action_id"], "href": links[0]["href"]})
    assert follow["view_type"] == "text" and follow["data"]["title"] == "a.txt"
    code = act(files, {"action_id": "preview", "params": {"path": "run.py"}})
    assert code["view_type"] == "code" and code["data"] == {
        "language": "python",
        "code": "print('hi')\n",
        "title": "run.py",
    }
    image = act(files, {"action_id": "preview", "params": {"path": "pic.png"}})
    assert image["view_type"] == "image" and image["data"]["url"] == "/apps/files/files/pic.png"
    assert files.get(image["data"]["url"]).content == PNG
    media = act(files, {"action_id": "preview", "params": {"path": "beep.wav"}})
    assert media["view_type"] == "media" and media["data"]["type"] == "audio"
    binary = act(files, {"action_id": "preview", "params": {"path": "blob.bin"}})
    assert binary["view_type"] == "text" and "二进制" in binary["data"]["content"]


def test_rename_text_and_binary_files_keeps_every_byte(files: Running) -> None:
    (ws(files) / "old.txt").write_text("内容 ✓\n", encoding="utf-8")
    (ws(files) / "pic.png").write_bytes(PNG)
    form = act(files, {"action_id": "rename", "params": {"path": "old.txt"}})
    assert form["view_type"] == "form"
    assert {f["name"]: f.get("value") for f in form["data"]["fields"]} == {
        "new_name": "old.txt",
        "path": "old.txt",
    }
    # exactly what the app sent: the system adds no defaults ("fields", "disabled")
    assert form["actions"][0] == {
        "type": "submit_form",
        "label": "重命名",
        "action_id": "do_rename",
        "variant": "primary",
    }
    resp = act(
        files, {"action_id": "do_rename", "form_values": {"path": "old.txt", "new_name": "新.txt"}}
    )
    assert resp["status"] == "ok" and "新.txt" in resp["message"]
    assert not (ws(files) / "old.txt").exists()
    assert (ws(files) / "新.txt").read_text(encoding="utf-8") == "内容 ✓\n"
    tools = [r["tool"] for r in files.get(f"/api/audit?app={APP}").json()]
    assert "shell_exec" in tools and "file_read" not in tools  # moved, not read (§14.5)

    resp = act(
        files,
        {"action_id": "do_rename", "form_values": {"path": "pic.png", "new_name": "photo.png"}},
    )
    assert resp["status"] == "ok"
    assert (ws(files) / "photo.png").read_bytes() == PNG and not (ws(files) / "pic.png").exists()

    # onto an existing name: refused, both files unchanged, the list stays with the reason
    resp = act(
        files,
        {"action_id": "do_rename", "form_values": {"path": "photo.png", "new_name": "新.txt"}},
    )
    assert resp["status"] == "error" and resp["view_type"] == "table"
    assert resp["message"].startswith("没有重命名「photo.png」：「新.txt」已经存在")
    assert sorted(row_ids(resp)) == ["photo.png", "新.txt"]
    assert (ws(files) / "photo.png").read_bytes() == PNG
    assert (ws(files) / "新.txt").read_text(encoding="utf-8") == "内容 ✓\n"
    # out of the folder: refused, nothing moved
    for bad in ("../escaped.txt", "sub/x.txt", ".hidden", ""):
        resp = act(
            files, {"action_id": "do_rename", "form_values": {"path": "photo.png", "new_name": bad}}
        )
        assert resp["status"] == "error" and resp["view_type"] == "error", bad
        assert "新名称" in resp["message"]
    assert (ws(files) / "photo.png").read_bytes() == PNG
    assert not (files.apps_dir / APP / "escaped.txt").exists()


def test_delete_asks_a_confirm_card_and_only_yes_deletes(
    files: Running, views: Subscription
) -> None:
    (ws(files) / "gone.txt").write_text("bye")
    waiting = ask_delete(files, "gone.txt")
    (card,) = waiting["pending"]
    assert card["kind"] == "confirm" and card["app"] == APP
    assert "gone.txt" in card["prompt"] and "无法恢复" in card["prompt"]
    assert card["options"] == [True, False]
    assert (ws(files) / "gone.txt").exists()  # asking deletes nothing
    done = answer(files, views, waiting, True)
    assert done["status"] == "ok" and done["message"] == "已删除「gone.txt」"
    assert not (ws(files) / "gone.txt").exists()
    assert "gone.txt" not in row_ids(done)
    rows = files.get(f"/api/audit?app={APP}").json()
    assert any(
        r["tool"] == "shell_exec" and "gone.txt" in r["args"] and r["status"] == "ok" for r in rows
    )
    assert any(r["tool"] == "ask" and r["step_id"] == "step_confirm_delete" for r in rows)
    # answered: the card stays answered; another answer is refused, naming the first
    again = files.post(f"/api/interactions/{card['id']}", {"value": False})
    assert again.status_code == 409 and again.json()["current"]["answer"] == {"value": True}


def test_delete_answered_no_keeps_the_file_and_says_so(files: Running, views: Subscription) -> None:
    (ws(files) / "keep.txt").write_text("still here")
    kept = answer(files, views, ask_delete(files, "keep.txt"), False)
    assert kept["status"] == "ok" and kept["view_type"] == "table"
    assert kept["message"] == "没有删除「keep.txt」：你选择了不删除"
    assert row_ids(kept) == ["keep.txt"]
    assert (ws(files) / "keep.txt").read_text() == "still here"
    rows = files.get(f"/api/audit?app={APP}").json()
    assert not any(r["tool"] == "shell_exec" for r in rows)


def test_delete_of_folders_and_of_a_missing_file(files: Running, views: Subscription) -> None:
    (ws(files) / "full").mkdir()
    (ws(files) / "full" / "keep.txt").write_text("keep")
    (ws(files) / "empty").mkdir()
    waiting = ask_delete(files, "full")
    assert "文件夹「full」" in waiting["pending"][0]["prompt"]
    full = answer(files, views, waiting, True)
    assert full["status"] == "error" and "不是空的" in full["message"]
    assert (ws(files) / "full" / "keep.txt").read_text() == "keep"
    empty = answer(files, views, ask_delete(files, "empty"), True)
    assert empty["status"] == "ok" and not (ws(files) / "empty").exists()
    # nothing to delete: a clear error at once, no question
    r = files.post("/api/action", {"app": APP, "action_id": "delete", "params": {"path": "x"}})
    assert "state" not in r.json() and "找不到" in r.json()["response"]["message"]


def test_an_unanswered_delete_expires_and_deletes_nothing(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    system = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"),
        approvals={"timeout": 1},
        language="en",
    )
    (ws(system) / "a.txt").write_text("keep")
    sub = system.system.bus.subscribe()
    try:
        waiting = ask_delete(system, "a.txt")
        assert waiting["pending"][0]["prompt"].startswith("Really delete the file 'a.txt'?")
        view = final_view(sub, waiting["run_id"])
        assert view["message"] == "Not deleted 'a.txt': the question expired unanswered"
        # cancelled (the run's Stop button): the same, nothing deleted
        waiting = ask_delete(system, "a.txt")
        assert system.post(f"/api/runs/{waiting['run_id']}/cancel").ok
        view = final_view(sub, waiting["run_id"])
        assert view["message"] == "Not deleted 'a.txt': it was cancelled"
    finally:
        sub.close()
    assert (ws(system) / "a.txt").read_text() == "keep"
    rows = system.get(f"/api/audit?app={APP}").json()
    assert not any(r["tool"] == "shell_exec" for r in rows)


def test_paths_outside_the_workspace_are_refused_and_nothing_changes(
    files: Running, views: Subscription, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, ws(files) / "link.txt")
    for action in ("preview", "rename", "delete"):
        for path in ("../../../secret.txt", "/etc/passwd", "~/x", ".aios/tmp"):
            resp = act(files, {"action_id": action, "params": {"path": path}})
            assert resp["status"] == "error" and resp["view_type"] == "error", (action, path)
            assert repr(path) in resp["message"] or "为空" in resp["message"]
    # a symlink pointing outside: listed, but neither read nor deleted through it
    resp = act(files, {"action_id": "preview", "params": {"path": "link.txt"}})
    assert resp["status"] == "error" and "top secret" not in str(resp)
    waiting = ask_delete(files, "link.txt")
    resp = answer(files, views, waiting, True)
    assert resp["status"] == "error"
    assert secret.read_text() == "top secret" and (ws(files) / "link.txt").is_symlink()
    resp = act(
        files,
        {
            "action_id": "create",
            "form_values": {"name": "../../evil.txt", "content": "x", "folder": ""},
        },
    )
    assert resp["status"] == "error" and "'..'" in resp["message"]
    resp = act(
        files,
        {
            "action_id": "create",
            "form_values": {"name": "evil.txt", "content": "x", "folder": "../.."},
        },
    )
    assert resp["status"] == "error"
    assert not list(tmp_path.rglob("evil.txt"))


def test_instructions_in_chinese_and_english(files: Running, views: Subscription) -> None:
    out = files.instruct("文件管理 新建 hello.txt 你好世界")
    [res] = out["results"]
    assert res["app"] == APP and res["response"]["status"] == "ok"
    assert (ws(files) / "hello.txt").read_text(encoding="utf-8") == "你好世界"
    sid = out["session_id"]
    prev = files.instruct("files preview hello.txt", sid)["results"][0]["response"]
    assert prev["view_type"] == "text" and prev["data"]["content"] == "你好世界"
    files.instruct("文件管理 重命名 hello.txt 为 hi.txt", sid)
    assert (ws(files) / "hi.txt").read_text(encoding="utf-8") == "你好世界"
    waiting = files.instruct("files delete hi.txt", sid)
    assert waiting["state"] == "waiting" and waiting["results"] == []
    (card,) = waiting["pending"]
    assert card["kind"] == "confirm" and "hi.txt" in card["prompt"]
    assert (ws(files) / "hi.txt").exists()  # an instruction never deletes without a yes
    # asked in English: answered in English (issue 22)
    assert answer(files, views, waiting, False)["message"].startswith("Not deleted 'hi.txt'")
    home = files.instruct("打开文件管理", sid)["results"][0]["response"]
    assert home["view_type"] == "table" and row_ids(home) == ["hi.txt"]
    waiting = files.instruct("文件管理 删除 hi.txt", sid)
    assert answer(files, views, waiting, True)["message"] == "已删除「hi.txt」"
    assert not (ws(files) / "hi.txt").exists()


GARBAGE: list[dict[str, Any]] = [
    {"action_id": "open_folder", "params": {"path": 42}},
    {"action_id": "open_folder", "params": {"path": "nowhere"}},
    {"action_id": "preview"},
    {"action_id": "preview", "params": {"path": None}},
    {"action_id": "preview", "params": {"path": ["a.txt"]}},
    {"action_id": "rename", "params": {"path": {"x": 1}}},
    {"action_id": "do_rename"},
    {"action_id": "do_rename", "form_values": {"path": "a.txt"}},
    {"action_id": "do_rename", "form_values": {"path": 1, "new_name": 2}},
    {"action_id": "delete", "params": {"path": "missing.txt"}},
    {"action_id": "confirm_delete", "params": {"path": "a.txt"}},  # gone: only a yes deletes
    {"action_id": "create", "form_values": {"name": "", "content": "x"}},
    {"action_id": "create", "form_values": {"name": "b.txt", "content": {"no": 1}}},
    {"action_id": "create", "params": {"name": "b.txt"}},
    {"action_id": "download", "href": "https://evil.example/x"},
    {"action_id": "open_link"},
    {"action_id": "rm_rf", "value": "/"},
    {"action_id": "edit", "params": {"path": "../a.txt"}},
    {"action_id": "save"},
    {"action_id": "save", "form_values": {"path": "a.txt", "content": 5}},
    {"action_id": "save", "form_values": {"path": "nope.txt", "content": "x"}},
    {"action_id": "new_file", "params": {"path": "/etc"}},
]


def test_garbage_payloads_give_clear_errors_and_nothing_changes(files: Running) -> None:
    (ws(files) / "a.txt").write_text("keep me")
    before = sorted(p.name for p in ws(files).iterdir())
    for payload in GARBAGE:
        resp = act(files, payload)
        assert resp["status"] == "error" and resp["view_type"] == "error", payload
        assert resp["message"] and resp["data"]["message"] == resp["message"]
        assert resp["actions"][0]["action_id"] == "open_folder"
    assert sorted(p.name for p in ws(files).iterdir()) == before
    assert (ws(files) / "a.txt").read_text() == "keep me"
    assert files.open(APP)["response"]["status"] == "ok"


def test_a_delete_asks_once_even_when_the_policy_asks_about_commands(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    """In the "smart" mode a shell command asks for approval: the confirm card covers
    the delete command, so a yes deletes without a second card; other commands still ask."""
    system = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"),
        approvals={"mode": "smart"},
    )
    (ws(system) / "gone.txt").write_text("bye")
    (ws(system) / "old.txt").write_text("keep")
    sub = system.system.bus.subscribe()
    try:
        waiting = ask_delete(system, "gone.txt")
        (card,) = waiting["pending"]
        assert card["kind"] == "confirm"
        [covered] = card["steps"][0]["covers"]  # the card lists what a yes allows
        assert covered["tool"] == "shell_exec" and covered["text"].endswith(
            "os.remove(p)' gone.txt"
        )
        r = system.post(f"/api/interactions/{card['id']}", {"value": True})
        assert r.status_code == 200, r.text
        asked: list[str] = []
        while True:
            ev = sub.get(timeout=WAIT)
            assert ev is not None, "no final view"
            if ev.get("type") == "interaction" and ev.get("id") != card["id"]:
                asked.append(str(ev.get("kind")))  # a second card
            if ev.get("type") == "view" and ev.get("run_id") == waiting["run_id"]:
                break
        assert ev["response"]["message"] == "已删除「gone.txt」" and asked == []
        assert not (ws(system) / "gone.txt").exists()
        [rm] = [r for r in system.get(f"/api/audit?app={APP}").json() if r["tool"] == "shell_exec"]
        assert rm["status"] == "ok" and rm["decision"] == "user"
        # the yes covered that one call: a rename's command is still asked about
        r = system.post(
            "/api/action",
            {
                "app": APP,
                "action_id": "do_rename",
                "form_values": {"path": "old.txt", "new_name": "n.txt"},
            },
        )
        assert r.json().get("state") == "waiting"
        assert [p["kind"] for p in r.json()["pending"]] == ["approval"]
        assert system.post(f"/api/runs/{r.json()['run_id']}/cancel").ok
    finally:
        sub.close()


def test_edit_and_save_a_text_file_and_refuse_binary_or_huge_ones(files: Running) -> None:
    (ws(files) / "todo.md").write_text("# 待办\n- 买牛奶\n", encoding="utf-8")
    (ws(files) / "blob.dat").write_bytes(bytes(range(256)))
    preview = act(files, {"action_id": "preview", "params": {"path": "todo.md"}})
    assert buttons_for(preview, "todo.md")["edit"]["variant"] == "primary"
    form = act(files, {"action_id": "edit", "params": {"path": "todo.md"}})
    assert form["view_type"] == "form"
    content, path = form["data"]["fields"]
    assert content["type"] == "textarea" and content["monospace"] is True
    assert content["value"] == "# 待办\n- 买牛奶\n" and path["value"] == "todo.md"
    assert [a["action_id"] for a in form["actions"]] == ["save", "preview"]  # Save / Cancel
    saved = act(
        files,
        {"action_id": "save", "form_values": {"path": "todo.md", "content": "# 待办\n- 面包\n"}},
    )
    assert saved["status"] == "ok" and saved["message"] == "已保存「todo.md」"
    assert saved["view_type"] == "text" and saved["data"]["content"] == "# 待办\n- 面包\n"
    assert (ws(files) / "todo.md").read_text(encoding="utf-8") == "# 待办\n- 面包\n"
    # by instruction too
    out = files.instruct("文件管理 编辑 todo.md")["results"][0]["response"]
    assert out["view_type"] == "form" and out["data"]["fields"][0]["value"] == "# 待办\n- 面包\n"
    # a binary file: refused, the list stays, the reason in its message; nothing written
    binary = act(files, {"action_id": "edit", "params": {"path": "blob.dat"}})
    assert binary["status"] == "error" and binary["view_type"] == "table"
    assert binary["message"] == "「blob.dat」是二进制文件，不能按文本编辑"
    assert (ws(files) / "blob.dat").read_bytes() == bytes(range(256))
    with (ws(files) / "big.txt").open("w") as f:
        f.truncate(1_000_001)  # EDIT_MAX_BYTES + 1, sparse
    big = act(files, {"action_id": "edit", "params": {"path": "big.txt"}})
    assert big["status"] == "error" and "太大" in big["message"] and "big.txt" in big["message"]
    tools = {r["tool"] for r in files.get(f"/api/audit?app={APP}").json()}
    assert "file_write" in tools and "shell_exec" not in tools


def test_my_files_is_the_workspace_itself(files: Running) -> None:
    (ws(files) / "a.txt").write_text("a")
    (ws(files) / "docs").mkdir()
    for text in ("列出我的文件", "我的文件", "list my files", "文件管理 所有文件"):
        resp = files.instruct(text)["results"][0]["response"]
        assert resp["status"] == "ok" and resp["view_type"] == "table", (text, resp)
        assert row_ids(resp) == ["docs", "a.txt"] and resp["data"]["folder"] == "", text


def test_an_english_desktop_gets_english_answers_only(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    system = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"), language="en"
    )
    (ws(system) / "a.txt").write_text("a")
    (ws(system) / "b.txt").write_text("b")
    home = system.open(APP)["response"]
    assert home["message"] == "2 items in workspace" and home["data"]["count"] == "2 items"
    labels = {a["label"] for a in home["actions"]}
    assert {"New file", "Refresh", "Preview", "Rename", "Delete"} <= labels
    assert [c["label"] for c in home["data"]["columns"]] == ["Name", "Type", "Size", "Modified"]
    clash = act(
        system, {"action_id": "do_rename", "form_values": {"path": "a.txt", "new_name": "b.txt"}}
    )
    assert clash["status"] == "error" and clash["view_type"] == "table"
    assert clash["message"].startswith("Not renamed 'a.txt': 'b.txt' already exists")
    text = str(home) + str(clash)
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in text), text  # no Chinese at all


@pytest.mark.parametrize(
    ("text", "name", "content"),
    [
        ("create a new file called todo.txt", "todo.txt", ""),
        ("写一个文件 hello.txt 内容是你好", "hello.txt", "你好"),
        ("please make a file named notes.md with the content buy milk", "notes.md", "buy milk"),
        ("帮我新建一个叫「购物清单.txt」的文件，内容是牛奶", "购物清单.txt", "牛奶"),
        ('files: create plan.txt containing "ship it"', "plan.txt", "ship it"),
    ],
)
def test_a_plain_request_creates_the_file_it_names(
    files: Running, text: str, name: str, content: str
) -> None:
    resp = files.instruct(text)["results"][0]["response"]
    assert resp["status"] == "ok" and name in row_ids(resp), (text, resp["message"])
    assert sorted(p.name for p in ws(files).iterdir() if not p.name.startswith(".")) == [name]
    assert (ws(files) / name).read_text(encoding="utf-8") == content


@pytest.mark.parametrize(
    "text",
    ["看看工作区里有哪些文件", "list the files in your workspace", "what files do I have?"],
)
def test_asking_what_is_in_the_workspace_lists_it(files: Running, text: str) -> None:
    (ws(files) / "a.txt").write_text("a")
    (ws(files) / "docs").mkdir()
    resp = files.instruct(text)["results"][0]["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "table", (text, resp["message"])
    assert row_ids(resp) == ["docs", "a.txt"] and resp["data"]["folder"] == ""


def test_reading_renaming_and_deleting_phrased_plainly(files: Running, views: Subscription) -> None:
    (ws(files) / "todo.txt").write_text("buy milk", encoding="utf-8")
    (ws(files) / "docs").mkdir()
    (ws(files) / "docs" / "plan.md").write_text("# plan", encoding="utf-8")
    read = files.instruct("could you show me what is in todo.txt?")["results"][0]["response"]
    assert read["view_type"] == "text" and read["data"]["content"] == "buy milk"
    inside = files.instruct("打开 docs 文件夹")["results"][0]["response"]
    assert row_ids(inside) == ["docs/plan.md"]
    files.instruct("请把 todo.txt 改名为 done.txt")
    assert (ws(files) / "done.txt").read_text(encoding="utf-8") == "buy milk"
    assert not (ws(files) / "todo.txt").exists()
    waiting = files.instruct("please delete the file called done.txt")
    assert (
        answer(files, views, waiting, True)["message"] == "Deleted 'done.txt'"
    )  # asked in English
    assert not (ws(files) / "done.txt").exists()


def on_disk(system: Running) -> dict[str, str | None]:
    """Every visible entry of the workspace: a file's text, or ``None`` for a folder."""
    root = ws(system)
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    }


@pytest.mark.parametrize(
    ("text", "name", "content"),
    [
        ("please create a file 'shopping list.txt'", "shopping list.txt", ""),
        ("新建文件「购物 清单.txt」", "购物 清单.txt", ""),
        (
            "create a file called greeting.txt with the text hello world",
            "greeting.txt",
            "hello world",
        ),
        ("make a file called port.txt and put 8080 in it", "port.txt", "8080"),
        ("new file x.txt with hello inside", "x.txt", "hello"),
        ('write "buy milk" into a file named errands.txt', "errands.txt", "buy milk"),
        ("创建 memo.txt 写入“明天九点开会”", "memo.txt", "明天九点开会"),
        ("在 a.txt 里写上 你好", "a.txt", "你好"),
        ("files, put 42 in answer.txt", "answer.txt", "42"),
    ],
)
def test_names_with_spaces_and_content_said_plainly(
    files: Running, text: str, name: str, content: str
) -> None:
    resp = files.instruct(text)["results"][0]["response"]
    assert resp["status"] == "ok" and name in row_ids(resp), (text, resp["message"])
    assert on_disk(files) == {name: content}


@pytest.mark.parametrize(
    ("text", "made"),
    [
        ("新建文件夹 照片", "照片"),
        ("建一个叫 工作 的目录", "工作"),
        ("make a folder called photos", "photos"),
        ("create a directory named 2024", "2024"),
        ("文件管理 帮我新建一个报告文件夹", "报告"),
    ],
)
def test_a_plain_request_makes_the_folder_it_names(files: Running, text: str, made: str) -> None:
    resp = files.instruct(text)["results"][0]["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "table", (text, resp["message"])
    assert row_ids(resp) == [made] and made in resp["message"]
    assert on_disk(files) == {made: None}  # a folder, empty; no file, no form


def test_folders_nest_exist_once_and_need_a_name(files: Running) -> None:
    (ws(files) / "docs").mkdir()
    made = files.instruct("create a folder called img in docs")["results"][0]["response"]
    assert made["status"] == "ok" and row_ids(made) == ["docs/img"], made["message"]
    inside = files.instruct("create a.txt in docs")["results"][0]["response"]
    assert inside["status"] == "ok" and "docs/a.txt" in row_ids(inside), inside["message"]
    assert on_disk(files) == {"docs": None, "docs/a.txt": "", "docs/img": None}
    again = files.instruct("新建文件夹 docs")["results"][0]["response"]
    assert again["status"] == "error" and again["view_type"] == "table"
    assert again["message"] == "「docs」已经存在，没有新建；换个名字吧"
    nameless = files.instruct("新建文件夹")["results"][0]["response"]
    assert nameless["status"] == "error" and "新文件夹叫什么" in nameless["message"]
    assert on_disk(files) == {"docs": None, "docs/a.txt": "", "docs/img": None}  # unchanged


@pytest.mark.parametrize(
    "text",
    [
        "列一下文件夹里的东西",
        "what's in this folder",
        "files: show everything",  # bare, "show everything" names no app: the router's call
        "show everything in files",
        "文件管理 这里有什么",
    ],
)
def test_a_terse_listing_shows_the_workspace(files: Running, text: str) -> None:
    (ws(files) / "a.txt").write_text("a")
    (ws(files) / "docs").mkdir()
    resp = files.instruct(text)["results"][0]["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "table", (text, resp["message"])
    assert row_ids(resp) == ["docs", "a.txt"] and resp["data"]["folder"] == ""


@pytest.mark.parametrize("text", ["delete junk.log", "rm junk.log", "删除 junk.log"])
def test_a_terse_delete_still_asks_once(files: Running, views: Subscription, text: str) -> None:
    (ws(files) / "junk.log").write_text("x")
    (ws(files) / "keep.txt").write_text("k")
    waiting = files.instruct(text)
    assert waiting.get("state") == "waiting", waiting
    assert (ws(files) / "junk.log").exists()  # asking deletes nothing
    assert answer(files, views, waiting, True)["message"] == "已删除「junk.log」"
    assert on_disk(files) == {"keep.txt": "k"}


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        ("old.txt 改名 new.txt", "old.txt", "new.txt"),
        ("rename 'old file.txt' to 'new file.txt'", "old file.txt", "new file.txt"),
        ("把 old.txt 改成 新.txt", "old.txt", "新.txt"),
    ],
)
def test_a_terse_rename_keeps_the_bytes(files: Running, text: str, old: str, new: str) -> None:
    (ws(files) / old).write_text("same bytes", encoding="utf-8")
    resp = files.instruct(text)["results"][0]["response"]
    assert resp["status"] == "ok" and row_ids(resp) == [new], (text, resp["message"])
    assert on_disk(files) == {new: "same bytes"}
