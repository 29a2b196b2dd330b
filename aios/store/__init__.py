"""The one SQLite database (WAL) of the system: the only package that touches SQLite.

One module per group of tables, each a part of :class:`Store` (the class a caller
holds): :mod:`~aios.store.db` (the pool, transactions, the mapping of ``sqlite3``
errors, the set-aside of a damaged file, ``meta``, vacuum), :mod:`~aios.store.sessions`
(``sessions``, ``history``, ``tasks``, ``agent_state``), :mod:`~aios.store.audit`
(``tool_calls_log``, ``llm_usage``), :mod:`~aios.store.cache` (``cache``, per-app
namespaces, TTL) and :mod:`~aios.store.grants` (``grants``: the user's decision on each
permission an app requested, ``app_installs``: when each app was first seen, and
``route_owners``: the user's answer when a later app would take an earlier app's words,
DESIGN §14.7) and :mod:`~aios.store.topics` (``topics``: a session's topic tree, DESIGN
§18). The tables of runs, interactions and tool policy are
:mod:`aios.store.runs`'s: it goes through this store's pool, transactions and error
mapping, and registers its retention with ``add_retention``; retention is run by
:mod:`aios.store.pruner`.
"""

from __future__ import annotations

from aios.store.cache import CacheTables
from aios.store.db import (
    AUDIT_RUN_COLUMNS as AUDIT_RUN_COLUMNS,
    BUSY_TIMEOUT as BUSY_TIMEOUT,
    POOL_SIZE as POOL_SIZE,
    PROBE_BYTES as PROBE_BYTES,
    PRUNE_BATCH as PRUNE_BATCH,
    SCHEMA as SCHEMA,
    Database as Database,
    RetentionHook as RetentionHook,
)
from aios.store.grants import GrantTables
from aios.store.sessions import (
    FINISHED as FINISHED,
    HISTORY_PAGE as HISTORY_PAGE,
    UNFINISHED as UNFINISHED,
    SessionTables,
    new_session_id as new_session_id,
)
from aios.store.topics import TopicTables


class Store(SessionTables, CacheTables, GrantTables, TopicTables):
    """Thread-safe access to the system database at ``path``: every table's queries."""

    def forget_app(self, app: str) -> dict[str, int]:
        """Delete what the system keeps for a removed app: its cache and its grants (its
        audit rows stay). Rows deleted per table."""
        with self._tx() as db:
            return {
                "cache": db.execute("DELETE FROM cache WHERE namespace=?", (app,)).rowcount,
                "grants": db.execute("DELETE FROM grants WHERE app=?", (app,)).rowcount,
            }

    # ------------------------------------------------------------ retention

    def prune(
        self,
        *,
        audit_rows: int,
        audit_days: float,
        history_rows_per_session: int,
        history_days: float,
        llm_usage_rows: int,
        now: float | None = None,
    ) -> dict[str, int]:
        """Delete what is past retention (by count and by age); rows deleted per table."""
        now = self.clock() if now is None else now
        audit_cut, history_cut = now - audit_days * 86400, now - history_days * 86400
        out = {
            "tool_calls_log": self._delete_batched("tool_calls_log", "ts<?", (audit_cut,))
            + self._keep_newest("tool_calls_log", audit_rows),
            "llm_usage": self._delete_batched("llm_usage", "ts<?", (audit_cut,))
            + self._keep_newest("llm_usage", llm_usage_rows),
            "history": self._delete_batched("history", "ts<?", (history_cut,)),
            "tasks": self._delete_batched(
                "tasks",
                "created<? AND status NOT IN (?, ?)",
                (history_cut, *UNFINISHED),
                key="rowid",
            ),
            "cache": self.cache_purge_expired(now),
            "topics": self.prune_topics(history_cut),
        }
        crowded = self._query(
            "SELECT session_id FROM history GROUP BY session_id HAVING count(*) > ?",
            (history_rows_per_session,),
        )
        for (sid,) in crowded:
            out["history"] += self._keep_newest(
                "history", history_rows_per_session, "session_id=?", (sid,)
            )
        tasks = self._query(
            "SELECT session_id FROM tasks GROUP BY session_id HAVING count(*) > ?",
            (history_rows_per_session,),
        )
        for (sid,) in tasks:
            out["tasks"] += self._keep_newest(
                "tasks", history_rows_per_session, "session_id=?", (sid,), key="rowid"
            )
        if out["history"]:
            self.history_epoch += 1
        for hook in list(self._retention_hooks.values()):
            out.update(hook(history_cut, history_rows_per_session))
        with self._tx() as db:
            db.execute("DELETE FROM agent_state WHERE updated<?", (history_cut,))
            out["sessions"] = db.execute(
                "DELETE FROM sessions WHERE updated<? AND id NOT IN"
                " (SELECT session_id FROM history)",
                (history_cut,),
            ).rowcount
        return out
