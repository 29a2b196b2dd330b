"""Button variants, per-row controls, table alignment, empty states, kept scroll and the
code editor, in a real browser (docs/renderer.md "Variants and row controls").

The views come from the gallery's "Row controls" and "Button variants" views; what a
control sent is read back from the app's own echo (the message line or the text view).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from tests.e2e.conftest import Desk

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery"]

PRIMARY = re.compile(r"(^|\s)btn-primary(\s|$)")


def show(desk: Desk, title: str, label: str = "Show") -> Locator:
    """From the gallery's home list, press ``label`` in the row titled ``title``."""
    if not desk.win("gallery").count():
        desk.open_app("gallery")
    home = desk.body("gallery").locator(".view-title", has_text="Gallery: every view type")
    if not home.count():
        desk.control("gallery", "home").click()
    expect(home).to_be_visible()
    desk.item_button("gallery", title, label).click()
    return desk.body("gallery")


def style(node: Locator, prop: str) -> str:
    return str(node.evaluate("(n, p) => getComputedStyle(n)[p]", prop))


def rgb(color: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", color)[:3])


def received(desk: Desk, needle: str) -> dict[str, Any]:
    """What the gallery echoed on the rows view's message line."""
    line = desk.win("gallery").locator(".win-message")
    expect(line).to_contain_text(needle)
    return json.loads(line.text_content() or "null")


def row(desk: Desk, item_id: str) -> Locator:
    return desk.body("gallery").locator(f'.list-item[data-item-id="{item_id}"]')


def test_variants_option_values_and_the_code_input(desk: Desk) -> None:
    body = show(desk, "Button variants")
    expect(body.locator(".view-title")).to_have_text("Button variants")
    plain = desk.control("gallery", "var_plain")
    save = desk.control("gallery", "var_primary")
    delete = desk.control("gallery", "var_danger")
    # The first button of the view is not promoted; only "Save" asked to be primary.
    expect(plain).not_to_have_class(PRIMARY)
    assert style(plain, "backgroundImage") == "none"
    assert "gradient" in style(save, "backgroundImage")
    expect(desk.win("gallery").locator(".btn-primary")).to_have_count(1)
    r, g, b = rgb(style(delete, "backgroundColor"))
    assert r > 180 and g < 100 and b < 120, style(delete, "backgroundColor")
    desk.shot("variants")
    # The select's option values are the app's numbers, on the page and in the request.
    select = desk.control("gallery", "var_size").locator("select")
    expect(select.locator("option")).to_have_text(["10 px", "20 px", "40 px"])
    select.select_option(value="20")
    expect(body.locator(".text-content")).to_contain_text('"var_size"')
    sent = json.loads(body.locator(".text-content").text_content() or "null")
    assert sent == {"action_id": "var_size", "selected": 20}
    # The code input: monospace, Tab indents, Escape then Tab leaves (no keyboard trap).
    area = desk.control("gallery", "var_code").locator("textarea")
    expect(area).to_have_class(re.compile(r"\binp-mono\b"))
    assert "mono" in style(area, "fontFamily").lower()
    area.focus()
    desk.page.keyboard.press("Tab")
    desk.page.keyboard.type("x")
    expect(area).to_have_value("    x")
    expect(area).to_be_focused()
    desk.page.keyboard.press("Shift+Tab")
    expect(area).to_have_value("x")
    # Tab on a selection of lines indents each of them.
    area.fill("a\nb")
    area.select_text()
    desk.page.keyboard.press("Tab")
    expect(area).to_have_value("    a\n    b")
    # Escape hands Tab back to the browser: the focus moves on.
    desk.page.keyboard.press("Escape")
    desk.page.keyboard.press("Tab")
    expect(area).not_to_be_focused()
    area.focus()
    desk.page.keyboard.press("Control+Enter")
    body = desk.body("gallery")
    expect(body.locator(".text-content")).to_contain_text('"var_code"')
    sent = json.loads(body.locator(".text-content").text_content() or "null")
    assert sent == {"action_id": "var_code", "value": "    a\n    b"}


def test_row_controls_send_the_row_id_and_value_and_keep_the_scroll(desk: Desk) -> None:
    body = show(desk, "Row controls")
    expect(body.locator(".list-item")).to_have_count(40)
    target = row(desk, "t30")
    target.scroll_into_view_if_needed()
    content = body.locator(".win-content")
    assert content.evaluate("n => n.scrollTop") > 0, "the rows view should scroll"
    before = target.bounding_box()
    # The done box sits before the row's text; ticking it sends the row's id and value.
    target.locator('[data-action-type="checkbox"] input').check()
    sent = received(desk, '"t30"')
    assert sent == {"action_id": "row_done", "params": {"id": "t30", "value": True}}
    # The same view came back: the list did not jump to the top, the row stayed where it was
    # (measured once the redrawn rows are laid out: render.js drops is-redraw then).
    expect(content).not_to_have_class(re.compile(r"\bis-redraw\b"))
    after = target.bounding_box()
    assert before is not None and after is not None
    assert abs(after["y"] - before["y"]) <= 2, (before, after)
    assert content.evaluate("n => n.scrollTop") > 0
    expect(target).to_be_in_viewport()
    expect(target).to_have_class(re.compile(r"\bis-done\b"))
    assert "line-through" in style(target.locator(".list-title"), "textDecorationLine")
    expect(target.locator('[data-action-type="checkbox"] input')).to_be_checked()
    # The toggle sends its new state; the danger button only the id.
    row(desk, "t31").locator(".switch").click()
    assert received(desk, '"t31"') == {
        "action_id": "row_star",
        "on": True,
        "params": {"id": "t31", "value": True},
    }
    delete = row(desk, "t32").get_by_role("button", name="Delete", exact=True)
    expect(delete).to_have_class(re.compile(r"\bbtn-danger\b"))
    delete.click()
    assert received(desk, '"t32"') == {"action_id": "row_delete", "params": {"id": "t32"}}
    expect(row(desk, "t32")).to_have_count(0)
    desk.shot("rows")
    # A refresh pushed while the window is minimised keeps the place too, once it is back.
    before = target.bounding_box()
    desk.win("gallery").get_by_role("button", name="Minimise").click()
    expect(desk.win("gallery")).to_be_hidden()
    view = desk.running.act("gallery", {"action_id": "show", "params": {"view": "rows"}})
    view["message"] = "refreshed"
    desk.running.system.bus.emit("push", {"app": "gallery", "data": view})
    desk.page.locator("#icon_gallery").click()
    expect(desk.win("gallery").locator(".win-message")).to_have_text("refreshed")
    after = target.bounding_box()
    assert before is not None and after is not None
    assert abs(after["y"] - before["y"]) <= 2, (before, after)


def test_table_alignment_and_one_empty_message(desk: Desk) -> None:
    body = show(desk, "Table")
    desk.wait_view("gallery", "table")
    first = body.locator("tbody tr").first.locator("td")
    headers = body.locator("thead th")
    expect(headers.nth(4)).to_have_text("数量 Qty")
    assert style(first.nth(4), "textAlign") == "right"  # quantity
    assert style(first.nth(5), "textAlign") == "right"  # amount
    assert style(first.nth(1), "textAlign") in ("left", "start")  # customer
    assert style(first.nth(6), "whiteSpace") == "nowrap"  # date
    assert style(headers.nth(4).locator("button"), "textAlign") == "right"
    # An empty list says so once, in the app's words.
    body = show(desk, "Row controls", "Empty")
    expect(body.locator(".view-title")).to_have_text("Row controls")
    expect(body.locator(".list-item")).to_have_count(0)
    expect(body.locator(".view-empty")).to_have_text("Nothing to do: the list is empty.")
    expect(body.get_by_text("No data")).to_have_count(0)
