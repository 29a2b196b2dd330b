"""Keeps the database within its retention (config ``retention``): a background
thread deletes old audit rows, history, tasks, LLM usage, expired cache
entries and finished runs (with their steps and interactions, by the history
retention: ``aios.store.runs``) every ``prune_interval`` seconds, and runs
``VACUUM`` every ``vacuum_hours``. The first pass runs at start.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from aios.config import RetentionConfig
from aios.errors import StoreError
from aios.store import Store

log = logging.getLogger(__name__)


class Pruner:
    def __init__(
        self,
        store: Store,
        retention: Callable[[], RetentionConfig],
        *,
        clock: Callable[[], float] = time.time,
    ):
        self.store = store
        self._retention = retention  # read per pass: settings changes apply to the next one
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.also: list[Callable[[float], object]] = []
        """Called with the time at every pass (the trace files' retention)."""
        self.passes = 0
        self.passed = threading.Condition()
        """Notified after every pass (tests wait on it instead of sleeping)."""

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="aios-pruner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except StoreError as e:
                log.warning("pruning the database failed: %s", e)
            finally:
                with self.passed:
                    self.passes += 1
                    self.passed.notify_all()
            self._stop.wait(self._retention().prune_interval)

    def run_once(self) -> dict[str, int]:
        """One pass: prune past retention, then VACUUM when it is due."""
        r = self._retention()
        now = self._clock()
        deleted = self.store.prune(
            audit_rows=r.audit_rows,
            audit_days=r.audit_days,
            history_rows_per_session=r.history_rows_per_session,
            history_days=r.history_days,
            llm_usage_rows=r.audit_rows,
            now=now,
        )
        if any(deleted.values()):
            log.info(
                "pruned the database: %s",
                ", ".join(f"{n} {table}" for table, n in deleted.items() if n),
            )
        for extra in self.also:
            try:
                extra(now)
            except OSError as e:
                log.warning("pruning failed: %s", e)
        last = self.store.last_vacuum()
        if last is None:
            self.store.set_meta("vacuumed", now)  # a first start: count from now
        elif now - last >= r.vacuum_hours * 3600:
            self.store.vacuum(now)
            log.info("vacuumed the database: %d bytes", self.store.size_bytes())
        return deleted
