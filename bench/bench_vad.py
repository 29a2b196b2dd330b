"""Conversation mode's turns (DESIGN §18, aios/duplex/turns.py): what the endpointer costs,
how long the user waits after their last word, how often it cuts them off, and how fast
their speech stops the desktop's voice.

    python bench/bench_vad.py [--set bench/data/turns_set.jsonl]

The labelled set (``{"id", "lang", "kind", "parts": [text | pause ms, ...], "grammar"?}``)
is spoken by espeak-ng (tests/speech.py) with the pauses put in as faint room noise; it is
kept apart from the unit tests' utterances. Each item is one turn: ``complete`` sentences,
``thinking`` pauses mid-sentence, ``conjunction`` pauses after "and" / "然后", and
``trailing`` turns that end on a dangling word (they should end at the long pause).
espeak-ng puts a little silence of its own around each part: a nominal pause of 1700 ms is
about 2 s of silence, the default ``turn_max_pause_ms`` (and ``x`` items pause past it on
purpose: those are cut by design).

- **Cost.** Every item's audio through the endpointer (VAD, energy gate, smoothing; a
  transcriber that costs nothing), CPU seconds per second of audio; the baseline in the
  same run is WebRTC's VAD alone over the same frames.
- **End of turn.** Per item: a *premature cut-off* is a turn end before the last part was
  spoken; a *late end* is, for a turn whose words are finished, an end more than
  :data:`LATE_MS` after ``turn_pause_ms``, or none. Latency after the last word: the
  audio waited plus the CPU time of the deciding frame (transcription included), p50/p95.
  Transcripts come from an oracle (the text of the parts already heard: the endpointer's
  decisions, not the recogniser's errors) for every item, and from real pocketsphinx for
  the English items its command grammar knows. The baseline in the same run ends every
  turn at the first ``turn_pause_ms`` pause (no completeness check).
- **Barge-in.** A real system's ``/api/voice/stream``, the desktop marked as speaking:
  from the onset of speech in the audio to the ``speech_start`` message back, over real
  loopback WebSocket (audio sent at real time pace in the page's 20 ms chunks). Target
  ≤ 200 ms.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aios.config import Config  # noqa: E402
from aios.duplex import turns  # noqa: E402
from aios.duplex.turns import Endpointer, TurnEnd, TurnSettings  # noqa: E402
from bench.running import TOKEN, running_system  # noqa: E402
from tests.speech import MANDARIN, sphinx_transcriber, utterance  # noqa: E402
from tests.util import WsClient  # noqa: E402

SET_PATH = ROOT / "bench" / "data" / "turns_set.jsonl"
LATE_MS = 300
LEAD_MS = 500
"""Room noise before each item's first word."""
TAIL_MS = 3000
"""Room noise after the last word: longer than the longest pause that ends a turn."""
BARGE_TARGET_MS = 200.0
CHUNK_MS = 20


@dataclass
class Item:
    id: str
    lang: str
    kind: str
    parts: list[str | int]
    grammar: bool
    pcm: bytes = b""
    ends: tuple[int, ...] = ()
    """Audio time (ms) at which each spoken part ends."""


def load(path: Path) -> list[Item]:
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            items.append(
                Item(row["id"], row["lang"], row["kind"], row["parts"], bool(row.get("grammar")))
            )
    for item in items:
        voice = MANDARIN if item.lang == "zh" else "en"
        item.pcm, ends = utterance(LEAD_MS, *item.parts, TAIL_MS, voice=voice)
        item.ends = tuple(ends)
    return items


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return (
        ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")
    )


def oracle(item: Item, ep: Callable[[], int]) -> turns.Transcribe:
    """The text of the parts spoken by now (``ep()``: the endpointer's audio time)."""
    texts = [p for p in item.parts if isinstance(p, str)]
    sep = "" if item.lang == "zh" else " "

    def transcribe(_pcm: bytes) -> str:
        return sep.join(t for t, end in zip(texts, item.ends, strict=True) if end <= ep() + 40)

    return transcribe


@dataclass
class Outcome:
    reason: str
    premature: bool
    late: bool
    latency_ms: float | None
    text: str


MakeTranscriber = Callable[[Item, Endpointer], turns.Transcribe]


def run_item(item: Item, settings: TurnSettings, make: MakeTranscriber | None) -> Outcome:
    """The first turn end the endpointer gives for ``item``; ``make`` builds its
    transcriber (None: every pause ends the turn, the baseline)."""
    chosen: list[turns.Transcribe] = []
    ep = Endpointer(settings, turns.webrtc_vad(2), lambda pcm: chosen[0](pcm) if chosen else "ok")
    if make is not None:
        chosen.append(make(item, ep))
    frame = settings.frame_bytes
    first: TurnEnd | None = None
    cost = 0.0
    for i in range(0, len(item.pcm), frame):
        t0 = time.process_time()
        events = ep.feed(item.pcm[i : i + frame])
        spent = time.process_time() - t0
        end = next((e for e in events if isinstance(e, TurnEnd)), None)
        if end is not None and first is None:
            first, cost = end, spent
    last_word = item.ends[-1]
    if first is None:
        return Outcome("none", False, True, None, "")
    premature = first.at_ms < last_word
    finished = item.kind != "trailing"
    waited = first.at_ms - first.last_voice_ms
    late = finished and not premature and waited > settings.pause_ms + LATE_MS
    return Outcome(first.reason, premature, late, waited + cost * 1000, first.text)


def cost_section(items: list[Item], settings: TurnSettings) -> None:
    audio_s = sum(len(i.pcm) for i in items) / (turns.SAMPLE_RATE * turns.SAMPLE_BYTES)
    frame = settings.frame_bytes
    vad = turns.webrtc_vad(2)
    t0 = time.process_time()
    for item in items:
        for i in range(0, len(item.pcm) - frame + 1, frame):
            vad(item.pcm[i : i + frame])
    base = time.process_time() - t0
    t0 = time.process_time()
    for item in items:
        ep = Endpointer(settings, turns.webrtc_vad(2), lambda _pcm: "ok")
        for i in range(0, len(item.pcm), 4096 * 2):
            ep.feed(item.pcm[i : i + 4096 * 2])
    full = time.process_time() - t0
    print(f"cost over {audio_s:.1f} s of audio ({len(items)} items)")
    print(
        f"  VAD alone (baseline)   {base / audio_s * 1000:7.2f} ms CPU per s of audio"
        f"  (x{audio_s / base:,.0f} real time)"
    )
    print(
        f"  endpointer             {full / audio_s * 1000:7.2f} ms CPU per s of audio"
        f"  (x{audio_s / full:,.0f} real time, {full / base:.2f}x the VAD)"
    )


def quality_section(items: list[Item], settings: TurnSettings, folder: Path) -> None:
    sphinx = sphinx_transcriber(folder)

    def report(
        name: str, chosen: list[Item], make: Callable[[Item, Endpointer], turns.Transcribe] | None
    ) -> None:
        outs = {i.id: run_item(i, settings, make) for i in chosen}
        premature = [k for k, o in outs.items() if o.premature]
        late = [k for k, o in outs.items() if o.late]
        lat = [
            o.latency_ms
            for i in chosen
            if (o := outs[i.id]).latency_ms is not None and i.kind != "trailing" and not o.premature
        ]
        print(
            f"  {name:<34} n={len(chosen):2d}"
            f"  cut off {len(premature):2d} ({len(premature) / len(chosen):5.1%})"
            f"  late {len(late):2d} ({len(late) / len(chosen):5.1%})"
            f"  after last word p50 {pct(lat, 0.5):5.0f} ms  p95 {pct(lat, 0.95):5.0f} ms"
        )
        if premature:
            print("      cut off: " + ", ".join(f"{k} ({outs[k].reason})" for k in premature))
        if late:
            print(f"      late: {', '.join(late)}")

    print(
        f"\nend of turn (turn_pause_ms {settings.pause_ms},"
        f" turn_max_pause_ms {settings.max_pause_ms})"
    )
    for lang in ("en", "zh"):
        chosen = [i for i in items if i.lang == lang]
        report(
            f"{lang}: endpointer, oracle transcript",
            chosen,
            lambda it, ep: oracle(it, lambda: ep.now_ms),
        )
        report(f"{lang}: pause only (baseline)", chosen, None)
    grammar = [i for i in items if i.grammar]
    report("en grammar: endpointer, pocketsphinx", grammar, lambda _it, _ep: sphinx)


def barge_in_section(items: list[Item], tmp: Path) -> None:
    chosen = [i for i in items if i.kind == "complete"]
    delays: list[float] = []
    (tmp / "apps").mkdir()  # no app is needed: the stream's grammar has the desktop's words
    raw = {
        "apps_dir": str(tmp / "apps"),
        "data_dir": str(tmp / "data"),
        "language": "en",
        "voice": {"welcome": False},
        "llm": {"api_key": ""},
    }
    with running_system(raw) as (system, _http):
        url = system.url.replace("http://", "ws://") + f"/api/voice/stream?token={TOKEN}&lang=en-US"
        for item in chosen:
            ws = WsClient.open(url, headers={"Origin": system.url})
            try:
                assert json.loads(ws.receive(timeout=10))["type"] == "ready"
                ws.send(json.dumps({"type": "playing", "on": True}))
                delays.append(_barge_in(ws, item))
            finally:
                ws.close()
    print(
        f"\nbarge-in: speech onset → speech_start at the page"
        f" ({len(delays)} utterances, real WebSocket)"
    )
    print(
        f"  p50 {pct(delays, 0.5):.0f} ms  p95 {pct(delays, 0.95):.0f} ms"
        f"  max {max(delays):.0f} ms  (target ≤ {BARGE_TARGET_MS:.0f} ms)"
    )


def _barge_in(ws: WsClient, item: Item) -> float:
    """Send at real-time pace; the onset (first voiced frame's audio time) to the answer."""
    chunk = turns.SAMPLE_RATE * CHUNK_MS // 1000 * turns.SAMPLE_BYTES
    t0 = time.perf_counter()
    sent_ms = 0
    while sent_ms * chunk // CHUNK_MS < len(item.pcm):
        at = t0 + sent_ms / 1000
        while (now := time.perf_counter()) < at:
            time.sleep(min(0.005, at - now))
        ws.send(item.pcm[sent_ms * chunk // CHUNK_MS : (sent_ms + CHUNK_MS) * chunk // CHUNK_MS])
        sent_ms += CHUNK_MS
        raw = ws.receive(timeout=0)
        if raw is not None and json.loads(raw)["type"] == "speech_start":
            got = time.perf_counter()
            onset = LEAD_MS  # the first word starts right after the lead-in
            return (got - t0) * 1000 - onset
    raise AssertionError(f"{item.id}: no speech_start")


def main() -> int:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SET_PATH)
    args = parser.parse_args()
    settings = TurnSettings.of(Config().voice)
    items = load(args.set)
    cost_section(items, settings)
    with tempfile.TemporaryDirectory(prefix="aios-bench-vad-") as tmp:
        quality_section(items, settings, Path(tmp))
        barge_in_section(items, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
