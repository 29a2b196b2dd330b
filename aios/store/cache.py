"""The cache: one namespace per app (its ``cache.*`` tools), values as JSON, optional TTL."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aios.store.db import Database, _dumps

_MISSING = object()


class CacheTables(Database):
    """``cache``."""

    def cache_set(
        self,
        namespace: str,
        key: str,
        value: Any,
        ttl: float | None = None,
        *,
        fits: Callable[[int, int, int], None] | None = None,
    ) -> None:
        """Store a value; ``fits(keys, bytes, adding)`` — the namespace's other live
        entries and this value's size — is asked in the same transaction and may raise
        (a quota), which leaves the cache as it was."""
        expires = self.clock() + ttl if ttl else None
        text = _dumps(value)
        with self._tx() as db:
            if fits is not None:
                db.execute(
                    "DELETE FROM cache WHERE namespace=? AND expires_at IS NOT NULL "
                    "AND expires_at<=?",
                    (namespace, self.clock()),
                )
                keys, size = db.execute(
                    "SELECT COUNT(*), COALESCE(SUM(length(CAST(value AS BLOB))), 0) FROM cache "
                    "WHERE namespace=? AND key<>?",
                    (namespace, key),
                ).fetchone()
                fits(int(keys), int(size), len(text.encode("utf-8")))
            db.execute(
                "INSERT OR REPLACE INTO cache (namespace, key, value, expires_at) VALUES (?,?,?,?)",
                (namespace, key, text, expires),
            )

    def cache_usage(self, namespace: str) -> tuple[int, int]:
        """(keys, bytes of values) the namespace holds, expired entries not counted."""
        rows = self._query(
            "SELECT COUNT(*), COALESCE(SUM(length(CAST(value AS BLOB))), 0) FROM cache "
            "WHERE namespace=? AND (expires_at IS NULL OR expires_at>?)",
            (namespace, self.clock()),
        )
        return int(rows[0][0]), int(rows[0][1])

    def cache_get(self, namespace: str, key: str, default: Any = None) -> Any:
        rows = self._query(
            "SELECT value, expires_at FROM cache WHERE namespace=? AND key=?", (namespace, key)
        )
        if not rows:
            return default
        value, expires = rows[0]
        if expires is not None and expires <= self.clock():
            with self._tx() as db:
                db.execute(
                    "DELETE FROM cache WHERE namespace=? AND key=? AND expires_at<=?",
                    (namespace, key, self.clock()),
                )
            return default
        return json.loads(value)

    def cache_has(self, namespace: str, key: str) -> bool:
        return self.cache_get(namespace, key, _MISSING) is not _MISSING

    def cache_delete(self, namespace: str, key: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM cache WHERE namespace=? AND key=?", (namespace, key))

    def cache_purge_expired(self, now: float | None = None) -> int:
        """Delete the entries expired at ``now`` (default: the store's clock)."""
        at = self.clock() if now is None else now
        with self._tx() as db:
            return db.execute(
                "DELETE FROM cache WHERE expires_at IS NOT NULL AND expires_at<=?", (at,)
            ).rowcount
