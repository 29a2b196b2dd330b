"""Runs, their steps, the interactions that wait for the user and the per-app tool
policy, kept in the system database (DESIGN §12 "API", "Recovery").

The SQL lives here, beside the tables it serves, but goes through ``Store``'s
pool, transactions and error mapping (``_tx`` / ``_query``), so a full disk or a
damaged file surfaces as ``StoreFull`` / ``StoreCorrupt`` as everywhere else.

Tables: ``runs`` (one per instruction, open and action), ``run_steps`` (the
plan of a run, one JSON object per step, in order), ``interactions`` (approval
cards and asks; answered first-wins in one transaction) and ``tool_policy``
(the user's per-app, per-tool overrides, "always allow" included). Deleting a
run deletes its steps and interactions (a trigger), so retention only deletes
runs. A run in a final state never changes again: that is what makes "cancel of
a finished run" a conflict and "answered before a crash" never run twice.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aios.errors import Conflict, NotFound
from aios.store import Store

if TYPE_CHECKING:
    from sqlite3 import Connection

RUN_KINDS = ("instruction", "open", "action", "tool")
"""``tool``: an app's synchronous call that waited for the user outside any other run."""
ACTIVE = ("running", "waiting")
FINAL = ("done", "failed", "cancelled", "interrupted")
RUN_STATES = ACTIVE + FINAL
INTERACTION_STATES = ("pending", "answered", "expired", "withdrawn")
CLOSING = ("expired", "withdrawn")
"""What ``set_interaction_state`` may move a pending interaction to (answers go
through ``answer_interaction``)."""
POLICY_VALUES = ("allow", "ask", "never")
STEP_FINISHED = ("ok", "error", "skipped")
"""Step statuses after which a run has moved past the step (``stopped_at`` is the first
step not in one of these)."""
RUNS_PAGE = 50
"""Runs ``runs()`` returns when no limit is given."""
RUNS_PAGE_MAX = 1000
"""The most runs one ``runs()`` call returns, whatever the limit asked."""
SUMMARY_STEP_KEYS = ("step_id", "tool", "risk", "status", "decision", "text")
"""Step fields a run listing carries (the full step, results included, is in ``run()``)."""

SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        session_id TEXT,
        app TEXT,
        kind TEXT NOT NULL,
        state TEXT NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        text TEXT,
        request TEXT,
        response TEXT,
        stopped_at TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS runs_session ON runs (session_id, created)",
    "CREATE INDEX IF NOT EXISTS runs_state ON runs (state)",
    "CREATE INDEX IF NOT EXISTS runs_updated ON runs (updated)",
    """
    CREATE TABLE IF NOT EXISTS run_steps (
        run_id TEXT NOT NULL,
        pos INTEGER NOT NULL,
        step_id TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, pos)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS interactions (
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        app TEXT,
        session_id TEXT,
        kind TEXT NOT NULL,
        prompt TEXT,
        options TEXT,
        steps TEXT,
        created REAL NOT NULL,
        expires REAL,
        state TEXT NOT NULL,
        answer TEXT,
        answered REAL
    )
    """,
    "CREATE INDEX IF NOT EXISTS interactions_run ON interactions (run_id)",
    "CREATE INDEX IF NOT EXISTS interactions_state ON interactions (state, session_id)",
    """
    CREATE TRIGGER IF NOT EXISTS runs_cascade AFTER DELETE ON runs BEGIN
        DELETE FROM run_steps WHERE run_id = old.run_id;
        DELETE FROM interactions WHERE run_id = old.run_id;
    END
    """,
    """
    CREATE TABLE IF NOT EXISTS tool_policy (
        app TEXT NOT NULL,
        tool TEXT NOT NULL,
        value TEXT NOT NULL,
        ts REAL NOT NULL,
        PRIMARY KEY (app, tool)
    )
    """,
)
"""One statement each (a trigger's body holds semicolons of its own)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _one_of(what: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}: use one of {', '.join(allowed)}")


def _stopped_at(steps: list[dict[str, Any]]) -> str | None:
    for step in steps:
        if step.get("status") not in STEP_FINISHED:
            return str(step.get("step_id"))
    return None


class RunStore:
    """Runs, interactions and tool policy over ``store`` (its pool, clock and errors)."""

    def __init__(self, store: Store):
        self.store = store
        with store._tx() as db:
            for statement in SCHEMA:
                db.execute(statement)
        store.add_retention("runs", self.prune)

    # ------------------------------------------------------------------ runs

    def create_run(
        self,
        run_id: str,
        *,
        session_id: str | None,
        app: str | None,
        kind: str,
        text: str | None = None,
        request: Any = None,
    ) -> dict[str, Any]:
        """A new run in state ``running``; ``request`` is what a retry sends again."""
        _one_of("run kind", kind, RUN_KINDS)
        now = self.store.clock()
        with self.store._tx() as db:
            if db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone():
                raise Conflict(f"the run {run_id} exists already", self._run(db, run_id))
            db.execute(
                "INSERT INTO runs (run_id, session_id, app, kind, state, created, updated,"
                " text, request) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    session_id,
                    app,
                    kind,
                    "running",
                    now,
                    now,
                    text,
                    None if request is None else _dumps(request),
                ),
            )
            return self._run(db, run_id) or {}

    def set_run_state(
        self,
        run_id: str,
        state: str,
        *,
        response: Any = None,
        stopped_at: str | None = None,
    ) -> dict[str, Any]:
        """Move a run to ``state`` and return it.

        A run in a final state (done, failed, cancelled, interrupted) never moves
        again: ``Conflict`` carrying the run. Reaching a final state withdraws the
        run's pending interactions in the same transaction; their ids are in the
        returned run's ``withdrawn``. ``interrupted`` without ``stopped_at`` records
        the first step not finished.
        """
        _one_of("run state", state, RUN_STATES)
        with self.store._tx() as db:
            current = self._run(db, run_id)
            if current is None:
                raise NotFound(f"no run {run_id}")
            if current["state"] in FINAL:
                raise Conflict(f"the run {run_id} is already {current['state']}", current)
            withdrawn = self._finish(db, current, state, response, stopped_at)
            out = self._run(db, run_id) or {}
        out["withdrawn"] = withdrawn
        return out

    def _finish(
        self,
        db: Connection,
        current: dict[str, Any],
        state: str,
        response: Any,
        stopped_at: str | None,
    ) -> list[str]:
        run_id = current["run_id"]
        if state == "interrupted" and stopped_at is None:
            stopped_at = _stopped_at(current["steps"])
        db.execute(
            "UPDATE runs SET state=?, updated=?, response=COALESCE(?, response),"
            " stopped_at=COALESCE(?, stopped_at) WHERE run_id=?",
            (
                state,
                self.store.clock(),
                None if response is None else _dumps(response),
                stopped_at,
                run_id,
            ),
        )
        if state not in FINAL:
            return []
        ids = [
            str(r[0])
            for r in db.execute(
                "SELECT id FROM interactions WHERE run_id=? AND state='pending'", (run_id,)
            ).fetchall()
        ]
        db.execute(
            "UPDATE interactions SET state='withdrawn' WHERE run_id=? AND state='pending'",
            (run_id,),
        )
        return ids

    def set_steps(self, run_id: str, steps: list[dict[str, Any]], *, append: bool = False) -> None:
        """Record the run's plan (replacing it, or after it with ``append`` for a later round).

        Each step is ``{step_id, tool, risk, status, decision?, text?, result?, ...}``;
        arguments in it must already be redacted.
        """
        for step in steps:
            if "step_id" not in step:
                raise ValueError(f"a step of run {run_id} has no step_id: {step!r}")
        with self.store._tx() as db:
            self._require_run(db, run_id)
            start = 0
            if append:
                row = db.execute(
                    "SELECT COALESCE(MAX(pos) + 1, 0) FROM run_steps WHERE run_id=?", (run_id,)
                ).fetchone()
                start = int(row[0])
            else:
                db.execute("DELETE FROM run_steps WHERE run_id=?", (run_id,))
            db.executemany(
                "INSERT INTO run_steps (run_id, pos, step_id, data) VALUES (?,?,?,?)",
                [(run_id, start + i, str(s["step_id"]), _dumps(s)) for i, s in enumerate(steps)],
            )
            db.execute("UPDATE runs SET updated=? WHERE run_id=?", (self.store.clock(), run_id))

    def update_steps(self, run_id: str, updates: list[tuple[str, dict[str, Any]]]) -> None:
        """Several :meth:`update_step` merges in one transaction (a plan's quiet steps)."""
        if not updates:
            return
        with self.store._tx() as db:
            for step_id, fields in updates:
                _merge_step(db, run_id, step_id, fields)
            db.execute("UPDATE runs SET updated=? WHERE run_id=?", (self.store.clock(), run_id))

    def update_step(self, run_id: str, step_id: str, **fields: Any) -> dict[str, Any]:
        """Merge ``fields`` into a step (the latest with that id) and return the step."""
        with self.store._tx() as db:
            step = _merge_step(db, run_id, step_id, fields)
            if step is None:
                self._require_run(db, run_id)
                raise NotFound(f"run {run_id} has no step {step_id!r}")
            db.execute("UPDATE runs SET updated=? WHERE run_id=?", (self.store.clock(), run_id))
            return step

    def run(self, run_id: str) -> dict[str, Any] | None:
        """The run with its full steps (results included), request and response."""
        rows = self.store._query("SELECT * FROM runs WHERE run_id=?", (run_id,))
        if not rows:
            return None
        steps = self.store._query(
            "SELECT data FROM run_steps WHERE run_id=? ORDER BY pos", (run_id,)
        )
        return _run_row(dict(rows[0]), [json.loads(r[0]) for r in steps])

    def runs(
        self,
        *,
        session: str | None = None,
        app: str | None = None,
        active: bool = False,
        limit: int = RUNS_PAGE,
    ) -> list[dict[str, Any]]:
        """Runs newest first, each with a summary of its steps (``SUMMARY_STEP_KEYS``)."""
        where: list[str] = []
        params: list[Any] = []
        if session is not None:
            where.append("session_id=?")
            params.append(session)
        if app is not None:
            where.append("app=?")
            params.append(app)
        if active:
            where.append(f"state IN ({','.join('?' * len(ACTIVE))})")
            params.extend(ACTIVE)
        sql = (
            "SELECT run_id, session_id, app, kind, state, created, updated, text, stopped_at"
            " FROM runs"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, rowid DESC LIMIT ?"
        params.append(max(1, min(int(limit), RUNS_PAGE_MAX)))
        rows = [dict(r) for r in self.store._query(sql, tuple(params))]
        steps = self._steps_of([r["run_id"] for r in rows])
        for r in rows:
            r["steps"] = [
                {k: s[k] for k in SUMMARY_STEP_KEYS if k in s} for s in steps.get(r["run_id"], [])
            ]
        return rows

    def _steps_of(self, run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        if not run_ids:
            return out
        rows = self.store._query(
            f"SELECT run_id, data FROM run_steps WHERE run_id IN ({','.join('?' * len(run_ids))})"
            " ORDER BY run_id, pos",
            tuple(run_ids),
        )
        for r in rows:
            out.setdefault(r["run_id"], []).append(json.loads(r["data"]))
        return out

    @staticmethod
    def _run(db: Connection, run_id: str) -> dict[str, Any] | None:
        row = db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            return None
        steps = db.execute(
            "SELECT data FROM run_steps WHERE run_id=? ORDER BY pos", (run_id,)
        ).fetchall()
        return _run_row(dict(row), [json.loads(r[0]) for r in steps])

    @staticmethod
    def _require_run(db: Connection, run_id: str) -> None:
        if db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone() is None:
            raise NotFound(f"no run {run_id}")

    # ---------------------------------------------------------- interactions

    def create_interaction(self, ia: dict[str, Any]) -> dict[str, Any]:
        """Record a pending interaction of a run: ``{id, run_id, kind, app?, session_id?,
        prompt?, options?, steps?, created?, expires?}``."""
        for key in ("id", "run_id", "kind"):
            if not ia.get(key):
                raise ValueError(f"an interaction needs {key!r}: {sorted(ia)} given")
        with self.store._tx() as db:
            run = db.execute("SELECT state FROM runs WHERE run_id=?", (ia["run_id"],)).fetchone()
            if run is None:
                raise NotFound(f"no run {ia['run_id']} for interaction {ia['id']}")
            if run["state"] in FINAL:
                raise Conflict(
                    f"the run {ia['run_id']} is already {run['state']}",
                    self._run(db, ia["run_id"]),
                )
            if db.execute("SELECT 1 FROM interactions WHERE id=?", (ia["id"],)).fetchone():
                raise Conflict(
                    f"the interaction {ia['id']} exists already", self._interaction(db, ia["id"])
                )
            db.execute(
                "INSERT INTO interactions (id, run_id, app, session_id, kind, prompt, options,"
                " steps, created, expires, state) VALUES (?,?,?,?,?,?,?,?,?,?,'pending')",
                (
                    ia["id"],
                    ia["run_id"],
                    ia.get("app"),
                    ia.get("session_id"),
                    ia["kind"],
                    ia.get("prompt"),
                    None if ia.get("options") is None else _dumps(ia["options"]),
                    None if ia.get("steps") is None else _dumps(ia["steps"]),
                    ia.get("created") or self.store.clock(),
                    ia.get("expires"),
                ),
            )
            return self._interaction(db, ia["id"]) or {}

    def answer_interaction(self, ia_id: str, answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Answer a pending interaction; the first answer wins, in one transaction.

        Returns ``("answered", row)`` when this call answered it, ``("same", row)``
        when it already held an equal answer, ``("conflict", row)`` when it holds a
        different one or is no longer pending (expired, withdrawn), ``("missing", {})``
        when there is no such interaction. ``row`` is the interaction as it now is.
        """
        with self.store._tx() as db:
            current = self._interaction(db, ia_id)
            if current is None:
                return "missing", {}
            if current["state"] == "pending":
                db.execute(
                    "UPDATE interactions SET state='answered', answer=?, answered=? WHERE id=?",
                    (_dumps(answer), self.store.clock(), ia_id),
                )
                return "answered", self._interaction(db, ia_id) or {}
            if current["state"] == "answered" and current["answer"] == answer:
                return "same", current
            return "conflict", current

    def set_interaction_state(self, ia_id: str, state: str) -> bool:
        """Close a pending interaction as ``expired`` or ``withdrawn``.

        True when this call closed it; False when it was not pending (any more) or
        does not exist — ``interaction()`` then tells what it is.
        """
        _one_of("interaction state", state, CLOSING)
        with self.store._tx() as db:
            n = db.execute(
                "UPDATE interactions SET state=? WHERE id=? AND state='pending'", (state, ia_id)
            ).rowcount
        return bool(n)

    def interaction(self, ia_id: str) -> dict[str, Any] | None:
        rows = self.store._query("SELECT * FROM interactions WHERE id=?", (ia_id,))
        return _interaction_row(dict(rows[0])) if rows else None

    def interactions(
        self, *, pending: bool = False, session: str | None = None, run_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Interactions oldest first (the order the cards were shown)."""
        where: list[str] = []
        params: list[Any] = []
        if pending:
            where.append("state='pending'")
        if session is not None:
            where.append("session_id=?")
            params.append(session)
        if run_id is not None:
            where.append("run_id=?")
            params.append(run_id)
        sql = "SELECT * FROM interactions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self.store._query(sql + " ORDER BY created, rowid", tuple(params))
        return [_interaction_row(dict(r)) for r in rows]

    @staticmethod
    def _interaction(db: Connection, ia_id: str) -> dict[str, Any] | None:
        row = db.execute("SELECT * FROM interactions WHERE id=?", (ia_id,)).fetchone()
        return _interaction_row(dict(row)) if row is not None else None

    # ---------------------------------------------------------------- policy

    def policy(self, app: str) -> dict[str, str]:
        """Tool -> ``allow`` | ``ask`` | ``never``: the user's overrides for ``app``."""
        rows = self.store._query("SELECT tool, value FROM tool_policy WHERE app=?", (app,))
        return {str(r[0]): str(r[1]) for r in rows}

    def set_policy(self, app: str, tool: str, value: str | None) -> None:
        """Set the override of ``tool`` for ``app``; None clears it (revokes an "always")."""
        if value is not None:
            _one_of("policy value", value, POLICY_VALUES)
        with self.store._tx() as db:
            if value is None:
                db.execute("DELETE FROM tool_policy WHERE app=? AND tool=?", (app, tool))
            else:
                db.execute(
                    "INSERT OR REPLACE INTO tool_policy (app, tool, value, ts) VALUES (?,?,?,?)",
                    (app, tool, value, self.store.clock()),
                )

    def forget_app(self, app: str) -> dict[str, int]:
        """A removed app: its tool policy ("always allow" included) goes and its pending
        cards are withdrawn (its runs and their audit stay). Rows changed per table."""
        with self.store._tx() as db:
            return {
                "tool_policy": db.execute("DELETE FROM tool_policy WHERE app=?", (app,)).rowcount,
                "interactions": db.execute(
                    "UPDATE interactions SET state='withdrawn' WHERE app=? AND state='pending'",
                    (app,),
                ).rowcount,
            }

    # -------------------------------------------------------------- recovery

    def interrupt_unfinished_runs(self) -> list[dict[str, Any]]:
        """At start: runs a previous run of the system left running or waiting become
        ``interrupted`` (``stopped_at`` the first step not finished) and every pending
        interaction is withdrawn (nothing can answer it any more). Returns the runs
        changed, each with ``withdrawn``: the ids of its interactions withdrawn."""
        with self.store._tx() as db:
            ids = [
                str(r[0])
                for r in db.execute(
                    f"SELECT run_id FROM runs WHERE state IN ({','.join('?' * len(ACTIVE))})"
                    " ORDER BY created, rowid",
                    ACTIVE,
                ).fetchall()
            ]
            changed = []
            for run_id in ids:
                current = self._run(db, run_id) or {}
                withdrawn = self._finish(db, current, "interrupted", None, None)
                changed.append({**(self._run(db, run_id) or {}), "withdrawn": withdrawn})
            db.execute("UPDATE interactions SET state='withdrawn' WHERE state='pending'")
        return changed

    # ------------------------------------------------------------- retention

    def prune(self, cut: float, rows_per_session: int) -> dict[str, int]:
        """Delete finished runs (with their steps and interactions) last updated before
        ``cut`` and beyond the newest ``rows_per_session`` of a session (called by
        ``Store.prune`` with the history retention)."""
        finished = f"state NOT IN ({','.join('?' * len(ACTIVE))})"
        n = self.store._delete_batched("runs", f"updated<? AND {finished}", (cut, *ACTIVE), "rowid")
        crowded = self.store._query(
            "SELECT session_id FROM runs WHERE session_id IS NOT NULL"
            " GROUP BY session_id HAVING count(*) > ?",
            (rows_per_session,),
        )
        for (sid,) in crowded:
            n += self.store._keep_newest(
                "runs", rows_per_session, f"session_id=? AND {finished}", (sid, *ACTIVE), "rowid"
            )
        return {"runs": n}


def _run_row(d: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, Any]:
    d["request"] = _loads(d["request"])
    d["response"] = _loads(d["response"])
    d["steps"] = steps
    return d


def _merge_step(
    db: Connection, run_id: str, step_id: str, fields: dict[str, Any]
) -> dict[str, Any] | None:
    """Merge ``fields`` into the latest step ``step_id`` of a run; None when it has none."""
    row = db.execute(
        "SELECT pos, data FROM run_steps WHERE run_id=? AND step_id=? ORDER BY pos DESC LIMIT 1",
        (run_id, step_id),
    ).fetchone()
    if row is None:
        return None
    step: dict[str, Any] = {**json.loads(row["data"]), **fields, "step_id": step_id}
    db.execute(
        "UPDATE run_steps SET data=? WHERE run_id=? AND pos=?",
        (_dumps(step), run_id, row["pos"]),
    )
    return step


def _interaction_row(d: dict[str, Any]) -> dict[str, Any]:
    for key in ("options", "steps", "answer"):
        d[key] = _loads(d[key])
    return d
