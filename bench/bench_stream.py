"""Streaming and barge-in (DESIGN §18, issue 26): how soon the first words of an answer are
in the conversation panel, and how soon a key in the command bar silences the desktop.

    python bench/bench_stream.py [--runs 10] [--chunks 20] [--chunk-delay 0.05] [--ttft 0.3]

One real system (bench/running.py) with the assistant app; the model is the fake OpenAI
server (tests/fakes/fake_openai.py) sending its first token after ``--ttft`` s, then each
answer in ``--chunks`` chunks ``--chunk-delay`` s apart; the desktop in Debian's Chromium
(headless).

- **First words.** An instruction for the assistant is typed and sent; a MutationObserver
  in the page takes ``Date.now()`` when the panel first shows words of the answer (the
  typing bubble) and when the app's reply entry appears; the fake server takes
  ``time.time()`` when the request comes in and as it writes each chunk (one clock: this
  machine's). Printed, p50 / p95: the provider's first chunk → the first words in the
  panel (what streaming adds), and the request → the first words; then the request →
  the first words with ``duplex.stream_replies`` off in the same run (the baseline: the
  provider answers whole after the same generation time, and the words show with the
  app's reply).
- **Barge-in.** The desktop reads a long text aloud (the server's TTS, played by the page);
  once the audio is playing, one key is pressed in the command bar. Measured in the page:
  the key's event time → the audio element's ``pause`` event (the voice stopped), p50 /
  p95 / max (target ≤ 200 ms); the floor in the same run is the key's event time → a task
  the page posts from its own keydown listener (what any reaction to a key costs).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from bench.running import TOKEN, running_system  # noqa: E402
from tests.fakes.fake_openai import FakeOpenAI, Reply, streamed, text  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
TARGET_STOP_MS = 200.0
WAIT_MS = 30_000
WARMUP = 1
LONG = (
    "This is a long answer that the desktop reads aloud, sentence after sentence, so that "
    "there is time to interrupt it while it is still speaking to the user of the desktop."
)
PROBE = r"""
window.__bench = {want: null, first: null, final: null, audios: [], key: null, floor: null,
  stopped: null};
const play = HTMLMediaElement.prototype.play;
HTMLMediaElement.prototype.play = function () {
  if (!window.__bench.audios.includes(this)) {
    window.__bench.audios.push(this);
    this.addEventListener('pause', () => {
      if (window.__bench.stopped === null) window.__bench.stopped = performance.now();
    });
  }
  return play.call(this);
};
new MutationObserver(() => {
  const b = window.__bench;
  if (!b.want) return;
  if (b.first === null) {
    const words = [...document.querySelectorAll('#conversation .conv-reply .conv-text')]
      .some((n) => n.textContent.includes(b.want));
    if (words) b.first = Date.now();
  }
  if (b.final === null) {
    const sel = '#conversation .conv-reply:not(.conv-stream) .conv-text';
    const reply = [...document.querySelectorAll(sel)].some((n) => n.textContent.includes(b.want));
    if (reply) b.final = Date.now();
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
document.addEventListener('keydown', (ev) => {
  if (ev.target.id !== 'command_input') return;
  window.__bench.key = ev.timeStamp;
  const ch = new MessageChannel();
  ch.port1.onmessage = () => { window.__bench.floor = performance.now(); };
  ch.port2.postMessage(0);
}, true);
"""
PLAYING = "() => window.__bench.audios.some((a) => !a.paused && !a.ended && a.currentTime > 0)"


class Fake(FakeOpenAI):
    """Answers the controller's history summaries itself (a session of long answers gets
    them), so the script only feeds the assistant."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._summary = threading.local()

    def _record(self, body: Any, headers: dict[str, str], path: str) -> None:
        messages = body.get("messages") if isinstance(body, dict) else None
        first = str(messages[0].get("content", "")) if messages else ""
        self._summary.now = first.startswith("Summarise")
        super()._record(body, headers, path)

    def _next(self) -> Reply:
        return text("a summary") if getattr(self._summary, "now", False) else super()._next()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def first_words(
    page: Page, fake: FakeOpenAI, n: int, args: argparse.Namespace, tag: str
) -> tuple[list[float], list[float]]:
    """``n`` answers: (first chunk sent → first words shown, request → first words), ms
    (the first list is empty when the answers were not streamed)."""
    lags: list[float] = []
    waits: list[float] = []
    box = page.locator("#command_input")
    for i in range(n + WARMUP):
        marker = f"{tag}{i}x"
        answer = f"Answer {marker} " + "words of the story go on " * args.chunks
        size = max(1, len(answer) // args.chunks)
        pieces = [answer[j : j + size] for j in range(0, len(answer), size)]
        reply = streamed(answer, chunks=pieces, chunk_delay=args.chunk_delay)
        reply.delay = args.ttft
        fake.script([reply])
        start, asked = len(fake.chunk_times), len(fake.request_times)
        page.evaluate(
            "(m) => Object.assign(window.__bench, {want: m, first: null, final: null})", marker
        )
        box.fill(f"ask the assistant about {marker}")
        box.press("Enter")
        page.wait_for_function("() => window.__bench.final !== null", timeout=WAIT_MS)
        got: dict[str, Any] = page.evaluate("() => window.__bench")
        if i < WARMUP:
            continue
        first = float(got["first"])
        waits.append(first - fake.request_times[asked] * 1000)
        if len(fake.chunk_times) > start:
            lags.append(first - fake.chunk_times[start] * 1000)
    return lags, waits


def barge_in(page: Page, emit: Any, n: int) -> tuple[list[float], list[float]]:
    """``n`` interruptions: (key → audio paused, key → a task posted at the key), ms."""
    stops: list[float] = []
    floors: list[float] = []
    box = page.locator("#command_input")
    box.click()
    box.press("Escape")  # the page has had a user gesture: audio may play
    for i in range(n + WARMUP):
        page.evaluate(
            "() => Object.assign(window.__bench, {key: null, floor: null, stopped: null})"
        )
        emit("speak", {"text": LONG, "lang": "en-US"})
        page.wait_for_function(PLAYING, timeout=WAIT_MS)
        page.evaluate("() => { window.__bench.stopped = null; }")
        box.press("k")
        page.wait_for_function(
            "() => window.__bench.stopped !== null && window.__bench.floor !== null",
            timeout=WAIT_MS,
        )
        got: dict[str, Any] = page.evaluate("() => window.__bench")
        box.fill("")
        if i >= WARMUP:
            stops.append(float(got["stopped"]) - float(got["key"]))
            floors.append(float(got["floor"]) - float(got["key"]))
    return stops, floors


def line(label: str, values: list[float]) -> str:
    return (
        f"  {label:<44} p50 {statistics.median(values):8.1f} ms  "
        f"p95 {percentile(values, 0.95):8.1f} ms  max {max(values):8.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--chunk-delay", type=float, default=0.05)
    parser.add_argument("--ttft", type=float, default=0.3, help="the provider's first token")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    tmp = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    try:
        shutil.copytree(ROOT / "apps" / "assistant", tmp / "apps" / "assistant")
        with Fake(api_key="sk-bench") as fake:
            raw = {
                "apps_dir": str(tmp / "apps"),
                "data_dir": str(tmp / "data"),
                "language": "en",
                "voice": {"welcome": False},
                "handle_timeout": 30,
                "llm": {
                    "measure_local": False,
                    "api_key": "sk-bench",
                    "base_url": fake.url,
                    "model": "fake",
                    "max_retries": 0,
                    "planner": "offline",
                },
            }
            with running_system(raw) as (system, http), sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
                )
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.add_init_script(PROBE)
                page.goto(f"{system.url}/?token={TOKEN}")
                page.locator("#tray_net[data-state=open]").wait_for(timeout=WAIT_MS)
                page.locator("#conversation_button").click()
                generation = args.chunks * args.chunk_delay * 1000
                print(
                    f"answers of {args.chunks} chunks {args.chunk_delay * 1000:.0f} ms apart "
                    f"after a first token at {args.ttft * 1000:.0f} ms "
                    f"(~{generation:.0f} ms of generation), {args.runs} runs each"
                )
                lags, waits = first_words(page, fake, args.runs, args, "s")
                http.post(
                    f"{system.url}/api/config",
                    json={"updates": {"duplex": {"stream_replies": False}}},
                    timeout=20,
                ).raise_for_status()
                _, plain = first_words(page, fake, args.runs, args, "p")
                print("\nfirst words of the answer in the conversation panel")
                print(line("provider's first chunk -> panel (streamed)", lags))
                print(line("request -> panel (streamed)", waits))
                print(line("request -> panel (stream_replies off)", plain))
                ratio = statistics.median(plain) / max(statistics.median(waits), 0.1)
                print(f"  streamed, the first words show {ratio:.1f}x sooner (p50)")
                stops, floors = barge_in(page, system.bus.emit, args.runs)
                print("\nbarge-in: a key in the command bar while the desktop speaks ->")
                print(line("the voice stopped (audio paused)", stops))
                print(line("floor: a task posted at the key ran", floors))
                ok = percentile(stops, 0.95) <= TARGET_STOP_MS
                print(f"\ntarget (p95 <= {TARGET_STOP_MS:.0f} ms) {'met' if ok else 'NOT met'}")
                browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
