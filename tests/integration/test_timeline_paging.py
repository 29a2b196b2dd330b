"""The conversation timeline read page by page from a real SQLite store (issue 27: a page
reads only the history it shows, newest first, not the whole session).

The order the panel shows is by the time each entry was written, then a turn before its
run, its cards and its replies: these tests write a session whose clock goes backwards,
whose entries share times across the store's read size, and with runs among the turns,
and walk it with ``before`` against the order of the whole session sorted at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aios.desktop import conversation
from aios.errors import BadRequest
from aios.store import Store
from aios.store.runs import RunStore
from tests.util import ManualClock

RANK = {"user": 0, "run": 1, "interaction": 2, "reply": 3}


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Store, RunStore, ManualClock]:
    clock = ManualClock()
    store = Store(tmp_path / "aios.db", clock=clock)
    return store, RunStore(store), clock


def write_session(store: Store, runs: RunStore, clock: ManualClock, sid: str) -> None:
    """Turns a second apart, then the clock set back an hour, then a burst at one time."""
    store.ensure_session(sid)
    for i in range(12):
        clock.now += 1
        store.add_history(sid, "user", {"text": f"turn {i}"})
        if i % 4 == 0:
            runs.create_run(
                f"run_{sid}_{i}", session_id=sid, app="echo", kind="instruction", text="x"
            )
        store.add_history(sid, "app", {"message": f"reply {i}", "status": "ok"}, app="echo")
    clock.now -= 3600  # the clock went back: these were said last but are older by time
    for i in range(5):
        clock.now += 1
        store.add_history(sid, "user", {"text": f"after the clock change {i}"})
    for i in range(7):  # more entries at one time than one read of the store
        store.add_history(sid, "app", {"message": f"burst {i}", "status": "ok"}, app="echo")
    store.add_history(sid, "user", {"not": "a turn the panel shows"})


def whole_session(store: Store, runs: RunStore, sid: str) -> list[str]:
    """Every entry's id in the panel's order, from everything the session holds."""
    entries: list[tuple[float, int, str]] = []
    for row in store.history_page(sid, limit=10_000)[0]:
        content = row["content"]
        if row["role"] == "user" and "text" not in content:
            continue
        kind = "user" if row["role"] == "user" else "reply"
        entries.append((row["ts"], RANK[kind], f"h{row['id']}"))
    for run in runs.runs(session=sid, limit=100):
        entries.append((run["created"], RANK["run"], f"r{run['run_id']}"))
    return [e[2] for e in sorted(entries)]


def walk(store: Store, runs: RunStore, sid: str, limit: int, page: int) -> list[str]:
    shown: list[str] = []
    before: str | None = None
    for _ in range(100):
        got: dict[str, Any] = conversation.timeline(
            store, runs, sid, before=before, limit=limit, page=page
        )
        assert len(got["entries"]) <= limit
        shown[:0] = [e["id"] for e in got["entries"]]
        if not got["has_more"]:
            return shown
        before = got["next_before"]
    raise AssertionError("the pages never ended")


@pytest.mark.parametrize(("limit", "page"), [(4, 3), (5, 2), (50, 3), (1, 100), (7, 7)])
def test_pages_walk_the_whole_session_in_time_order(
    stores: tuple[Store, RunStore, ManualClock], limit: int, page: int
) -> None:
    store, runs, clock = stores
    write_session(store, runs, clock, "s1")
    write_session(store, runs, clock, "s2")  # another session's entries are not shown
    expected = whole_session(store, runs, "s1")
    assert walk(store, runs, "s1", limit, page) == expected
    # what was said after the clock went back is older by time: the session starts with it
    ids = walk(store, runs, "s1", limit, page)
    first = store.history_entry("s1", int(ids[0][1:]))
    assert first is not None and first["content"] == {"text": "after the clock change 0"}


def test_the_newest_page_is_the_end_of_the_session(
    stores: tuple[Store, RunStore, ManualClock],
) -> None:
    store, runs, clock = stores
    write_session(store, runs, clock, "s1")
    expected = whole_session(store, runs, "s1")
    got = conversation.timeline(store, runs, "s1", before=None, limit=6, page=3)
    assert [e["id"] for e in got["entries"]] == expected[-6:]
    assert got["has_more"] and got["next_before"] == expected[-6]
    texts = [e.get("text") or e.get("message") for e in got["entries"]]
    assert "turn 11" in texts[-1] or "reply 11" in texts[-1]


def test_an_unknown_before_is_a_bad_request(stores: tuple[Store, RunStore, ManualClock]) -> None:
    store, runs, clock = stores
    write_session(store, runs, clock, "s1")
    write_session(store, runs, clock, "s2")
    other = store.history_page("s2", limit=1)[0][0]["id"]
    for before in ("h999999", f"h{other}", "h" + "9" * 30, "h", "h-1", "rnope", "i12345", "x"):
        with pytest.raises(BadRequest, match="no entry"):
            conversation.timeline(store, runs, "s1", before=before, limit=5, page=3)
