"""Apps on demand in the desktop (issue 27): the start menu tells which apps run, and an
app that does not run yet starts when it is opened, its window filled once it answers."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk
from tests.integration.conftest import Running

pytestmark = pytest.mark.e2e


def test_the_start_menu_shows_which_apps_run_and_opening_one_starts_it(
    system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    running = system_factory(["gallery", "hello"], apps_config={"autostart": ["hello"]})
    desk = open_desk(running)
    page = desk.page

    page.locator("#start_button").click()
    expect(page.locator("#menu_hello .status-badge")).to_have_text("running")
    expect(page.locator("#menu_gallery .status-badge")).to_have_text("not running")
    desk.shot("start_menu_idle")

    page.locator("#menu_gallery").click()  # gallery starts now, for this window
    body = desk.body("gallery")
    expect(body.locator(".view-title")).to_have_text("Gallery: every view type")
    page.locator("#start_button").click()
    expect(page.locator("#menu_gallery .status-badge")).to_have_text("running")
    desk.shot("start_menu_started")


# Every app_status event redraws the taskbar and the start menu. A redraw that replaced the
# buttons took the keyboard focus away from the icon the user was on, and a click whose
# mouse-down and mouse-up straddled the swap opened nothing (a window that never came).
SEEN_STATUSES = """() => {
  window.__seen = [];
  const note = () => {
    const icon = document.getElementById('icon_hello');
    const status = icon && [...icon.classList].find((c) => c.startsWith('status-'));
    if (status && window.__seen[window.__seen.length - 1] !== status) window.__seen.push(status);
  };
  new MutationObserver(note).observe(document.getElementById('taskbar_icons'),
    { subtree: true, childList: true, attributes: true });
  note();
}"""


def test_the_focused_taskbar_icon_stays_focused_while_its_app_restarts(
    system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    running = system_factory(["gallery", "hello"], apps_config={"autostart": ["hello"]})
    desk = open_desk(running)
    page = desk.page
    icon = page.locator("#icon_hello")
    expect(icon).to_have_class(re.compile(r"\bstatus-running\b"))
    icon.focus()
    page.evaluate("() => { document.getElementById('icon_hello').__probe = 'mine'; }")
    page.evaluate(SEEN_STATUSES)

    assert running.post("/api/apps/hello/restart").status_code == 200
    # the icon went through another status and came back to running
    page.wait_for_function(
        "() => window.__seen.length >= 3 && window.__seen.at(-1) === 'status-running'"
    )
    assert page.evaluate("() => document.activeElement.__probe") == "mine"
    assert page.evaluate("() => document.activeElement.id") == "icon_hello"
    page.keyboard.press("Enter")  # the focus is real: Enter opens the app from its icon
    expect(desk.body("hello")).to_be_visible()
