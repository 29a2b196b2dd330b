"""A session's topic tree (DESIGN §18 "Topics"; the rules are :mod:`aios.control.topics`).

One row per topic: ``id``, ``session_id``, ``parent`` (the root topic of a sub-topic,
NULL for a root), ``app``, ``label`` (and ``labelled_by``: ``rules`` or ``llm``),
``state`` (``active`` | ``paused`` | ``archived``), ``terms`` (its key terms with their
weights, JSON), ``turns`` (the history ids of its turns, JSON), ``view`` (the history id
of the app's reply it last showed), ``instance`` (the window instance it was in),
``started`` and ``updated``. The rules load a session's topics, change them and write
back the ones they changed in one transaction (:meth:`TopicTables.save_topics`). The
table is made at start with the others (``aios.store.db.SCHEMA``): a database from before
topics gains it then.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from aios.store.db import Database

TOPIC_STATES = ("active", "paused", "archived")

_COLUMNS = (
    "id",
    "session_id",
    "parent",
    "app",
    "label",
    "labelled_by",
    "state",
    "terms",
    "turns",
    "view",
    "instance",
    "started",
    "updated",
)
_JSON = ("terms", "turns")


def _row(r: Any) -> dict[str, Any]:
    d = dict(r)
    for key in _JSON:
        d[key] = json.loads(d[key])
    return d


class TopicTables(Database):
    """``topics``."""

    def topics(self, session_id: str) -> list[dict[str, Any]]:
        """The session's topics, oldest first."""
        rows = self._query(
            "SELECT * FROM topics WHERE session_id=? ORDER BY started, id", (session_id,)
        )
        return [_row(r) for r in rows]

    def save_topics(self, changed: list[dict[str, Any]], removed: Sequence[str] = ()) -> None:
        """Write ``changed`` topics (whole rows) and delete ``removed`` ids, in one
        transaction."""
        with self._tx() as db:
            db.executemany(
                f"INSERT OR REPLACE INTO topics ({', '.join(_COLUMNS)})"
                f" VALUES ({', '.join('?' * len(_COLUMNS))})",
                [
                    tuple(
                        json.dumps(t[c], ensure_ascii=False) if c in _JSON else t.get(c)
                        for c in _COLUMNS
                    )
                    for t in changed
                ],
            )
            db.executemany("DELETE FROM topics WHERE id=?", [(i,) for i in removed])

    def prune_topics(self, cut: float) -> int:
        """Delete the topics untouched since ``cut`` (the history they point at is gone)."""
        with self._tx() as db:
            return db.execute("DELETE FROM topics WHERE updated<?", (cut,)).rowcount
