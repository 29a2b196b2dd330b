"""系统控制 (system_agent) end to end: the real system, the real app process, the desktop's
snapshot posted over HTTP as the desktop posts it, and the ui_op events the desktop would
receive (in-process bus subscription, and once through the real WebSocket)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.errors import BadRequest
from aios.events import Subscription
from tests.conftest import ROOT
from tests.integration.conftest import TOKEN, Running, copy_apps, final_view
from tests.util import WsClient

APP = "system_agent"
VIEWPORT = {"width": 1280, "height": 800}
WAIT = 20.0
"""Seconds a test waits for the final view of a run that asked the user."""


def desktop_elements() -> list[dict[str, Any]]:
    """What renderer/js/desk/snapshot.js reports for a desktop with the music window open."""
    return [
        {
            "id": "taskbar",
            "type": "taskbar",
            "label": "taskbar",
            "x": 0,
            "y": 752,
            "width": 1280,
            "height": 48,
            "visible": True,
        },
        {
            "id": "start_button",
            "type": "button",
            "label": "开始",
            "x": 8,
            "y": 758,
            "width": 40,
            "height": 36,
            "visible": True,
        },
        {
            "id": "start_menu",
            "type": "menu",
            "label": "开始",
            "x": 8,
            "y": 400,
            "width": 300,
            "height": 350,
            "visible": False,
        },
        {
            "id": "tray",
            "type": "tray",
            "label": "系统托盘",
            "x": 1060,
            "y": 758,
            "width": 120,
            "height": 36,
            "visible": True,
        },
        {
            "id": "clock",
            "type": "clock",
            "label": "14:05",
            "x": 1190,
            "y": 758,
            "width": 80,
            "height": 36,
            "visible": True,
        },
        {
            "id": "command_input",
            "type": "input",
            "label": "输入指令…",
            "x": 420,
            "y": 760,
            "width": 400,
            "height": 32,
            "visible": True,
        },
        {
            "id": "mic_button",
            "type": "button",
            "label": "语音输入",
            "x": 830,
            "y": 760,
            "width": 32,
            "height": 32,
            "visible": True,
        },
        {
            "id": "icon_music",
            "type": "icon",
            "label": "音乐",
            "x": 60,
            "y": 758,
            "width": 36,
            "height": 36,
            "visible": True,
        },
        {
            "id": "menu_music",
            "type": "menu_item",
            "label": "音乐",
            "x": 20,
            "y": 420,
            "width": 260,
            "height": 32,
            "visible": False,
        },
        {
            "id": "win_music",
            "type": "window",
            "label": "音乐",
            "x": 300,
            "y": 120,
            "width": 480,
            "height": 360,
            "visible": True,
        },
        {
            "id": "winbody_music",
            "type": "panel",
            "label": "音乐",
            "x": 300,
            "y": 156,
            "width": 480,
            "height": 324,
            "visible": True,
            "window": "music",
        },
        {
            "id": "btn_play",
            "type": "button",
            "label": "▶ 播放",
            "x": 400,
            "y": 300,
            "width": 80,
            "height": 36,
            "visible": True,
            "window": "music",
        },
        {
            "id": "btn_next",
            "type": "button",
            "label": "下一首",
            "x": 490,
            "y": 300,
            "width": 80,
            "height": 36,
            "visible": True,
            "window": "music",
        },
    ]


def with_video_window() -> list[dict[str, Any]]:
    """A second window with its own 播放 button: "播放按钮" is now ambiguous."""
    return desktop_elements() + [
        {
            "id": "win_video",
            "type": "window",
            "label": "视频",
            "x": 700,
            "y": 200,
            "width": 400,
            "height": 300,
            "visible": True,
        },
        {
            "id": "btn_play",
            "type": "button",
            "label": "播放",
            "x": 760,
            "y": 420,
            "width": 70,
            "height": 30,
            "visible": True,
            "window": "video",
        },
    ]


@pytest.fixture
def running(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    return make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))


@pytest.fixture
def ops(running: Running) -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """Drain the ui_op events the desktop would have received so far."""
    sub = running.system.bus.subscribe()

    def drain() -> list[dict[str, Any]]:
        out = []
        while (event := sub.get(timeout=0.05)) is not None:
            if event["type"] == "ui_op":
                assert event["by"] == APP
                envelope = ("type", "ts", "by", "seq", "epoch")
                out.append({k: v for k, v in event.items() if k not in envelope})
        return out

    yield drain
    sub.close()


def post_snapshot(running: Running, elements: list[dict[str, Any]]) -> None:
    r = running.post("/api/ui/snapshot", {"elements": elements, "viewport": VIEWPORT})
    assert r.status_code == 200, r.text
    assert r.json()["elements"] == len(elements)


class Session:
    def __init__(self, running: Running):
        self.running = running
        self.sid: str | None = None

    def say(self, text: str) -> dict[str, Any]:
        out = self.running.instruct(text, self.sid)
        self.sid = out["session_id"]
        assert [r["app"] for r in out["results"]] == [APP], out
        return out["results"][0]["response"]

    def ask(self, text: str) -> dict[str, Any]:
        """An instruction the app answers with a question: the run waits on the card(s)."""
        out = self.running.instruct(text, self.sid)
        self.sid = out["session_id"]
        assert out.get("state") == "waiting" and out["results"] == [], out
        return out

    def act(self, action_id: str, **payload: Any) -> dict[str, Any]:
        body = {"app": APP, "action_id": action_id, **payload}
        if self.sid:
            body["session_id"] = self.sid
        r = self.running.post("/api/action", body)
        assert r.status_code == 200, r.text
        self.sid = r.json()["session_id"]
        return r.json()["response"]


def button(reply: dict[str, Any], action_id: str, index: int = 0) -> dict[str, Any]:
    found = [a for a in reply["actions"] if a["action_id"] == action_id]
    assert found, f"no {action_id} action in {reply['actions']}"
    return found[index]


# ------------------------------------------------------------------ no snapshot yet


def test_without_a_snapshot_it_says_so_and_sends_nothing(running: Running, ops: Any) -> None:
    home = running.open(APP)["response"]
    assert home["status"] == "error"
    assert "桌面还没有上报界面快照" in home["message"]
    reply = Session(running).say("把时钟变成红色")
    assert "桌面还没有上报界面快照" in reply["message"]
    assert ops() == []
    # The snapshot was read the way spec §12.3 says: a cache_get step, audited.
    rows = running.get(f"/api/audit?app={APP}").json()
    assert any(r["tool"] == "cache_get" and r["status"] == "ok" and r["step_id"] for r in rows)


# ----------------------------------------------------------------- the main flows


def test_chinese_and_english_commands_send_exact_ui_ops(running: Running, ops: Any) -> None:
    post_snapshot(running, desktop_elements())
    s = Session(running)

    reply = s.say("把播放按钮移到左上角")
    assert reply["status"] == "ok" and reply["view_type"] == "text"
    assert reply["message"] == "已将播放按钮移到左上角"
    assert ops() == [{"op": "move", "id": "btn_play", "window": "music", "x": 20, "y": 20}]
    # Undo takes back this reply's changes from the system's log
    assert button(reply, "undo")["params"] == {"count": 1}

    reply = s.say("move the play button to the bottom right")
    # viewport minus element size minus the 20 px margin would cover the clock: the nearest
    # free spot above it
    (moved,) = ops()
    assert moved["x"] == 1280 - 80 - 20 and moved["y"] + 36 <= 758

    # "按钮" alone: the button it acted on last
    reply = s.say("把按钮放大到 200x80")
    assert ops() == [
        {"op": "resize", "id": "btn_play", "window": "music", "width": 200, "height": 80}
    ]
    assert "200×80" in reply["message"]

    reply = s.say("hide the clock")
    assert ops() == [{"op": "hide", "id": "clock"}]
    assert reply["message"] == "Hid the clock"  # asked in English: answered in English
    s.say("显示时钟")
    assert ops() == [{"op": "show", "id": "clock"}]
    s.say("隐藏时钟")
    assert ops() == [{"op": "hide", "id": "clock"}]

    reply = s.say("把时钟变成红色")
    assert ops() == [{"op": "change_color", "id": "clock", "color": "red"}]
    assert reply["message"] == "已将时钟变成红色"
    s.say("make the clock blue")
    assert ops() == [{"op": "change_color", "id": "clock", "color": "blue"}]
    s.say("把时钟变成 #ff8800")
    assert ops() == [{"op": "change_color", "id": "clock", "color": "#ff8800"}]

    # no element named: the last one acted on (the clock)
    reply = s.say("旋转 45 度")
    assert ops() == [{"op": "rotate", "id": "clock", "degrees": 45}]
    assert reply["message"] == "已将时钟旋转 45 度"
    s.say("rotate the taskbar 90 degrees")
    assert ops() == [{"op": "rotate", "id": "taskbar", "degrees": 90}]

    reply = s.say("把时钟的文字改成 你好")
    assert ops() == [{"op": "change_text", "id": "clock", "text": "你好"}]
    assert reply["message"] == "已将时钟的文字改成“你好”"

    s.say("move the microphone to 300,200")
    assert ops() == [{"op": "move", "id": "mic_button", "x": 300, "y": 200}]
    s.say("把开始按钮移到 (600, 100)")
    assert ops() == [{"op": "move", "id": "start_button", "x": 600, "y": 100}]
    s.say("把音乐窗口移到屏幕中间")
    assert ops() == [{"op": "move", "id": "win_music", "x": (1280 - 480) / 2, "y": (800 - 360) / 2}]


def test_compound_command_sends_every_op_and_undo_reverses_them(running: Running, ops: Any) -> None:
    post_snapshot(running, desktop_elements())
    s = Session(running)
    reply = s.say("把时钟变成红色然后旋转 30 度")
    assert ops() == [
        {"op": "change_color", "id": "clock", "color": "red"},
        {"op": "rotate", "id": "clock", "degrees": 30},
    ]
    assert reply["message"] == "已将时钟变成红色；已将时钟旋转 30 度"
    undo = button(reply, "undo")
    assert undo["params"] == {"count": 2}
    back = s.act("undo", params=undo["params"])
    assert back["status"] == "ok"
    assert back["message"] == "已撤销最近 2 处修改"
    assert ops() == [
        {"op": "undo", "undone": {"op": "rotate", "id": "clock", "degrees": 30}},
        {"op": "undo", "undone": {"op": "change_color", "id": "clock", "color": "red"}},
    ]
    assert running.get("/api/ui/ops").json() == {"ops": []}
    # a quick action carries a complete op: "hide" of the clock
    quick = next(
        a
        for a in reply["actions"]
        if a["action_id"] == "apply" and a["params"]["ops"][0]["op"] == "hide"
    )
    s.act("apply", params=quick["params"])
    assert ops() == [{"op": "hide", "id": "clock"}]


def log_of(running: Running) -> list[dict[str, Any]]:
    r = running.get("/api/ui/ops")
    assert r.status_code == 200, r.text
    return r.json()["ops"]


def test_changes_are_logged_and_taken_back_one_by_one_per_element_and_all(
    make_system: Callable[..., Running], running: Running, ops: Any
) -> None:
    post_snapshot(running, desktop_elements())
    s = Session(running)
    reply = s.say("把开始按钮变成红色")
    assert reply["message"] == "已将开始按钮变成红色"
    # the colour the renderer paints as the button's background (js/desk/uiops.js)
    assert ops() == [{"op": "change_color", "id": "start_button", "color": "red"}]
    s.say("把时钟移到左上角")
    s.say("旋转任务栏 10 度")
    assert [o["id"] for o in ops()] == ["clock", "taskbar"]
    assert [(o["op"], o["id"]) for o in log_of(running)] == [
        ("change_color", "start_button"),
        ("move", "clock"),
        ("rotate", "taskbar"),
    ]

    reply = s.say("撤销")
    assert reply["message"] == "已撤销上一处修改"
    assert ops() == [{"op": "undo", "undone": {"op": "rotate", "id": "taskbar", "degrees": 10}}]
    assert len(log_of(running)) == 2
    reply = s.say("把时钟放回原来的位置")
    assert reply["message"] == "已把时钟恢复原样"
    assert ops() == [{"op": "reset", "id": "clock", "removed": 1}]
    assert [o["id"] for o in log_of(running)] == ["start_button"]

    # a bad op in a batch: nothing is sent and the log stays as it was
    record = running.system.launcher.get(APP)
    assert record is not None
    with pytest.raises(BadRequest, match="rotate: field 'degrees'"):
        running.system.apply_ui_ops(
            record, {"ops": [{"op": "reset"}, {"op": "rotate", "id": "clock", "degrees": "x"}]}
        )
    assert [o["id"] for o in log_of(running)] == ["start_button"] and ops() == []

    for phrase, op in [
        ("恢复", {"op": "reset", "removed": 1}),
        ("全部恢复默认", {"op": "reset", "removed": 0}),
        ("undo", {"op": "undo"}),
    ]:
        reply = s.say(phrase)
        assert reply["status"] == "ok", (phrase, reply)
        assert ops() == [op], phrase
    assert reply["message"] == "已撤销上一处修改"
    assert log_of(running) == []

    # the log outlives the system: a restart on the same data dir still has it
    s.say("把开始按钮变成红色")
    s.say("隐藏时钟")
    running.stop()
    again = make_system([], data_dir=running.data_dir)
    assert [o["op"] for o in log_of(again)] == ["change_color", "hide"]


def test_ambiguous_name_asks_a_choice_and_the_answer_applies_the_op(
    running: Running, ops: Any
) -> None:
    post_snapshot(running, with_video_window())
    views = running.system.bus.subscribe()
    try:
        s = Session(running)
        waiting = s.ask("把播放按钮移到左上角")
        (card,) = waiting["pending"]
        assert card["kind"] == "choice" and card["app"] == APP
        assert card["prompt"] == "有 2 个“播放按钮”，要操作哪一个？"
        assert [o["value"] for o in card["options"]] == ["btn_play@music", "btn_play@video"]
        assert any("视频" in o["label"] for o in card["options"])
        assert ops() == []  # nothing moves before the user chooses
        bad = running.post(f"/api/interactions/{card['id']}", {"value": "clock"})
        assert bad.status_code == 400 and "btn_play@video" in bad.json()["error"]

        r = running.post(f"/api/interactions/{card['id']}", {"value": "btn_play@video"})
        assert r.status_code == 200, r.text
        done = final_view(views, waiting["run_id"])
        assert done["status"] == "ok"
        assert done["message"] == "已将播放按钮移到左上角"
        assert ops() == [{"op": "move", "id": "btn_play", "window": "video", "x": 20, "y": 20}]
        # the choice is used up: another answer is refused, nothing moves again
        again = running.post(f"/api/interactions/{card['id']}", {"value": "btn_play@music"})
        assert again.status_code == 409
        assert again.json()["current"]["answer"] == {"value": "btn_play@video"}
        assert ops() == []

        # a window named in the command is not ambiguous
        s.say("把视频窗口的播放按钮变成绿色")
        assert ops() == [
            {"op": "change_color", "id": "btn_play", "window": "video", "color": "green"}
        ]
        # a compound command: the clear part waits too, and "它" is the chosen element
        waiting = s.ask("把时钟变成红色然后隐藏播放按钮然后旋转它 30 度")
        (card,) = waiting["pending"]
        assert card["prompt"].startswith("“隐藏播放按钮”：有 2 个")
        assert ops() == []
        running.post(f"/api/interactions/{card['id']}", {"value": "btn_play@music"})
        final_view(views, waiting["run_id"])
        assert ops() == [
            {"op": "change_color", "id": "clock", "color": "red"},
            {"op": "hide", "id": "btn_play", "window": "music"},
            {"op": "rotate", "id": "btn_play", "window": "music", "degrees": 30},
        ]
        # cancelling the question (the run's Stop) changes nothing
        waiting = s.ask("hide the play button")
        assert running.post(f"/api/runs/{waiting['run_id']}/cancel").ok
        stopped = final_view(views, waiting["run_id"])
        assert stopped["status"] == "ok" and stopped["message"] == "Cancelled; nothing was changed."
        assert ops() == []
    finally:
        views.close()


def test_an_unanswered_choice_expires_and_changes_nothing(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    running = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"),
        approvals={"timeout": 1},
        language="en",
    )
    post_snapshot(running, with_video_window())
    views = running.system.bus.subscribe()
    try:
        waiting = Session(running).ask("move the play button to the top left")
        (card,) = waiting["pending"]
        assert card["prompt"] == 'There are 2 "the play button" — which one?'
        view = final_view(views, waiting["run_id"])
        assert view["message"] == "The question expired unanswered; nothing was changed."
        assert not [e for e in _drain(views) if e["type"] == "ui_op"]
    finally:
        views.close()


def _drain(sub: Subscription) -> list[dict[str, Any]]:
    out = []
    while (event := sub.get(timeout=0.05)) is not None:
        out.append(event)
    return out


def test_unknown_element_or_command_is_a_clear_message_and_no_event(
    running: Running, ops: Any
) -> None:
    post_snapshot(running, desktop_elements())
    s = Session(running)
    reply = s.say("隐藏天气小部件")
    assert reply["status"] == "error"
    assert "找不到“天气小部件”" in reply["message"] and "时钟" in reply["message"]
    reply = s.say("旋转 45 度")  # nothing acted on yet in this session
    assert reply["status"] == "error" and "要操作哪个元素" in reply["message"]
    reply = s.say("把时钟移到")
    assert reply["status"] == "error" and "要移到哪里" in reply["message"]
    reply = s.say("把时钟移到 (5000, 20)")
    assert reply["status"] == "error" and "超出了屏幕" in reply["message"]
    assert ops() == []


def test_home_view_lists_the_snapshot_and_runs_typed_commands(running: Running, ops: Any) -> None:
    post_snapshot(running, desktop_elements())
    home = running.open(APP)
    sid = home["session_id"]
    reply = home["response"]
    assert reply["view_type"] == "list"
    titles = [i["title"] for i in reply["data"]["items"]]
    assert "时钟" in titles and "播放按钮" in titles and "音乐窗口" in titles
    assert button(reply, "command")["type"] == "input"
    r = running.post(
        "/api/action",
        {"app": APP, "action_id": "command", "session_id": sid, "value": "把任务栏变成蓝色"},
    )
    assert r.json()["response"]["message"] == "已将任务栏变成蓝色"
    assert ops() == [{"op": "change_color", "id": "taskbar", "color": "blue"}]
    example = button(reply, "run")
    r = running.post(
        "/api/action",
        {"app": APP, "action_id": "run", "session_id": sid, "params": example["params"]},
    )
    assert r.json()["response"]["status"] == "ok"
    assert len(ops()) == 1


GARBAGE: list[dict[str, Any]] = [
    {"action_id": "nope"},
    {"action_id": "apply"},
    {"action_id": "apply", "params": {"ops": "hide everything"}},
    {"action_id": "apply", "params": {"ops": [{"op": "explode", "id": "clock"}]}},
    {"action_id": "apply", "params": {"ops": [{"op": "move", "id": "clock", "x": "1e999"}]}},
    {"action_id": "apply", "params": {"ops": [{"op": "hide", "id": "no_such_element"}]}},
    {
        "action_id": "apply",
        "params": {"ops": [{"op": "resize", "id": "clock", "width": -5, "height": 3}]},
    },
    {"action_id": "undo", "params": {"ops": [None, 3]}},
    {"action_id": "choose_target", "selected": "btn_play@music"},  # gone: the app asks itself
    {"action_id": "command"},
    {"action_id": "command", "value": ["list"]},
    {"action_id": "command", "value": "   "},
    {"action_id": "run", "params": {"command": {"x": 1}}},
    {"action_id": "refresh", "checked": [1, "a"], "on": True},
]


def test_garbage_actions_get_error_views_and_the_app_keeps_working(
    running: Running, ops: Any
) -> None:
    post_snapshot(running, desktop_elements())
    s = Session(running)
    for payload in GARBAGE:
        reply = s.act(**payload)
        assert reply["view_type"] in ("text", "list"), (payload, reply)
        assert reply["message"], payload
        if payload["action_id"] != "refresh":
            assert reply["status"] == "error", (payload, reply)
    unknown = s.act("nope")
    assert "nope" in unknown["message"] and "apply" in unknown["message"]
    bad = s.act("apply", params={"ops": [{"op": "explode", "id": "clock"}]})
    assert "explode" in bad["message"]
    assert ops() == []
    s.say("隐藏时钟")
    assert ops() == [{"op": "hide", "id": "clock"}]


def test_english_locale_and_the_real_websocket(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    running = make_system(
        apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"), language="en"
    )
    post_snapshot(running, desktop_elements())
    ws_url = running.url.replace("http://", "ws://") + "/api/events"
    ws = WsClient.open(ws_url, headers={"Authorization": f"Bearer {TOKEN}", "Origin": running.url})
    try:
        assert json.loads(ws.receive(timeout=10))["type"] == "hello"
        s = Session(running)
        reply = s.say("make the clock red")
        assert reply["message"] == "Made the clock red"
        assert button(reply, "undo")["label"] == "Undo"
        seen = []
        while (raw := ws.receive(timeout=10)) is not None:
            event = json.loads(raw)
            if event["type"] == "ui_op":
                seen.append(event)
                break
        assert seen and {k: seen[0][k] for k in ("op", "id", "color", "by")} == {
            "op": "change_color",
            "id": "clock",
            "color": "red",
            "by": APP,
        }
        reply = s.say("move the play button to the top left corner")
        assert reply["message"] == "Moved the play button to the top-left corner"
        # taking back, in English only
        for phrase, op, message in [
            ("undo", {"op": "undo"}, "Took back the last change"),
            ("put the clock back", {"op": "reset", "id": "clock"}, "Put the clock back as it was"),
            ("reset the start button", {"op": "reset", "id": "start_button"}, None),
            ("reset", {"op": "reset"}, "Put the desktop back to its defaults"),
            ("restore defaults", {"op": "reset"}, None),
        ]:
            reply = s.say(phrase)
            assert reply["status"] == "ok", (phrase, reply)
            assert reply["data"]["ops"] == [op], phrase
            assert reply["message"].isascii(), reply["message"]
            if message:
                assert reply["message"] == message
    finally:
        ws.close()
