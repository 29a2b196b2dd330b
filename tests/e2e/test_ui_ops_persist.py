"""UI changes are visible, reversible and persistent (issue 13, system control): typed
commands go to the real system-control app, the real system logs its ops, and Chromium shows
them: a red start button really looks red, a moved clock survives rotating the taskbar and
comes back exactly, a moved start button stays above the toasts, a reload keeps the changes
until "恢复默认" and then stays default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk, wait_until
from tests.integration.conftest import Running

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["system_agent"]
RED = "rgb(255, 0, 0)"


def ready(running: Running, open_desk: Callable[..., Desk]) -> Desk:
    """A desktop whose log is re-applied and whose snapshot the app can read; no change left."""
    running.system.ui_log.apply([{"op": "reset"}])
    desk = open_desk(running)
    desk.page.locator("html[data-uiops=restored]").wait_for(state="attached")
    wait_until(
        lambda: "clock" in {e["id"] for e in snapshot(running).get("elements", [])},
        "the desktop's snapshot",
    )
    return desk


def snapshot(running: Running) -> dict[str, Any]:
    return running.system.store.cache_get("desktop", "ui_snapshot") or {}


def ui_ops_sent(desk: Desk) -> int:
    rows = desk.api("GET", "/api/audit?app=system_agent&limit=1000")
    return sum(1 for r in rows if r["tool"] == "ui_op" and r["status"] == "ok")


def say(desk: Desk, text: str) -> None:
    """Type a command; returns once the system-control app has sent its UI operation."""
    before = ui_ops_sent(desk)
    box = desk.page.locator("#command_input")
    box.fill(text)
    box.press("Enter")
    wait_until(lambda: ui_ops_sent(desk) > before, f"the system-control app acting on {text!r}")


def box_of(desk: Desk, selector: str) -> dict[str, float]:
    box = desk.page.locator(selector).bounding_box()
    assert box is not None, selector
    return box


def on_screen(box: dict[str, float]) -> bool:
    return (
        box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= 1280
        and (box["y"] + box["height"] <= 800)
    )


def test_a_red_start_button_is_red_and_a_moved_one_stays_above_the_toasts(
    running: Running, open_desk: Callable[..., Desk]
) -> None:
    desk = ready(running, open_desk)
    start = desk.page.locator("#start_button")
    assert "gradient" in start.evaluate("n => getComputedStyle(n).backgroundImage")
    say(desk, "把开始按钮变成红色")
    expect(start).to_have_css("background-color", RED)
    expect(start).to_have_css("background-image", "none")  # no gradient painted over the red

    # a toast where the button is sent: the button is drawn above it
    toast = desk.page.evaluate(
        """async () => {
          const { toast } = await import('/static/js/desk/notify.js');
          const r = toast('a toast under the start button', { ms: 60000 }).getBoundingClientRect();
          return { x: r.left, y: r.top, width: r.width, height: r.height };
        }"""
    )
    x, y = round(toast["x"] + 20), round(toast["y"] + 4)
    say(desk, f"把开始按钮移到 ({x}, {y})")
    wait_until(lambda: abs(box_of(desk, "#start_button")["x"] - x) < 2, "the moved start button")
    b = box_of(desk, "#start_button")
    cx, cy = b["x"] + b["width"] / 2, b["y"] + b["height"] / 2
    assert toast["x"] <= cx <= toast["x"] + toast["width"]
    assert toast["y"] <= cy <= toast["y"] + toast["height"], (toast, b)
    hit = desk.page.evaluate(
        "([x, y]) => { const n = document.elementFromPoint(x, y); "
        "return n && n.closest('#start_button') ? 'start_button' : (n && n.className); }",
        [cx, cy],
    )
    assert hit == "start_button"
    assert desk.problems() == []


def test_a_moved_clock_survives_rotating_the_taskbar_and_goes_back_exactly(
    running: Running, open_desk: Callable[..., Desk]
) -> None:
    desk = ready(running, open_desk)
    start = box_of(desk, "#clock")
    say(desk, "把时钟移到左上角")
    wait_until(lambda: box_of(desk, "#clock")["y"] < 100, "the clock in the top-left corner")
    moved = box_of(desk, "#clock")
    assert moved["x"] < 100 and on_screen(moved)

    say(desk, "旋转任务栏 10 度")
    expect(desk.page.locator("#taskbar")).to_have_css("rotate", "10deg")
    assert box_of(desk, "#clock") == moved  # the taskbar's rotation does not carry it along
    say(desk, "把任务栏转回来")
    expect(desk.page.locator("#taskbar")).to_have_css("rotate", "none")
    assert box_of(desk, "#clock") == moved

    say(desk, "把时钟放回原来的位置")
    wait_until(lambda: box_of(desk, "#clock") == start, "the clock back in the taskbar")
    assert on_screen(box_of(desk, "#clock"))
    assert [o["id"] for o in desk.api("GET", "/api/ui/ops")["ops"]] == ["taskbar", "taskbar"]
    assert desk.problems() == []


def test_a_reload_keeps_the_changes_until_reset_then_stays_default(
    running: Running, open_desk: Callable[..., Desk]
) -> None:
    desk = ready(running, open_desk)
    page = desk.page
    taskbar_before = box_of(desk, "#taskbar")
    say(desk, "把开始按钮变成红色")
    say(desk, "隐藏时钟")
    expect(page.locator("#clock")).to_be_hidden()

    page.reload()
    page.locator("html[data-uiops=restored]").wait_for(state="attached")
    expect(page.locator("#start_button")).to_have_css("background-color", RED)
    expect(page.locator("#clock")).to_be_hidden()

    say(desk, "恢复默认")
    expect(page.locator("#clock")).to_be_visible()
    expect(page.locator("#start_button")).not_to_have_css("background-color", RED)
    assert "gradient" in page.locator("#start_button").evaluate(
        "n => getComputedStyle(n).backgroundImage"
    )
    assert desk.api("GET", "/api/ui/ops") == {"ops": []}

    page.reload()
    page.locator("html[data-uiops=restored]").wait_for(state="attached")
    expect(page.locator("#clock")).to_be_visible()
    assert "gradient" in page.locator("#start_button").evaluate(
        "n => getComputedStyle(n).backgroundImage"
    )
    assert box_of(desk, "#taskbar") == taskbar_before
    assert desk.problems() == []
