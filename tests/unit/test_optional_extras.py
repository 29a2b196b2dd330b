"""The window (``desktop`` extra) and speech (``voice`` extra) are optional:
without them the system imports, the desktop falls back to the browser and
voice says in one line what is missing instead of raising ImportError."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from aios.config import Config
from aios.desktop import voice
from aios.duplex import turns
from aios.entry import window
from aios.errors import AIOSError
from tests.conftest import ROOT

EXTRA_MODULES = (
    "webview",
    "gi",
    "pyaudio",
    "pocketsphinx",
    "speech_recognition",
    "pyttsx3",
    "webrtcvad",
)
SOURCE = voice.GrammarSource(apps=(("notes", "Notes", ("memo",)),))


@pytest.fixture
def no_pocketsphinx(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(sys.modules, "pocketsphinx", None)  # `import pocketsphinx` fails
    voice._dictionary.cache_clear()
    yield
    voice._dictionary.cache_clear()


def test_the_system_and_the_sdk_import_without_the_desktop_and_voice_extras() -> None:
    blocker = (
        "import sys\n"
        f"for name in {EXTRA_MODULES!r}:\n"
        "    sys.modules[name] = None\n"
        "import aios_sdk, aios.web, aios.system, aios.entry.main, aios.desktop.voice\n"
        "import aios.duplex.turns\n"
        "import aios.entry.window\n"
        "print('imported')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", blocker], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "imported"


def test_without_pywebview_the_desktop_says_so_and_uses_the_browser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.setitem(sys.modules, "webview", None)
    problem = window.gui_problem()
    assert problem is not None and problem.startswith("pywebview is not installed")


def test_without_pocketsphinx_no_command_words_are_offered(no_pocketsphinx: None) -> None:
    assert voice.grammar_words(SOURCE) == []


def test_without_speech_recognition_listening_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "speech_recognition", None)
    recognizer = voice.Recognizer(Config())
    try:
        with pytest.raises(
            voice.VoiceError,
            match=r"speech recognition needs SpeechRecognition "
            r"\(pip install 'triton-aios\[voice\]'\)",
        ):
            recognizer.listen_once(SOURCE, language="en-US")
    finally:
        recognizer.close()
    assert issubclass(voice.VoiceError, AIOSError)


def test_without_webrtcvad_conversation_mode_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "webrtcvad", None)
    with pytest.raises(
        voice.VoiceError,
        match=r"conversation mode needs webrtcvad-wheels \(pip install 'triton-aios\[voice\]'\)",
    ):
        turns.webrtc_vad(2)
