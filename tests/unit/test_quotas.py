"""aios/quotas.py and the counts it reads (DESIGN §14.6), without a running system.

The attacks themselves run against the real system in
tests/integration/test_quotas.py; here: the windows and slots, the cards a plan
may put up, instances, and how a workdir is measured.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aios.config import ApprovalsConfig, QuotasConfig
from aios.desktop.instances import Instances
from aios.errors import QuotaExceeded
from aios.events import EventBus
from aios.quotas import Quotas, measure
from aios.runs.approvals import Approvals
from aios.runs.gate import gate
from aios.runs.runs import Runs
from aios.store import Store
from aios.store.runs import RunStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def quotas(clock: Clock | None = None, **limits: int) -> Quotas:
    config = QuotasConfig(**limits)  # type: ignore[arg-type]
    return Quotas(lambda: config, clock or Clock())


def test_pushes_are_counted_per_app_in_a_sliding_minute() -> None:
    clock = Clock()
    q = quotas(clock, pushes_per_minute=3, push_bytes=10_000)
    for _ in range(3):
        q.admit_push("a", 10)
    with pytest.raises(QuotaExceeded) as e:
        q.admit_push("a", 10)
    assert e.value.quota == "push_rate"
    assert str(e.value) == (
        "quota push_rate exceeded: a has 3 pushes in the last minute (limit 3); push less often"
    )
    q.admit_push("b", 10)  # another app has its own count
    clock.now += 60
    q.admit_push("a", 9_000)  # a minute later the window is empty again
    with pytest.raises(QuotaExceeded) as e:
        q.admit_push("a", 2_000)
    assert e.value.quota == "push_bytes"
    status = q.status("a")
    assert status["push_bytes"] == {"limit": 10_000, "refused": 1, "used": 9_000}
    assert status["push_rate"]["refused"] == 1


def test_a_waiting_call_slot_is_given_back_whatever_happens() -> None:
    q = quotas(waiting_calls=2)
    with q.waiting_call("a"), q.waiting_call("a"):
        with pytest.raises(QuotaExceeded) as e, q.waiting_call("a"):
            pass
        assert e.value.quota == "waiting_calls"
        assert q.status("a")["waiting_calls"]["used"] == 2
    with pytest.raises(RuntimeError), q.waiting_call("a"):
        raise RuntimeError("the call failed")
    assert q.status("a")["waiting_calls"]["used"] == 0


def test_a_plan_past_the_pending_cards_quota_gets_errors_naming_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "aios.db")
    try:
        bus = EventBus()
        runstore = RunStore(store)
        approvals = Approvals(runstore, bus, lambda: ApprovalsConfig(mode="smart"))
        approvals.quotas = quotas(pending_cards=2)
        runs = Runs(runstore, bus)
        step = {"step_id": "s1", "tool": "shell_exec", "args": {"cmd": "ls"}}
        for i in range(2):  # two cards up, as two waiting runs would have them
            run = runs.start("instruction", "a", f"sess{i}", text="x")
            approvals.ask(run.run_id, "a", f"sess{i}", approvals.review("a", f"sess{i}", []))
        assert approvals.pending_count("a") == 2
        run = runs.start("instruction", "a", "sess9", text="x")
        presets, _ = gate(approvals, runs, run, "a", [step])
        (result,) = presets.values()
        assert result.status == "error" and result.meta == {"quota": "pending_cards"}
        assert "quota pending_cards exceeded: a has 2" in (result.error or "")
        # a question of the system itself (no app) is not any app's card
        approvals.ask_user(run.run_id, "", "sess9", "route", {"kind": "confirm", "prompt": "?"})
        # another app still gets its card
        other = runs.start("instruction", "b", "sess8", text="x")
        assert approvals.ask(other.run_id, "b", "sess8", []).app == "b"
    finally:
        store.close()


def test_instances_past_the_quota_are_refused() -> None:
    instances = Instances(EventBus())
    instances.quotas = quotas(instances=2)
    instances.open("a", "s1")
    instances.open("a", "s2")
    instances.open("a", "s2")  # the same one again: raised, not a new one
    with pytest.raises(QuotaExceeded) as e:
        instances.open("a", "s3")
    assert e.value.quota == "instances"
    instances.open("b", "s3")
    assert instances.count("a") == 2


def test_a_workdir_is_measured_without_following_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(1_000_000))
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "f").write_bytes(os.urandom(100_000))
    (work / "link").symlink_to(outside)
    (work / "flink").symlink_to(outside / "big")
    used = measure(work)
    assert 100_000 <= used < 200_000
    q = quotas(workspace_bytes=150_000)
    assert q.check_workspace("a", work) > 0
    with pytest.raises(QuotaExceeded) as e:
        q.check_workspace("a", work, 60_000)
    assert e.value.quota == "workspace_bytes"
