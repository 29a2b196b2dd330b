"""Sample tracks for a fresh install: short melodies synthesised here, so they are free (CC0).

The first time the app starts with an empty library it writes ``SAMPLE_FOLDER/`` into its
workdir: :data:`TRACKS` as 16-bit mono WAV files plus ``LICENSE.txt``. A hidden marker file
remembers that it did, so a user who deletes the samples does not get them back.
"""

from __future__ import annotations

import logging
import math
import sys
import wave
from array import array
from pathlib import Path

from library import is_audio

log = logging.getLogger(__name__)

SAMPLE_FOLDER = "samples"
MARKER = ".samples-written"
"""In the workdir: the samples were written once (deleting them is the user's choice)."""
RATE = 16000
"""Samples per second: plenty for sine melodies, and ~32 KB per second of sound."""
AMPLITUDE = 9000
"""Of 32767: loud enough to hear, with headroom for the overtones."""
BEAT = 0.32
"""Seconds per note."""
OVERTONES = ((1.0, 1.0), (2.0, 0.35), (3.0, 0.12))
"""(multiple of the fundamental, relative loudness): a soft organ-like timbre."""
ATTACK = 0.02
"""Seconds of fade-in per note (no clicks)."""

# Notes as semitones above A4 (440 Hz); None is a rest. Each melody lasts about 5 s.
TRACKS: tuple[tuple[str, tuple[int | None, ...]], ...] = (
    (
        "Triton AIOS - Morning Walk",
        (3, 7, 10, 15, 10, 7, 3, None, 5, 8, 12, 17, 12, 8, 5, None),
    ),
    (
        "Triton AIOS - Evening Breeze",
        (10, 8, 7, 5, 3, 5, 7, None, 8, 7, 5, 3, 2, 3, None, None),
    ),
    (
        "Triton AIOS - Little Waltz",
        (3, 7, 10, 7, 10, 15, 14, 10, 12, 8, 5, 8, 3, None, 3, None),
    ),
)
LICENSE = """\
The sample tracks in this folder were synthesised by Triton AIOS's music app
(apps/music/samples.py): sine-wave melodies computed note by note, no recording
and no third-party material. They are dedicated to the public domain under
CC0 1.0 Universal: https://creativecommons.org/publicdomain/zero/1.0/
Delete them whenever you like; they are not written again.
"""


def tone(note: int) -> array:
    """One note, :data:`BEAT` long: a quick fade-in, then a decay (plucked, no clicks)."""
    per_note = int(RATE * BEAT)
    attack = int(RATE * ATTACK)
    step = 2 * math.pi * 440.0 * 2 ** (note / 12) / RATE
    norm = sum(level for _, level in OVERTONES)
    return array(
        "h",
        (
            int(
                AMPLITUDE
                * min(1.0, i / attack)
                * math.exp(-3.0 * i / per_note)
                * sum(level * math.sin(k * step * i) for k, level in OVERTONES)
                / norm
            )
            for i in range(per_note)
        ),
    )


def melody(notes: tuple[int | None, ...]) -> bytes:
    """16-bit little-endian mono PCM of ``notes``, one :data:`BEAT` each."""
    rest = array("h", [0] * int(RATE * BEAT))
    tones: dict[int, array] = {}
    out = array("h")
    for note in notes:
        if note is None:
            out.extend(rest)
        else:
            if note not in tones:
                tones[note] = tone(note)
            out.extend(tones[note])
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


def write_wav(path: Path, pcm: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with wave.open(str(tmp), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm)
    tmp.replace(path)


def library_is_empty(workdir: Path) -> bool:
    """No audio file in the workdir or one level of (visible) sub-folders, as the library scans."""
    for entry in workdir.iterdir():
        if entry.is_file() and is_audio(entry.name):
            return False
        if entry.is_dir() and not entry.name.startswith("."):
            if any(f.is_file() and is_audio(f.name) for f in entry.iterdir()):
                return False
    return True


def ensure_samples(workdir: Path) -> list[Path]:
    """Write the sample tracks the first time the library is empty; the paths written."""
    try:
        if not workdir.is_dir() or (workdir / MARKER).exists() or not library_is_empty(workdir):
            return []
        folder = workdir / SAMPLE_FOLDER
        folder.mkdir(exist_ok=True)
        written = []
        for name, notes in TRACKS:
            path = folder / f"{name}.wav"
            write_wav(path, melody(notes))
            written.append(path)
        (folder / "LICENSE.txt").write_text(LICENSE, encoding="utf-8")
        (workdir / MARKER).write_text("the sample tracks were written once\n", encoding="utf-8")
    except OSError as e:  # a read-only or full workdir: the app still starts, just empty
        log.warning("could not write the sample tracks into %s: %s", workdir, e)
        return []
    log.info("wrote %d sample tracks into %s", len(written), folder)
    return written
