"""The scheduler's rules with an injected clock (aios/duplex/automations.py): a due time
is taken once — by one pass, by two passes racing, across a restart, and after a crash
in the middle of its run; a due time passed by more than ``grace_s`` is reported missed
once, with how many times, and never run late."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from aios.config import AutomationsConfig
from aios.duplex.automations import Scheduler, next_after
from aios.duplex.when import When
from aios.errors import BadRequest
from aios.store import Store
from aios.store.automations import AutomationStore

T0 = datetime(2026, 12, 7, 10, 0).astimezone().timestamp()  # a Monday, 10:00


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Calls:
    """What the scheduler handed on: fired rows and missed reports."""

    def __init__(self) -> None:
        self.fired: list[str] = []
        self.missed: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def fire(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.fired.append(row["id"])

    def miss(self, row: dict[str, Any], count: int) -> None:
        self.missed.append((row["id"], count))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "aios.db"


def _open(db: Path, clock: Clock, calls: Calls, **cfg: Any) -> tuple[Scheduler, Store]:
    store = Store(db, clock=clock)
    settings = AutomationsConfig.model_validate({"grace_s": 60, **cfg})
    sched = Scheduler(
        AutomationStore(store), lambda: settings, fire=calls.fire, missed=calls.miss, clock=clock
    )
    return sched, store


@pytest.fixture
def parts(db: Path) -> Iterator[tuple[Scheduler, Clock, Calls]]:
    clock, calls = Clock(), Calls()
    sched, store = _open(db, clock, calls)
    yield sched, clock, calls
    store.close()


def _join(sched: Scheduler) -> None:
    for t in sched.fired:
        t.join(timeout=5)


def _once(sched: Scheduler, clock: Clock, after: float, what: str = "stretch") -> str:
    at = datetime.fromtimestamp(clock.now + after).astimezone()
    return str(sched.create("sess_a", When("reminder", what, at=at))["id"])


def test_a_due_time_fires_once_however_often_the_loop_looks(
    parts: tuple[Scheduler, Clock, Calls],
) -> None:
    sched, clock, calls = parts
    auto = _once(sched, clock, 5)
    assert sched.tick() == []  # not due yet
    clock.now += 5
    assert sched.tick() == [auto]
    assert sched.tick() == [] and sched.tick(clock.now + 3600) == []
    _join(sched)
    assert calls.fired == [auto]
    assert sched.store.get(auto)["next_due"] is None


def test_two_passes_racing_take_a_due_time_once(parts: tuple[Scheduler, Clock, Calls]) -> None:
    sched, clock, calls = parts
    auto = _once(sched, clock, 1)
    clock.now += 1
    results: list[list[str]] = []
    go = threading.Barrier(4)

    def one_pass() -> None:
        go.wait()
        results.append(sched.tick())

    threads = [threading.Thread(target=one_pass) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _join(sched)
    assert sorted(map(len, results)) == [0, 0, 0, 1] and calls.fired == [auto]


def test_a_cron_fires_each_due_time_once_and_moves_on(
    parts: tuple[Scheduler, Clock, Calls],
) -> None:
    sched, clock, calls = parts
    auto = sched.create("sess_a", When("run", "read my todos", cron="0 8 * * *"))["id"]
    due = next_after("0 8 * * *", T0)  # tomorrow 08:00
    assert sched.store.get(auto)["next_due"] == due
    clock.now = due + 1
    assert sched.tick() == [auto] and sched.tick() == []
    row = sched.store.get(auto)
    assert row["last_due"] == due and row["next_due"] == next_after("0 8 * * *", due + 1)
    _join(sched)
    assert calls.fired == [auto] and calls.missed == []


def test_a_restart_after_the_marker_never_runs_it_again(db: Path) -> None:
    """The marker is written before the run: a crash mid-run is not a second run."""
    clock, calls = Clock(), Calls()
    sched, store = _open(db, clock, calls)
    auto = _once(sched, clock, 2)
    clock.now += 2
    crashed = Calls()
    row = sched.store.due(clock.now)[0]
    # the pass took the due time, then the desktop died before the run began
    assert sched.store.take(auto, row["next_due"], None)
    store.close()
    again, store2 = _open(db, clock, crashed)
    try:
        clock.now += 10
        assert again.tick() == [] and crashed.fired == [] and crashed.missed == []
        assert again.store.get(auto)["runs"] == 1
    finally:
        store2.close()


def test_downtime_across_due_times_is_reported_missed_once_and_not_run(db: Path) -> None:
    clock, calls = Clock(), Calls()
    sched, store = _open(db, clock, calls)
    once = _once(sched, clock, 30, "meeting")
    daily = sched.create("sess_a", When("run", "read my todos", cron="0 8 * * *"))["id"]
    store.close()  # the desktop is off for three days
    clock.now = T0 + 3 * 86400
    later, store2 = _open(db, clock, calls)
    try:
        assert later.tick() == []
        assert sorted(calls.missed) == sorted([(once, 1), (daily, 3)])
        assert calls.fired == []
        assert later.store.get(once)["next_due"] is None
        assert later.store.get(daily)["next_due"] == next_after("0 8 * * *", clock.now)
        assert later.tick() == [] and len(calls.missed) == 2  # said once
    finally:
        store2.close()


def test_a_late_pass_within_grace_still_runs(parts: tuple[Scheduler, Clock, Calls]) -> None:
    sched, clock, calls = parts
    auto = _once(sched, clock, 1)
    clock.now += 1 + 59  # the machine was busy, within grace_s
    assert sched.tick() == [auto]
    _join(sched)
    assert calls.fired == [auto] and calls.missed == []


def test_paused_is_skipped_and_resumed_moves_on(parts: tuple[Scheduler, Clock, Calls]) -> None:
    sched, clock, calls = parts
    auto = sched.create("sess_a", When("run", "x y", cron="0 * * * *"))["id"]
    sched.edit(auto, {"paused": True})
    clock.now += 3 * 3600
    assert sched.tick() == [] and calls.missed == []
    row = sched.edit(auto, {"paused": False})
    assert row["next_due"] == next_after("0 * * * *", clock.now) and sched.tick() == []


def test_bad_schedules_are_refused_with_the_reason(parts: tuple[Scheduler, Clock, Calls]) -> None:
    sched, clock, _ = parts
    past = datetime.fromtimestamp(clock.now - 1).astimezone()
    with pytest.raises(BadRequest, match="past"):
        sched.create("sess_a", When("reminder", "x", at=past))
    with pytest.raises(BadRequest, match="five fields"):
        sched.create("sess_a", When("run", "x", cron="every day"))
    strict = AutomationsConfig(min_interval_s=600)
    sched._settings = lambda: strict
    with pytest.raises(BadRequest, match="min_interval_s"):
        sched.create("sess_a", When("run", "x", cron="*/5 * * * *"))
