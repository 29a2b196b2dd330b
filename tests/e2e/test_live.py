"""Live updates over /api/events in a real browser: notifications, pushes, app status,
UI operations from a desktop.control app and the snapshot that tells it what is on
screen (DESIGN §8, §10), and the voice: spoken replies, mute, the mic without a microphone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from playwright.sync_api import Request, expect

from aios.config import validate_config
from aios.system import System
from aios.web import ServerThread, create_app
from tests.e2e.conftest import Desk, make_apps_dir, wait_until
from tests.integration.conftest import Running, start_system

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery", "e2e_control"]
DESKTOP_IDS = [
    "taskbar",
    "start_button",
    "start_menu",
    "tray",
    "clock",
    "calendar",
    "command_input",
    "mic_button",
    "notifications",
]


def app_post(running: Running, app: str, path: str, body: dict[str, Any]) -> requests.Response:
    """A request the way an app makes it: with its own token, no browser involved."""
    record = running.system.launcher.get(app)
    assert record is not None
    return requests.post(
        running.url + path,
        json=body,
        timeout=10,
        headers={"Authorization": f"Bearer {record.token}"},
    )


def ui_op(running: Running, **op: Any) -> None:
    resp = app_post(running, "e2e_control", "/api/sys/ui", op)
    assert resp.status_code == 200, resp.text


def snapshot(running: Running) -> dict[str, dict[str, Any]]:
    snap = running.system.store.cache_get("desktop", "ui_snapshot") or {}
    return {e["id"]: e for e in snap.get("elements", [])}


def test_a_notify_step_shows_a_toast_and_a_list_entry(desk: Desk) -> None:
    page = desk.page
    body = desk.gallery_show("notify")
    expect(body.locator(".text-content")).to_have_text(
        "Sent 2 notifications through steps; 2 delivered."
    )
    toasts = page.locator("#toasts .toast")
    expect(toasts.filter(has_text="A notification, level info.")).to_have_count(1)
    success = toasts.filter(has_text="A notification, level success.")
    expect(success).to_have_class(re.compile(r"\btoast-success\b"))
    # the sending app's name titles the toast, never a title the app chose
    expect(success.locator(".toast-title")).to_have_text("Gallery")
    expect(success.locator(".toast-body")).to_have_text(
        re.compile(r"^Gallery: A notification, level success\.$")
    )
    expect(page.locator("#notifications_count")).to_have_text("2")
    desk.shot("toasts")

    page.locator("#notifications_button").click()
    items = page.locator("#notifications_list .notify-item")
    expect(items).to_have_count(2)
    expect(items.locator(".notify-body")).to_have_text(
        ["A notification, level success.", "A notification, level info."]
    )
    expect(items.first.locator(".notify-app")).to_have_text("Gallery")
    expect(page.locator("#notifications_count")).to_be_hidden()
    desk.shot("notification_list")


def test_pushed_progress_and_views_update_the_window(desk: Desk) -> None:
    body = desk.gallery_show("push")
    expect(body.locator(".text-content")).to_have_text(
        "Pushed 4 progress events; the system took 4."
    )
    win = desk.win("gallery")
    # the reply is a new view: the progress its pushes tracked is over
    expect(win.locator(".win-progress")).to_have_count(0)
    expect(win.locator(".win-status")).to_have_text("")

    running = desk.running
    resp = app_post(
        running,
        "gallery",
        "/api/sys/push",
        {
            "status": "ok",
            "view_type": "text",
            "data": {"title": "Pushed view", "content": "a view pushed by the app"},
        },
    )
    assert resp.status_code == 200, resp.text
    expect(body.locator(".view-title")).to_have_text("Pushed view")
    expect(body.locator(".text-content")).to_have_text("a view pushed by the app")

    # Data merged into the current view, then a status line in the title bar.
    app_post(running, "gallery", "/api/sys/push", {"data": {"content": "merged by a push"}})
    expect(body.locator(".text-content")).to_have_text("merged by a push")
    expect(body.locator(".view-title")).to_have_text("Pushed view")
    app_post(running, "gallery", "/api/sys/push", {"status": "now playing"})
    expect(win.locator(".win-status")).to_have_text("now playing")
    desk.shot("pushed")

    # Closed by the user, the window stays closed whatever the app pushes. Events
    # arrive in order, so once the notification after the push shows, the push
    # has been handled.
    win.locator(".win-close").click()
    expect(win).to_have_count(0)
    app_post(
        running,
        "gallery",
        "/api/sys/push",
        {"status": "ok", "view_type": "text", "data": {"content": "after close"}},
    )
    running.system.bus.emit(
        "notify",
        {
            "app": "gallery",
            "title": "t",
            "body": "after push",
            "level": "info",
            "id": "n-after-push",
        },
    )
    expect(desk.page.locator("#toasts .toast", has_text="after push")).to_have_count(1)
    expect(win).to_have_count(0)


def test_progress_ends_with_a_new_view_or_a_null_progress(desk: Desk) -> None:
    desk.open_app("gallery")
    win, running = desk.win("gallery"), desk.running
    bar, status = win.locator(".win-progress"), win.locator(".win-status")
    assert app_post(running, "gallery", "/api/sys/push", {"progress": 0.84}).status_code == 200
    expect(bar).to_have_attribute("aria-valuenow", "84")
    expect(status).to_have_text("Progress 84%")
    app_post(
        running,
        "gallery",
        "/api/sys/push",
        {"status": "ok", "view_type": "text", "data": {"title": "Done", "content": "finished"}},
    )
    expect(desk.body("gallery").locator(".view-title")).to_have_text("Done")
    expect(bar).to_have_count(0)
    expect(status).to_have_text("")

    app_post(running, "gallery", "/api/sys/push", {"progress": 50})
    expect(bar).to_have_attribute("aria-valuenow", "50")
    app_post(running, "gallery", "/api/sys/push", {"progress": None})
    expect(bar).to_have_count(0)
    expect(status).to_have_text("")

    # a status line the app set is not progress: a null progress leaves it
    app_post(running, "gallery", "/api/sys/push", {"status": "now playing"})
    app_post(running, "gallery", "/api/sys/push", {"progress": None})
    running.system.bus.emit("notify", {"app": "gallery", "title": "marker", "body": "m"})
    expect(desk.page.locator("#toasts .toast", has_text="marker")).to_be_visible()
    expect(status).to_have_text("now playing")

    bad = app_post(running, "gallery", "/api/sys/push", {"progress": "lots"})
    assert bad.status_code == 400
    assert "field 'progress' must be a number" in bad.json()["error"]


def test_app_status_events_update_the_menu_and_window_without_reload(
    system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    running = system_factory(["e2e_slow"])
    desk = open_desk(running)
    page = desk.page
    desk.open_app("e2e_slow")
    page.evaluate("() => { window.__e2e.sameDocument = true; }")
    page.locator("#start_button").click()
    badge = page.locator("#menu_e2e_slow .status-badge")
    expect(badge).to_have_text("running")

    running.system.launcher.stop_app("e2e_slow")
    expect(badge).to_have_text("stopped")
    expect(page.locator("#icon_e2e_slow")).to_have_class(re.compile(r"\bstatus-stopped\b"))
    status = desk.win("e2e_slow").locator(".win-status")
    expect(status).to_have_text("App status: stopped")
    desk.shot("stopped")

    # Using the stopped app's window says why it cannot answer.
    desk.allow_console(r"status of 503")
    page.keyboard.press("Escape")
    desk.control("e2e_slow", "fail").click()
    banner = desk.win("e2e_slow").locator(".win-banner")
    expect(banner).to_be_visible()
    expect(banner.locator(".error-title")).to_have_text("Action failed")
    expect(banner.locator(".error-message")).to_contain_text("not running")

    running.system.launcher.restart("e2e_slow")
    page.locator("#start_button").click()
    expect(badge).to_have_text("running")
    expect(status).to_have_text("")
    assert page.evaluate("() => window.__e2e.sameDocument") is True


def test_ui_operations_from_a_desktop_control_app(desk: Desk) -> None:
    page, running = desk.page, desk.running
    desk.gallery_show("controls")
    button = desk.control("gallery", "ctl_button")
    expect(button).to_be_visible()

    # The desktop reported what is on screen, with the stable ids of DESIGN §10.
    snap = wait_until(
        lambda: (s := snapshot(running)).get("btn_ctl_button") and s,
        "the snapshot to list the gallery's controls",
    )
    expected = [
        *DESKTOP_IDS,
        "menu_gallery",
        "icon_gallery",
        "menu_e2e_control",
        "icon_e2e_control",
        "win_gallery",
        "winbody_gallery",
        "btn_ctl_button",
        "btn_ctl_slider",
        "btn_home",
    ]
    assert [i for i in expected if i not in snap] == []
    assert snap["btn_ctl_button"]["window"] == "gallery"
    assert snap["btn_ctl_button"]["type"] == "button"
    assert snap["win_gallery"]["visible"] is True and snap["calendar"]["visible"] is False

    # Only an app with desktop.control may drive the desktop.
    refused = app_post(running, "gallery", "/api/sys/ui", {"op": "hide", "id": "clock"})
    assert refused.status_code == 403 and "desktop.control" in refused.json()["error"]

    ui_op(running, op="move", id="btn_ctl_button", window="gallery", x=20, y=20)
    expect(button).to_have_css("left", "20px")
    moved = button.bounding_box()
    assert moved is not None and (round(moved["x"]), round(moved["y"])) == (20, 20)
    wait_until(
        lambda: snapshot(running)["btn_ctl_button"]["x"] == 20,
        "the snapshot to show the moved button",
    )

    ui_op(running, op="move", id="win_gallery", x=300, y=120)
    ui_op(running, op="resize", id="win_gallery", width=520, height=360)
    expect(desk.win("gallery")).to_have_css("width", "520px")
    win = desk.win("gallery").bounding_box()
    assert win is not None and (win["x"], win["y"], win["width"], win["height"]) == (
        300,
        120,
        520,
        360,
    )

    clock = page.locator("#clock")
    ui_op(running, op="hide", id="clock")
    expect(clock).to_be_hidden()
    ui_op(running, op="show", id="clock")
    expect(clock).to_be_visible()
    ui_op(running, op="change_color", id="clock", color="rgb(200, 30, 40)")
    expect(clock).to_have_css("background-color", "rgb(200, 30, 40)")
    ui_op(running, op="rotate", id="clock", degrees=30)
    expect(clock).to_have_css("rotate", "30deg")
    ui_op(running, op="change_text", id="win_gallery", text="Renamed by E2E")
    expect(desk.win("gallery").locator(".win-title")).to_have_text("Renamed by E2E")
    ui_op(running, op="change_text", id="btn_ctl_button", window="gallery", text="Press me")
    expect(button).to_have_text("Press me")
    ui_op(running, op="change_text", id="command_input", text="说出你的指令")
    expect(page.locator("#command_input")).to_have_attribute("placeholder", "说出你的指令")
    desk.shot("ui_ops")

    # The desktop checks what the server cannot know: the screen and its elements.
    ui_op(running, op="move", id="clock", x=99999, y=0)
    expect(page.locator("#toasts .toast-error").last).to_contain_text("outside the screen")
    ui_op(running, op="hide", id="no_such_element")
    expect(page.locator("#toasts .toast-error").last).to_contain_text("no_such_element")
    expect(clock).to_be_visible()
    # The system keeps these changes for a reload; "reset" takes them all back.
    ui_op(running, op="reset")
    expect(clock).to_have_css("rotate", "none")
    expect(page.locator("#command_input")).not_to_have_attribute("placeholder", "说出你的指令")


def test_a_reply_is_spoken_by_the_servers_voice_and_mute_stops_it(
    desk: Desk, open_desk: Callable[..., Desk]
) -> None:
    # Headless Chromium has no speech voices, so the page asks the server to speak.
    # A click's reply is spoken only when the setting says always (default: voice input only).
    desk.api("POST", "/api/config", {"updates": {"voice": {"speak_replies": "always"}}})
    loud = open_desk(desk.running, muted=False)
    spoken: list[Request] = []
    loud.page.on("request", lambda r: "/api/voice/speak" in r.url and spoken.append(r))
    with loud.page.expect_response("**/api/voice/speak") as said:
        loud.gallery_show("text")
    assert said.value.status == 200
    assert said.value.headers["content-type"] == "audio/wav"
    assert said.value.request.post_data_json["text"] == "Showing the Text view"

    loud.page.locator("#tray_volume").click()
    expect(loud.page.locator("#tray_volume")).to_have_attribute("aria-pressed", "true")
    before = len(spoken)
    loud.running.system.bus.emit("speak", {"text": "not now", "lang": "en-US"})
    # Events arrive in order: once this toast shows, the speak event has been handled.
    loud.running.system.bus.emit("notify", {"app": "gallery", "title": "marker", "body": "m"})
    expect(loud.page.locator("#toasts .toast", has_text="marker")).to_be_visible()
    assert len(spoken) == before
    desk.api("POST", "/api/config", {"updates": {"voice": {"speak_replies": "voice"}}})


def test_a_failing_speech_engine_is_one_tray_state_not_a_toast_per_reply(
    system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    running = system_factory(
        ["gallery"], voice={"welcome": False, "mandarin_voice": "no/such-voice"}
    )
    desk = open_desk(running, muted=False)
    desk.allow_console(r"status of 422")
    page = desk.page
    tray = page.locator("#tray_speech")
    expect(tray).to_be_hidden()
    for text in ("第一条回复", "第二条回复"):
        with page.expect_response("**/api/voice/speak") as said:
            running.system.bus.emit("speak", {"text": text, "lang": "zh-CN"})
        assert said.value.status == 422
    expect(tray).to_be_visible()
    expect(tray).to_have_attribute("data-state", "failed")
    expect(tray).to_have_attribute("title", re.compile(r"Speech output unavailable: .*voice"))
    # Events arrive in order: once this toast shows, both replies have been handled.
    running.system.bus.emit("notify", {"app": "gallery", "title": "marker", "body": "m"})
    expect(page.locator("#toasts .toast", has_text="marker")).to_be_visible()
    expect(page.locator("#toasts .toast-error")).to_have_count(0)
    desk.shot("speech_failed")


def test_the_mic_without_a_microphone_says_why(desk: Desk) -> None:
    desk.allow_console(r"status of 422")
    desk.page.locator("#mic_button").click()
    toast = desk.page.locator("#toasts .toast-error")
    # one friendly sentence, not the audio library's "No Default Input Device Available"
    expect(toast).to_have_text("No microphone found — connect one or type your instruction")
    expect(desk.page.locator("#mic_button")).to_have_attribute("aria-pressed", "false")


def test_the_desktop_reconnects_after_the_server_restarts(
    open_desk: Callable[..., Desk], tmp_path: Path
) -> None:
    apps = make_apps_dir(tmp_path / "apps", ["gallery"])
    settings = {"language": "en", "voice": {"welcome": False}}
    first = start_system(apps, tmp_path / "data", **settings)
    second = None
    try:
        desk = open_desk(first)
        # while the server is away, the page's failed requests and socket are expected
        desk.allow_console(r"ERR_CONNECTION_REFUSED|WebSocket|Failed to load resource")
        net = desk.page.locator("#tray_net")
        first.stop()  # the whole system goes away: sockets close, apps stop
        expect(net).not_to_have_attribute("data-state", "open")
        second = start_system(apps, tmp_path / "data", port=first.system.port, **settings)
        expect(net).to_have_attribute("data-state", "open", timeout=30_000)
        # the socket opens (handshake) a moment before the server subscribes it to events:
        # what happens before that is state the page reloads (the resync), not replayed
        wait_until(lambda: second is not None and second.system.bus.subscribers >= 1)
        # events of the new server reach the page, and its API answers the page
        second.system.bus.emit(
            "notify",
            {
                "app": "gallery",
                "title": "t",
                "level": "info",
                "body": "after the restart",
                "id": "n-restart",
            },
        )
        expect(desk.page.locator("#toasts .toast", has_text="after the restart")).to_be_visible()
        desk.open_app("gallery")
        assert desk.problems() == []
    finally:
        first.stop()
        if second is not None:
            second.stop()


def start_with_stored_token(apps: Path, data: Path, port: int = 0) -> Running:
    """The system as a user starts it: no AIOS_TOKEN, so the token kept in the data dir."""
    config = validate_config(
        {
            "apps_dir": str(apps),
            "data_dir": str(data),
            "language": "en",
            "voice": {"welcome": False},
            "llm": {"api_key": ""},
        }
    )
    server = ServerThread(port)
    system = System(config, port=server.port)
    server.attach(create_app(system))
    server.start()
    system.start()
    running = Running(system, server, apps, data)
    running.http.headers["Authorization"] = f"Bearer {system.token}"
    return running


def test_the_desktop_reconnects_after_a_restart_with_the_stored_token(
    open_desk: Callable[..., Desk], tmp_path: Path
) -> None:
    apps = make_apps_dir(tmp_path / "apps", ["gallery"])
    first = start_with_stored_token(apps, tmp_path / "data")
    second = None
    try:
        desk = open_desk(first)
        desk.allow_console(r"ERR_CONNECTION_REFUSED|WebSocket|Failed to load resource")
        net = desk.page.locator("#tray_net")
        first.stop()
        expect(net).not_to_have_attribute("data-state", "open")
        second = start_with_stored_token(apps, tmp_path / "data", port=first.system.port)
        assert second.system.token == first.system.token
        expect(net).to_have_attribute("data-state", "open", timeout=30_000)
        desk.open_app("gallery")
        expect(desk.page.locator("#auth_lost")).to_have_count(0)
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_a_page_whose_token_went_stale_offers_a_reload(
    open_desk: Callable[..., Desk], tmp_path: Path
) -> None:
    apps = make_apps_dir(tmp_path / "apps", ["gallery"])
    first = start_with_stored_token(apps, tmp_path / "data")
    second = None
    try:
        desk = open_desk(first)
        desk.allow_console(r"ERR_CONNECTION_REFUSED|WebSocket|Failed to load resource|401")
        page = desk.page
        first.stop()
        # another data dir, so another token: the page's cookie is no longer valid
        second = start_with_stored_token(apps, tmp_path / "other", port=first.system.port)
        assert second.system.token != first.system.token
        offer = page.locator("#auth_lost")
        expect(offer).to_be_visible(timeout=30_000)
        expect(offer).to_contain_text("access key is no longer valid")
        expect(offer.locator("#modal_reload")).to_have_text("Reload")
        expect(page.locator("#tray_net")).to_have_attribute("data-state", "unauthorized")
        expect(page.locator("#tray_net")).to_have_attribute("title", re.compile("reload"))
        desk.shot("stale_token")
        with page.expect_navigation():
            offer.locator("#modal_reload").click()
    finally:
        first.stop()
        if second is not None:
            second.stop()
