"""The desktop shell in a real browser: start menu, taskbar, window manager, command bar,
clock and calendar, settings and audit windows (DESIGN §1, §10)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk
from tests.integration.conftest import Running

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery", "e2e_slow", "e2e_broken"]


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


def handle_point(desk: Desk, app: str, direction: str) -> tuple[float, float]:
    """A point on a resize handle that the pointer really hits.

    Handles straddle the window's edge and the window clips what is outside, so the
    point is taken inside the window; the check makes sure it is the handle that is hit.
    """
    win = box(desk, f"#win_{app}")
    handle = box(desk, f"#win_{app} .win-resize-{direction}")
    x = min(handle["x"] + handle["width"] / 2, win["x"] + win["width"] - 2)
    y = min(handle["y"] + handle["height"] / 2, win["y"] + win["height"] - 2)
    hit = desk.page.evaluate("([x, y]) => document.elementFromPoint(x, y).className", [x, y])
    assert f"win-resize-{direction}" in hit, f"the point ({x}, {y}) hits {hit!r}"
    return x, y


def z_index(desk: Desk, app: str) -> int:
    return int(desk.win(app).evaluate("el => getComputedStyle(el).zIndex"))


def test_title_and_start_menu_list_every_app_with_its_status(desk: Desk) -> None:
    page = desk.page
    assert page.title() == "Triton AIOS"
    apps = {a["id"]: a for a in desk.api("GET", "/api/apps")}
    assert set(apps) == {"gallery", "e2e_slow", "e2e_broken"}

    page.locator("#start_button").click()
    menu = page.locator("#start_menu")
    expect(menu).to_be_visible()
    for app_id, app in apps.items():
        entry = page.locator(f"#menu_{app_id}")
        expect(entry).to_contain_text(app["name"])
        expect(entry.locator(".status-badge")).to_have_text(app["status"])
    assert apps["gallery"]["status"] == apps["e2e_slow"]["status"] == "running"

    # The invalid folder is listed with the launcher's exact reason, and has no taskbar icon.
    broken = apps["e2e_broken"]
    assert broken["status"] == "invalid" and "entry" in broken["error"]
    expect(page.locator("#menu_e2e_broken .start-app-error")).to_have_text(broken["error"])
    expect(page.locator("#icon_e2e_broken")).to_have_count(0)
    expect(page.locator("#icon_gallery")).to_be_visible()
    desk.shot("start_menu")


def test_open_from_the_start_menu_and_from_the_taskbar_icon(desk: Desk) -> None:
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#menu_gallery").click()
    expect(page.locator("#start_menu")).to_be_hidden()
    body = desk.body("gallery")
    expect(body.locator(".view-title")).to_have_text("Gallery: every view type")
    expect(body.locator(".list-item")).to_have_count(19)  # 10 view types, 9 demos
    expect(page.locator("#icon_gallery")).to_have_class(re.compile(r"\bis-active\b"))

    desk.win("gallery").locator(".win-close").click()
    expect(desk.win("gallery")).to_have_count(0)
    expect(page.locator("#icon_gallery")).not_to_have_class(re.compile(r"\bis-open\b"))

    page.locator("#icon_gallery").click()
    expect(body.locator(".view-title")).to_have_text("Gallery: every view type")
    expect(desk.win("gallery").locator(".win-title")).to_have_text("Gallery")
    desk.shot("reopened")


def test_drag_the_title_bar_moves_the_window_by_the_drag(desk: Desk) -> None:
    desk.open_app("gallery")
    before = box(desk, "#win_gallery")
    title = box(desk, "#win_gallery .win-title")
    drag(desk, title["x"] + 5, title["y"] + title["height"] / 2, 120, 80)
    after = box(desk, "#win_gallery")
    assert after["x"] == pytest.approx(before["x"] + 120, abs=1)
    assert after["y"] == pytest.approx(before["y"] + 80, abs=1)
    assert (after["width"], after["height"]) == (before["width"], before["height"])


def test_resize_from_an_edge_and_a_corner(desk: Desk) -> None:
    desk.open_app("gallery")
    before = box(desk, "#win_gallery")
    drag(desk, *handle_point(desk, "gallery", "e"), 70, 0)
    wider = box(desk, "#win_gallery")
    assert wider["width"] == pytest.approx(before["width"] + 70, abs=1)
    assert wider["height"] == pytest.approx(before["height"], abs=1)
    assert (wider["x"], wider["y"]) == (before["x"], before["y"])

    drag(desk, *handle_point(desk, "gallery", "se"), -90, 60)
    after = box(desk, "#win_gallery")
    assert after["width"] == pytest.approx(wider["width"] - 90, abs=1)
    assert after["height"] == pytest.approx(wider["height"] + 60, abs=1)
    assert (after["x"], after["y"]) == (before["x"], before["y"])


def test_minimise_hides_the_window_and_its_taskbar_icon_restores_it(desk: Desk) -> None:
    desk.open_app("gallery")
    icon = desk.page.locator("#icon_gallery")
    desk.win("gallery").locator(".win-min").click()
    expect(desk.win("gallery")).to_be_hidden()
    expect(icon).to_have_class(re.compile(r"\bis-minimized\b"))
    icon.click()
    expect(desk.win("gallery")).to_be_visible()
    expect(desk.body("gallery").locator(".view-title")).to_have_text("Gallery: every view type")
    expect(icon).to_have_class(re.compile(r"\bis-active\b"))


def test_maximise_fills_the_desktop_above_the_taskbar(desk: Desk) -> None:
    desk.open_app("gallery")
    normal = box(desk, "#win_gallery")
    desk.win("gallery").locator(".win-max").click()
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bmaximized\b"))
    full = box(desk, "#win_gallery")
    area = box(desk, "#desktop")
    taskbar = box(desk, "#taskbar")
    assert full == pytest.approx(area, abs=1)
    assert full["width"] == pytest.approx(desk.page.viewport_size["width"], abs=1)
    assert full["y"] + full["height"] <= taskbar["y"] + 1
    expect(desk.page.locator("#taskbar")).to_be_visible()
    desk.shot("maximised")
    desk.win("gallery").locator(".win-max").click()
    assert box(desk, "#win_gallery") == pytest.approx(normal, abs=1)


def test_close_removes_the_window_but_the_app_keeps_running(desk: Desk) -> None:
    desk.open_app("gallery")
    desk.win("gallery").locator(".win-close").click()
    expect(desk.win("gallery")).to_have_count(0)
    apps = {a["id"]: a for a in desk.api("GET", "/api/apps")}
    assert apps["gallery"]["status"] == "running"
    record = desk.running.system.launcher.get("gallery")
    assert record is not None and record.status == "running"
    expect(desk.page.locator("#icon_gallery")).to_be_visible()


def test_a_click_raises_a_window_above_the_others(desk: Desk) -> None:
    desk.open_app("gallery")
    desk.open_app("e2e_slow")
    assert z_index(desk, "e2e_slow") > z_index(desk, "gallery")
    g = box(desk, "#win_gallery")
    s = box(desk, "#win_e2e_slow")
    # A point inside both windows: the top one owns it.
    px, py = s["x"] + 40, s["y"] + 60
    assert g["x"] < px < g["x"] + g["width"] and g["y"] < py < g["y"] + g["height"]
    owner = "el => el && el.closest('.window') && el.closest('.window').id"
    assert (
        desk.page.evaluate(f"([x, y]) => ({owner})(document.elementFromPoint(x, y))", [px, py])
        == "win_e2e_slow"
    )

    desk.page.mouse.click(g["x"] + 12, g["y"] + g["height"] - 12)  # a corner only gallery has
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bactive\b"))
    assert z_index(desk, "gallery") > z_index(desk, "e2e_slow")
    assert (
        desk.page.evaluate(f"([x, y]) => ({owner})(document.elementFromPoint(x, y))", [px, py])
        == "win_gallery"
    )


def test_a_typed_instruction_goes_to_the_right_window(desk: Desk) -> None:
    page = desk.page
    command = page.locator("#command_input")
    expect(desk.win("gallery")).to_have_count(0)

    command.fill("gallery table 5")
    command.press("Enter")
    body = desk.wait_view("gallery", "table")
    expect(body.locator("tbody tr")).to_have_count(5)
    expect(body.locator(".view-title")).to_have_text("订单 Orders (5)")
    expect(command).to_have_value("")

    # With another window on top, the instruction re-renders and raises the gallery's.
    desk.open_app("e2e_slow")
    command.fill("gallery list 3")
    command.press("Enter")
    body = desk.wait_view("gallery", "list")
    expect(body.locator(".list-item")).to_have_count(3)
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bactive\b"))
    expect(desk.win("e2e_slow")).to_be_visible()
    expect(desk.body("e2e_slow")).to_contain_text("ready")
    desk.shot("instruction")


def test_the_clock_opens_the_calendar_on_today(desk: Desk) -> None:
    page = desk.page
    calendar = page.locator("#calendar")
    expect(calendar).to_be_hidden()
    expect(page.locator("#clock")).to_have_text(re.compile(r"^\d\d:\d\d$"))
    page.locator("#clock").click()
    expect(calendar).to_be_visible()
    today = page.evaluate("() => new Date().getDate()")
    expect(calendar.locator(".cal-today")).to_have_text(str(today))
    expect(calendar.locator(".cal-wd")).to_have_count(7)
    desk.shot("calendar")
    page.keyboard.press("Escape")
    expect(calendar).to_be_hidden()


def test_settings_mask_secrets_and_show_the_servers_validation_error(
    system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    secret = "sk-e2e-VERY-SECRET-9876"
    # The key enables the LLM client; it is never called here (no instruction is typed).
    running = system_factory([], llm={"api_key": secret, "base_url": "http://127.0.0.1:9"})
    desk = open_desk(running)
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    win = page.locator("#win_settings")
    expect(win).to_be_visible()
    key = page.locator("#set_llm_api_key")
    expect(key).to_have_value("")
    expect(key).to_have_attribute("placeholder", re.compile("••••9876"))
    expect(page.locator("#set_voice_rate")).to_have_value("0.9")
    assert secret not in page.content()
    assert secret not in str(desk.api("GET", "/api/config"))

    desk.allow_console(r"status of 400")
    page.locator("#set_voice_rate").fill("99")
    page.locator("#settings_save").click()
    error = page.locator("#settings_error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("voice_rate")
    desk.shot("settings_error")
    # Refused as a whole: nothing was applied or stored.
    assert running.system.config.voice_rate == 0.9
    assert desk.api("GET", "/api/config")["config"]["voice_rate"] == 0.9


def test_the_audit_window_lists_the_tool_calls_of_a_step_plan(desk: Desk) -> None:
    body = desk.gallery_show("loading")
    expect(body.locator(".view-title")).to_have_text("Loaded")
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#start_audit").click()
    audit = page.locator("#win_audit")
    expect(audit).to_be_visible()
    rows = audit.locator("tbody tr")
    for tool in ("cache_set", "cache_get"):
        row = rows.filter(has=page.locator("td", has_text=re.compile(rf"^{tool}$")))
        expect(row.first).to_contain_text("gallery")
        expect(row.first).to_contain_text("ok")
    page.locator("#audit_app").select_option("e2e_slow")
    expect(audit.locator(".table-count")).to_have_text(re.compile(r"\b0\b"))
    desk.shot("audit")
