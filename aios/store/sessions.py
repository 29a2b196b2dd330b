"""Sessions and what each keeps (DESIGN §4.4): ``sessions`` (with the context
variables), ``history``, ``tasks`` and ``agent_state``."""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

from aios.store.audit import AuditTables
from aios.store.db import _dumps

if TYPE_CHECKING:
    import sqlite3

HISTORY_PAGE = 200
"""History entries ``session()`` returns when no limit is given."""
UNFINISHED = ("pending", "running")
FINISHED = ("done", "error", "interrupted")


def _ensure_session(db: sqlite3.Connection, sid: str) -> None:
    now = time.time()
    db.execute(
        "INSERT OR IGNORE INTO sessions (id, created, updated) VALUES (?,?,?)", (sid, now, now)
    )


def new_session_id() -> str:
    return "sess_" + uuid.uuid4().hex[:16]


class SessionTables(AuditTables):
    """The session tables (``session()`` also reads the audit of the session)."""

    def ensure_session(self, session_id: str | None = None) -> str:
        sid = session_id or new_session_id()
        with self._tx() as db:
            _ensure_session(db, sid)
        return sid

    def session_exists(self, session_id: str) -> bool:
        return bool(self._query("SELECT 1 FROM sessions WHERE id=?", (session_id,)))

    def recent_apps(self, sessions: int) -> list[str]:
        """The apps that answered in the ``sessions`` most recently updated sessions, the
        most recently used first (``apps.autostart: "recent"``)."""
        rows = self._query(
            "SELECT h.app, MAX(h.id) AS last FROM history h WHERE h.app IS NOT NULL"
            " AND h.app != '' AND h.session_id IN"
            " (SELECT id FROM sessions ORDER BY updated DESC, rowid DESC LIMIT ?)"
            " GROUP BY h.app ORDER BY last DESC",
            (sessions,),
        )
        return [str(r["app"]) for r in rows]

    def sessions_overview(self, limit: int) -> list[dict[str, Any]]:
        """Sessions most recently updated first: ``{session_id, created, updated, title,
        turns}``, where ``title`` is the first typed or spoken text (None when there is
        none yet) and ``turns`` the number of such texts."""
        rows = self._query(
            "SELECT s.id, s.created, s.updated,"
            " (SELECT json_extract(h.content, '$.text') FROM history h WHERE h.session_id=s.id"
            "  AND h.role='user' AND json_extract(h.content, '$.text') IS NOT NULL"
            "  ORDER BY h.id LIMIT 1) AS title,"
            " (SELECT COUNT(*) FROM history h WHERE h.session_id=s.id AND h.role='user'"
            "  AND json_extract(h.content, '$.text') IS NOT NULL) AS turns"
            " FROM sessions s ORDER BY s.updated DESC, s.rowid DESC LIMIT ?",
            (limit,),
        )
        return [
            {
                "session_id": r["id"],
                "created": r["created"],
                "updated": r["updated"],
                "title": r["title"],
                "turns": r["turns"],
            }
            for r in rows
        ]

    def set_context_var(self, session_id: str, name: str, value: Any) -> None:
        with self._tx() as db:  # one transaction, not two: this runs on every request
            _ensure_session(db, session_id)
            row = db.execute("SELECT context FROM sessions WHERE id=?", (session_id,)).fetchone()
            ctx = json.loads(row[0]) if row else {}
            ctx[name] = value
            db.execute(
                "UPDATE sessions SET context=?, updated=? WHERE id=?",
                (_dumps(ctx), self.clock(), session_id),
            )

    def context_vars(self, session_id: str) -> dict[str, Any]:
        rows = self._query("SELECT context FROM sessions WHERE id=?", (session_id,))
        return json.loads(rows[0][0]) if rows else {}

    def add_history(self, session_id: str, role: str, content: Any, app: str | None = None) -> int:
        with self._tx() as db:
            _ensure_session(db, session_id)
            cur = db.execute(
                "INSERT INTO history (session_id, ts, role, app, content) VALUES (?,?,?,?,?)",
                (session_id, self.clock(), role, app, _dumps(content)),
            )
            db.execute("UPDATE sessions SET updated=? WHERE id=?", (self.clock(), session_id))
            return int(cur.lastrowid or 0)

    def add_reply(
        self,
        session_id: str,
        app: str,
        content: Any,
        *,
        state: Any = None,
        context_vars: dict[str, Any] | None = None,
    ) -> int:
        """An app's reply in the session's history, with the state it keeps (None: none)
        and the session's context variables set, in one transaction; the entry's id."""
        with self._tx() as db:
            _ensure_session(db, session_id)
            cur = db.execute(
                "INSERT INTO history (session_id, ts, role, app, content) VALUES (?,?,?,?,?)",
                (session_id, self.clock(), "app", app, _dumps(content)),
            )
            if state is not None:
                db.execute(
                    "INSERT OR REPLACE INTO agent_state (session_id, app, state, updated)"
                    " VALUES (?,?,?,?)",
                    (session_id, app, _dumps(state), self.clock()),
                )
            row = db.execute("SELECT context FROM sessions WHERE id=?", (session_id,)).fetchone()
            ctx = json.loads(row[0]) if row else {}
            ctx.update(context_vars or {})
            db.execute(
                "UPDATE sessions SET context=?, updated=? WHERE id=?",
                (_dumps(ctx), self.clock(), session_id),
            )
            return int(cur.lastrowid or 0)

    def last_history_id(self) -> int:
        """The newest history entry's id (0 for none): later entries have larger ids."""
        rows = self._query("SELECT MAX(id) AS n FROM history", ())
        return int(rows[0]["n"] or 0) if rows else 0

    def history(self, session_id: str, limit: int = HISTORY_PAGE) -> list[dict[str, Any]]:
        return self.history_page(session_id, limit=limit)[0]

    def history_page(
        self, session_id: str, *, before: int | None = None, limit: int = HISTORY_PAGE
    ) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` entries older than entry id ``before`` (oldest first), and
        whether older ones remain."""
        sql = "SELECT * FROM history WHERE session_id=?"
        params: tuple[Any, ...] = (session_id,)
        if before is not None:
            sql += " AND id<?"
            params += (before,)
        rows = self._query(sql + " ORDER BY id DESC LIMIT ?", (*params, limit + 1))
        more = len(rows) > limit
        return [
            {**dict(r), "content": json.loads(r["content"])} for r in reversed(rows[:limit])
        ], more

    def history_since(self, session_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` entries with an id above ``after`` (oldest first)."""
        rows = self._query(
            "SELECT id, role, app, content FROM history WHERE session_id=? AND id>?"
            " ORDER BY id DESC LIMIT ?",
            (session_id, after, limit),
        )
        return [{**dict(r), "content": json.loads(r["content"])} for r in reversed(rows)]

    def history_by_time(
        self, session_id: str, *, upto: float | None, inclusive: bool, limit: int
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` entries at or before time ``upto`` (before it unless
        ``inclusive``; None: the newest), newest first by time, then by id."""
        sql = "SELECT * FROM history WHERE session_id=?"
        params: tuple[Any, ...] = (session_id,)
        if upto is not None:
            sql += " AND ts<=?" if inclusive else " AND ts<?"
            params += (upto,)
        rows = self._query(sql + " ORDER BY ts DESC, id DESC LIMIT ?", (*params, limit))
        return [{**dict(r), "content": json.loads(r["content"])} for r in rows]

    def history_at(self, session_id: str, ts: float) -> list[dict[str, Any]]:
        """Every entry of the session written at time ``ts``."""
        rows = self._query(
            "SELECT * FROM history WHERE session_id=? AND ts=? ORDER BY id DESC", (session_id, ts)
        )
        return [{**dict(r), "content": json.loads(r["content"])} for r in rows]

    def history_entry(self, session_id: str, entry_id: int) -> dict[str, Any] | None:
        """One entry of the session by its id (None: not there)."""
        rows = self._query(
            "SELECT * FROM history WHERE session_id=? AND id=?", (session_id, entry_id)
        )
        return {**dict(rows[0]), "content": json.loads(rows[0]["content"])} if rows else None

    def upsert_task(
        self,
        session_id: str,
        task_id: str,
        *,
        app: str | None,
        instruction: str | None,
        depends_on: list[str],
        status: str,
        result: Any = None,
    ) -> None:
        now = self.clock()
        finished = now if status in FINISHED else None
        with self._tx() as db:
            db.execute(
                "INSERT INTO tasks (session_id, task_id, app, instruction, depends_on, status,"
                " created, finished, result) VALUES (?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT (session_id, task_id) DO UPDATE SET status=excluded.status,"
                " finished=excluded.finished, result=excluded.result, app=excluded.app",
                (
                    session_id,
                    task_id,
                    app,
                    instruction,
                    _dumps(depends_on),
                    status,
                    now,
                    finished,
                    None if result is None else _dumps(result),
                ),
            )

    def interrupt_unfinished_tasks(self) -> int:
        """Mark tasks a previous run left pending or running as ``interrupted``."""
        with self._tx() as db:
            return db.execute(
                "UPDATE tasks SET status='interrupted', finished=? WHERE status IN (?, ?)",
                (self.clock(), *UNFINISHED),
            ).rowcount

    def tasks(self, session_id: str) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT * FROM tasks WHERE session_id=? ORDER BY created, rowid", (session_id,)
        )
        out = []
        for r in rows:
            d = dict(r)
            d["depends_on"] = json.loads(d["depends_on"])
            d["result"] = json.loads(d["result"]) if d["result"] else None
            out.append(d)
        return out

    def set_agent_state(self, session_id: str, app: str, state: Any) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO agent_state (session_id, app, state, updated)"
                " VALUES (?,?,?,?)",
                (session_id, app, _dumps(state), self.clock()),
            )

    def agent_state(self, session_id: str, app: str) -> Any:
        rows = self._query(
            "SELECT state FROM agent_state WHERE session_id=? AND app=?", (session_id, app)
        )
        return json.loads(rows[0][0]) if rows else None

    def session(
        self, session_id: str, *, before: int | None = None, limit: int = HISTORY_PAGE
    ) -> dict[str, Any] | None:
        """Everything §4.4 keeps for one session, with one page of its history.

        ``history`` holds up to ``limit`` entries older than entry id ``before``
        (the newest when None); ``has_more`` says whether older entries remain,
        and ``next_before`` is the ``before`` that fetches them.
        """
        rows = self._query("SELECT * FROM sessions WHERE id=?", (session_id,))
        if not rows:
            return None
        tasks = self.tasks(session_id)
        history, more = self.history_page(session_id, before=before, limit=limit)
        states = self._query("SELECT app, state FROM agent_state WHERE session_id=?", (session_id,))
        return {
            "session_id": session_id,
            "created": rows[0]["created"],
            "updated": rows[0]["updated"],
            "history": history,
            "has_more": more,
            "next_before": history[0]["id"] if more and history else None,
            "current_tasks": [t for t in tasks if t["status"] in UNFINISHED],
            "completed_tasks": [t for t in tasks if t["status"] not in UNFINISHED],
            "context": json.loads(rows[0]["context"]),
            "agent_states": {r["app"]: json.loads(r["state"]) for r in states},
            "tool_calls_log": list(reversed(self.audit_rows(session_id=session_id, limit=500))),
        }
