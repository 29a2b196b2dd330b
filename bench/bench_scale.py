"""How the conversation timeline and the audit query grow with the store (issue 27, "how
each grows").

    python bench/bench_scale.py [--repeats 30] [--http-repeats 30]

Real SQLite stores (:class:`aios.store.Store` and :class:`aios.store.runs.RunStore`, the
desktop's own schema and indexes, in a temp data dir), filled in bulk with
``executemany`` on the store's own connection (the insert path is not what is measured):

- **history**: one session grown 1k → 10k → 100k entries (turns and replies, as the
  desktop writes them), and beside it 100k entries spread over 100 sessions of 1k;
  measured: :func:`aios.desktop.conversation.timeline` (what ``GET
  /api/sessions/<sid>/timeline`` returns), its first page and a deep page (``before`` an
  entry in the middle), called in-process; and at 100k once over real HTTP through a
  real desktop (no apps installed);
- **audit**: ``tool_calls_log`` grown 10k → 100k → 1M rows over 20 apps and 12 tools;
  measured: :meth:`Store.audit_rows` as ``GET /api/audit`` calls it (the newest page,
  by app, by a rare app, by session) and, since the API has no tool filter, the same
  query by tool in SQL.

Each figure is p50 / p95 over ``--repeats`` calls, beside a floor measured in the same
run at the same size (the same number of rows read by ``SELECT … ORDER BY id DESC
LIMIT`` on the primary key) and its ratio to the smallest size.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aios.desktop import conversation  # noqa: E402
from aios.store import Store  # noqa: E402
from aios.store.runs import RunStore  # noqa: E402

HISTORY_SIZES = (1_000, 10_000, 100_000)
AUDIT_SIZES = (10_000, 100_000, 1_000_000)
SPREAD_SESSIONS = 100
TIMELINE_PAGE = 50  # aios.web.conversation_api.TIMELINE_PAGE
READ_PAGE = 1000  # store.history_page_max: the history rows per read the API passes
AUDIT_PAGE = 200  # aios.web.desktop_api.AUDIT_PAGE
APPS = [f"app{i:02d}" for i in range(20)]
TOOLS = [f"tool_{i}" for i in range(12)]
RARE_APP = "rare_app"  # one row in 1000
SID = "sess_big"
BATCH = 50_000
T0 = time.time() - 2_000_000
"""Rows are one a second from 23 days ago: inside the default retention (30 and 90 days)."""


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """p50 and p95 of ``fn``'s wall time in ms over ``repeats`` calls (one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def history_rows(sid: str, start: int, n: int, t0: float) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(start, start + n):
        if i % 2 == 0:
            role, app, content = "user", None, {"text": f"instruction number {i}"}
        else:
            role, app = "app", APPS[i % len(APPS)]
            content = {"message": f"done {i}", "status": "ok", "view_type": "card"}
        rows.append((sid, t0 + i, role, app, json.dumps(content)))
    return rows


def add_history(store: Store, sid: str, start: int, n: int) -> None:
    store.ensure_session(sid)
    with store._tx() as db:
        for k in range(start, start + n, BATCH):
            db.executemany(
                "INSERT INTO history (session_id, ts, role, app, content) VALUES (?,?,?,?,?)",
                history_rows(sid, k, min(BATCH, start + n - k), T0),
            )


def add_audit(store: Store, start: int, n: int) -> None:
    def rows(k: int, m: int) -> list[tuple[Any, ...]]:
        out = []
        for i in range(k, k + m):
            app = RARE_APP if i % 1000 == 7 else APPS[i % len(APPS)]
            out.append(
                (
                    T0 + i,
                    f"sess_{i // 500:06d}",
                    app,
                    f"s{i % 7}",
                    TOOLS[i % len(TOOLS)],
                    '{"q": "x"}',
                    "ok" if i % 13 else "error",
                    1.5,
                    None,
                    f"run_{i}",
                    "low",
                    None,
                )
            )
        return out

    with store._tx() as db:
        for k in range(start, start + n, BATCH):
            db.executemany(
                "INSERT INTO tool_calls_log (ts, session_id, app, step_id, tool, args, status,"
                " duration_ms, error, run_id, risk, decision) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                rows(k, min(BATCH, start + n - k)),
            )
    with store._tx() as db:
        db.execute("ANALYZE")


def floor_rows(store: Store, table: str, n: int) -> Callable[[], Any]:
    return lambda: store._query(f"SELECT * FROM {table} ORDER BY id DESC LIMIT ?", (n,))


def row(label: str, size: int, p: tuple[float, float], base: dict[str, float]) -> str:
    first = base.setdefault(label, p[0])
    return f"  {label:<34} {size:>9,} {p[0]:>9.2f} {p[1]:>9.2f} {p[0] / first:>8.1f}×"


HEADER = f"  {'query':<34} {'rows':>9} {'p50 ms':>9} {'p95 ms':>9} {'growth':>9}"


def bench_history(data: Path, repeats: int) -> Store:
    store = Store(data / "aios.db")
    runs = RunStore(store)
    base: dict[str, float] = {}
    print("timeline (aios.desktop.conversation.timeline, in-process), one session:")
    print(HEADER)
    have = 0
    for size in HISTORY_SIZES:
        t0 = time.perf_counter()
        add_history(store, SID, have, size - have)
        have = size
        built = time.perf_counter() - t0
        mid = f"h{store.last_history_id() - size // 2}"
        first = timed(
            lambda: conversation.timeline(
                store, runs, SID, before=None, limit=TIMELINE_PAGE, page=READ_PAGE
            ),
            repeats,
        )
        deep = timed(
            lambda m=mid: conversation.timeline(
                store, runs, SID, before=m, limit=TIMELINE_PAGE, page=READ_PAGE
            ),
            repeats,
        )
        floor = timed(floor_rows(store, "history", TIMELINE_PAGE), repeats)
        print(row("first page", size, first, base))
        print(row("deep page (before the middle)", size, deep, base))
        print(row("floor: 50 rows by id", size, floor, base) + f"   (built in {built:.1f} s)")
    # The same 100k rows spread over sessions: a page costs its session, not the table.
    for s in range(SPREAD_SESSIONS - 1):
        add_history(store, f"sess_{s:03d}", s * 1000, 1000)
    spread = timed(
        lambda: conversation.timeline(
            store, runs, "sess_000", before=None, limit=TIMELINE_PAGE, page=READ_PAGE
        ),
        repeats,
    )
    total = store._query("SELECT COUNT(*) FROM history")[0][0]
    print(
        f"  first page of a 1k-entry session in a {total:,}-row table:"
        f" p50 {spread[0]:.2f} / p95 {spread[1]:.2f} ms"
    )
    return store


def bench_audit(store: Store, repeats: int) -> None:
    base: dict[str, float] = {}
    print("\naudit (Store.audit_rows as GET /api/audit calls it, 200 rows):")
    print(HEADER)
    have = 0
    for size in AUDIT_SIZES:
        t0 = time.perf_counter()
        add_audit(store, have, size - have)
        have = size
        built = time.perf_counter() - t0
        cases: list[tuple[str, Callable[[], Any]]] = [
            ("newest page", lambda: store.audit_rows(limit=AUDIT_PAGE)),
            ("by app (1 in 20)", lambda: store.audit_rows(app=APPS[3], limit=AUDIT_PAGE)),
            ("by rare app (1 in 1000)", lambda: store.audit_rows(app=RARE_APP, limit=AUDIT_PAGE)),
            ("by session", lambda: store.audit_rows(session_id="sess_000003", limit=AUDIT_PAGE)),
            (
                "by tool (SQL; no API filter)",
                lambda: store._query(
                    "SELECT * FROM tool_calls_log WHERE tool=? ORDER BY id DESC LIMIT ?",
                    (TOOLS[5], AUDIT_PAGE),
                ),
            ),
            ("floor: 200 rows by id", floor_rows(store, "tool_calls_log", AUDIT_PAGE)),
        ]
        for label, fn in cases:
            print(row(label, size, timed(fn, repeats), base))
        print(f"  (grown to {size:,} rows in {built:.1f} s)")


def bench_http(data: Path, repeats: int) -> None:
    from bench.running import running_system

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise

    apps = data / "apps"
    apps.mkdir()
    raw = {
        "apps_dir": str(apps),
        "data_dir": str(data),
        "llm": {"api_key": ""},
        # The pruner runs at start: let it keep everything the bench built.
        "retention": {
            "history_rows_per_session": 1_000_000,
            "audit_rows": 2_000_000,
            "history_days": 3650,
            "audit_days": 3650,
        },
    }
    with running_system(raw) as (system, http):
        url = f"http://127.0.0.1:{system.port}/api"
        mid = f"h{HISTORY_SIZES[-1] // 2}"  # the big session's ids are the first 100k

        def get(path: str) -> None:
            r = http.get(url + path, timeout=60)
            r.raise_for_status()

        cases = [
            ("timeline first page, 100k session", f"/sessions/{SID}/timeline"),
            ("timeline deep page, 100k session", f"/sessions/{SID}/timeline?before={mid}"),
            ("audit newest page, 1M rows", "/audit"),
            ("audit by app, 1M rows", f"/audit?app={APPS[3]}"),
            ("floor: GET /api/health", "/health"),
        ]
        # The pruner runs at start: a page that came back short would time an empty store.
        page = http.get(f"{url}/sessions/{SID}/timeline?before={mid}", timeout=60).json()
        audit = http.get(f"{url}/audit", timeout=60).json()
        if len(page["entries"]) != TIMELINE_PAGE or len(audit) != AUDIT_PAGE:
            raise SystemExit("the desktop's store lost rows at start: the figures would be void")
        print("\nover real HTTP (a real desktop, no apps; p50 / p95 ms):")
        for label, path in cases:
            p = timed(lambda pa=path: get(pa), repeats)
            print(f"  {label:<36} {p[0]:>9.2f} {p[1]:>9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--http-repeats", type=int, default=30)
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        data = Path(tmp)
        store = bench_history(data, args.repeats)
        bench_audit(store, args.repeats)
        store.close()
        bench_http(data, args.http_repeats)
    print(
        f"\nload average at end: {os.getloadavg()[0]:.2f}; total {time.perf_counter() - t0:.0f} s"
    )


if __name__ == "__main__":
    main()
