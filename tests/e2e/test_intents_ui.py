"""System intents on the desktop in Chromium (aios/control/intents.py,
renderer/js/desk/intents.js): what people type first is carried out by the desktop
itself — "打开设置" opens the Settings window, "close gallery" closes the gallery's window
(the app keeps running), "hello" answers in a card whose suggestion chips send their
instruction, and an instruction nothing understood opens the start menu searching for it."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.conftest import Desk

SYSTEM_APPS = ["gallery"]


def send(desk: Desk, text: str) -> None:
    box = desk.page.locator("#command_input")
    box.fill(text)
    box.press("Enter")


def test_open_settings_opens_the_settings_window(desk: Desk) -> None:
    send(desk, "打开设置")
    expect(desk.win("settings")).to_be_visible()
    expect(desk.page.locator("#intent_reply")).to_be_hidden()  # the window is the answer


def test_close_an_app_closes_its_window_not_the_app(desk: Desk) -> None:
    desk.open_app("gallery")
    send(desk, "close gallery")
    expect(desk.win("gallery")).to_have_count(0)
    assert desk.api("GET", "/api/health")["apps"]["gallery"] == "running"


def test_suggestion_chips_send_their_instruction(desk: Desk) -> None:
    card = desk.page.locator("#intent_reply")
    send(desk, "hello")
    expect(card).to_be_visible()
    expect(card.locator(".intent-text")).to_contain_text("Hi!")
    card.locator(".suggestion-chip", has_text="What can you do?").click()
    # the chip's instruction ran: the help answer, one chip per app
    expect(card.locator(".intent-text")).to_contain_text("Just say what you'd like to do")
    expect(card.locator(".suggestion-chip[data-suggest]")).to_have_count(1)
    desk.shot("help-card")
    # nothing understood: the closest apps, and the start menu searching for the text
    send(desk, "qwxzv")
    expect(desk.page.locator("#start_menu")).to_be_visible()
    expect(desk.page.locator("#start_filter")).to_have_value("qwxzv")
    expect(card.locator(".suggestion-chip")).not_to_have_count(0)
