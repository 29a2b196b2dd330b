"""Real speech for the tests and benchmarks of conversation mode: espeak-ng's voice turned
into 16 kHz mono 16-bit PCM, with pauses of faint noise between the words (RECIPES: Speech).

``utterance("open the notes and", 1000, "play music")`` is the audio of a person who says
the first part, thinks for a second and goes on. :func:`sphinx_transcriber` is the real
offline recogniser (pocketsphinx) over a small grammar that can also hear a dangling "and"
and a verb without its object, so that completeness is judged on what was really heard.
"""

from __future__ import annotations

import functools
import random
import shutil
import struct
import subprocess
import wave
from collections.abc import Callable
from pathlib import Path

from aios.desktop.voice import to_pcm16k

SAMPLE_RATE = 16_000
MANDARIN = "sit/cmn-latn-pinyin"
NOISE_AMPLITUDE = 24
"""Peak of the room noise between words (of 32767): a quiet room, not digital silence."""
PAD_MS = 300
"""to_pcm16k pads each phrase with this much silence on both sides."""
GRAMMAR = """#JSGF V1.0;
grammar talk;
public <s> = <cmd> [<conj> [<cmd>]];
<cmd> = <verb> [[the] <thing>];
<verb> = open | play | show | close;
<thing> = notes | music | files | clock;
<conj> = and | then;
"""


def espeak() -> str | None:
    return shutil.which("espeak-ng")


@functools.cache
def say(text: str, voice: str = "en") -> bytes:
    """``text`` spoken by espeak-ng as 16 kHz PCM, without the padding around it."""
    exe = espeak()
    assert exe is not None, "espeak-ng is needed (scripts/install installs it)"
    wav = subprocess.run(
        [exe, "-v", voice, "--stdout", text], capture_output=True, check=True, timeout=30
    ).stdout
    pcm = to_pcm16k(wav)
    pad = SAMPLE_RATE * PAD_MS // 1000 * 2
    return pcm[pad:-pad]


def silence(ms: int, seed: int = 7) -> bytes:
    """``ms`` of faint, repeatable noise."""
    rnd = random.Random(seed)
    n = SAMPLE_RATE * ms // 1000
    return struct.pack(
        f"<{n}h", *(rnd.randint(-NOISE_AMPLITUDE, NOISE_AMPLITUDE) for _ in range(n))
    )


def utterance(*parts: str | int, voice: str = "en") -> tuple[bytes, list[int]]:
    """Speech (``str``) and pauses (``int`` ms) one after the other; also the audio time
    (ms) at which each spoken part ends."""
    pcm = bytearray()
    ends: list[int] = []
    for part in parts:
        if isinstance(part, int):
            pcm += silence(part, seed=len(pcm))
        else:
            pcm += say(part, voice)
            ends.append(len(pcm) * 1000 // (SAMPLE_RATE * 2))
    return bytes(pcm), ends


def write_wav(path: Path, pcm: bytes, rate: int = SAMPLE_RATE) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return path


def sphinx_transcriber(folder: Path, grammar: str = GRAMMAR) -> Callable[[bytes], str]:
    """pocketsphinx over ``grammar`` (written into ``folder``): PCM in, what it heard out
    ('' for nothing)."""
    from pocketsphinx import Decoder

    path = folder / "talk.gram"
    path.write_text(grammar, encoding="utf-8")
    pad = silence(PAD_MS)

    def transcribe(pcm: bytes) -> str:
        decoder = Decoder(jsgf=str(path), logfn="/dev/null")
        decoder.start_utt()
        decoder.process_raw(pad + pcm + pad, full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        return hyp.hypstr.strip() if hyp is not None else ""

    return transcribe
