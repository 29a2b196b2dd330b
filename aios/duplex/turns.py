"""The end of a spoken turn, for conversation mode (DESIGN §18 "Streaming and barge-in").

An open microphone sends 16 kHz mono 16-bit PCM; :class:`Endpointer` cuts it into frames of
10, 20 or 30 ms, asks a voice activity detector about each one and says when the user
started to speak (:class:`SpeechStart`, which also stops the desktop's voice: barge-in) and
when their turn is over (:class:`TurnEnd`). It does no I/O: the detector and the
transcriber are functions it is given, so the same object serves the page's WebSocket, a
benchmark over WAV files and the unit tests.

The two complaints it is designed against:

- **Being cut off while still thinking.** A pause of ``turn_pause_ms`` only ends the turn
  when what was said so far *sounds finished* (:func:`completeness`): an utterance ending
  in "and" / "然后" / "和", in an article or a preposition, or in a verb that still wants
  its object ("open", "打开") waits on, up to ``turn_max_pause_ms``.
- **Turns that never end.** A pause of ``turn_max_pause_ms`` ends the turn whatever was
  said, and so does ``max_turn_s`` of audio that never pauses (a fan the detector takes for
  a voice).

Detection is smoothed: one voiced frame in silence (a click, a breath) neither starts
speech nor interrupts a pause; speech starts when ``start_ms`` of the last
:data:`START_WINDOW_MS` were voiced. While the desktop itself speaks (``set_playing``) the
start asks for ``barge_in_ms`` of voiced audio instead: the page captures with the
browser's echo cancellation, and what leaks through of the desktop's own voice comes in
short bursts that this longer requirement rejects, while a person who means to interrupt
speaks on (see README, Voice).

The detector is WebRTC's VAD (the maintained wheel build ``webrtcvad-wheels``, MIT
licence, in the ``voice`` extra), imported only when conversation mode starts: a GMM on
the CPU, no model to download.
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from aios.config import VoiceConfig
from aios.desktop.voice import VoiceError

SAMPLE_RATE = 16_000
SAMPLE_BYTES = 2
FRAME_MS_CHOICES = (10, 20, 30)
"""The frame lengths WebRTC's VAD accepts at 16 kHz."""
FRAME_MS = 20
START_WINDOW_MS = 200
"""Speech starts when enough of the last this-many ms were voiced (smoothing)."""
MIN_SPEECH_RMS = 100.0
"""A frame quieter than this (about -50 dBFS) is never speech, whatever the detector says:
its first frames, before it has learnt the room, and the frames of its own hangover after a
click are such."""
SPEECH_OVER_NOISE = 3.0
"""A voiced frame must also be this many times louder (RMS) than the room's noise floor."""
NOISE_ADAPT = 0.05
"""How fast the noise floor follows the unvoiced frames (an exponential average)."""
PREROLL_MS = 300
"""Audio kept from before the start of speech: the detector is late on a soft onset, and a
recogniser that misses the first phoneme misses the word."""

Reason = Literal["complete", "max_pause", "max_turn"]
Completeness = Literal["complete", "incomplete", "empty"]

VAD_MISSING = (
    "对话模式需要 webrtcvad-wheels / conversation mode needs webrtcvad-wheels "
    "(pip install 'triton-aios[voice]')"
)


@dataclass(frozen=True)
class TurnSettings:
    """The endpointer's knobs (``voice.*`` in config.json, validated there)."""

    pause_ms: int = 700
    max_pause_ms: int = 2000
    start_ms: int = 60
    barge_in_ms: int = 120
    max_turn_s: float = 30.0
    frame_ms: int = FRAME_MS

    @classmethod
    def of(cls, voice: VoiceConfig) -> TurnSettings:
        return cls(
            pause_ms=voice.turn_pause_ms,
            max_pause_ms=voice.turn_max_pause_ms,
            start_ms=voice.vad_start_ms,
            barge_in_ms=voice.barge_in_ms,
            max_turn_s=voice.max_turn_s,
        )

    @property
    def frame_bytes(self) -> int:
        return SAMPLE_RATE * self.frame_ms // 1000 * SAMPLE_BYTES


@dataclass(frozen=True)
class SpeechStart:
    """The user started to speak at ``at_ms`` (audio time); decided at ``decided_ms``."""

    at_ms: int
    decided_ms: int
    barge_in: bool


@dataclass(frozen=True)
class Partial:
    """A pause that did not end the turn: what was heard sounds unfinished."""

    text: str
    at_ms: int


@dataclass(frozen=True)
class TurnEnd:
    """The user's turn is over: ``text`` (may be empty: nothing recognised), why, and when
    (``last_voice_ms``: the end of the last voiced frame; ``at_ms``: the decision)."""

    text: str
    reason: Reason
    last_voice_ms: int
    at_ms: int
    error: str = ""


Event = SpeechStart | Partial | TurnEnd
IsSpeech = Callable[[bytes], bool]
Transcribe = Callable[[bytes], str]


# ---------------------------------------------------------------------- completeness

_FINAL_PUNCT = re.compile(r"[.!?。！？…]\s*$")
_OPEN_PUNCT = re.compile(r"[,，、;；:：—\-]\s*$")
_ZH_FINAL_PARTICLES = ("吗", "呢", "吧", "啊", "呀", "嘛", "了", "啦", "哦", "么")
_ZH_DANGLING = (
    "然后", "和", "还有", "但是", "可是", "不过", "因为", "所以", "或者", "还是", "就是",
    "那个", "这个", "嗯", "呃", "的", "跟", "把", "给", "在", "要", "想", "如果", "而且",
    "以及", "并且", "再", "先", "接着", "一下", "帮我", "请",
)  # fmt: skip
_ZH_OPEN_VERBS = (
    "打开", "播放", "关闭", "删除", "显示", "提醒", "搜索", "查找", "告诉", "创建", "新建",
    "设置", "移动", "复制", "发送", "查一下", "找一下", "看一下", "听一下",
)  # fmt: skip
"""Verbs of two characters or more: a one-character verb (记, 写, 看) is as often the end of
a noun (笔记, 小说) and would hold finished sentences back."""
_EN_DANGLING = frozenset(
    "and or but so then because with to the a an of for in on at my your his her their "
    "our its this that these those if when while about from into um uh er like also plus "
    "than as by please".split()
)
_EN_OPEN_VERBS = frozenset(
    "open show play close hide find delete remove remind set create write search tell send "
    "make start stop put move copy read list give get call".split()
)
_EN_WORD = re.compile(r"[A-Za-z']+")


def completeness(text: str) -> Completeness:
    """Whether ``text`` (a transcript, either language) sounds like a finished utterance.

    ``empty``: nothing was recognised. ``incomplete``: it ends in a comma, a conjunction,
    an article, a preposition, a filler or a verb that still wants its object. Otherwise
    ``complete`` (final punctuation and Chinese sentence-final particles are complete).
    """
    clean = text.strip()
    if not clean:
        return "empty"
    if _FINAL_PUNCT.search(clean):
        return "complete"
    if _OPEN_PUNCT.search(clean):
        return "incomplete"
    tail = clean.rstrip(" \t")
    if tail.endswith(_ZH_FINAL_PARTICLES):
        return "complete"
    if tail.endswith(_ZH_DANGLING) or tail.endswith(_ZH_OPEN_VERBS):
        return "incomplete"
    words = _EN_WORD.findall(tail)
    if words and tail.endswith(words[-1]):
        last = words[-1].lower()
        if last in _EN_DANGLING or last in _EN_OPEN_VERBS:
            return "incomplete"
    return "complete"


# ---------------------------------------------------------------------- the detector


def webrtc_vad(aggressiveness: int) -> IsSpeech:
    """WebRTC's VAD at ``aggressiveness`` (0-3) as a per-frame function; VoiceError naming
    the package when it is not installed."""
    try:
        import webrtcvad
    except ImportError as e:
        raise VoiceError(VAD_MISSING) from e
    vad = webrtcvad.Vad(aggressiveness)

    def is_speech(frame: bytes) -> bool:
        return bool(vad.is_speech(frame, SAMPLE_RATE))

    return is_speech


def rms(frame: bytes) -> float:
    """The root mean square of 16-bit little-endian samples."""
    samples = array("h", frame)
    if sys.byteorder == "big":
        samples.byteswap()
    if not samples:
        return 0.0
    return math.sqrt(sum(x * x for x in samples) / len(samples))


# ---------------------------------------------------------------------- the endpointer


class Endpointer:
    """Frames in, :data:`Event` s out. Not thread-safe: one per microphone stream."""

    def __init__(self, settings: TurnSettings, is_speech: IsSpeech, transcribe: Transcribe):
        if settings.frame_ms not in FRAME_MS_CHOICES:
            raise ValueError(f"frame_ms must be one of {FRAME_MS_CHOICES}")
        self.settings = settings
        self._is_speech = is_speech
        self._transcribe = transcribe
        self._pending = bytearray()
        self._window: deque[bool] = deque(maxlen=max(1, START_WINDOW_MS // settings.frame_ms))
        self._preroll: deque[bytes] = deque(maxlen=max(1, PREROLL_MS // settings.frame_ms))
        self._playing = False
        self._noise = MIN_SPEECH_RMS / SPEECH_OVER_NOISE
        self.reset()
        self.now_ms = 0

    def reset(self) -> None:
        """Forget the turn in progress (the stream goes on)."""
        self._in_turn = False
        self._audio = bytearray()
        self._last_voice_ms = 0
        self._judged_at = -1  # last_voice_ms of the pause already judged incomplete
        self._window.clear()

    @property
    def in_turn(self) -> bool:
        return self._in_turn

    def set_playing(self, playing: bool) -> None:
        """The desktop is (not) speaking: a start then needs ``barge_in_ms`` of voice."""
        self._playing = playing

    def feed(self, pcm: bytes) -> list[Event]:
        """Any amount of PCM (whole samples); the events its complete frames caused."""
        self._pending += pcm
        size = self.settings.frame_bytes
        events: list[Event] = []
        while len(self._pending) >= size:
            frame = bytes(self._pending[:size])
            del self._pending[:size]
            events += self._frame(frame)
        return events

    def _voiced_enough(self) -> bool:
        need_ms = self.settings.barge_in_ms if self._playing else self.settings.start_ms
        need = max(1, -(-need_ms // self.settings.frame_ms))
        return sum(self._window) >= min(need, self._window.maxlen or need)

    def _voiced(self, frame: bytes) -> bool:
        """The detector's word, if the frame is also loud enough over the noise floor."""
        level = rms(frame)
        if self._is_speech(frame) and level >= max(MIN_SPEECH_RMS, SPEECH_OVER_NOISE * self._noise):
            return True
        self._noise += NOISE_ADAPT * (level - self._noise)
        return False

    def _frame(self, frame: bytes) -> list[Event]:
        fms = self.settings.frame_ms
        start_ms = self.now_ms
        self.now_ms += fms
        voiced = self._voiced(frame)
        self._window.append(voiced)
        if not self._in_turn:
            self._preroll.append(frame)
            if not (voiced and self._voiced_enough()):
                return []
            self._in_turn = True
            self._audio = bytearray(b"".join(self._preroll))
            self._preroll.clear()
            self._last_voice_ms = self.now_ms
            onset = start_ms - (sum(self._window) - 1) * fms
            return [SpeechStart(max(0, onset), self.now_ms, self._playing)]
        self._audio += frame
        if len(self._audio) >= self.settings.max_turn_s * SAMPLE_RATE * SAMPLE_BYTES:
            return [self._end("max_turn")]
        if voiced and sum(self._window) >= 2:
            # two voiced frames in the window: speech goes on (one alone is a click)
            self._last_voice_ms = self.now_ms
            return []
        return self._in_pause()

    def _in_pause(self) -> list[Event]:
        s = self.settings
        pause = self.now_ms - self._last_voice_ms
        if pause >= s.max_pause_ms:
            return [self._end("max_pause")]
        if pause < s.pause_ms or self._judged_at == self._last_voice_ms:
            return []
        self._judged_at = self._last_voice_ms
        text, error = self._heard()
        if completeness(text) == "complete":
            return [self._end("complete", text, error)]
        return [Partial(text, self.now_ms)]

    def _heard(self) -> tuple[str, str]:
        try:
            return self._transcribe(bytes(self._audio)), ""
        except VoiceError as e:
            return "", str(e)

    def _end(self, reason: Reason, text: str | None = None, error: str = "") -> TurnEnd:
        if text is None:
            text, error = self._heard()
        end = TurnEnd(text.strip(), reason, self._last_voice_ms, self.now_ms, error)
        self.reset()
        return end
