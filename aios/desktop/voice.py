"""Speech on the server side (DESIGN §10).

Recognition: the page uses the Web Speech API where the web engine has it.
WebKitGTK has neither recognition nor getUserMedia, so the server can listen
once on the default microphone (SpeechRecognition + PyAudio) or take posted
audio, and transcribe it with
- an online engine (Google's free endpoint through SpeechRecognition) for
  zh-CN, when configured and reachable, or
- offline pocketsphinx, constrained by a JSGF grammar built from the
  installed apps' names and keywords and common command verbs (open
  vocabulary offline recognition is unusable). The grammar is rebuilt when
  the set of apps changes.

Speaking: espeak-ng (pyttsx3 where it is missing) renders the reply to a WAV in a
child process, one run per script: Han text with the Mandarin voice
``sit/cmn-latn-pinyin``, Latin text with an English voice; emoji and symbols are
dropped or, when nothing else is left, spelled by name. The page plays it.

Every failure is a :class:`VoiceError` whose message is one line for the UI.
"""

from __future__ import annotations

import functools
import io
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import unicodedata
import warnings
import wave
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aios.config import Config
from aios.errors import AIOSError

log = logging.getLogger(__name__)

COMMAND_VERBS = ("open", "show", "close", "hide", "play")
"""Few and acoustically distinct: every extra verb costs accuracy on the rest."""
DESKTOP_THINGS = ("clock", "calendar", "settings", "notifications", "music")
MAX_AUDIO_BYTES = 20_000_000
TTS_TIMEOUT = 30.0
ESPEAK_WPM = 175
"""espeak-ng's default speed; ``voice_rate`` scales it."""
WAV_HEADER_BYTES = 44
_WORD = re.compile(r"^[a-z]+$")


class VoiceError(AIOSError):
    """A speech failure, worded for the user (one line)."""


NO_MICROPHONE = {
    "zh-CN": "没有找到麦克风：请连接一个麦克风，或直接输入指令",
    "en": "No microphone found — connect one or type your instruction",
}
"""What the user reads when the machine has no usable microphone, instead of the audio
library's own words (PortAudio's "No Default Input Device Available", "Invalid input
device", a missing PyAudio)."""


def no_microphone(config: Config) -> VoiceError:
    """The friendly "no microphone" error in the UI language (``config.language``)."""
    return VoiceError(NO_MICROPHONE["en" if config.language == "en" else "zh-CN"])


def speaks_reply(config: Config, *, spoken: bool) -> bool:
    """Whether the reply to an instruction is read aloud (``voice.speak_replies``):
    ``voice`` only when the instruction came from the microphone, else always or never."""
    policy = config.voice.speak_replies
    return policy == "always" or (policy == "voice" and spoken)


def speech_language(text: str, asked: str) -> str:
    """The voice's language for ``text``: Mandarin whenever the text has Han characters,
    English for a text without any, whatever the UI language (``asked`` otherwise)."""
    if _HAN.search(text):
        return "zh-CN"
    if any(c.isalpha() for c in text):
        return "en-US"
    return asked


@dataclass(frozen=True)
class GrammarSource:
    """What the grammar is built from: (app id, name, keywords) per app."""

    apps: tuple[tuple[str, str, tuple[str, ...]], ...]


def _speech_recognition() -> Any:
    """SpeechRecognition, or a VoiceError saying it is missing (it is in the ``voice`` extra).

    It imports the deprecated ``aifc`` module; that warning is kept quiet.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import speech_recognition
        except ImportError as e:
            raise VoiceError(
                "语音识别需要 SpeechRecognition / speech recognition needs "
                "SpeechRecognition (pip install 'triton-aios[voice]')"
            ) from e

    return speech_recognition


@functools.cache
def _dictionary() -> frozenset[str]:
    """The offline recogniser's English words; none without pocketsphinx (the ``voice`` extra)."""
    try:
        from pocketsphinx import get_model_path
    except ImportError:
        return frozenset()
    words = set()
    path = Path(get_model_path()) / "en-us" / "cmudict-en-us.dict"
    with path.open(encoding="utf-8") as f:
        for line in f:
            word = line.split(" ", 1)[0]
            if "(" not in word:
                words.add(word)
    return frozenset(words)


def grammar_words(source: GrammarSource) -> list[str]:
    """App words the recogniser can hear: ids, English names and keywords in its dictionary."""
    vocab = _dictionary()
    words: list[str] = []
    for app_id, name, keywords in source.apps:
        for text in (app_id.replace("_", " "), name, *keywords):
            for w in re.split(r"[\s\-_/]+", text.lower()):
                if (
                    _WORD.match(w)
                    and w in vocab
                    and w not in words
                    and w not in COMMAND_VERBS
                    and w not in ("the", "app", "a", "an")
                ):
                    words.append(w)
    return words


def build_grammar(source: GrammarSource) -> str:
    """A JSGF grammar: ``<verb> [the] <thing>``."""
    things = grammar_words(source)
    for w in DESKTOP_THINGS:
        if w not in things:
            things.append(w)
    return (
        "#JSGF V1.0;\ngrammar commands;\n"
        "public <command> = <verb> [the] <thing>;\n"
        f"<verb> = {' | '.join(COMMAND_VERBS)};\n"
        f"<thing> = {' | '.join(things)};\n"
    )


def to_pcm16k(audio: bytes) -> bytes:
    """Any audio sox reads → 16 kHz mono 16-bit PCM with 0.3 s of silence around it."""
    sox = shutil.which("sox")
    if sox is None:
        raise VoiceError("语音识别需要 sox（apt-get install sox） / speech recognition needs sox")
    with tempfile.TemporaryDirectory(prefix="aios-voice-") as tmp:
        src, dst = Path(tmp) / "in.audio", Path(tmp) / "out.wav"
        src.write_bytes(audio)
        kind = ["-t", "wav"] if audio[:4] == b"RIFF" else []
        # -R: repeatable dither. The recogniser needs the dither's faint noise
        # (pure digital silence breaks its energy estimate) but is sensitive
        # enough to it that random dither made one recording heard differently.
        proc = subprocess.run(
            [
                sox,
                "-R",
                *kind,
                str(src),
                "-r",
                "16000",
                "-c",
                "1",
                "-b",
                "16",
                "-e",
                "signed-integer",
                str(dst),
                "pad",
                "0.3",
                "0.3",
            ],
            capture_output=True,
            timeout=30,
            check=False,
        )
        if proc.returncode != 0:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise VoiceError(
                "无法读取音频 / cannot read the audio: "
                + (detail[-1] if detail else f"sox exit {proc.returncode}")
            )
        with wave.open(str(dst), "rb") as w:
            return w.readframes(w.getnframes())


class Recognizer:
    """Offline and online transcription; thread-safe."""

    def __init__(self, config: Config):
        self.config = config
        self._lock = threading.Lock()
        self._grammar_for: GrammarSource | None = None
        self._grammar_path: Path | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="aios-grammar-")

    def close(self) -> None:
        self._tmp.cleanup()

    def engine(self) -> str:
        engine = self.config.voice.stt_engine
        if engine == "auto":
            # Google's endpoint needs the internet; offline pocketsphinx is the
            # dependable default, and it only knows English commands.
            return "sphinx"
        return engine

    def grammar(self, source: GrammarSource) -> Path:
        with self._lock:
            if source != self._grammar_for or self._grammar_path is None:
                path = Path(self._tmp.name) / f"commands_{abs(hash(source))}.gram"
                path.write_text(build_grammar(source), encoding="utf-8")
                self._grammar_for, self._grammar_path = source, path
                log.info("voice grammar rebuilt for %d apps", len(source.apps))
            return self._grammar_path

    def transcribe(self, audio: bytes, source: GrammarSource, *, language: str) -> str:
        if not audio:
            raise VoiceError("没有收到音频 / no audio received")
        if len(audio) > MAX_AUDIO_BYTES:
            raise VoiceError(f"音频太大 / audio larger than {MAX_AUDIO_BYTES} bytes")
        self._check_engine()
        return self.transcribe_pcm(to_pcm16k(audio), source, language=language)

    def transcribe_pcm(self, pcm: bytes, source: GrammarSource, *, language: str) -> str:
        """16 kHz mono 16-bit PCM (conversation mode's turns: already framed by silence)."""
        if self._check_engine() == "google":
            return self._google(pcm, language)
        return self._sphinx(pcm, source)

    def _check_engine(self) -> str:
        engine = self.engine()
        if engine == "none":
            raise VoiceError("语音识别已关闭 / speech recognition is turned off in settings")
        return engine

    def _sphinx(self, pcm: bytes, source: GrammarSource) -> str:
        try:
            from pocketsphinx import Decoder
        except ImportError as e:
            raise VoiceError(
                "离线识别需要 pocketsphinx / offline recognition needs "
                "pocketsphinx (pip install pocketsphinx)"
            ) from e
        # A fresh decoder per utterance: the live cepstral mean of a reused one
        # drifts with what it heard before, and accuracy with it.
        decoder = Decoder(jsgf=str(self.grammar(source)), logfn="/dev/null")
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        text = hyp.hypstr.strip() if hyp is not None else ""
        if not text or len(text.split()) < 2:
            raise VoiceError(
                "没有识别出指令，请再说一次（离线识别只认识“open 应用名”这类英文"
                "命令） / not recognised: say a command like “open notes”"
            )
        return text

    def _google(self, pcm: bytes, language: str) -> str:
        sr = _speech_recognition()
        audio = sr.AudioData(pcm, 16000, 2)
        try:
            return str(sr.Recognizer().recognize_google(audio, language=language))
        except sr.UnknownValueError as e:
            raise VoiceError(
                "没有识别出内容，请再说一次 / nothing recognised, please try again"
            ) from e
        except sr.RequestError as e:
            raise VoiceError(f"在线识别不可用 / online recognition unavailable: {e}") from e

    def listen_once(self, source: GrammarSource, *, language: str, timeout: float = 6.0) -> str:
        """Record one phrase from the default microphone and transcribe it."""
        sr = _speech_recognition()
        try:
            mic = sr.Microphone()
        except (ImportError, AttributeError, OSError) as e:
            log.info("no microphone: %s", e)  # PortAudio's words, for whoever reads the log
            raise no_microphone(self.config) from e
        rec = sr.Recognizer()
        try:
            with mic as src:
                rec.adjust_for_ambient_noise(src, duration=0.3)
                audio = rec.listen(src, timeout=timeout, phrase_time_limit=8)
        except sr.WaitTimeoutError as e:
            raise VoiceError("没有听到声音 / heard nothing") from e
        except (OSError, AttributeError) as e:
            log.info("no microphone: %s", e)
            raise no_microphone(self.config) from e
        return self.transcribe(audio.get_wav_data(), source, language=language)


# ------------------------------------------------------------------- speaking


MAX_SPEECH_CHARS = 2000
"""Longer replies are cut: nobody listens to more, and synthesis time grows with length."""
MAX_SPEECH_RUNS = 24
"""Script changes voiced separately (each starts the engine once)."""
LATIN_VOICE = "en"
"""espeak-ng voice for Latin-script runs inside a Mandarin reply (the Mandarin voice
spells them letter by letter or, past a length, produces nothing through pyttsx3)."""
_HAN = re.compile(
    r"[\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3400-\u4dbf\u4e00-\u9fff"
    r"\uf900-\ufaff\U00020000-\U0003134f]"
)
_SPEAKABLE_CATEGORIES = ("L", "N", "P", "Sm", "Zs")
"""Letters, digits, punctuation and spaces reach the engine; symbols and emoji are
dropped, or spelled by name when nothing else is left."""


def _tts_script() -> str:
    return (
        "import sys, pyttsx3\n"
        "text, path, voice, rate = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])\n"
        "e = pyttsx3.init()\n"
        "if voice:\n"
        "    e.setProperty('voice', voice)\n"
        "e.setProperty('rate', int(e.getProperty('rate') * rate))\n"
        "e.save_to_file(text, path)\n"
        "e.runAndWait()\n"
    )


def voice_for(language: str, config: Config) -> str:
    return config.voice.mandarin_voice if language.lower().startswith("zh") else ""


def speakable(text: str) -> str:
    """``text`` with what a speech engine cannot say removed (emoji, symbols, controls);
    a text of symbols only is spelled by their names ("★" → "black star")."""
    text = unicodedata.normalize("NFKC", text)
    kept = "".join(
        c if unicodedata.category(c).startswith(_SPEAKABLE_CATEGORIES) else " " for c in text
    )
    if any(c.isalnum() for c in kept):
        return " ".join(kept.split())
    names = [
        unicodedata.name(c, "").lower() for c in text if unicodedata.category(c).startswith("S")
    ]
    return ", ".join(n for n in names if n)


def speech_runs(text: str, *, language: str, config: Config) -> list[tuple[str, str]]:
    """Split ``text`` by script into ``(voice, text)`` runs: Han with the Mandarin voice,
    the rest with the reply language's voice (English inside a Mandarin reply).
    Punctuation and spaces stay with the run they follow."""
    mandarin = config.voice.mandarin_voice
    other = LATIN_VOICE if language.lower().startswith("zh") else voice_for(language, config)
    runs: list[tuple[str, str]] = []
    for c in speakable(text):
        voice = mandarin if _HAN.match(c) else other
        if runs and (voice == runs[-1][0] or not c.isalnum()):
            runs[-1] = (runs[-1][0], runs[-1][1] + c)
        else:
            runs.append((voice, c))
    runs = [(v, t.strip()) for v, t in runs if any(c.isalnum() for c in t)]
    if len(runs) > MAX_SPEECH_RUNS:
        # One engine start per run: past the cap the rest is read by one voice.
        main = mandarin if language.lower().startswith("zh") else other
        rest = " ".join(t for _, t in runs[MAX_SPEECH_RUNS - 1 :])
        runs = [*runs[: MAX_SPEECH_RUNS - 1], (main, rest)]
    return runs


def _espeak_run(espeak: str, text: str, voice: str, rate: float, out: Path) -> None:
    args = [espeak, "-s", str(round(ESPEAK_WPM * rate)), "-w", str(out), "--stdin"]
    if voice:
        args[1:1] = ["-v", voice]
    proc = subprocess.run(
        args, input=text.encode("utf-8"), capture_output=True, timeout=TTS_TIMEOUT, check=False
    )
    _check_output(proc, out)


def _pyttsx3_run(text: str, voice: str, rate: float, out: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _tts_script(), text, str(out), voice, str(rate)],
        capture_output=True,
        timeout=TTS_TIMEOUT,
        check=False,
    )
    _check_output(proc, out)


def _check_output(proc: subprocess.CompletedProcess[bytes], out: Path) -> None:
    if proc.returncode != 0 or not out.exists() or out.stat().st_size <= WAV_HEADER_BYTES:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise VoiceError(
            "语音合成失败（需要 espeak-ng） / speech synthesis failed: "
            + (detail[-1] if detail else "no audio produced")
        )


def _concatenate(parts: list[Path]) -> bytes:
    buf = io.BytesIO()
    with wave.open(str(parts[0])) as first:
        params = first.getparams()
    with wave.open(buf, "wb") as dst:
        dst.setparams(params)
        for part in parts:
            with wave.open(str(part)) as src:
                if (src.getnchannels(), src.getsampwidth(), src.getframerate()) != (
                    params.nchannels,
                    params.sampwidth,
                    params.framerate,
                ):
                    raise VoiceError(
                        "语音合成失败 / speech synthesis failed: the voices "
                        "produced audio in different formats"
                    )
                dst.writeframes(src.readframes(src.getnframes()))
    return buf.getvalue()


def synthesize(text: str, *, language: str, config: Config) -> bytes:
    """Render any ``text`` to WAV bytes: espeak-ng (or pyttsx3 where espeak-ng is not
    installed) in a child process per script run, concatenated."""
    text = text.strip()[:MAX_SPEECH_CHARS]
    if not text:
        raise VoiceError("没有要朗读的内容 / nothing to speak")
    if config.voice.tts_engine == "none":
        raise VoiceError("语音播报已关闭 / speech output is turned off in settings")
    runs = speech_runs(text, language=language, config=config)
    if not runs:
        raise VoiceError("没有可朗读的文字 / nothing speakable in the text")
    espeak = shutil.which("espeak-ng") or shutil.which("espeak")
    with tempfile.TemporaryDirectory(prefix="aios-tts-") as tmp:
        parts = []
        for i, (voice, run) in enumerate(runs):
            out = Path(tmp) / f"run{i}.wav"
            try:
                if espeak:
                    _espeak_run(espeak, run, voice, config.voice_rate, out)
                else:
                    _pyttsx3_run(run, voice, config.voice_rate, out)
            except subprocess.TimeoutExpired as e:
                raise VoiceError("语音合成超时 / speech synthesis timed out") from e
            parts.append(out)
        return _concatenate(parts)


def wav_seconds(data: bytes) -> float:
    with wave.open(io.BytesIO(data), "rb") as w:
        return w.getnframes() / float(w.getframerate())


def grammar_source(apps: Iterable[Any]) -> GrammarSource:
    """From launcher records (those with a manifest)."""
    items = []
    for r in apps:
        if getattr(r, "manifest", None) is None:
            continue
        # the other locales' names ("Notes" beside 记事本) are heard like keywords
        others = [n for n in r.manifest.names.values() if n != r.manifest.name]
        items.append((r.id, r.manifest.name, (*dict.fromkeys(others), *r.manifest.keywords)))
    return GrammarSource(tuple(sorted(items)))
