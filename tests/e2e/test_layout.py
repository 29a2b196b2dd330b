"""Layout recovery in a real browser (DESIGN §13): windows come back where they were, to the
pixel, with their z-order and minimised state, after a reload and after a restart."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk, start_e2e_system, wait_until
from tests.integration.conftest import start_system

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery", "e2e_slow"]
WINDOW_STATE = """el => ({left: el.style.left, top: el.style.top, width: el.style.width,
  height: el.style.height, z: Number(getComputedStyle(el).zIndex),
  minimized: el.classList.contains('minimized'), maximized: el.classList.contains('maximized')})"""


def box(desk: Desk, selector: str) -> dict[str, float]:
    b = desk.page.locator(selector).bounding_box()
    assert b is not None, f"{selector} is not visible"
    return b


def drag(desk: Desk, x: float, y: float, dx: float, dy: float) -> None:
    mouse = desk.page.mouse
    mouse.move(x, y)
    mouse.down()
    mouse.move(x + dx / 2, y + dy / 2, steps=4)
    mouse.move(x + dx, y + dy, steps=4)
    mouse.up()


def window_state(desk: Desk, app: str) -> dict[str, Any]:
    return dict(desk.win(app).evaluate(WINDOW_STATE))


def session_id(desk: Desk) -> str:
    sid = desk.page.evaluate("() => localStorage.getItem('aios.session')")
    assert isinstance(sid, str) and sid, "the page has no session"
    return sid


def saved_layout(desk: Desk) -> dict[str, dict[str, Any]]:
    layout = desk.api("GET", f"/api/sessions/{session_id(desk)}/layout")
    return {w["app"]: w for w in layout["windows"]}


def px(value: str) -> float:
    return float(value.removesuffix("px"))


def matches(saved: dict[str, Any], shown: dict[str, Any]) -> bool:
    return (
        saved["x"] == px(shown["left"])
        and saved["y"] == px(shown["top"])
        and saved["w"] == px(shown["width"])
        and saved["h"] == px(shown["height"])
        and saved["minimized"] == shown["minimized"]
    )


def arrange(desk: Desk) -> dict[str, dict[str, Any]]:
    """Open two windows, move and resize one, minimise the other, raise the first; wait
    until the debounced save has stored exactly that, and return what the page shows."""
    desk.open_app("gallery")
    desk.open_app("e2e_slow")
    bar = box(desk, "#win_gallery .win-titlebar")
    drag(desk, bar["x"] + 80, bar["y"] + bar["height"] / 2, -137, 71)
    win = box(desk, "#win_gallery")
    corner = box(desk, "#win_gallery .win-resize-se")
    x = min(corner["x"] + corner["width"] / 2, win["x"] + win["width"] - 2)
    y = min(corner["y"] + corner["height"] / 2, win["y"] + win["height"] - 2)
    drag(desk, x, y, 53, -41)
    desk.win("e2e_slow").locator(".win-title").click()  # e2e_slow on top again
    desk.win("e2e_slow").locator(".win-min").click()
    expect(desk.win("e2e_slow")).to_have_class(re.compile(r"\bminimized\b"))
    desk.win("gallery").locator(".win-title").click()  # and now gallery is
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bactive\b"))
    shown = {app: window_state(desk, app) for app in SYSTEM_APPS}
    assert shown["gallery"]["z"] > shown["e2e_slow"]["z"]

    def stored() -> bool:
        saved = saved_layout(desk)
        return (
            set(saved) == set(SYSTEM_APPS)
            and all(matches(saved[a], shown[a]) for a in SYSTEM_APPS)
            and saved["gallery"]["z"] > saved["e2e_slow"]["z"]
        )

    wait_until(stored, "the layout saved after the last change")
    return shown


def check_restored(desk: Desk, before: dict[str, dict[str, Any]], gallery_box: Any) -> None:
    gallery = desk.body("gallery")
    expect(gallery).not_to_have_attribute("data-view-type", "loading")
    expect(desk.win("e2e_slow")).to_have_class(re.compile(r"\bminimized\b"))
    after = {app: window_state(desk, app) for app in SYSTEM_APPS}
    for app in SYSTEM_APPS:
        for key in ("left", "top", "width", "height", "minimized", "maximized"):
            assert after[app][key] == before[app][key], (app, key, after[app], before[app])
    assert after["gallery"]["z"] > after["e2e_slow"]["z"]
    assert box(desk, "#win_gallery") == gallery_box
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bactive\b"))


def test_the_layout_comes_back_after_a_reload(desk: Desk) -> None:
    before = arrange(desk)
    gallery_box = box(desk, "#win_gallery")
    desk.shot("before_reload")
    desk.page.reload()
    expect(desk.page.locator("#tray_net")).to_have_attribute("data-state", "open")
    check_restored(desk, before, gallery_box)
    desk.shot("after_reload")


def test_the_layout_comes_back_after_a_restart_of_the_system(
    open_desk: Callable[..., Desk], tmp_path: Path
) -> None:
    first = start_e2e_system(tmp_path, SYSTEM_APPS)
    second = None
    try:
        desk = open_desk(first)
        # while the system is away, the page's failed requests and socket are expected
        desk.allow_console(r"ERR_CONNECTION_REFUSED|WebSocket|Failed to load resource")
        before = arrange(desk)
        gallery_box = box(desk, "#win_gallery")
        first.stop()
        expect(desk.page.locator("#tray_net")).not_to_have_attribute("data-state", "open")
        settings: dict[str, Any] = {"language": "en", "voice": {"welcome": False}}
        second = start_system(
            tmp_path / "apps", tmp_path / "data", port=first.system.port, **settings
        )
        desk.running = second
        desk.page.reload()
        expect(desk.page.locator("#tray_net")).to_have_attribute("data-state", "open")
        check_restored(desk, before, gallery_box)
        desk.shot("after_restart")
    finally:
        first.stop()
        if second is not None:
            second.stop()


def test_a_window_off_screen_comes_back_into_view_and_gone_apps_are_skipped(
    desk: Desk,
) -> None:
    desk.open_app("gallery")
    sid = session_id(desk)
    # the page's own save of that first: it must not land after ours
    wait_until(lambda: "gallery" in saved_layout(desk), "the page's save of the open window")
    far = {"x": 5000, "y": 4000, "w": 640, "h": 420, "minimized": False}
    windows = [
        {"app": "gone_app", "x": 10, "y": 10, "w": 300, "h": 200, "z": 1, "minimized": False},
        {"app": "gallery", "z": 2, **far},
    ]
    desk.api("PUT", f"/api/sessions/{sid}/layout", {"windows": windows})
    desk.page.reload()
    expect(desk.page.locator("#tray_net")).to_have_attribute("data-state", "open")
    expect(desk.body("gallery")).not_to_have_attribute("data-view-type", "loading")
    shown = box(desk, "#win_gallery")
    desktop = box(desk, "#desktop")
    # the size is kept; the window is pulled back until its title bar can be reached
    assert (shown["width"], shown["height"]) == (640, 420)
    assert desktop["x"] <= shown["x"] < desktop["x"] + desktop["width"] - 40
    assert desktop["y"] <= shown["y"] < desktop["y"] + desktop["height"] - 20
    expect(desk.page.locator("#win_gone_app")).to_have_count(0)
    desk.shot("pulled_back")


def test_a_change_just_before_leaving_is_saved_and_maximised_comes_back(desk: Desk) -> None:
    desk.open_app("gallery")
    bar = box(desk, "#win_gallery .win-titlebar")
    drag(desk, bar["x"] + 80, bar["y"] + bar["height"] / 2, 91, -23)
    normal = window_state(desk, "gallery")
    wait_until(
        lambda: matches(saved_layout(desk).get("gallery") or {"x": None}, normal),
        "the moved window saved",
    )
    # maximised and gone at once: the debounced save cannot have run, pagehide's must
    desk.win("gallery").locator(".win-max").click()
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bmaximized\b"))
    desk.page.reload()
    expect(desk.page.locator("#tray_net")).to_have_attribute("data-state", "open")
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bmaximized\b"))
    assert saved_layout(desk)["gallery"]["maximized"] is True
    # un-maximised, it is where it was moved to
    desk.win("gallery").locator(".win-max").click()
    expect(desk.win("gallery")).not_to_have_class(re.compile(r"\bmaximized\b"))
    after = window_state(desk, "gallery")
    for key in ("left", "top", "width", "height"):
        assert after[key] == normal[key], (key, after, normal)
