"""Listening while the user types (DESIGN §18, aios/duplex/): how fast a draft's preview
comes back, and how often the interruption engine speaks up when it should not.

    python bench/bench_duplex.py [--set bench/data/duplex_drafts.jsonl] [--rounds 3]

One real system (bench/running.py) with every bundled app, in a temporary apps folder
whose files app workspace holds the files the labelled deletes name, and a few of the
user's memories (:data:`MEMORIES`).

- **Latency.** Over one real ``/api/events`` WebSocket, the drafts a person produces while
  typing each labelled text (every :data:`PREFIX_STEP`-th prefix, as the debounced
  command bar sends them) go out one at a time, each answered by its ``draft_preview``.
  Interleaved with them, the same socket's floor: an empty draft, which the listener
  answers without any preview work (no router, no engine) — the WebSocket round trip, the
  reader thread and the JSON both ways. Printed: p50 / p95 of each and the difference
  (target: preview p95 ≤ 30 ms offline).
- **Quality.** Every row of the labelled set (``{"text", "lang", "expect": kind | null,
  "before"?, "paused"?}``; kept apart from the rules' tuning set,
  tests/integration/duplex_dev_drafts.jsonl) is given to the engine in a session of its
  own, at a pause unless ``paused`` is false, after ``before`` when given (heavy
  deletion). Printed: precision (interjections of the expected kind / all interjections),
  the false-interjection rate (interjections on rows labelled none / those rows; target
  ≤ 5 %), recall per kind, and the misses; and the same figures for a keyword baseline
  measured in the same run (a delete word is a danger, a remind word a missing time).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.running import TOKEN, running_system  # noqa: E402
from tests.util import WsClient  # noqa: E402

SET_PATH = ROOT / "bench" / "data" / "duplex_drafts.jsonl"
MEMORIES = [
    "我对花生过敏",
    "我妹妹叫安娜",
    "I prefer window seats on flights",
    "My dentist is Dr. Chen",
    "我在学日语",
    "I am allergic to shellfish",
]
PREFIX_STEP = 3
"""Characters between two drafts of the same text (a debounced typist)."""
WAIT = 10.0
TARGET_P95_MS = 30.0
TARGET_FALSE = 0.05

Kind = str | None


def seed_workspace(workspace: Path) -> None:
    """The files the labelled deletes name (counted read-only by the engine)."""
    for i in range(12):
        (workspace / f"build-{i}.log").write_text("old output\n")
    for name in ("a.txt", "b.txt", "todo.txt", "hello.txt", "report.docx", "notes.md"):
        (workspace / name).write_text("x\n")
    for folder, n, ext in (("photos", 5, "jpg"), ("tmp", 7, "tmp"), ("old", 3, "txt")):
        (workspace / folder).mkdir(exist_ok=True)
        for i in range(n):
            (workspace / folder / f"{i}.{ext}").write_text("x")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# ------------------------------------------------------------------ latency


def round_trip(ws: WsClient, message: dict[str, Any]) -> float:
    start = time.perf_counter()
    ws.send(json.dumps(message, ensure_ascii=False))
    while True:
        raw = ws.receive(timeout=WAIT)
        if raw is None:
            raise RuntimeError(f"no answer to {message!r} within {WAIT}s")
        msg = json.loads(raw)
        if msg.get("type") == "draft_preview" and msg.get("id") == message["id"]:
            return (time.perf_counter() - start) * 1000


def latency(url: str, texts: list[str], rounds: int) -> tuple[list[float], list[float]]:
    drafts = [t[:n] for t in texts for n in range(PREFIX_STEP, len(t) + 1, PREFIX_STEP)]
    ws = WsClient.open(url.replace("http", "ws") + f"/api/events?token={TOKEN}", {"Origin": url})
    preview, floor = [], []
    try:
        ws.receive(timeout=WAIT)  # hello
        n = 0
        for _ in range(rounds):
            for i, text in enumerate(drafts):
                n += 1
                tab = f"bench{i % 8}"
                preview.append(round_trip(ws, {"type": "draft", "id": n, "text": text, "tab": tab}))
                n += 1
                floor.append(round_trip(ws, {"type": "draft", "id": n, "text": "", "tab": tab}))
    finally:
        ws.close()
    return preview, floor


# ------------------------------------------------------------------ quality


def keyword_baseline(row: dict[str, Any]) -> Kind:
    """What a keyword listener would say: any delete word a danger, any remind word a slot."""
    from aios.duplex import drafts

    text = row["text"]
    if drafts._DELETE.search(text) or drafts._CODE_DELETE.search(text):
        return "danger"
    if any(w in text.lower() for w in ("提醒", "remind")):
        return "missing_slot"
    return None


def quality(
    rows: list[dict[str, Any]], decide: Callable[[int, dict[str, Any]], Kind]
) -> dict[str, Any]:
    got = [decide(i, row) for i, row in enumerate(rows)]
    spoke = [(row, g) for row, g in zip(rows, got, strict=True) if g is not None]
    right = sum(1 for row, g in spoke if g == row["expect"])
    quiet_rows = [g for row, g in zip(rows, got, strict=True) if row["expect"] is None]
    recall = {}
    for kind in sorted({str(r["expect"]) for r in rows if r["expect"] is not None}):
        mine = [g for row, g in zip(rows, got, strict=True) if row["expect"] == kind]
        recall[kind] = (sum(1 for g in mine if g == kind), len(mine))
    by_lang = {}
    for lang in ("zh-CN", "en"):
        pairs = [(r, g) for r, g in zip(rows, got, strict=True) if r["lang"] == lang]
        by_lang[lang] = (sum(1 for r, g in pairs if g == r["expect"]), len(pairs))
    return {
        "precision": right / len(spoke) if spoke else 1.0,
        "spoke": len(spoke),
        "false": sum(1 for g in quiet_rows if g is not None),
        "quiet_rows": len(quiet_rows),
        "recall": recall,
        "by_lang": by_lang,
        "misses": [
            f"{r['text']!r} ({r['lang']}): expected {r['expect']}, got {g}"
            for r, g in zip(rows, got, strict=True)
            if g != r["expect"]
        ],
    }


def report(name: str, q: dict[str, Any], show_misses: bool) -> None:
    false_rate = q["false"] / q["quiet_rows"] if q["quiet_rows"] else 0.0
    print(
        f"{name:>9}: precision {q['precision']:.1%} ({q['spoke']} interjections), "
        f"false interjections {false_rate:.1%} ({q['false']}/{q['quiet_rows']} rows labelled none)"
    )
    print("           recall: " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in q["recall"].items()))
    print(
        "           exact by language: "
        + ", ".join(f"{k} {a}/{b}" for k, (a, b) in q["by_lang"].items())
    )
    if show_misses:
        for miss in q["misses"]:
            print(f"           miss: {miss}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=SET_PATH)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines() if line]
    tmp = Path(tempfile.mkdtemp(prefix="bench-duplex-"))
    try:
        apps = tmp / "apps"
        for folder in sorted((ROOT / "apps").iterdir()):
            if (folder / "manifest.json").exists():
                shutil.copytree(folder, apps / folder.name)
        seed_workspace(apps / "files" / "workspace")
        raw = {"apps_dir": str(apps), "data_dir": str(tmp / "data"), "llm": {"api_key": ""}}
        with running_system(raw) as (system, _http):
            for text in MEMORIES:
                system.memory.add(text)
            kinds = Counter(str(r["expect"]) for r in rows)
            print(
                f"labelled drafts: {len(rows)} ({dict(kinds)}), apps: {len(system.launcher.apps())}"
            )
            preview, floor = latency(system.url, [r["text"] for r in rows], args.rounds)
            p50, p95 = statistics.median(preview), percentile(preview, 0.95)
            f50, f95 = statistics.median(floor), percentile(floor, 0.95)
            print(
                f"\ndraft -> preview over the WebSocket "
                f"({len(preview)} drafts, {args.rounds} rounds)"
            )
            print(
                f"  preview p50 {p50:.2f} ms  p95 {p95:.2f} ms"
                f"   (target p95 <= {TARGET_P95_MS:.0f} ms)"
            )
            print(f"  echo floor p50 {f50:.2f} ms  p95 {f95:.2f} ms  (an empty draft, same socket)")
            print(
                f"  preview work over the floor: p50 +{p50 - f50:.2f} ms, p95 +{p95 - f95:.2f} ms"
            )

            def engine(i: int, row: dict[str, Any]) -> Kind:
                d = system.duplex.decision_for(
                    row["text"],
                    row["lang"],
                    key=f"bench:{i}",
                    before=row.get("before"),
                    paused=row.get("paused", True),
                )
                return d.kind if d is not None else None

            print("\nthe interruption engine on the labelled drafts")
            ours = quality(rows, engine)
            report("engine", ours, show_misses=True)
            report("keywords", quality(rows, lambda _i, row: keyword_baseline(row)), False)
            false_rate = ours["false"] / max(1, ours["quiet_rows"])
            ok = p95 <= TARGET_P95_MS and false_rate <= TARGET_FALSE
            print(f"\ntargets {'met' if ok else 'NOT met'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
