"""The log of the UI changes applied to the desktop (``POST /api/sys/ui``, docs/protocol.md §6).

Every change an app makes (``move``, ``change_color``…) is kept, in order, in the
store under ``desktop:ui_ops``, so that the desktop re-applies them when it loads
(``GET /api/ui/ops``) and so that they can be taken back: ``undo`` drops the last
one, ``reset`` drops every one, or every one of an element (``id``, ``window``).
The log holds at most ``web.ui_ops_max`` changes; older ones are forgotten (they
stay on screen until the page reloads). Pure bookkeeping: checking an op is
:func:`aios.protocol.parse_ui_op`'s job, showing it the renderer's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from aios.store import Store

NAMESPACE = "desktop"
KEY = "ui_ops"


def _same_element(op: dict[str, Any], reset: dict[str, Any]) -> bool:
    # A reset without a window names the element wherever it is (a desktop id has none).
    return op.get("id") == reset["id"] and reset.get("window") in (None, op.get("window"))


class UILog:
    """The changes still applied, oldest first, kept in the store (it survives restarts)."""

    def __init__(self, store: Store, limit: Callable[[], int]):
        self._store = store
        self._limit = limit
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
