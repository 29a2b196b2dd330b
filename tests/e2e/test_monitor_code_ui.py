"""The monitor and code apps as a person uses them: the process list can be read while it
refreshes live, the code editor is a code editor (monospace, Tab indents), and an endless
loop is stopped from the code window, which then says so."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import expect

from tests.e2e.conftest import Desk
from tests.integration.conftest import Running
from tests.util import wait_for

SYSTEM_APPS = ["monitor", "code"]
SCROLL_ROWS = 20
"""Rows the test scrolls the process list down by before a live refresh."""


def test_monitor_and_code_windows(running: Running, open_desk: Callable[..., Desk]) -> None:
    """One desktop for both (opening a page costs seconds here)."""
    desk = open_desk(running)
    process_list_keeps_its_scroll_position_across_a_live_refresh(desk)
    code_editor_is_monospace_and_tab_indents(desk)
    an_endless_loop_is_stopped_from_the_window(desk)


CHURN_ROWS = 3
"""Rows the list may move by: processes started or ended above the place between refreshes."""


def process_list_keeps_its_scroll_position_across_a_live_refresh(desk: Desk) -> None:
    desk.open_app("monitor")
    desk.control("monitor", "processes").click()
    body = desk.wait_view("monitor", "table")
    rows = body.locator("tbody tr")
    expect(rows.nth(SCROLL_ROWS * 2)).to_be_attached()

    def scrolled() -> list[float] | None:
        """Scroll whichever box scrolls (the table's own or the window's) down by
        SCROLL_ROWS rows and mark the current first row -> [scrollTop, row height];
        None while a refresh is replacing the table (its rows not laid out yet)."""
        got: list[float] | None = body.evaluate(
            """(b, rows) => {
                const first = b.querySelector('tbody tr');
                const h = first ? first.getBoundingClientRect().height : 0;
                const boxes = [b.querySelector('.table-wrap'), b.closest('.win-content'), b];
                const box = boxes.find((n) => n && n.scrollHeight > n.clientHeight + 1);
                if (!h || !box) return null;
                box.scrollTop = h * rows;
                if (!box.scrollTop) return null;
                first.dataset.kOld = '1';
                return [box.scrollTop, h];
            }""",
            SCROLL_ROWS,
        )
        return got

    before, row_height = wait_for(scrolled, "the process list to scroll", interval=0.1)
    # a live refresh re-renders the table (the marked old row is gone) on the same page
    expect(body.locator("tbody tr[data-k-old]")).to_have_count(0)
    expect(body).to_have_attribute("data-view-type", "table")
    after = body.evaluate(
        """(b) => {
            const boxes = [b.querySelector('.table-wrap'), b.closest('.win-content'), b];
            const box = boxes.find((n) => n && n.scrollHeight > n.clientHeight + 1);
            return box.scrollTop;
        }"""
    )
    # the place is kept, give or take the processes that came or went above it between
    # the two refreshes (a loaded machine starts and ends a few every second)
    assert abs(after - before) <= CHURN_ROWS * row_height, (before, after)
    desk.shot("monitor_processes")


def code_editor_is_monospace_and_tab_indents(desk: Desk) -> None:
    body = desk.open_app("code")
    editor = body.locator("textarea").first
    font = editor.evaluate("a => getComputedStyle(a).fontFamily")
    assert "mono" in font.lower(), font
    editor.fill("if True:\n")
    editor.press("End")
    editor.evaluate("a => a.setSelectionRange(a.value.length, a.value.length)")
    editor.press("Tab")
    expect(editor).to_be_focused()  # Tab indented instead of leaving the field
    assert editor.input_value().startswith("if True:\n") and editor.input_value().endswith(" ")
    assert editor.input_value() != "if True:\n"


def an_endless_loop_is_stopped_from_the_window(desk: Desk) -> None:
    editor = desk.body("code").locator("textarea").first
    editor.fill("while True:\n    pass\n")
    desk.control("code", "run_form").click()
    expect(desk.win("code").locator(".run-progress")).to_contain_text("shell_exec")
    desk.win("code").locator('.win-titlebar [data-action="stop-run"]').click()
    summary = desk.body("code").locator(".code-summary")
    expect(summary).to_have_text("Stopped: you stopped the program")
    expect(summary).to_have_attribute("data-tone", "error")
    desk.shot("code_stopped")
