"""Reminders and automations, kept in the system database (DESIGN §18; the scheduler is
:mod:`aios.duplex.automations`).

One row per automation: what it does (``kind`` ``reminder``: the desktop says ``what``;
``run``: ``what`` is run as an instruction), when (``at``, a one-off time, or ``cron``)
and its markers: ``next_due`` (the next time it is due, NULL once a one-off is spent)
and ``last_due`` (the due time last taken). Taking a due time is one compare-and-set
(:meth:`AutomationStore.take`): the row moves on only if it still shows the due time
the scheduler read and that time is later than ``last_due``, so a due time is run (or
reported missed) once, across threads and restarts.
"""

from __future__ import annotations

from typing import Any

from aios.errors import NotFound
from aios.store import Store

KINDS = ("reminder", "run")
OUTCOMES = ("done", "failed", "waiting", "missed", "said", "cancelled", "interrupted")
"""``last_state``: what the last due time led to."""
EDITABLE = ("what", "at", "cron", "paused", "next_due")

SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS automations (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        what TEXT NOT NULL,
        said TEXT,
        locale TEXT,
        at REAL,
        cron TEXT,
        paused INTEGER NOT NULL DEFAULT 0,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        next_due REAL,
        last_due REAL,
        last_run_id TEXT,
        last_state TEXT,
        runs INTEGER NOT NULL DEFAULT 0,
        missed INTEGER NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX IF NOT EXISTS automations_due ON automations (paused, next_due)",
    "CREATE INDEX IF NOT EXISTS automations_session ON automations (session_id, created)",
)


def _row(r: Any) -> dict[str, Any]:
    d = dict(r)
    d["paused"] = bool(d["paused"])
    return d


class AutomationStore:
    """The ``automations`` table over ``store`` (its pool, clock and error mapping)."""

    def __init__(self, store: Store):
        self.store = store
        with store._tx() as db:
            for statement in SCHEMA:
                db.execute(statement)

    def create(self, row: dict[str, Any]) -> dict[str, Any]:
        """A new automation (``id``, ``session_id``, ``kind``, ``what``, ``at`` or ``cron``,
        ``next_due``; ``said`` and ``locale`` optional)."""
        if row["kind"] not in KINDS:
            raise ValueError(f"unknown automation kind {row['kind']!r}")
        now = self.store.clock()
        with self.store._tx() as db:
            db.execute(
                "INSERT INTO automations (id, session_id, kind, what, said, locale, at, cron,"
                " created, updated, next_due) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    row["id"],
                    row["session_id"],
                    row["kind"],
                    row["what"],
                    row.get("said"),
                    row.get("locale"),
                    row.get("at"),
                    row.get("cron"),
                    now,
                    now,
                    row["next_due"],
                ),
            )
        return self.get(row["id"])

    def get(self, automation_id: str) -> dict[str, Any]:
        rows = self.store._query("SELECT * FROM automations WHERE id=?", (automation_id,))
        if not rows:
            raise NotFound(f"no automation {automation_id!r}")
        return _row(rows[0])

    def all(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Every automation (of ``session_id``), the next due first, spent ones last."""
        sql = "SELECT * FROM automations"
        params: tuple[Any, ...] = ()
        if session_id is not None:
            sql, params = sql + " WHERE session_id=?", (session_id,)
        sql += " ORDER BY next_due IS NULL, next_due, created"
        return [_row(r) for r in self.store._query(sql, params)]

    def count(self, session_id: str) -> int:
        rows = self.store._query(
            "SELECT COUNT(*) AS n FROM automations WHERE session_id=?", (session_id,)
        )
        return int(rows[0]["n"]) if rows else 0

    def due(self, now: float) -> list[dict[str, Any]]:
        """Automations not paused whose next due time is ``now`` or earlier, oldest first."""
        rows = self.store._query(
            "SELECT * FROM automations WHERE paused=0 AND next_due IS NOT NULL AND next_due<=?"
            " ORDER BY next_due",
            (now,),
        )
        return [_row(r) for r in rows]

    def next_due(self) -> float | None:
        """The earliest due time of any automation not paused (None: nothing scheduled)."""
        rows = self.store._query(
            "SELECT MIN(next_due) AS t FROM automations WHERE paused=0 AND next_due IS NOT NULL"
        )
        value = rows[0]["t"] if rows else None
        return None if value is None else float(value)

    def update(self, automation_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Change the user's fields (``what``, ``at``, ``cron``, ``paused``, ``next_due``)."""
        bad = sorted(set(fields) - set(EDITABLE))
        if bad:
            raise ValueError(f"automation fields {bad} cannot be changed")
        if fields:
            cols = ", ".join(f"{k}=?" for k in fields)
            with self.store._tx() as db:
                cur = db.execute(
                    f"UPDATE automations SET {cols}, updated=? WHERE id=?",  # noqa: S608 - names from EDITABLE
                    (
                        *(int(v) if k == "paused" else v for k, v in fields.items()),
                        self.store.clock(),
                        automation_id,
                    ),  # fmt: skip
                )
                if cur.rowcount == 0:
                    raise NotFound(f"no automation {automation_id!r}")
        return self.get(automation_id)

    def delete(self, automation_id: str) -> None:
        with self.store._tx() as db:
            if db.execute("DELETE FROM automations WHERE id=?", (automation_id,)).rowcount == 0:
                raise NotFound(f"no automation {automation_id!r}")

    def take(
        self, automation_id: str, due: float, next_due: float | None, *, missed: int = 0
    ) -> bool:
        """Take the due time ``due`` (the row still shows it as ``next_due``, and no later
        one was taken) and move on to ``next_due``; False when it was taken already, the row
        changed or was deleted. ``missed``: due times reported missed, not run."""
        with self.store._tx() as db:
            cur = db.execute(
                "UPDATE automations SET last_due=?, next_due=?, updated=?,"
                " runs=runs+?, missed=missed+?, last_state=CASE WHEN ?>0 THEN 'missed'"
                " ELSE last_state END"
                " WHERE id=? AND paused=0 AND next_due=? AND (last_due IS NULL OR last_due<?)",
                (
                    due,
                    next_due,
                    self.store.clock(),
                    0 if missed else 1,
                    missed,
                    missed,
                    automation_id,
                    due,
                    due,
                ),
            )
            return cur.rowcount == 1

    def outcome(self, automation_id: str, state: str, run_id: str | None = None) -> None:
        """What the last due time led to (its run, if any); an automation deleted since
        is left alone."""
        if state not in OUTCOMES:
            raise ValueError(f"unknown automation outcome {state!r}")
        with self.store._tx() as db:
            db.execute(
                "UPDATE automations SET last_state=?, last_run_id=COALESCE(?, last_run_id),"
                " updated=? WHERE id=?",
                (state, run_id, self.store.clock(), automation_id),
            )
