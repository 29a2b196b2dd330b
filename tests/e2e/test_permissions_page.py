"""Settings → App permissions in Chromium (DESIGN §11.7): the user switches a grant off with
the keyboard and the system refuses the app's UI operations at once."""

from __future__ import annotations

from typing import Any

import requests
from playwright.sync_api import expect

from tests.e2e.conftest import Desk

SYSTEM_APPS = ["system_agent", "monitor"]


def grants(desk: Desk, app: str) -> dict[str, Any]:
    listed = {a["id"]: a for a in desk.api("GET", "/api/apps")}
    perms: dict[str, Any] = listed[app]["permissions"]
    return perms


def test_switching_off_desktop_control_revokes_it(desk: Desk) -> None:
    page, running = desk.page, desk.running
    assert grants(desk, "system_agent")["granted"] == ["desktop.control"]
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    expect(page.locator("#win_settings")).to_be_visible()
    general = page.locator("#settings_tab_general")
    expect(general).to_have_attribute("aria-selected", "true")
    # keyboard only: focus the tab list, arrow to the permissions page
    general.focus()
    page.keyboard.press("ArrowRight")
    tab = page.locator("#settings_tab_permissions")
    expect(tab).to_be_focused()
    expect(tab).to_have_attribute("aria-selected", "true")
    expect(tab).to_have_text("App permissions")

    switch = page.locator("#perm_system_agent_desktop_control")
    expect(switch).to_be_checked()
    expect(page.locator("#perm_monitor_system_processes")).to_be_checked()
    row = page.locator('.perm-app[data-app="system_agent"]')
    expect(row).to_contain_text("Control the desktop")
    desk.shot("permissions_page")

    switch.focus()
    page.keyboard.press("Space")
    # the app's display name is its manifest's, in the UI language (DESIGN §3)
    expect(page.locator("#perms_status")).to_have_text(
        "Revoked from System Control: Control the desktop"
    )
    expect(switch).not_to_be_checked()
    assert grants(desk, "system_agent") == {"requested": ["desktop.control"], "granted": []}

    record = running.system.launcher.get("system_agent")
    assert record is not None
    refused = requests.post(
        running.url + "/api/sys/ui",
        json={"op": "hide", "id": "clock"},
        headers={"Authorization": f"Bearer {record.token}"},
        timeout=10,
    )
    assert refused.status_code == 403
    assert "'desktop.control' is not granted to system_agent" in refused.json()["error"]
    # the user is told once, in the notification panel, where to grant it
    expect(page.locator("#toasts")).to_contain_text("Settings → App permissions")

    page.keyboard.press("Space")  # and on again
    expect(switch).to_be_checked()
    expect(page.locator("#perms_status")).to_have_text(
        "Granted to System Control: Control the desktop"
    )
    assert grants(desk, "system_agent")["granted"] == ["desktop.control"]
