"""Nothing an app does exhausts the system (DESIGN §14.6, issue 20 item 6).

Each attack of the issue is made with an app's own token against the real
system (the real HTTP server on 127.0.0.1, real SQLite, real app processes),
exactly as the issue describes it, with a positive control beside it: normal
use stays far under every quota and works. Where memory is the point, the
system process's resident size is measured with psutil and its peak with
``getrusage`` (the system runs in this process).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import requests

from tests.integration.conftest import Running
from tests.util import wait_for

MB = 1024 * 1024
MEMORY_SLACK = 150 * MB
"""How much the system process may grow during an attack that the quotas refuse. The
attacks would hold 600 MB (300 pushes of 2 MB) to 1.2 GB (three 400 MB blobs). What a
refused attack leaves is the allocator's: alone, the pushes raise the peak by about
45 MB; in a worker that ran other tests first (more threads, so more malloc arenas, and
glibc's mmap threshold raised by freed 2 MB blocks) a full run measured 106 MB."""


def as_app(running: Running, app: str, path: str, body: Any) -> requests.Response:
    """Call the app-facing API with the app's own token, as its SDK does."""
    record = running.system.launcher.get(app)
    assert record is not None and record.token
    # one call per connection: the server does not keep a thread for a connection its
    # client keeps (a Response kept by the test holds the socket open)
    return requests.post(
        running.url + path,
        json=body,
        timeout=60,
        headers={"Authorization": f"Bearer {record.token}", "Connection": "close"},
    )


def tool(running: Running, app: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    r = as_app(running, app, "/api/sys/tool", {"tool": name, "args": args})
    assert r.headers["Content-Type"].startswith("application/json"), r.text[:200]
    out: dict[str, Any] = r.json()
    return out


def pending(running: Running) -> list[dict[str, Any]]:
    r = running.get("/api/interactions?pending=1")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()
    return found


def quotas_of(running: Running, app: str) -> dict[str, dict[str, Any]]:
    apps = running.get("/api/apps").json()
    found: dict[str, dict[str, Any]] = next(a for a in apps if a["id"] == app)["quotas"]
    return found


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def peak_rss() -> int:
    """The process's high-water mark of resident memory, in bytes (Linux gives KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def assert_no_growth(before_rss: int, before_peak: int) -> None:
    """The peak never went past where it was, or past the start plus the slack."""
    after = peak_rss()
    assert after <= max(before_peak, before_rss + MEMORY_SLACK), (
        f"system peaked at {after // MB} MB (started at {before_rss // MB} MB)"
    )
    assert rss() <= before_rss + MEMORY_SLACK


# ------------------------------------------------------------------ db_query


def test_a_db_query_of_three_400mb_blobs_is_refused_by_sqlite_before_it_is_built(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"])
    # positive control: a normal query, and a value of a few hundred KB, work
    ok = tool(running, "echo", "db_query", {"dsn": ":memory:", "sql": "SELECT 1 + 1"})
    assert ok["status"] == "ok" and ok["result"]["rows"] == [[2]]
    small = tool(
        running, "echo", "db_query", {"dsn": ":memory:", "sql": "SELECT length(randomblob(300000))"}
    )
    assert small["status"] == "ok" and small["result"]["rows"] == [[300000]]
    # a file database in the workdir: a table, rows in and out
    for sql, params in (
        ("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", []),
        ("INSERT INTO notes (body) VALUES (?)", ["x" * 200_000]),
    ):
        r = tool(running, "echo", "db_query", {"dsn": "n.db", "sql": sql, "params": params})
        assert r["status"] == "ok", r
    r = tool(running, "echo", "db_query", {"dsn": "n.db", "sql": "SELECT length(body) FROM notes"})
    assert r["result"]["rows"] == [[200_000]]

    before, peak = rss(), peak_rss()
    sql = "SELECT randomblob(400000000), randomblob(400000000), randomblob(400000000)"
    r = tool(running, "echo", "db_query", {"dsn": ":memory:", "sql": sql})
    assert r["status"] == "error", r
    assert "db_value_bytes" in r["error"] and "quota" in r["error"], r
    assert_no_growth(before, peak)


def test_db_query_variants_stay_under_the_caps(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"])
    before, peak = rss(), peak_rss()
    cases = [
        # a value built by zeroblob, a recursive group_concat
        "SELECT zeroblob(400000000)",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) "
        "SELECT length(group_concat(randomblob(900000))) FROM n",
        # many columns of values just under the value cap
        "SELECT " + ", ".join("randomblob(900000)" for _ in range(100)),
    ]
    for sql in cases:
        r = tool(running, "echo", "db_query", {"dsn": ":memory:", "sql": sql})
        assert r["status"] == "error" and "quota" in r["error"], (sql[:60], r)
    # printf stops at the cap (SQLite gives NULL, not the value)
    r = tool(
        running,
        "echo",
        "db_query",
        {"dsn": ":memory:", "sql": "SELECT length(printf('%.*c', 300000000, 'x'))"},
    )
    assert r["status"] == "ok" and r["result"]["rows"] == [[None]], r
    # rows of many values under the value cap: SQLite's memory is watched while they are built
    sql = "SELECT " + ", ".join("randomblob(990000)" for _ in range(64))
    r = tool(running, "echo", "db_query", {"dsn": ":memory:", "sql": sql})
    assert r["status"] == "error" and "db_memory_bytes" in r["error"], r
    # an app cannot lift the cap from SQL
    r = tool(
        running,
        "echo",
        "db_query",
        {"dsn": ":memory:", "sql": "PRAGMA max_page_count = 1000000000"},
    )
    assert r["status"] == "error" and "max_page_count" in r["error"], r
    # a :memory: database cannot hold more than the cap either
    grow = (
        "CREATE TABLE t AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
        "WHERE i < 400) SELECT randomblob(900000) AS b FROM n"
    )
    r = tool(running, "echo", "db_query", {"dsn": ":memory:", "sql": grow})
    assert r["status"] == "error" and "quota" in r["error"], r
    assert_no_growth(before, peak)
    assert "db_value_bytes" in quotas_of(running, "echo")


# --------------------------------------------------------------------- pushes


def test_300_pushes_of_2mb_are_refused_past_the_push_quota(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"])
    # positive control: a progress push and a small data push arrive
    sub = running.system.bus.subscribe()
    small = as_app(running, "echo", "/api/sys/push", {"progress": 0.5, "text": "half"})
    assert small.status_code == 200, small.text
    ev = wait_for(lambda: sub.get(timeout=1), "the small push")
    assert ev["type"] == "push" and ev["data"]["text"] == "half"
    sub.close()

    before, peak = rss(), peak_rss()
    blob = {"blob": "x" * 1_990_000}
    codes: dict[int, int] = {}
    refusal = ""
    for _ in range(300):
        r = as_app(running, "echo", "/api/sys/push", blob)
        codes[r.status_code] = codes.get(r.status_code, 0) + 1
        if r.status_code == 429:
            refusal = r.json()["error"]
            assert r.json()["quota"] == "push_bytes"
    assert codes.get(429, 0) >= 280, codes
    assert "push_bytes" in refusal
    held = running.system.bus.held_bytes()
    assert held <= running.system.config.events.replay_bytes
    assert_no_growth(before, peak)
    q = quotas_of(running, "echo")["push_bytes"]
    assert q["used"] <= q["limit"] and q["refused"] >= 280


def test_pushes_faster_than_the_rate_are_refused(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"], quotas={"pushes_per_minute": 20})
    codes = [as_app(running, "echo", "/api/sys/push", {"n": i}).status_code for i in range(30)]
    assert codes[:20] == [200] * 20 and set(codes[20:]) == {429}, codes
    r = as_app(running, "echo", "/api/sys/push", {"n": 99})
    assert r.json()["quota"] == "push_rate" and "push_rate" in r.json()["error"]


def test_the_replay_buffer_is_bounded_by_bytes_whatever_emits() -> None:
    from aios.config import EventsConfig
    from aios.events import EventBus

    bus = EventBus(EventsConfig(replay_bytes=5 * MB))
    for i in range(40):
        bus.emit("push", {"app": f"a{i}", "data": {"blob": "y" * MB}})
    assert bus.held_bytes() <= 5 * MB
    assert 1 <= bus.held() <= 5
    # the newest event is always held, even one larger than the bound
    bus.emit("push", {"app": "big", "data": {"blob": "z" * 6 * MB}})
    assert bus.held() == 1
    sub = bus.subscribe(since=bus.seq - 1)
    got = sub.get(timeout=1)
    assert got is not None and got["app"] == "big"


# -------------------------------------------------------- cards and waiting calls


def test_300_synchronous_calls_from_one_app_hold_at_most_8_cards(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo", "stepper"], approvals={"mode": "smart"})
    threads_before = threading.active_count()
    call = {"tool": "shell_exec", "args": {"cmd": "echo hi"}}
    with ThreadPoolExecutor(max_workers=40) as pool:
        # one session each (calls of one session share a run, whose end withdraws the rest)
        futures = [
            pool.submit(as_app, running, "echo", "/api/sys/tool", {**call, "session_id": f"s{i}"})
            for i in range(300)
        ]
        # the refusals come back at once, while 8 calls wait for the user
        wait_for(
            lambda: sum(1 for f in futures if f.done()) >= 292, "the refusals beyond the quota"
        )
        wait_for(lambda: len(pending(running)) >= 8, "8 pending cards")
        cards = pending(running)
        assert len([p for p in cards if p["app"] == "echo"]) == 8
        refused = [f.result() for f in futures if f.done()]
        assert len(refused) == 292
        body = refused[0].json()
        assert refused[0].status_code == 429 and body["quota"] in ("pending_cards", "waiting_calls")
        assert "quota" in body["error"] and "echo" in body["error"]
        # no thread is kept for a refused call
        assert threading.active_count() <= threads_before + 8 + 40 + 4
        q = quotas_of(running, "echo")
        assert q["pending_cards"]["used"] == 8 and q["pending_cards"]["limit"] == 8
        # another app still gets its card: echo's quota is echo's (positive control)
        other = pool.submit(
            as_app, running, "stepper", "/api/sys/tool", {**call, "session_id": "s_other"}
        )
        wait_for(lambda: any(p["app"] == "stepper" for p in pending(running)), "stepper's card")
        # the user answers: the waiting calls finish
        for p in pending(running):
            answered = running.post(f"/api/interactions/{p['id']}", {"decision": "deny"})
            assert answered.ok, answered.text
        results = [f.result() for f in futures]
        assert other.result().status_code == 200
    assert sum(1 for r in results if r.status_code == 200) == 8
    assert quotas_of(running, "echo")["pending_cards"]["used"] == 0


# ---------------------------------------------------------------------- cache


def test_200_cache_sets_stay_under_the_cache_quota_and_removal_cleans(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo", "stepper"], approvals={"mode": "smart"})
    db = running.data_dir / "aios.db"
    # positive control: normal cache use works
    assert tool(running, "echo", "cache_set", {"key": "k", "value": {"a": 1}})["status"] == "ok"
    assert tool(running, "echo", "cache_get", {"key": "k"})["result"] == {"a": 1}
    assert tool(running, "stepper", "cache_set", {"key": "k", "value": 2})["status"] == "ok"

    value = "v" * 900_000
    statuses = []
    for i in range(200):
        r = tool(running, "echo", "cache_set", {"key": f"big{i}", "value": value})
        statuses.append(r["status"])
        if r["status"] != "ok":
            assert "cache_bytes" in r["error"] and "quota" in r["error"], r
    limit = running.system.config.quotas.cache_bytes
    assert statuses.count("ok") <= limit // 900_000 + 1
    q = quotas_of(running, "echo")["cache_bytes"]
    assert q["used"] <= q["limit"] == limit
    size = sum(p.stat().st_size for p in db.parent.glob("aios.db*"))
    assert size < limit + 60 * MB, size // MB

    # keys: many tiny values
    running.system.config.quotas.cache_keys = 50  # type: ignore[misc]
    keys = [
        tool(running, "echo", "cache_set", {"key": f"tiny{i}", "value": i})["status"]
        for i in range(60)
    ]
    assert "denied" in keys or "error" in keys
    assert quotas_of(running, "echo")["cache_keys"]["used"] <= 50

    # a pending card of the app, and an audit row
    sid = "s_rm"
    call = {"tool": "shell_exec", "args": {"cmd": "echo hi"}, "session_id": sid}
    with ThreadPoolExecutor(max_workers=1) as pool:
        waiting = pool.submit(as_app, running, "echo", "/api/sys/tool", call)
        wait_for(lambda: pending(running), "echo's card")
        # the app is removed: its folder goes
        shutil.rmtree(running.apps_dir / "echo")
        wait_for(lambda: running.system.launcher.get("echo") is None, "echo unloaded")
        wait_for(lambda: not pending(running), "echo's card withdrawn")
        waiting.result(timeout=30)
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT COUNT(*) FROM cache WHERE namespace='echo'").fetchone() == (0,)
        assert con.execute("SELECT COUNT(*) FROM grants WHERE app='echo'").fetchone() == (0,)
        assert con.execute("SELECT COUNT(*) FROM cache WHERE namespace='stepper'").fetchone()[0]
        assert con.execute("SELECT COUNT(*) FROM tool_calls_log WHERE app='echo'").fetchone()[0]
    finally:
        con.close()


# ------------------------------------------------------------------ workspace


def test_writes_past_the_workspace_quota_are_refused_and_reported(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], quotas={"workspace_bytes": 5 * MB})
    # positive control: a small file is written
    assert tool(running, "echo", "file_write", {"path": "a.txt", "content": "hi"})["status"] == "ok"
    chunk = "w" * (1_500_000)
    statuses = [
        tool(running, "echo", "file_write", {"path": f"f{i}.txt", "content": chunk})
        for i in range(6)
    ]
    ok = [s for s in statuses if s["status"] == "ok"]
    refused = [s for s in statuses if s["status"] != "ok"]
    assert len(ok) == 3 and refused, statuses
    assert "workspace_bytes" in refused[0]["error"] and "quota" in refused[0]["error"]
    q = quotas_of(running, "echo")["workspace_bytes"]
    assert q["limit"] == 5 * MB and q["used"] <= 5 * MB

    # the app writes into its workdir itself (its own process): the system notices
    rec = running.system.launcher.get("echo")
    assert rec is not None and rec.workdir is not None
    (Path(rec.workdir) / "own.bin").write_bytes(os.urandom(3 * MB))
    over = wait_for(
        lambda: (q := quotas_of(running, "echo")["workspace_bytes"])["over"] and q,
        "the app marked over its workspace quota",
    )
    assert over["used"] > 5 * MB
    r = tool(running, "echo", "file_write", {"path": "b.txt", "content": "x"})
    assert r["status"] != "ok" and "workspace_bytes" in r["error"]
    r = tool(running, "echo", "shell_exec", {"cmd": "echo hi"})
    assert r["status"] != "ok" and "workspace_bytes" in r["error"]
    # a database in the workdir cannot grow either (SQLite's page cap), but can be read
    r = tool(running, "echo", "db_query", {"dsn": "d.db", "sql": "CREATE TABLE t (x)"})
    assert r["status"] != "ok" and "workspace_bytes" in r["error"], r
    r = tool(running, "echo", "db_query", {"dsn": "d.db", "sql": "SELECT 1"})
    assert r["status"] == "ok", r
    # reading still works, and deleting brings it back under
    assert tool(running, "echo", "file_read", {"path": "a.txt"})["status"] == "ok"
    (Path(rec.workdir) / "own.bin").unlink()
    wait_for(
        lambda: (
            tool(running, "echo", "file_write", {"path": "b.txt", "content": "x"})["status"] == "ok"
        ),
        "writes allowed again once under the quota",
    )
    assert json.dumps(q)  # reported as JSON
