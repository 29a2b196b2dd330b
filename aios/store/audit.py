"""The audit of tool calls (``tool_calls_log``) and of model calls (``llm_usage``)."""

from __future__ import annotations

from typing import Any

from aios.store.db import Database

USAGE_GROUPS = {
    "session": "session_id",
    "app": "app",
    "model": "model",
    "day": "date(ts, 'unixepoch')",
}
"""What ``usage_totals`` groups by: the name in the API → its SQL expression."""


class AuditTables(Database):
    """``tool_calls_log`` and ``llm_usage``."""

    def audit(
        self,
        *,
        app: str,
        tool: str,
        args: str,
        status: str,
        duration_ms: float,
        error: str | None = None,
        session_id: str | None = None,
        step_id: str | None = None,
        run_id: str | None = None,
        risk: str | None = None,
        decision: str | None = None,
    ) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO tool_calls_log (ts, session_id, app, step_id, tool, args, status,"
                " duration_ms, error, run_id, risk, decision) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    self.clock(),
                    session_id,
                    app,
                    step_id,
                    tool,
                    args,
                    status,
                    duration_ms,
                    error,
                    run_id,
                    risk,
                    decision,
                ),
            )
            return int(cur.lastrowid or 0)

    def audit_rows(
        self, *, app: str | None = None, session_id: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]]:
        where: list[str] = []
        params: list[str | int] = []
        if app:
            where.append("app = ?")
            params.append(app)
        if session_id:
            where.append("session_id = ?")
            params.append(session_id)
        sql = "SELECT * FROM tool_calls_log"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        params.append(max(1, min(int(limit), 5000)))
        return [dict(r) for r in self._query(sql, tuple(params))]

    # ------------------------------------------------------------ llm usage

    def record_llm_usage(
        self,
        *,
        provider: str,
        model: str,
        latency_ms: float,
        ok: bool,
        purpose: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        error: str | None = None,
        cached_tokens: int | None = None,
        cost: float | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        app: str | None = None,
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO llm_usage (ts, provider, model, purpose, prompt_tokens,"
                " completion_tokens, latency_ms, ok, error, cached_tokens, cost, session_id,"
                " run_id, app) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    self.clock(),
                    provider,
                    model,
                    purpose,
                    prompt_tokens,
                    completion_tokens,
                    latency_ms,
                    int(ok),
                    error,
                    cached_tokens,
                    cost,
                    session_id,
                    run_id,
                    app,
                ),
            )

    def usage_totals(
        self, by: str, *, since: float | None = None, session_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Calls, tokens and cost of the answered model calls, grouped ``by`` one of
        :data:`USAGE_GROUPS` (``day``: the UTC date); cost is None when no call had a price."""
        group = USAGE_GROUPS[by]
        where: list[str] = ["ok = 1"]
        params: list[float | str] = []
        if since is not None:
            where.append("ts >= ?")
            params.append(since)
        if session_id is not None:
            where.append("session_id = ?")
            params.append(session_id)
        sql = (
            f"SELECT {group} AS key, COUNT(*) AS calls,"
            " COALESCE(SUM(prompt_tokens), 0) AS prompt_tokens,"
            " COALESCE(SUM(completion_tokens), 0) AS completion_tokens,"
            " COALESCE(SUM(cached_tokens), 0) AS cached_tokens, SUM(cost) AS cost"
            f" FROM llm_usage WHERE {' AND '.join(where)} GROUP BY key ORDER BY key"
        )
        return [dict(r) for r in self._query(sql, tuple(params))]

    def llm_usage(self, limit: int = 100) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self._query("SELECT * FROM llm_usage ORDER BY id DESC LIMIT ?", (limit,))
        ]
