"""Apps on demand in the desktop (issue 27): the start menu tells which apps run, and an
app that does not run yet starts when it is opened, its window filled once it answers."""

from __future__ import annotations

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
