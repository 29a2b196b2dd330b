"""Small media files the gallery makes itself: a sine tone (WAV) and a picture (PNG).

Pure functions returning bytes, stdlib only (``wave``, ``zlib``, ``struct``),
so the app needs no binary seed files in git and no third-party packages.
"""

from __future__ import annotations

import io
import math
import struct
import wave
import zlib

SAMPLE_RATE = 22_050
FADE_SECONDS = 0.05
"""Fade in and out, so the tone starts and stops without a click."""


def sine_wav(frequency: float = 440.0, seconds: float = 1.5, volume: float = 0.4) -> bytes:
    """A mono 16-bit PCM WAV of a sine tone."""
    frames = int(SAMPLE_RATE * seconds)
    fade = max(1, int(SAMPLE_RATE * FADE_SECONDS))
    samples = bytearray()
    for i in range(frames):
        envelope = min(1.0, i / fade, (frames - 1 - i) / fade)
        value = volume * envelope * math.sin(2 * math.pi * frequency * i / SAMPLE_RATE)
        samples += struct.pack("<h", int(value * 32767))
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(bytes(samples))
    return buf.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def gradient_png(width: int = 160, height: int = 100) -> bytes:
    """An RGB PNG: a colour gradient with a sun-like disc, recognisable in a screenshot."""
    cx, cy, r = width * 0.7, height * 0.35, min(width, height) * 0.2
    raw = bytearray()
    for y in range(height):
        raw.append(0)  # filter type "none" for this scanline
        for x in range(width):
            if (x - cx) ** 2 + (y - cy) ** 2 <= r * r:
                raw += bytes((255, 210, 60))
            elif y > height * 0.7:
                raw += bytes((40, 120 + int(60 * x / width), 70))
            else:
                raw += bytes((60 + int(120 * x / width), 120 + int(80 * y / height), 230))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(bytes(raw), 9))
        + _chunk(b"IEND", b"")
    )
