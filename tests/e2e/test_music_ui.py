"""Music in Chromium: playback outlives the window's views (the now-playing bar), the end of a
track plays the next one, a new track starts from its beginning, and the tray's mute silences
what plays. Short WAV files written into the app's workspace; real audio elements playing."""

from __future__ import annotations

import math
import shutil
import struct
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk, start_e2e_system
from tests.integration.conftest import Running

APP = "music"
AUDIO = f"#win_{APP} audio.media-player"
BAR = f"#win_{APP} .now-playing"
TRACKS = {"A - Long One": 30.0, "B - Short": 0.8, "C - Third": 4.0}
"""Title (and file stem) -> seconds. Sorted by name, this is the library's order."""

PLAYING = f"""() => {{
  const a = document.querySelector('{AUDIO}');
  return !!a && !a.paused && a.currentTime > 0.2 && decodeURIComponent(a.src).includes(%s);
}}"""
"""The window's audio element plays (and has got somewhere) the file whose name is given."""


def write_wav(path: Path, seconds: float, freq: float) -> None:
    rate = 8000
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(
            b"".join(
                struct.pack("<h", int(3000 * math.sin(2 * math.pi * freq * i / rate)))
                for i in range(int(rate * seconds))
            )
        )


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    system = start_e2e_system(tmp_path_factory.mktemp("e2e_music"), [APP])
    ws = system.apps_dir / APP / "workspace"
    shutil.rmtree(ws / "samples", ignore_errors=True)  # the fresh install's samples
    for i, (name, seconds) in enumerate(TRACKS.items()):
        write_wav(ws / f"{name}.wav", seconds, 330 + 110 * i)
    yield system
    system.stop()


def playing(desk: Desk, name: str) -> None:
    desk.page.wait_for_function(PLAYING % repr(f"{name}.wav"))


def play_from_library(desk: Desk, title: str) -> None:
    body = desk.open_app(APP)
    if body.get_attribute("data-view-type") != "list":
        desk.control(APP, "library").click()
        desk.wait_view(APP, "list")
    desk.item_button(APP, title, "▶ Play").click()
    desk.wait_view(APP, "media")


def test_music_keeps_playing_in_the_bar_while_the_playlist_is_open(
    open_desk: Callable[..., Desk], running: Running
) -> None:
    desk = open_desk(running)
    play_from_library(desk, "Long One")
    playing(desk, "A - Long One")
    desk.control(APP, "playlist").click()
    desk.wait_view(APP, "list")
    bar = desk.page.locator(BAR)
    expect(bar).to_be_visible()
    expect(bar.locator(".now-playing-title")).to_have_text("Long One · A")
    expect(bar).to_have_attribute("data-state", "playing")
    # still the same element, still playing: its time goes on while the list is shown
    at = desk.page.evaluate(f"() => document.querySelector('{AUDIO}').currentTime")
    desk.page.wait_for_function(
        f"() => {{ const a = document.querySelector('{AUDIO}');"
        f" return !a.paused && a.currentTime > {at} + 0.3; }}"
    )
    assert desk.page.locator(AUDIO).count() == 1
    desk.shot("playlist_with_now_playing_bar")
    # the bar's pause and play
    bar.get_by_role("button", name="Pause").click()
    expect(bar).to_have_attribute("data-state", "paused")
    bar.get_by_role("button", name="Play").click()
    expect(bar).to_have_attribute("data-state", "playing")
    # another list view: the bar stays; closing the window stops the music
    desk.control(APP, "library").click()
    desk.wait_view(APP, "list")
    expect(bar).to_be_visible()
    desk.win(APP).locator(".win-close").click()
    expect(desk.win(APP)).to_have_count(0)
    assert desk.page.evaluate("() => document.querySelectorAll('audio.media-player').length") == 0


def test_the_end_of_a_track_plays_the_next_and_a_new_track_starts_from_zero(
    open_desk: Callable[..., Desk], running: Running
) -> None:
    desk = open_desk(running)
    play_from_library(desk, "Long One")
    desk.page.wait_for_function(
        f"() => {{ const a = document.querySelector('{AUDIO}');"
        " return !!a && !a.paused && a.currentTime > 1.2; }"
    )
    desk.control(APP, "next").click()
    body = desk.body(APP)
    # 0.8 s of "Short", then its end asks the app for the next song, which plays by itself
    expect(body.locator(".media-title")).to_have_text("Third", timeout=15_000)
    playing(desk, "C - Third")
    # "previous" twice comes back to "Long One" from its beginning, not where it was left
    desk.control(APP, "prev").click()
    expect(body.locator(".media-title")).to_have_text("Short")
    desk.control(APP, "prev").click()
    expect(body.locator(".media-title")).to_have_text("Long One")
    playing(desk, "A - Long One")
    start = desk.page.evaluate(f"() => document.querySelector('{AUDIO}').played.start(0)")
    assert start < 0.5, start


def test_the_tray_mute_silences_the_music_and_unmute_restores_it(
    open_desk: Callable[..., Desk], running: Running
) -> None:
    desk = open_desk(running, muted=False)
    play_from_library(desk, "Long One")
    playing(desk, "A - Long One")
    audio = desk.page.locator(AUDIO)
    assert audio.evaluate("a => a.muted") is False
    tray = desk.page.locator("#tray_volume")
    tray.click()
    expect(tray).to_have_attribute("aria-pressed", "true")
    desk.page.wait_for_function(f"() => document.querySelector('{AUDIO}').muted")
    # in the bar too, and a track started while muted starts muted
    desk.control(APP, "playlist").click()
    desk.wait_view(APP, "list")
    assert audio.evaluate("a => a.muted") is True
    play_from_library(desk, "Third")
    playing(desk, "C - Third")
    assert audio.evaluate("a => a.muted") is True
    tray.click()
    expect(tray).to_have_attribute("aria-pressed", "false")
    desk.page.wait_for_function(f"() => !document.querySelector('{AUDIO}').muted")
