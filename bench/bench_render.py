"""How long the desktop takes to paint a big view that arrives as a `view` event.

    python bench/bench_render.py [--runs 20] [--rows 1000] [--items 1000] [--points 500]

Starts the real system in-process (no apps needed: a `view` event opens its window),
opens the desktop in Debian's Chromium (headless, reduced motion so Chart.js draws the
whole chart in its first frame), and emits ``view`` events on the system's bus: a
1,000-row table, a 1,000-item list and a 500-point line chart.

Measured in the page, with no change to the renderer: an init script wraps the
WebSocket's ``message`` listeners, takes ``performance.now()`` when the message reaches
the desktop's listener (before it is parsed), lets the listener render (it renders
synchronously), then waits for the next animation frame plus one task (that is, until
the frame with the new view has been painted). Reported per case: median, p95 and max
of receipt → painted (the target), the synchronous part (receipt → DOM built), and
emit → painted (adds the server's JSON encoding and the WebSocket hop; both clocks are
this machine's).

Target: ≤ 100 ms median from receipt to paint for each case.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from aios.config import validate_config  # noqa: E402
from aios.system import System  # noqa: E402
from aios.web import ServerThread, create_app  # noqa: E402

TARGET_MS = 100.0
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
WARMUP = 2
APP = "bench"

# The measuring hook; it only wraps the listener the desktop adds to its WebSocket.
# "painted": the first frame after the render; "complete": the first frame in which every
# row/item is in the page (a long table appends its tail right after its first paint).
PROBE = r"""
window.__bench = {results: [], want: null};
const afterFrame = (fn) => requestAnimationFrame(() => {
  const after = new MessageChannel();
  after.port1.onmessage = fn;
  after.port2.postMessage(0);
});
const addListener = WebSocket.prototype.addEventListener;
WebSocket.prototype.addEventListener = function (type, fn, opts) {
  if (type !== 'message') return addListener.call(this, type, fn, opts);
  const timed = function (ev) {
    const recv = performance.now();
    const m = typeof ev.data === 'string' && /^\{"bench_id": (\d+)/.exec(ev.data.slice(0, 32));
    fn.call(this, ev);
    if (!m) return;
    const rendered = performance.now();
    const want = window.__bench.want;
    const count = () => document.querySelectorAll(want.selector).length;
    const whole = count() >= want.count;
    afterFrame(() => {
      const painted = performance.now();
      const record = (complete) => window.__bench.results.push({id: Number(m[1]), recv,
        rendered, painted, complete, recvEpochMs: performance.timeOrigin + recv,
        bytes: ev.data.length});
      if (whole) {
        record(painted);
        return;
      }
      // Wait for the rest to be in the page, then for the frame that paints it.
      const poll = () => (count() < want.count ? afterFrame(poll)
        : afterFrame(() => record(performance.now())));
      poll();
    });
  };
  return addListener.call(this, type, timed, opts);
};
"""


def table_view(rows: int) -> dict[str, Any]:
    columns = ["Order", "Customer", "City", "Product", "Qty", "Amount", "Date"]
    data = [
        [
            f"SO-{10001 + i}",
            f"客户 {i % 97}",
            ["北京", "上海", "Berlin"][i % 3],
            f"Product {i % 13}",
            i % 9 + 1,
            (i % 9 + 1) * 129,
            f"2025-{i % 12 + 1:02d}-15",
        ]
        for i in range(rows)
    ]
    return {
        "view_type": "table",
        "data": {"title": f"{rows} rows", "columns": columns, "rows": data},
    }


def list_view(items: int) -> dict[str, Any]:
    data = [
        {
            "id": f"i{i}",
            "title": f"{i + 1}. 待办事项 task {i}",
            "sub": f"due 2026-01-{i % 28 + 1:02d} · priority {['high', 'mid', 'low'][i % 3]}",
            "status": ["todo", "doing", "done"][i % 3],
        }
        for i in range(items)
    ]
    return {"view_type": "list", "data": {"title": f"{items} items", "items": data}}


def chart_view(points: int) -> dict[str, Any]:
    values = [round(50 + 40 * ((i * 37) % 101) / 101, 2) for i in range(points)]
    return {
        "view_type": "chart",
        "data": {
            "type": "line",
            "title": f"{points} points",
            "labels": [f"P{i + 1}" for i in range(points)],
            "values": values,
        },
    }


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * pct / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


class Bench:
    def __init__(self, system: System, page: Page):
        self.system = system
        self.page = page
        self.next_id = 0

    def one(self, response: dict[str, Any], selector: str, count: int) -> dict[str, float]:
        self.page.evaluate(
            "want => { window.__bench.want = want; }",
            {"selector": f"#winbody_{APP} {selector}", "count": count},
        )
        self.next_id += 1
        bench_id = self.next_id
        emitted = time.time() * 1000
        self.system.bus.emit(
            "view", {"bench_id": bench_id, "app": APP, "response": {"status": "ok", **response}}
        )
        self.page.wait_for_function(
            "id => window.__bench.results.some(r => r.id === id)", arg=bench_id, timeout=30_000
        )
        r = self.page.evaluate("id => window.__bench.results.find(r => r.id === id)", bench_id)
        return {
            "paint": r["painted"] - r["recv"],
            "sync": r["rendered"] - r["recv"],
            "complete": r["complete"] - r["recv"],
            "e2e": r["painted"] - r["recv"] + r["recvEpochMs"] - emitted,
            "kb": r["bytes"] / 1024,
        }

    def case(
        self, response: dict[str, Any], runs: int, selector: str, count: int
    ) -> dict[str, Any]:
        """``count`` elements matching ``selector`` make the view complete (not a fallback)."""
        for _ in range(WARMUP):
            self.one(response, selector, count)
        samples = [self.one(response, selector, count) for _ in range(runs)]
        out: dict[str, Any] = {"kb": samples[0]["kb"]}
        for key in ("paint", "sync", "complete", "e2e"):
            values = [s[key] for s in samples]
            out[key] = {
                "median": statistics.median(values),
                "p95": percentile(values, 95),
                "max": max(values),
            }
        return out


def run(opts: argparse.Namespace) -> dict[str, Any]:
    token = secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory() as tmp:
        config = validate_config(
            {
                "apps_dir": str(Path(tmp) / "apps"),
                "data_dir": str(Path(tmp) / "data"),
                "language": "en",
                "llm": {"api_key": ""},
                "voice": {"welcome": False},
            }
        )
        server = ServerThread(0)
        system = System(config, port=server.port, token=token)
        server.attach(create_app(system))
        server.start()
        try:
            system.start()
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = browser.new_context(
                    viewport={"width": 1280, "height": 800}, reduced_motion="reduce"
                )
                context.add_init_script(PROBE)
                page = context.new_page()
                page.goto(f"{system.url}/?token={token}")
                page.wait_for_selector('#tray_net[data-state="open"]')
                bench = Bench(system, page)
                cases = {
                    f"table, {opts.rows:,} rows": (table_view(opts.rows), "tbody tr", opts.rows),
                    f"list, {opts.items:,} items": (
                        list_view(opts.items),
                        ".list-item",
                        opts.items,
                    ),
                    f"line chart, {opts.points:,} points": (
                        chart_view(opts.points),
                        ".chart-box canvas",
                        1,
                    ),
                }
                results = {
                    name: bench.case(resp, opts.runs, selector, count)
                    for name, (resp, selector, count) in cases.items()
                }
                results["_env"] = {"chromium": browser.version, "cpus": os.cpu_count()}
                browser.close()
        finally:
            server.shutdown()
            system.stop()
    return results


def report(results: dict[str, Any], runs: int) -> str:
    env = results["_env"]
    lines = [
        f"Render benchmark: view event → painted window, {runs} runs each "
        f"(target ≤ {TARGET_MS:g} ms median); headless Chromium {env['chromium']}, "
        f"{env['cpus']} CPU(s)",
        "",
        "| view | event size | median | p95 | max | DOM built (median) "
        "| all rows in (median) | from server emit (median) | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if name.startswith("_"):
            continue
        p = r["paint"]
        ok = "✓" if p["median"] <= TARGET_MS else "✗ over"
        lines.append(
            f"| {name} | {r['kb']:.0f} KB | {p['median']:.1f} ms | {p['p95']:.1f} ms "
            f"| {p['max']:.1f} ms | {r['sync']['median']:.1f} ms "
            f"| {r['complete']['median']:.1f} ms "
            f"| {r['e2e']['median']:.1f} ms | {ok} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--points", type=int, default=500)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    opts = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(
            f"{CHROMIUM} is missing: install it with scripts/install --test "
            "(apt-get install chromium)",
            file=sys.stderr,
        )
        return 2
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    results = run(opts)
    print(report(results, opts.runs), flush=True)
    if opts.json:
        opts.json.parent.mkdir(parents=True, exist_ok=True)
        opts.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
