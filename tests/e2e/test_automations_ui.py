"""The desktop that speaks first, in Chromium (DESIGN §18): a reminder said in the command
bar shows in the conversation panel when due; a run that ends in a conversation the page
is not showing is announced in the panel; do-not-disturb in the tray silences that;
Settings → Automations lists the automations and deletes one."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import Desk, start_e2e_system, wait_until
from tests.integration.conftest import Running

SYSTEM_APPS = ["gallery"]
DUE_MS = 30_000
"""How long the page may take to show a due reminder (a loaded machine)."""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    system = start_e2e_system(tmp_path_factory.mktemp("e2e"), SYSTEM_APPS)
    yield system
    system.stop()


def say(page: Page, text: str) -> None:
    box = page.locator("#command_input")
    box.fill(text)
    box.press("Enter")
    expect(page.locator("#command_bar")).not_to_have_class("is-busy")


def open_panel(page: Page) -> Locator:
    page.keyboard.press("Control+.")
    panel = page.locator("#conversation")
    expect(panel).to_be_visible()
    return panel


def desktop_said(panel: Locator) -> Locator:
    return panel.locator(".conv-desktop .conv-text")


def looking_at(desk: Desk) -> str:
    """The session the page shows, once the server knows the page looks at it."""
    handle = desk.page.wait_for_function("() => localStorage.getItem('aios.session')")
    sid = handle.json_value()
    assert isinstance(sid, str) and sid
    thinker = desk.running.system.thinker
    wait_until(lambda: thinker.attention.session_id == sid and thinker.attention.visible,
               what="the page's attention reported")  # fmt: skip
    return str(sid)


def run_elsewhere(desk: Desk) -> int:
    """An instruction in another conversation, to its end; the bus seq it ended at."""
    reply = desk.api("POST", "/api/instruction", {"text": "gallery"})
    run = desk.api("GET", f"/api/runs/{reply['run_id']}")
    assert run["state"] == "done"
    return desk.running.system.bus.seq


def test_a_reminder_said_in_the_command_bar_shows_in_the_panel_when_due(desk: Desk) -> None:
    page = desk.page
    say(page, "remind me in 3 seconds to stretch")
    panel = open_panel(page)
    expect(panel.locator(".conv-reply .conv-text").last).to_contain_text("I'll remind you: stretch")
    expect(desktop_said(panel)).to_have_text(["Reminder: stretch"], timeout=DUE_MS)


def test_a_run_the_user_is_not_looking_at_is_announced_and_dnd_silences_it(desk: Desk) -> None:
    page = desk.page
    say(page, "gallery")
    panel = open_panel(page)
    expect(panel.locator(".conv-user .conv-text")).to_have_text(["gallery"])
    sid = looking_at(desk)
    run_elsewhere(desk)
    announced = desktop_said(panel).filter(has_text="In another conversation")
    expect(announced).to_have_count(1)
    expect(announced).to_contain_text("“gallery” is done.")
    # do not disturb: the tray's toggle, then nothing more is announced
    dnd = page.locator("#tray_dnd")
    expect(dnd).to_have_attribute("aria-pressed", "false")
    dnd.click()
    expect(dnd).to_have_attribute("aria-pressed", "true")
    assert desk.running.system.config.duplex.dnd is True
    try:
        ended = run_elsewhere(desk)
        thinker = desk.running.system.thinker
        wait_until(lambda: thinker.seen >= ended, what="the thinker to have seen the run end")
        said = [e for e in desk.api("GET", f"/api/sessions/{sid}/timeline")["entries"]
                if e.get("from") == "desktop" and e.get("about") == "run_done"]  # fmt: skip
        assert len(said) == 1  # the first announcement only
        expect(announced).to_have_count(1)
    finally:
        dnd.click()
        expect(dnd).to_have_attribute("aria-pressed", "false")


def test_settings_automations_lists_and_deletes(desk: Desk) -> None:
    page = desk.page
    made = desk.api("POST", "/api/automations",
                    {"text": "every Monday at 9 list my notes tagged work"})  # fmt: skip
    other = desk.api("POST", "/api/automations", {"what": "water the plants",
                     "kind": "reminder", "at": time.time() + 3600})  # fmt: skip
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#settings_tab_automations").click()
    listing = page.locator("#automations_page .auto-item")
    expect(listing).to_have_count(len(desk.api("GET", "/api/automations")))
    weekly = listing.filter(has_text="list my notes tagged work")
    expect(weekly.locator(".auto-rule")).to_have_text("every Monday at 09:00")
    weekly.get_by_role("button", name="Pause").click()
    expect(weekly.get_by_role("button", name="Resume")).to_be_visible()
    assert desk.api("GET", "/api/automations")  # still there, paused:
    assert [a["paused"] for a in desk.api("GET", "/api/automations")
            if a["id"] == made["automation"]["id"]] == [True]  # fmt: skip
    listing.filter(has_text="water the plants").get_by_role("button", name="Delete").click()
    expect(listing.filter(has_text="water the plants")).to_have_count(0)
    ids = [a["id"] for a in desk.api("GET", "/api/automations")]
    assert other["automation"]["id"] not in ids and made["automation"]["id"] in ids
