"""Topics in Chromium (DESIGN §18 "Topics", renderer/js/conversation/topics.js), typing like a
person: notes, then music, then "back to the notes" — the notes window comes to the front
with its last view and the panel's tree shows the notes active, the music paused; with the
notes window closed, "回到刚才的笔记" opens it again on that view; a paused topic clicked in
the panel comes back the same way."""

from __future__ import annotations

from playwright.sync_api import Locator, expect

from tests.e2e.conftest import Desk, expect_in_front

SYSTEM_APPS = ["notes", "music"]
KEY_DELAY_MS = 30
"""Between two keystrokes: a quick typist."""


def say(desk: Desk, text: str) -> None:
    box = desk.page.locator("#command_input")
    box.click()
    box.press_sequentially(text, delay=KEY_DELAY_MS)
    box.press("Enter")
    expect(box).to_have_value("")


def topic(desk: Desk, app: str) -> Locator:
    return desk.page.locator(f"#conv_topics li.topic[data-app={app}]").first


def test_back_to_the_notes_raises_their_window_with_its_last_view(desk: Desk) -> None:
    say(desk, "add a note: buy milk and eggs")
    notes = desk.body("notes")
    expect(notes).to_contain_text("buy milk and eggs")
    say(desk, "play some jazz music")
    expect_in_front(desk, "music")

    say(desk, "back to the notes")
    expect_in_front(desk, "notes")
    expect(notes).to_contain_text("buy milk and eggs")
    desk.page.locator("#conversation_button").click()
    expect(topic(desk, "notes")).to_have_class("topic is-active")
    expect(topic(desk, "notes")).to_have_attribute("aria-current", "true")
    expect(topic(desk, "music")).to_have_class("topic is-paused")
    expect(desk.page.locator("#conversation .conv-list")).to_contain_text("OK — back to")
    desk.shot("topics")

    # the window closed: the words in Chinese open it again on the topic's last view
    say(desk, "close notes")
    expect(desk.win("notes")).to_have_count(0)
    say(desk, "play some jazz music")
    expect(topic(desk, "music")).to_have_class("topic is-active")
    say(desk, "回到刚才的笔记")
    expect_in_front(desk, "notes")
    expect(desk.body("notes")).to_contain_text("buy milk and eggs")
    expect(topic(desk, "notes")).to_have_class("topic is-active")
    expect(desk.page.locator("#conversation .conv-list")).to_contain_text("好，回到")

    # the panel: a paused topic is a button that brings it back
    topic(desk, "music").locator("button.topic-head").click()
    expect_in_front(desk, "music")
    expect(topic(desk, "music")).to_have_class("topic is-active")
    expect(topic(desk, "notes")).to_have_class("topic is-paused")
    desk.page.set_viewport_size({"width": 1024, "height": 700})
    expect(desk.page.locator("#conversation .conv-list")).to_be_visible()
    desk.shot("topics-1024x700")
