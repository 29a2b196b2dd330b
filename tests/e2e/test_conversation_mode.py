"""Conversation mode in Chromium with a real speech file as the microphone (DESIGN §18):
the turn is submitted by itself when the user has finished speaking, the microphone stays
open, and speech while the desktop speaks stops its voice (barge-in)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.conftest import Desk, Running
from tests.speech import espeak, utterance, write_wav

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(espeak() is None, reason="espeak-ng is not installed"),
]

SYSTEM_APPS = ["notes"]
HEARD = re.compile(r"Heard: open (the )?notes?")
"""The offline grammar knows the app's keyword "note" beside its name."""
LONG_REPLY = "This is a long answer that the desktop reads aloud. " * 6
IS_SPEAKING = "async () => (await import('/static/js/desk/voice.js')).isSpeaking()"


def test_a_spoken_instruction_is_submitted_by_itself_and_the_mic_stays_open(
    open_desk: Callable[..., Desk],
    mic_chromium: Callable[[Path], Browser],
    running: Running,
    tmp_path: Path,
) -> None:
    pcm, _ = utterance(800, "open the notes", 4000)
    browser = mic_chromium(write_wav(tmp_path / "open_notes.wav", pcm))
    desk = open_desk(running, browser=browser)
    toggle = desk.page.locator("#conversation_mode_button")
    expect(toggle).to_have_attribute("data-state", "off")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    # nothing else is clicked: the turn ends by the pause, and its reply is drawn
    expect(desk.page.locator("#toasts")).to_contain_text(HEARD)
    expect(desk.body("notes")).to_contain_text("No notes yet")
    expect(toggle).to_have_attribute("data-state", "listening")  # open for the next turn
    expect(desk.page.locator("#conversation_mode_state")).to_have_text("Listening")
    desk.shot("listening_after_turn")
    toggle.click()
    expect(toggle).to_have_attribute("data-state", "off")


def test_speech_while_the_desktop_speaks_stops_its_voice(
    open_desk: Callable[..., Desk],
    mic_chromium: Callable[[Path], Browser],
    running: Running,
    tmp_path: Path,
) -> None:
    pcm, _ = utterance(1500, "open the notes", 3000)
    browser = mic_chromium(write_wav(tmp_path / "barge_in.wav", pcm))
    desk = open_desk(running, browser=browser, muted=False)
    desk.page.evaluate(
        f"async () => (await import('/static/js/desk/voice.js')).speak({LONG_REPLY!r}, 'en-US')"
    )
    desk.page.wait_for_function(IS_SPEAKING)
    desk.page.locator("#conversation_mode_button").click()
    # the voice is stopped by the user's speech, not by its end (it would last ~30 s)
    desk.page.wait_for_function(f"async () => !(await ({IS_SPEAKING})())")
    expect(desk.page.locator("#conversation_mode_button")).to_have_attribute("data-barge-ins", "1")
    expect(desk.page.locator("#conversation_mode_button")).not_to_have_attribute(
        "data-state", "starting"
    )
    expect(desk.page.locator("#toasts")).to_contain_text(HEARD)
