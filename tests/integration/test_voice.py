"""Voice: real speech files from espeak-ng, transcribed offline against the
grammar of the installed apps; replies rendered to speech by pyttsx3."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from aios.config import Config
from aios.desktop.voice import NO_MICROPHONE, speaks_reply, speech_language, wav_seconds
from tests.integration.conftest import SYSTEM_APPS, Running

pytestmark = pytest.mark.skipif(
    not (shutil.which("espeak-ng") and shutil.which("sox")),
    reason="needs espeak-ng and sox: scripts/install --test (apt-get install espeak-ng sox)",
)


def speak(text: str, path: Path) -> bytes:
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(path), text], check=True)
    return path.read_bytes()


@pytest.fixture
def voice_system(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    apps = tmp_path / "apps"
    for app_id, keywords in (
        ("notes", ["notes", "note", "记事本"]),
        ("gallery", ["gallery", "gallery", "组件"]),
    ):
        shutil.copytree(SYSTEM_APPS / "echo", apps / app_id)
        manifest = json.loads((apps / app_id / "manifest.json").read_text())
        manifest.update(name=app_id.title(), keywords=keywords, description=f"the {app_id} app")
        (apps / app_id / "manifest.json").write_text(json.dumps(manifest))
    return make_system(apps_dir=apps)


@pytest.mark.parametrize(
    ("phrase", "app"), [("open notes", "notes"), ("open the gallery", "gallery")]
)
def test_spoken_command_is_transcribed_and_reaches_the_app(
    voice_system: Running, tmp_path: Path, phrase: str, app: str
) -> None:
    audio = speak(phrase, tmp_path / "cmd.wav")
    r = voice_system.http.post(
        voice_system.url + "/api/voice/transcribe?run=1",
        data=audio,
        headers={"Content-Type": "audio/wav"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"] == phrase
    # "open X" is the desktop's own intent: the app's window opens with its first view
    assert body["result"]["intent"] == "open_app"
    assert [op["app"] for op in body["result"]["desktop"]] == [app]
    assert [r["app"] for r in body["result"]["results"]] == [app]
    assert body["result"]["results"][0]["response"]["status"] == "ok"
    # the conversation keeps it as a spoken turn
    turns = voice_system.system.store.history(body["result"]["session_id"])
    assert {"text": phrase, "spoken": True} in [t["content"] for t in turns]


def test_phrase_outside_the_grammar_is_clearly_not_recognised(
    voice_system: Running, tmp_path: Path
) -> None:
    audio = speak("banana pancakes tomorrow morning", tmp_path / "x.wav")
    r = voice_system.http.post(voice_system.url + "/api/voice/transcribe", data=audio, timeout=30)
    assert r.status_code == 422
    assert "not recognised" in r.json()["error"]


def test_garbage_audio_and_empty_audio_are_clear_errors(voice_system: Running) -> None:
    r = voice_system.http.post(voice_system.url + "/api/voice/transcribe", data=b"", timeout=30)
    assert r.status_code == 422 and "no audio" in r.json()["error"]
    r = voice_system.http.post(
        voice_system.url + "/api/voice/transcribe", data=b"RIFF\x00\x00garbage", timeout=30
    )
    assert r.status_code == 422 and "cannot read the audio" in r.json()["error"]


def test_grammar_follows_the_installed_apps(voice_system: Running) -> None:
    words = voice_system.get("/api/voice/status").json()["stt"]["commands"]
    assert "notes" in words and "gallery" in words
    shutil.rmtree(voice_system.apps_dir / "gallery")
    voice_system.system.launcher.rescan()
    words = voice_system.get("/api/voice/status").json()["stt"]["commands"]
    assert "gallery" not in words and "notes" in words


def test_listen_without_a_microphone_says_so(voice_system: Running) -> None:
    """A friendly sentence in the UI language, never PortAudio's own words."""
    r = voice_system.post("/api/voice/listen", {})
    assert r.status_code == 422
    assert r.json()["error"] == NO_MICROPHONE["zh-CN"]
    assert voice_system.post("/api/config", {"updates": {"language": "en"}}).status_code == 200
    r = voice_system.post("/api/voice/listen", {})
    assert r.status_code == 422
    error = r.json()["error"]
    assert error == "No microphone found — connect one or type your instruction"
    assert "Default Input Device" not in error and "PyAudio" not in error


def test_speak_replies_is_a_setting_voice_by_default(voice_system: Running) -> None:
    """Typed instructions are answered silently unless the setting says always."""
    assert voice_system.get("/api/config").json()["config"]["voice"]["speak_replies"] == "voice"
    assert voice_system.get("/api/voice/status").json()["speak_replies"] == "voice"
    config = voice_system.system.config
    assert speaks_reply(config, spoken=True) and not speaks_reply(config, spoken=False)
    bad = voice_system.post("/api/config", {"updates": {"voice": {"speak_replies": "loud"}}})
    assert bad.status_code == 400 and "speak_replies" in bad.json()["error"], bad.text
    ok = voice_system.post("/api/config", {"updates": {"voice": {"speak_replies": "never"}}})
    assert ok.status_code == 200, ok.text
    assert ok.json()["config"]["voice"]["speak_replies"] == "never"
    assert not speaks_reply(voice_system.system.config, spoken=True)
    assert speaks_reply(Config(voice={"speak_replies": "always"}), spoken=False)


def test_chinese_text_gets_the_chinese_voice_whatever_the_ui_language() -> None:
    assert speech_language("已为你打开音乐", "en-US") == "zh-CN"
    assert speech_language("Opened Music", "zh-CN") == "en-US"
    assert speech_language("123", "zh-CN") == "zh-CN"


def test_mandarin_reply_is_rendered_to_speech(voice_system: Running) -> None:
    r = voice_system.post("/api/voice/speak", {"text": "欢迎使用 Triton AIOS", "lang": "zh-CN"})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "audio/wav"
    seconds = wav_seconds(r.content)
    assert 1.0 < seconds < 10.0
    longer = voice_system.post(
        "/api/voice/speak", {"text": "欢迎使用 Triton AIOS。已将播放按钮移到左上角。"}
    )
    assert wav_seconds(longer.content) > seconds
    assert voice_system.post("/api/voice/speak", {"text": " "}).status_code == 400


@pytest.mark.parametrize(
    "text",
    [
        "「帮我写一个计算斐波那契的 python 程序并运行」不是 Python 代码。例如：运行 print(1+1)",
        "★ → ✓",
        "🎵🎶",
        "def f(x):\n    return x ** 2  # 平方",
        "Hello, 世界! 100% ok?",
    ],
)
def test_any_reply_text_is_rendered_to_speech(voice_system: Running, text: str) -> None:
    """Mixed scripts, symbols only, emoji only and code all give audible speech."""
    r = voice_system.post("/api/voice/speak", {"text": text, "lang": "zh-CN"})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "audio/wav"
    assert wav_seconds(r.content) > 0.5


def test_text_is_split_by_script_with_a_voice_per_run() -> None:
    from aios.config import Config
    from aios.desktop.voice import LATIN_VOICE, MAX_SPEECH_RUNS, speech_runs

    config = Config()
    mandarin = config.voice.mandarin_voice
    assert speech_runs("运行 print(1+1)", language="zh-CN", config=config) == [
        (mandarin, "运行"),
        (LATIN_VOICE, "print(1+1)"),
    ]
    assert speech_runs("★", language="zh-CN", config=config) == [(LATIN_VOICE, "black star")]
    many = speech_runs(" ".join(["中文 abc"] * MAX_SPEECH_RUNS), language="zh-CN", config=config)
    assert len(many) == MAX_SPEECH_RUNS
