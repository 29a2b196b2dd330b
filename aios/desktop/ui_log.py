"""The log of the UI changes applied to the desktop (``POST /api/sys/ui``, docs/protocol.md §6).

Every change an app makes (``move``, ``change_color``…) is kept, in order, in the
store under ``desktop:ui_ops``, so that the desktop re-applies them when it loads
(``GET /api/ui/ops``) and so that they can be taken back: ``undo`` drops the last
one, ``reset`` drops every one, or every one of an element (``id``, ``window``).
The log holds at most ``web.ui_ops_max`` changes; older ones are forgotten (they
stay on screen until the page reloads). Pure bookkeeping: checking an op is
:func:`aios.protocol.parse_ui_op`'s job, showing it the renderer's.

Beside it, the desktop's snapshot (``POST /api/ui/snapshot``): what is on screen,
kept under ``desktop:ui_snapshot`` for system-control apps to read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from aios.config import WebConfig
from aios.errors import BadRequest
from aios.store import Store

NAMESPACE = "desktop"
KEY = "ui_ops"
SNAPSHOT_KEY = "ui_snapshot"
SNAPSHOT_MAX: int = WebConfig.model_fields["snapshot_max_elements"].default


def _same_element(op: dict[str, Any], reset: dict[str, Any]) -> bool:
    # A reset without a window names the element wherever it is (a desktop id has none).
    return op.get("id") == reset["id"] and reset.get("window") in (None, op.get("window"))


class UILog:
    """The changes still applied, oldest first, kept in the store (it survives restarts)."""

    def __init__(
        self,
        store: Store,
        limit: Callable[[], int],
        snapshot_limit: Callable[[], int] = lambda: SNAPSHOT_MAX,
    ):
        self._store = store
        self._limit = limit
        self._snapshot_limit = snapshot_limit
        """At most this many elements in a snapshot (``web.snapshot_max_elements``)."""
        self._lock = threading.Lock()

    def ops(self) -> list[dict[str, Any]]:
        raw = self._store.cache_get(NAMESPACE, KEY, [])
        return [op for op in raw if isinstance(op, dict)] if isinstance(raw, list) else []

    def apply(self, checked: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Record checked ops; return them as the desktop gets them.

        An ``undo`` comes back with ``undone``, the change it took back (absent when
        there was none); a ``reset`` with ``removed``, how many changes it took back.
        """
        out: list[dict[str, Any]] = []
        with self._lock:
            log = self.ops()
            for op in checked:
                if op["op"] == "undo":
                    out.append({**op, "undone": log.pop()} if log else dict(op))
                elif op["op"] == "reset":
                    kept = [o for o in log if "id" in op and not _same_element(o, op)]
                    out.append({**op, "removed": len(log) - len(kept)})
                    log = kept
                else:
                    log.append(op)
                    out.append(op)
            del log[: max(0, len(log) - self._limit())]
            self._store.cache_set(NAMESPACE, KEY, log)
        return out

    def save_snapshot(self, body: dict[str, Any]) -> int:
        """Keep what the desktop reports on screen (its snapshot) for system-control apps.

        Entries that are not objects with a text ``id`` are dropped; returns
        how many were kept. BadRequest when ``elements`` is not a list or is too long.
        """
        elements = body.get("elements")
        limit = self._snapshot_limit()
        if not isinstance(elements, list) or len(elements) > limit:
            raise BadRequest(f"field 'elements' must be a list (at most {limit})")
        clean = [e for e in elements if isinstance(e, dict) and isinstance(e.get("id"), str)]
        self._store.cache_set(
            NAMESPACE, SNAPSHOT_KEY, {"elements": clean, "viewport": body.get("viewport")}
        )
        return len(clean)
