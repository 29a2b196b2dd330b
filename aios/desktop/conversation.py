"""A session's conversation timeline (DESIGN §13 "Conversation panel").

The timeline is not stored on its own: it is merged, when asked for, from what
the session already keeps — its history (the user's turns, the system's and the
apps' replies), its runs and its interactions (approval and ask cards) — so it
survives a refresh and a restart and never disagrees with them.

Entries, oldest first, each ``{id, kind, ts, ...}``:

- ``user`` (``h<history id>``): ``text`` (typed or spoken; ``spoken`` when the
  history says so; ``via``: the MCP client that sent it), or ``open`` (an app
  opened) or ``action`` (a control used in ``app``'s window);
- ``reply`` (``h<history id>``): ``message``, ``apps`` (the app(s) that
  answered, empty for the system's own reply), ``status``, ``view_type``, ``run_id``
  (an app's reply: the run it ended); the system's answers to a system intent add
  ``intent`` and ``suggestions``; what the desktop said first (DESIGN §18) adds
  ``from: "desktop"``, ``about`` and ``quiet``;
- ``run`` (``r<run id>``): ``run_id``, ``run_kind``, ``app``, ``apps``,
  ``state``, ``text``, ``updated``, ``retryable`` (interrupted runs: the user may
  send them again). Open and action runs that simply finished are left out:
  their reply already says everything;
- ``interaction`` (``i<interaction id>``): ``interaction`` (the stored object,
  its ``state`` and, once answered, its ``answer``).

Order is by time, and on a tie by the order things happen in (a turn, its
run, the run's cards, the replies): by the time each was written, not by its
id, so a clock set back does not reorder what was said. A page is the
``limit`` entries before the entry ``before`` (the newest without it). The
history, which grows with every turn, is read newest first and only as far
as the page reaches (``page`` rows at a time); the runs and cards of the
session (at most RUNS_PAGE_MAX runs) are read whole and merged in.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from aios.errors import BadRequest
from aios.store import Store
from aios.store.runs import RUNS_PAGE_MAX, RunStore

TITLE_MAX_CHARS = 80
"""A session's title in the list: its first text, cut to this many characters."""
RETRYABLE = ("interrupted",)
"""Run states the panel offers to send again."""
QUIET_RUN_KINDS = ("open", "action")
"""Run kinds shown only when they did not simply finish (their reply says it all)."""
SQLITE_INT_MAX = 2**63 - 1
"""The largest id a history entry can have; a larger ``h<id>`` names none."""
_RANK = {"user": 0, "run": 1, "interaction": 2, "reply": 3}
"""Tie order of entries with the same time."""

Entry = dict[str, Any]


def sessions(store: Store, limit: int) -> list[dict[str, Any]]:
    """The sessions, most recently used first, each with a short title."""
    out = store.sessions_overview(limit)
    for s in out:
        title = s["title"]
        if isinstance(title, str) and len(title) > TITLE_MAX_CHARS:
            s["title"] = title[: TITLE_MAX_CHARS - 1] + "…"
    return out


def _history_entry(row: dict[str, Any]) -> Entry | None:
    content = row["content"] if isinstance(row["content"], dict) else {}
    base: Entry = {"id": f"h{row['id']}", "ts": row["ts"]}
    if row["role"] == "user":
        entry: Entry = {**base, "kind": "user"}
        if isinstance(content.get("text"), str):
            entry["text"] = content["text"]
            if content.get("spoken"):
                entry["spoken"] = True
            if isinstance(content.get("via"), str):
                entry["via"] = content["via"]  # an MCP client sent it (DESIGN §17)
        elif isinstance(content.get("open"), str):
            entry["open"] = content["open"]
        elif isinstance(content.get("action"), dict):
            entry["action"] = content["action"].get("action_id")
            entry["app"] = row.get("app")
        else:
            return None
        return entry
    app = row.get("app")
    reply: Entry = {
        **base,
        "kind": "reply",
        "message": content.get("message"),
        "apps": [app] if app else [],
        "status": content.get("status"),
        "view_type": content.get("view_type"),
    }
    if row["role"] == "desktop":  # the desktop spoke first (aios/duplex/thinker.py)
        reply["from"] = "desktop"
        reply["about"] = content.get("about")
        reply["quiet"] = bool(content.get("quiet"))
    # The controller's own answers (aios/control/intents.py) name their intent and offer
    # suggestions.
    if isinstance(content.get("intent"), str):
        reply["intent"] = content["intent"]
    if isinstance(content.get("suggestions"), list):
        reply["suggestions"] = content["suggestions"]
    if isinstance(content.get("run_id"), str):
        reply["run_id"] = content["run_id"]  # the run it ended: "why?" opens its trace
    return reply


def _run_entry(run: dict[str, Any], cards: set[str]) -> Entry | None:
    if run["kind"] in QUIET_RUN_KINDS and run["state"] == "done" and run["run_id"] not in cards:
        return None
    app = run.get("app") or ""
    return {
        "id": f"r{run['run_id']}",
        "kind": "run",
        "ts": run["created"],
        "run_id": run["run_id"],
        "run_kind": run["kind"],
        "app": app,
        "apps": [a for a in app.split(",") if a],
        "state": run["state"],
        "text": run.get("text"),
        "updated": run.get("updated"),
        "retryable": run["state"] in RETRYABLE,
    }


def _run_entries(runstore: RunStore, sid: str) -> list[Entry]:
    """The session's runs and cards as entries, oldest first."""
    interactions = runstore.interactions(session=sid)
    cards = {ia["run_id"] for ia in interactions}
    out: list[Entry] = []
    for run in runstore.runs(session=sid, limit=RUNS_PAGE_MAX):
        entry = _run_entry(run, cards)
        if entry is not None:
            out.append(entry)
    out.extend(
        {"id": f"i{ia['id']}", "kind": "interaction", "ts": ia["created"], "interaction": ia}
        for ia in interactions
    )
    out.sort(key=_key)
    return out


def _history_newest_first(
    store: Store, sid: str, first: int, page: int, upto: float | None
) -> Iterator[Entry]:
    """The session's history entries at or before time ``upto``, newest first (by
    :func:`_key`): ``first`` rows, then twice as many each read, up to ``page``. A read
    stops short of its oldest time, whose other rows may not have come yet: the next
    read starts at that time."""
    inclusive = True
    page = max(2, page)
    size = max(2, min(first, page))
    while True:
        rows = store.history_by_time(sid, upto=upto, inclusive=inclusive, limit=size)
        last = len(rows) < size
        size = min(page, size * 2)
        if not last:
            oldest = rows[-1]["ts"]
            if rows[0]["ts"] == oldest:  # a whole read at one time: all of that time, then on
                rows = store.history_at(sid, oldest)
                upto, inclusive = oldest, False
            else:
                rows = [r for r in rows if r["ts"] != oldest]
                upto, inclusive = oldest, True
        shown = [e for e in map(_history_entry, rows) if e is not None]
        yield from sorted(shown, key=_key, reverse=True)
        if last:
            return


def _cursor(store: Store, sid: str, others: list[Entry], before: str) -> tuple[float, int, str]:
    """The sort key of the entry ``before`` names; BadRequest when the session has none."""
    found: Entry | None = None
    if before.startswith("h") and before[1:].isdecimal() and int(before[1:]) <= SQLITE_INT_MAX:
        row = store.history_entry(sid, int(before[1:]))
        found = _history_entry(row) if row is not None else None
    else:
        found = next((e for e in others if e["id"] == before), None)
    if found is None:
        raise BadRequest(f"query parameter 'before': no entry {before!r} in session {sid!r}")
    return _key(found)


def timeline(
    store: Store,
    runstore: RunStore,
    sid: str,
    *,
    before: str | None,
    limit: int,
    page: int,
) -> dict[str, Any]:
    """One page: the ``limit`` entries before entry ``before`` (the newest when None),
    oldest first, with ``has_more`` and the ``next_before`` that fetches older ones."""
    others = _run_entries(runstore, sid)
    cursor = _cursor(store, sid, others, before) if before is not None else None
    # a page of ``limit`` entries: about as many rows, unless runs and cards are among them
    upto = cursor[0] if cursor else None
    history = _history_newest_first(store, sid, limit + 2, page, upto)
    newest_first = heapq.merge(history, reversed(others), key=_key, reverse=True)
    shown: list[Entry] = []
    for entry in newest_first:
        if cursor is not None and _key(entry) >= cursor:
            continue  # the entry ``before`` itself, and those after it at the same time
        shown.append(entry)
        if len(shown) > limit:
            break
    more = len(shown) > limit
    shown = shown[:limit][::-1]
    return {
        "session_id": sid,
        "entries": shown,
        "has_more": more,
        "next_before": shown[0]["id"] if more and shown else None,
    }


def _key(entry: Entry) -> tuple[float, int, str]:
    return (float(entry["ts"]), _RANK[entry["kind"]], entry["id"])
