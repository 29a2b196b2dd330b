"""Listening while the user types (DESIGN §18, renderer/js/desk/duplex.js), in Chromium,
typing like a person (a delay between keys): the route chip shows before Enter; a bulk
delete is called out before Enter, with how many files it would remove, while the caret
and the draft stay as they were; two apps that tie get a question at a pause; the rate
limit holds back a second question (not a danger), and "mute for this session" silences
the rest."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Locator, expect

from tests.e2e.conftest import Desk, start_e2e_system
from tests.integration.conftest import Running
from tests.util import wait_for

SYSTEM_APPS = ["files", "notes", "assistant", "code"]
KEY_DELAY_MS = 45
"""Between two keystrokes: a quick typist, well under the pause (duplex.pause_s, 1.5 s)."""
TIE = "I have a question about python decorators"
"""The assistant and the code apps score too close to call on it (the offline router)."""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """The module's system; the rate limit's interval long enough that no slow moment of a
    shared machine lets a second question through (each test's page is a session of its own)."""
    system = start_e2e_system(
        tmp_path_factory.mktemp("duplex"), SYSTEM_APPS, duplex={"min_interval_s": 600}
    )
    yield system
    system.stop()


def type_draft(desk: Desk, text: str) -> Locator:
    box = desk.page.locator("#command_input")
    box.click()
    box.press_sequentially(text, delay=KEY_DELAY_MS)
    return box


def clear(desk: Desk) -> None:
    box = desk.page.locator("#command_input")
    box.press("Control+a")
    box.press("Backspace")
    expect(desk.page.locator("#draft_route")).to_be_hidden()


def preview_of(desk: Desk, text: str, *, paused: bool) -> None:
    """Wait until the page drew the server's preview of ``text`` (after a pause if asked)."""
    stack = desk.page.locator("#draft_preview")
    expect(stack).to_have_attribute("data-draft", text)
    if paused:
        expect(stack).to_have_attribute("data-paused", "true")


def focused_id(desk: Desk) -> str:
    return str(desk.page.evaluate("() => document.activeElement && document.activeElement.id"))


def test_route_chip_before_enter_and_nothing_kept_until_then(desk: Desk) -> None:
    box = type_draft(desk, "note: buy milk tomorrow")
    chip = desk.page.locator("#draft_route")
    expect(chip).to_have_text("→ Notes")
    assert desk.api("GET", "/api/sessions?limit=5") == [], "a draft was stored before Enter"
    box.press("Enter")
    expect(chip).to_be_hidden()
    expect(box).to_have_value("")


def test_danger_before_enter_names_the_files_and_leaves_focus_and_draft(desk: Desk) -> None:
    workspace = desk.running.apps_dir / "files" / "workspace"
    logs = [workspace / f"build-{i}.log" for i in range(12)]
    for path in logs:
        path.write_text("old output\n")
    draft = "删除所有 .log 文件"
    box = type_draft(desk, draft)
    preview_of(desk, draft, paused=False)
    bubble = desk.page.locator("#draft_bubble")
    expect(bubble).to_be_visible()
    expect(bubble).to_contain_text("这会删掉 12 个文件")
    expect(bubble).to_have_attribute("data-kind", "danger")
    desk.shot("danger")
    # the bubble took nothing: the caret is in the bar, the draft as typed, no file gone
    assert focused_id(desk) == "command_input"
    expect(box).to_have_value(draft)
    assert all(p.exists() for p in logs)
    # going on typing answers it: the caret stays, the words go on after the draft
    box.press_sequentially("吧", delay=KEY_DELAY_MS)
    expect(box).to_have_value(draft + "吧")
    preview_of(desk, draft + "吧", paused=False)
    expect(bubble).to_be_visible()  # the same interjection, still true
    bubble.locator(".draft-bubble-close").click()
    expect(bubble).to_be_hidden()
    assert focused_id(desk) == "command_input"
    for path in logs:
        path.unlink()


def test_a_tie_asks_which_app_at_a_pause(desk: Desk) -> None:
    type_draft(desk, TIE)
    chip = desk.page.locator("#draft_route")
    expect(chip).to_have_class(re.compile(r"\bis-tie\b"))
    expect(chip).to_contain_text("Assistant / Code")
    bubble = desk.page.locator("#draft_bubble")
    preview_of(desk, TIE, paused=True)
    expect(bubble).to_be_visible()
    expect(bubble).to_have_text(re.compile(r"Do you mean Assistant, or Code\?"))
    expect(bubble).to_have_attribute("data-style", "question")
    assert focused_id(desk) == "command_input"


def test_rate_limit_holds_back_a_second_question_then_mute_silences_all(desk: Desk) -> None:
    bubble = desk.page.locator("#draft_bubble")
    type_draft(desk, "remind me to call mom")
    preview_of(desk, "remind me to call mom", paused=True)
    expect(bubble).to_have_text(re.compile("Remind you when"))
    clear(desk)
    # a second question within duplex.min_interval_s: held back, the chip still shows
    type_draft(desk, TIE)
    preview_of(desk, TIE, paused=True)
    expect(desk.page.locator("#draft_route")).to_have_class(re.compile(r"\bis-tie\b"))
    expect(bubble).to_be_hidden()
    clear(desk)
    # a danger (level 8) is never held back by the rate limit
    type_draft(desk, "rm -rf build")
    preview_of(desk, "rm -rf build", paused=False)
    expect(bubble).to_have_attribute("data-kind", "danger")
    expect(bubble).to_be_visible()
    bubble.locator(".draft-bubble-mute").click()
    expect(bubble).to_be_hidden()
    expect(desk.page.locator("#draft_preview")).to_have_attribute("data-muted", "true")
    assert focused_id(desk) == "command_input"
    clear(desk)
    type_draft(desk, "rm -rf dist")
    preview_of(desk, "rm -rf dist", paused=False)
    expect(desk.page.locator("#draft_route")).to_be_visible()
    expect(bubble).to_be_hidden()


def test_settings_turn_listening_off_and_the_bar_stops_previewing(desk: Desk) -> None:
    """Settings → General → Conversation: unticking "listen while I type" is saved and in
    force at once (a draft gets no chip); a bad interval is refused naming the key."""
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    group = page.locator("#settings_duplex")
    expect(group).to_be_visible()
    expect(page.locator("#set_duplex_min_interval")).to_have_value("600")
    try:
        desk.allow_console(r"status of 400")
        page.locator("#set_duplex_min_interval").fill("-5")
        page.locator("#settings_save").click()
        expect(page.locator("#settings_error")).to_contain_text("min_interval_s")
        page.locator("#set_duplex_min_interval").fill("600")
        page.locator("#set_duplex_enabled").uncheck()
        page.locator("#settings_save").click()
        expect(page.locator("#settings_error")).to_be_hidden()
        wait_for(
            lambda: desk.api("GET", "/api/config")["config"]["duplex"]["enabled"] is False,
            "duplex.enabled saved off",
        )
        type_draft(desk, "note: buy bread")
        expect(page.locator("#draft_route")).to_be_hidden()
        # ticked again: the same bar previews the next keystroke's draft (the control)
        page.locator("#set_duplex_enabled").check()
        page.locator("#settings_save").click()
        wait_for(
            lambda: desk.api("GET", "/api/config")["config"]["duplex"]["enabled"] is True,
            "duplex.enabled saved on",
        )
        box = page.locator("#command_input")
        box.click()
        box.press("End")
        box.press_sequentially("s", delay=KEY_DELAY_MS)
        preview_of(desk, "note: buy breads", paused=False)
        expect(page.locator("#draft_route")).to_have_text("→ Notes")
    finally:
        desk.api("POST", "/api/config", {"updates": {"duplex": {"enabled": True}}})
