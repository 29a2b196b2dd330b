"""Per-app quotas: nothing an app does exhausts the system (DESIGN §14.6).

This module is the one place that knows each quota's limit (``config.quotas``),
keeps the per-app counters that live nowhere else (push bytes and rate, calls
waiting for the user, workspace usage) and words the refusal. Each enforcement
point asks it:

==================  =====================================  ==========================
quota               enforced in                            counted by
==================  =====================================  ==========================
``push_bytes``      ``POST /api/sys/push``                 here (a sliding minute)
``push_rate``       ``POST /api/sys/push``                 here (a sliding minute)
``cache_bytes``     ``cache_set`` (in its transaction)     the store
``cache_keys``      ``cache_set`` (in its transaction)     the store
``memories``        ``memory_store``                       the memory store
``db_value_bytes``  ``db_query``: SQLite's own length limit  SQLite
``db_columns``      ``db_query``: SQLite's own column limit  SQLite
``db_memory_bytes`` ``db_query``: pages of a ``:memory:`` db  SQLite
``workspace_bytes`` every tool that writes into the workdir here (a cached walk)
``pending_cards``   a card or question is created           ``Approvals``
``waiting_calls``   a synchronous ``call_tool`` that asks   here
``instances``       an app instance is opened               ``Instances``
==================  =====================================  ==========================

The event replay buffer is bounded by bytes too (``events.replay_bytes``), by
the bus itself: it is one buffer for every app, not a per-app quota.

A refusal is :class:`~aios.errors.QuotaExceeded` (HTTP 429, ``{"error", "quota"}``;
a tool call returns it as a ``denied`` result with ``meta.quota``). Its message
names the quota, the app, the use and the limit. ``GET /api/apps`` shows every
quota of every app as ``{used, limit, refused}`` (:meth:`Quotas.status`).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aios.config import QuotasConfig
from aios.errors import QuotaExceeded

MINUTE = 60.0
"""The window of the push quotas, in seconds."""
WALK_MAX_ENTRIES = 200_000
"""Entries one workspace walk looks at; a tree larger than that counts as over its quota."""

UNITS = {
    "push_bytes": "bytes pushed in the last minute",
    "push_rate": "pushes in the last minute",
    "cache_bytes": "bytes cached",
    "cache_keys": "cache keys",
    "memories": "memories kept or proposed",
    "db_value_bytes": "bytes in one database value",
    "db_columns": "columns in one database row",
    "db_memory_bytes": "bytes of in-memory database",
    "workspace_bytes": "bytes in its workdir",
    "pending_cards": "cards and questions waiting for the user",
    "waiting_calls": "tool calls waiting for the user",
    "instances": "open instances",
}
"""Every quota's name (the config key) and what it counts, for messages."""
HINTS = {
    "push_bytes": "push less often or smaller updates",
    "push_rate": "push less often",
    "cache_bytes": "delete or shorten cached values",
    "cache_keys": "reuse keys or let entries expire (ttl)",
    "memories": "delete memories it no longer needs, or wait for the user's answers",
    "db_value_bytes": "store large data as files",
    "db_columns": "select fewer columns",
    "db_memory_bytes": "use a database file in the workdir",
    "workspace_bytes": "delete files in the workdir",
    "pending_cards": "wait until the user answers the cards already shown",
    "waiting_calls": "wait until the user answers the calls already waiting",
    "instances": "close some of its windows",
}


def refusal(quota: str, app: str, used: int | None, limit: int) -> QuotaExceeded:
    """The error for ``app`` at ``used`` of ``limit`` (one wording for every quota; None:
    the use is not known, SQLite stopped at the limit)."""
    at = f"has {used}" if used is not None else "went over the limit of"
    shown = (
        f"{at} {UNITS[quota]} (limit {limit})"
        if used is not None
        else f"{at} {limit} {UNITS[quota]}"
    )
    return QuotaExceeded(quota, f"quota {quota} exceeded: {app} {shown}; {HINTS[quota]}")


class _Window:
    """Amounts within the last :data:`MINUTE` (a deque of (time, amount))."""

    def __init__(self) -> None:
        self.items: deque[tuple[float, int]] = deque()
        self.total = 0

    def trim(self, now: float) -> None:
        while self.items and now - self.items[0][0] >= MINUTE:
            self.total -= self.items.popleft()[1]

    def add(self, now: float, amount: int) -> None:
        self.items.append((now, amount))
        self.total += amount


class Quotas:
    """The limits and the per-app counters; thread-safe."""

    def __init__(
        self,
        config: Callable[[], QuotasConfig],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._push_bytes: dict[str, _Window] = {}
        self._pushes: dict[str, _Window] = {}
        self._waiting: dict[str, int] = {}
        self._workspace: dict[str, tuple[float, int]] = {}
        """app id -> (when measured, bytes)."""
        self._refused: dict[tuple[str, str], int] = {}
        """(app, quota) -> refusals since start (shown in the status)."""
        self.sources: dict[str, Callable[[str], int]] = {}
        """quota -> the current use of an app, for counts kept elsewhere (the status)."""
        self.workdirs: Callable[[str], Path | None] = lambda app: None
        """app id -> its workdir (the status measures it)."""

    @property
    def config(self) -> QuotasConfig:
        return self._config()

    def limit(self, quota: str) -> int:
        return int(getattr(self._config(), _config_key(quota)))

    def refuse(self, quota: str, app: str, used: int | None) -> QuotaExceeded:
        """Count a refusal and return its error (the caller raises it); ``used`` None:
        not known (SQLite stopped at the limit)."""
        with self._lock:
            self._refused[(app, quota)] = self._refused.get((app, quota), 0) + 1
        return refusal(quota, app, used, self.limit(quota))

    def check(self, quota: str, app: str, used: int, adding: int = 1) -> None:
        """QuotaExceeded when ``used + adding`` is over the limit of ``quota``."""
        if used + adding > self.limit(quota):
            raise self.refuse(quota, app, used)

    # ------------------------------------------------------------------ pushes

    def admit_push(self, app: str, size: int) -> None:
        """Count one push of ``size`` bytes, or refuse it (rate first, then bytes)."""
        now = self._clock()
        with self._lock:
            count = self._pushes.setdefault(app, _Window())
            volume = self._push_bytes.setdefault(app, _Window())
            count.trim(now)
            volume.trim(now)
            over = None
            if count.total + 1 > self.limit("push_rate"):
                over = ("push_rate", count.total)
            elif volume.total + size > self.limit("push_bytes"):
                over = ("push_bytes", volume.total)
            else:
                count.add(now, 1)
                volume.add(now, size)
        if over is not None:
            raise self.refuse(over[0], app, over[1])

    # --------------------------------------------------------- waiting calls

    @contextmanager
    def waiting_call(self, app: str) -> Iterator[None]:
        """Hold one of the app's ``waiting_calls`` slots for the block, or refuse at once."""
        with self._lock:
            used = self._waiting.get(app, 0)
            ok = used < self.limit("waiting_calls")
            if ok:
                self._waiting[app] = used + 1
        if not ok:
            raise self.refuse("waiting_calls", app, used)
        try:
            yield
        finally:
            with self._lock:
                self._waiting[app] -= 1

    # -------------------------------------------------------------- workspace

    def workspace_used(self, app: str, workdir: Path, *, fresh: bool = False) -> int:
        """Bytes under ``workdir`` (measured at most every ``workspace_check_seconds``)."""
        now = self._clock()
        with self._lock:
            seen = self._workspace.get(app)
        if seen is not None and not fresh and now - seen[0] < self.config.workspace_check_seconds:
            return seen[1]
        used = measure(workdir)
        with self._lock:
            self._workspace[app] = (now, used)
        return used

    def check_workspace(self, app: str, workdir: Path, adding: int = 0) -> int:
        """QuotaExceeded when the workdir is over its quota, or would be with ``adding``
        more bytes; else the bytes left."""
        limit = self.limit("workspace_bytes")
        used = self.workspace_used(app, workdir)
        if used + adding > limit:
            used = self.workspace_used(app, workdir, fresh=True)  # maybe freed meanwhile
            if used + adding > limit:
                raise self.refuse("workspace_bytes", app, used)
        return limit - used

    def wrote(self, app: str, size: int) -> None:
        """The system wrote ``size`` bytes into the app's workdir (counted until the next walk)."""
        with self._lock:
            seen = self._workspace.get(app)
            if seen is not None:
                self._workspace[app] = (seen[0], seen[1] + size)

    # ----------------------------------------------------------------- status

    def forget(self, app: str) -> None:
        """An app was removed: its counters go."""
        with self._lock:
            for table in (self._push_bytes, self._pushes, self._workspace):
                table.pop(app, None)
            self._refused = {k: v for k, v in self._refused.items() if k[0] != app}

    def status(self, app: str) -> dict[str, dict[str, Any]]:
        """Every quota of ``app``: ``{used, limit, refused}`` (``over`` for the workdir)."""
        now = self._clock()
        with self._lock:
            used: dict[str, int] = {}
            for quota, table in (("push_bytes", self._push_bytes), ("push_rate", self._pushes)):
                window = table.get(app)
                if window is not None:
                    window.trim(now)
                used[quota] = window.total if window is not None else 0
            used["waiting_calls"] = self._waiting.get(app, 0)
            refused = {q: n for (a, q), n in self._refused.items() if a == app}
        for quota, source in self.sources.items():
            used[quota] = source(app)
        workdir = self.workdirs(app)
        if workdir is not None:
            used["workspace_bytes"] = self.workspace_used(app, workdir)
        out: dict[str, dict[str, Any]] = {}
        for quota in UNITS:
            limit = self.limit(quota)
            entry: dict[str, Any] = {"limit": limit, "refused": refused.get(quota, 0)}
            if quota in used:
                entry["used"] = used[quota]
            if quota == "workspace_bytes" and "used" in entry:
                entry["over"] = entry["used"] > limit
            out[quota] = entry
        return out


def _config_key(quota: str) -> str:
    return "pushes_per_minute" if quota == "push_rate" else quota


def measure(root: Path) -> int:
    """Bytes of the regular files under ``root`` (links are not followed; a tree of more
    than :data:`WALK_MAX_ENTRIES` entries counts as unbounded)."""
    total = 0
    seen = 0
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    seen += 1
                    if seen > WALK_MAX_ENTRIES:
                        return 1 << 62
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(st.st_mode):
                        total += st.st_blocks * 512  # what it takes on disk, as du counts

        except OSError:
            continue
    return total
