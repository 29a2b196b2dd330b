"""The machine's default microphone as 16 kHz mono 16-bit PCM (PyAudio), for conversation
mode where the page cannot open one: WebKitGTK, the Linux window, has no getUserMedia
(DESIGN §10). aios/web/voice_stream.py runs the same endpointer over it as over the page's
audio. A machine without a microphone (or without PyAudio) gets the friendly
:func:`~aios.desktop.voice.no_microphone` error; PortAudio's own words go to the log."""

from __future__ import annotations

import logging
from typing import Any

from aios.config import Config
from aios.desktop.voice import no_microphone

log = logging.getLogger(__name__)

RATE = 16_000


class Microphone:
    """An open input stream; :meth:`read` blocks for one chunk. Close it once."""

    def __init__(self, config: Config, chunk_ms: int):
        self.frames = RATE * chunk_ms // 1000
        try:
            import pyaudio
        except ImportError as e:
            log.info("no microphone: PyAudio is not installed (the voice extra)")
            raise no_microphone(config) from e
        self._pa: Any = pyaudio.PyAudio()
        try:
            self._stream: Any = self._pa.open(
                format=pyaudio.paInt16,
                channels=1,
                rate=RATE,
                input=True,
                frames_per_buffer=self.frames,
            )
        except (OSError, ValueError) as e:
            self._pa.terminate()
            log.info("no microphone: %s", e)  # PortAudio's words, for whoever reads the log
            raise no_microphone(config) from e

    def read(self) -> bytes:
        """The next chunk (a slow reader loses audio rather than failing)."""
        return bytes(self._stream.read(self.frames, exception_on_overflow=False))

    def close(self) -> None:
        try:
            self._stream.stop_stream()
            self._stream.close()
        finally:
            self._pa.terminate()
