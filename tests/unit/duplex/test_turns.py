"""The end of a spoken turn (aios/duplex/turns.py) on real speech: espeak-ng's voice with
pauses put in, WebRTC's VAD, and pocketsphinx transcribing what was heard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aios.config import Config, validate_config
from aios.desktop.voice import GrammarSource, Recognizer
from aios.duplex import turns
from aios.duplex.turns import Endpointer, Partial, SpeechStart, TurnEnd, TurnSettings
from aios.errors import ConfigError
from tests.speech import espeak, sphinx_transcriber, utterance

pytestmark = pytest.mark.skipif(espeak() is None, reason="espeak-ng is not installed")

SETTINGS = TurnSettings.of(Config().voice)  # the defaults: 700 ms, at most 2000 ms


@pytest.fixture(scope="module")
def transcribe(tmp_path_factory: pytest.TempPathFactory) -> Callable[[bytes], str]:
    return sphinx_transcriber(tmp_path_factory.mktemp("grammar"))


def run(pcm: bytes, transcribe: Callable[[bytes], str], **settings: int) -> list[turns.Event]:
    """Feed ``pcm`` in the page's chunks (of 4096 samples, not frame-aligned)."""
    ep = Endpointer(
        TurnSettings(**{**SETTINGS.__dict__, **settings}), turns.webrtc_vad(2), transcribe
    )
    events: list[turns.Event] = []
    for i in range(0, len(pcm), 8192):
        events += ep.feed(pcm[i : i + 8192])
    return events


def ends(events: list[turns.Event]) -> list[TurnEnd]:
    return [e for e in events if isinstance(e, TurnEnd)]


def test_a_complete_command_then_a_pause_ends_the_turn_at_the_short_pause(
    transcribe: Callable[[bytes], str],
) -> None:
    pcm, (spoken,) = utterance(400, "open the notes", 3000)
    events = run(pcm, transcribe)
    assert isinstance(events[0], SpeechStart) and events[0].barge_in is False
    assert 300 <= events[0].at_ms <= 600
    (end,) = ends(events)
    assert end.text == "open the notes" and end.reason == "complete"
    # ended by the short pause after the last word, not by the long one
    waited = end.at_ms - end.last_voice_ms
    assert SETTINGS.pause_ms <= waited < SETTINGS.max_pause_ms
    assert spoken - 400 <= end.last_voice_ms <= spoken  # espeak-ng ends with a short silence


def test_a_thinking_pause_after_and_does_not_end_the_turn(
    transcribe: Callable[[bytes], str],
) -> None:
    # "open the notes and … (a second and a half) … play music"
    pcm, (first, second) = utterance(300, "open the notes and", 1500, "play music", 3000)
    events = run(pcm, transcribe)
    partials = [e for e in events if isinstance(e, Partial)]
    assert [p.text for p in partials] == ["open the notes and"]
    (end,) = ends(events)
    assert end.reason == "complete" and end.last_voice_ms > first + 1000
    assert "music" in end.text
    assert len([e for e in events if isinstance(e, SpeechStart)]) == 1


def test_a_verb_without_its_object_waits_for_it(transcribe: Callable[[bytes], str]) -> None:
    pcm, _ = utterance(300, "open", 1200, "the music", 3000)
    events = run(pcm, transcribe)
    (end,) = ends(events)
    assert end.text == "open the music" and end.reason == "complete"


def test_the_long_pause_ends_an_unfinished_turn_all_the_same(
    transcribe: Callable[[bytes], str],
) -> None:
    pcm, (spoken,) = utterance(300, "open the notes and", 4000)
    events = run(pcm, transcribe)
    (end,) = ends(events)
    assert end.reason == "max_pause" and end.text == "open the notes and"
    assert end.at_ms - end.last_voice_ms == SETTINGS.max_pause_ms


def test_what_is_not_recognised_ends_at_the_long_pause_saying_so() -> None:
    """The desktop's own recogniser (pocketsphinx over the apps' grammar): a sentence
    outside it is nothing heard; the turn still ends, with the recogniser's words."""
    recognizer = Recognizer(Config())
    source = GrammarSource(apps=(("notes", "Notes", ("memo",)),))
    try:
        pcm, _ = utterance(300, "hello there my friend", 3000)
        (end,) = ends(run(pcm, lambda p: recognizer.transcribe_pcm(p, source, language="en-US")))
    finally:
        recognizer.close()
    assert end.reason == "max_pause" and end.text == ""
    assert end.at_ms - end.last_voice_ms == SETTINGS.max_pause_ms
    assert "not recognised" in end.error


def test_speech_that_never_pauses_ends_at_max_turn(transcribe: Callable[[bytes], str]) -> None:
    pcm, _ = utterance(*(["play music and open the notes"] * 3))
    (end, *_) = ends(run(pcm, transcribe, max_turn_s=2))
    assert end.reason == "max_turn" and end.at_ms <= 2100


def test_silence_and_a_click_start_nothing(transcribe: Callable[[bytes], str]) -> None:
    quiet, _ = utterance(2000)
    click = bytearray(quiet)
    click[32000:32640] = b"\xff\x7f\x01\x80" * 160  # one 20 ms frame of full-scale buzz
    assert run(bytes(click), transcribe) == []


def test_while_the_desktop_speaks_a_start_needs_longer_speech(
    transcribe: Callable[[bytes], str],
) -> None:
    pcm, _ = utterance(400, "open the notes", 1500)
    ep = Endpointer(SETTINGS, turns.webrtc_vad(2), transcribe)
    ep.set_playing(True)
    start = next(e for e in ep.feed(pcm) if isinstance(e, SpeechStart))
    assert start.barge_in is True
    assert start.decided_ms - start.at_ms >= SETTINGS.barge_in_ms - SETTINGS.frame_ms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("open the notes", "complete"),
        ("open the notes and", "incomplete"),
        ("play", "incomplete"),
        ("remind me to", "incomplete"),
        ("what time is it?", "complete"),
        ("I think, um", "incomplete"),
        ("打开记事本", "complete"),
        ("打开记事本然后", "incomplete"),
        ("我想听周杰伦和", "incomplete"),
        ("帮我打开", "incomplete"),
        ("今天天气怎么样呢", "complete"),
        ("明天提醒我开会吧", "complete"),
        ("把这个文件，", "incomplete"),
        ("", "empty"),
    ],
)
def test_completeness(text: str, expected: str) -> None:
    assert turns.completeness(text) == expected


def test_the_pauses_are_checked_in_order() -> None:
    with pytest.raises(ConfigError, match="turn_max_pause_ms"):
        validate_config({"voice": {"turn_pause_ms": 900, "turn_max_pause_ms": 800}})


def test_frames_of_other_lengths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="frame_ms"):
        Endpointer(TurnSettings(frame_ms=25), lambda f: False, lambda p: "")
