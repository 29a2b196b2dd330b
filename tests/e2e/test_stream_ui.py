"""Streaming and barge-in by typing (DESIGN §18, issue 26), in Chromium.

The assistant app answers through the real system; the model is the fake OpenAI server,
which streams its answer in chunks and holds the last one until the test has seen the
earlier words in the conversation panel. Then the desktop reads a long reply aloud (the
server's TTS WAV played by the page) and one key pressed in the command bar stops it.
"""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk, start_e2e_system
from tests.fakes.fake_openai import FakeOpenAI, streamed
from tests.integration.conftest import Running

FIRST = "Once upon a time, a small robot learned to sing."
REST = " The whole town came to listen, and nobody ever forgot the song."
LONG = (
    "Here is a long answer that the desktop reads aloud, sentence after sentence, so that "
    "there is plenty of time to interrupt it while it is still speaking to the user."
)
AUDIO_PROBE = """
window.__audios = [];
const play = HTMLMediaElement.prototype.play;
HTMLMediaElement.prototype.play = function () {
  if (!window.__audios.includes(this)) window.__audios.push(this);
  return play.call(this);
};
"""
"""Keeps every media element the page plays (the server's TTS plays in a detached Audio)."""
PLAYING = "() => window.__audios.some((a) => !a.paused && !a.ended && a.currentTime > 0)"
SILENT = (
    "() => window.__audios.length > 0 && window.__audios.every((a) => a.paused || a.ended)"
    " && !(window.speechSynthesis && window.speechSynthesis.speaking)"
)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test", default="ok") as f:
        yield f


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[Running]:
    system = start_e2e_system(
        tmp_path_factory.mktemp("stream"),
        ["assistant"],
        llm={
            "api_key": "sk-test",
            "base_url": fake.url,
            "model": "fake",
            "max_retries": 0,
            "planner": "offline",
        },
    )
    yield system
    system.stop()


def instruct(desk: Desk, text: str) -> None:
    box = desk.page.locator("#command_input")
    box.click()
    box.fill(text)
    box.press("Enter")


def test_the_answer_streams_into_the_panel_before_its_last_words_are_sent(
    desk: Desk, fake: FakeOpenAI
) -> None:
    gate = threading.Event()
    fake.script([streamed(FIRST + REST, chunks=[FIRST[:20], FIRST[20:], REST], hold=gate)])
    page = desk.page
    page.locator("#conversation_button").click()
    panel = page.locator("#conversation")
    expect(panel).to_be_visible()
    instruct(desk, "ask the assistant to tell me a story")
    bubble = panel.locator(".conv-stream")
    try:
        # the words are on the page while the provider still holds the last of them
        expect(bubble).to_contain_text(FIRST)
        expect(bubble).to_have_class(re.compile(r"\bis-typing\b"))
        assert REST.strip() not in (bubble.text_content() or "")
        assert not gate.is_set()
        desk.shot("streaming")
    finally:
        gate.set()
    # the app's reply replaces the bubble: its words are there once
    expect(panel.locator(".conv-reply .conv-text", has_text=FIRST)).to_have_count(1)
    expect(bubble).to_have_count(0)
    expect(desk.body("assistant")).to_contain_text(FIRST + REST)


def test_an_answer_that_breaks_off_says_so_above_the_apps_reply(
    desk: Desk, fake: FakeOpenAI
) -> None:
    fake.script([streamed(FIRST + REST, chunks=[FIRST[:20], FIRST[20:], REST], fail_after=2)])
    page = desk.page
    page.locator("#conversation_button").click()
    instruct(desk, "ask the assistant to tell me another story")
    bubble = page.locator("#conversation .conv-stream")
    note = bubble.locator(".conv-stream-note")
    expect(note).to_have_text("The answer broke off.")
    expect(note).to_have_attribute("title", re.compile(r"failed mid-answer"))
    expect(bubble).to_contain_text(FIRST)
    expect(bubble).not_to_contain_text(REST.strip())
    # the app's own error reply comes below it; the broken bubble stays where it was
    reply = page.locator("#conversation .conv-reply:not(.conv-stream)").last
    expect(reply.locator(".conv-bubble")).to_have_class(re.compile(r"\bis-error\b"))
    assert page.evaluate(
        "() => { const s = document.querySelector('#conversation .conv-stream');"
        " return s.nextElementSibling && !s.nextElementSibling.classList.contains('conv-user'); }"
    )


@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="needs espeak-ng: scripts/install --test")
def test_a_key_in_the_command_bar_stops_the_voice(
    running: Running, open_desk: Callable[..., Desk], fake: FakeOpenAI
) -> None:
    running.post("/api/config", {"updates": {"voice": {"speak_replies": "always"}}})
    try:
        desk = open_desk(running, muted=False)
        page = desk.page
        page.add_init_script(AUDIO_PROBE)
        page.reload()
        expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
        fake.script([streamed(LONG)])
        with page.expect_response("**/api/voice/speak"):
            instruct(desk, "ask the assistant for a long answer")
        page.wait_for_function(PLAYING)
        page.locator("#command_input").press("h")
        page.wait_for_function(SILENT)
        expect(page.locator("#command_input")).to_have_value("h")  # the key still typed
    finally:
        running.post("/api/config", {"updates": {"voice": {"speak_replies": "voice"}}})
