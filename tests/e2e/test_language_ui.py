"""Language on the desktop (issue 13): apps named in the UI language everywhere, a language
switch that re-labels and re-asks the open windows, and the assistant without an LLM
pointing at Settings instead of a wall of setup text."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["notes", "assistant"]


def switch_language(desk: Desk, lang: str) -> None:
    """Through the Settings window, as a user does."""
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#set_language").select_option(lang)
    page.locator("#settings_save").click()
    expect(page.locator("html")).to_have_attribute("lang", lang)
    page.locator("#win_settings .win-close").click()


def test_english_names_everywhere_and_a_switch_relabels_open_windows(desk: Desk) -> None:
    page = desk.page
    expect(page.locator("#icon_notes")).to_have_attribute("aria-label", "Notes")
    page.locator("#start_button").click()
    expect(page.locator("#menu_notes")).to_contain_text("Notes")
    expect(page.locator("#menu_notes")).not_to_contain_text("记事本")
    # the search finds an app by its name in the other language too
    page.locator("#start_filter").fill("记事本")
    expect(page.locator("#menu_notes")).to_be_visible()
    expect(page.locator("#menu_assistant")).to_have_count(0)
    page.locator("#start_filter").fill("")
    page.keyboard.press("Escape")

    body = desk.open_app("notes")
    title = desk.win("notes").locator(".win-title")
    expect(title).to_have_text("Notes")
    expect(body).to_contain_text("No notes yet")

    switch_language(desk, "zh-CN")
    # the same window, re-labelled and re-drawn in Chinese without reopening it
    expect(title).to_have_text("记事本")
    expect(body).to_contain_text("还没有笔记")
    expect(page.locator("#icon_notes")).to_have_attribute("aria-label", "记事本")
    switch_language(desk, "en")
    expect(title).to_have_text("Notes")
    expect(body).to_contain_text("No notes yet")


def test_assistant_without_an_llm_shows_the_question_and_opens_settings(desk: Desk) -> None:
    page = desk.page
    desk.open_app("assistant")
    field = desk.win("assistant").locator('[data-id="btn_ask"] input')
    field.fill("what is 2+2")
    field.press("Enter")
    body = desk.body("assistant")
    text = body.locator(".text-content").first
    expect(text).to_contain_text("You asked: what is 2+2")
    expect(text).to_contain_text("No language model is set up yet, so I can't answer questions.")
    expect(body).to_have_attribute("data-view-type", "text")  # not a red error view
    # the setup text exists once, folded away
    details = body.locator("details.text-details")
    expect(details).not_to_have_attribute("open", "")
    expect(body.get_by_text("DEEPSEEK_API_KEY", exact=False)).to_have_count(1)
    button = desk.control("assistant", "open_settings")
    expect(button).to_have_text("Open Settings")
    button.click()
    expect(page.locator("#win_settings")).to_be_visible()
    expect(page.locator("#set_llm_base_url")).to_be_focused()
