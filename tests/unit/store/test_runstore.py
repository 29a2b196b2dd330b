"""Runs, interactions and tool policy in real SQLite files (DESIGN §12 "API",
"Recovery", the issue's "Bad input"): first answer wins, finished runs never move
again, a crash loses no answer, and retention deletes old runs whole."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.config import Config, RetentionConfig
from aios.errors import Conflict, NotFound, StoreCorrupt, StoreFull
from aios.store import Store
from aios.store.pruner import Pruner
from aios.store.runs import RunStore

ROOT = Path(__file__).resolve().parents[3]
DAY = 86400.0


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "aios.db"


@pytest.fixture
def runs(db_path: Path, clock: Clock) -> Iterator[RunStore]:
    store = Store(db_path, clock=clock)
    yield RunStore(store)
    store.close()


def _run(rs: RunStore, n: int = 0, *, session: str = "sess_a", app: str = "notes") -> str:
    run_id = f"run_{n:016x}"
    rs.create_run(run_id, session_id=session, app=app, kind="instruction", text=f"do {n}")
    return run_id


def _ia(rs: RunStore, run_id: str, n: int = 0, **extra: Any) -> dict[str, Any]:
    return rs.create_interaction(
        {
            "id": f"ia_{n:016x}",
            "run_id": run_id,
            "app": "notes",
            "session_id": "sess_a",
            "kind": "approval",
            "prompt": "Run a command",
            "steps": [{"step_id": "s1", "tool": "shell_exec", "risk": "high", "text": "ls -l"}],
            "expires": 2_000_000.0,
            **extra,
        }
    )


PLAN = [
    {"step_id": "s1", "tool": "file_read", "risk": "safe", "status": "ok", "text": "notes.txt"},
    {"step_id": "s2", "tool": "shell_exec", "risk": "high", "status": "pending", "text": "ls -l"},
    {"step_id": "s3", "tool": "file_write", "risk": "medium", "status": "pending", "text": "o.txt"},
]


# ------------------------------------------------------------------ runs


def test_a_run_moves_through_its_states_with_the_store_clock(runs: RunStore, clock: Clock) -> None:
    made = runs.create_run(
        "run_a", session_id="sess_a", app="notes", kind="action", request={"action": "save"}
    )
    assert made["state"] == "running" and made["created"] == made["updated"] == clock.now
    assert made["request"] == {"action": "save"} and made["steps"] == []
    clock.now += 5
    assert runs.set_run_state("run_a", "waiting")["state"] == "waiting"
    runs.set_run_state("run_a", "running")
    clock.now += 5
    done = runs.set_run_state("run_a", "done", response={"message": "saved"})
    assert (done["state"], done["response"], done["withdrawn"]) == (
        "done",
        {"message": "saved"},
        [],
    )
    assert done["updated"] == made["created"] + 10
    again = runs.run("run_a")
    assert (
        again is not None and again["state"] == "done" and again["response"] == {"message": "saved"}
    )
    assert runs.run("run_nope") is None


def test_bad_states_kinds_and_finished_runs_are_refused_naming_the_problem(
    runs: RunStore,
) -> None:
    run_id = _run(runs)
    with pytest.raises(ValueError, match="unknown run state 'paused': use one of running, wait"):
        runs.set_run_state(run_id, "paused")
    with pytest.raises(ValueError, match="unknown run kind 'chat': use one of instruction, open"):
        runs.create_run("run_b", session_id=None, app=None, kind="chat")
    with pytest.raises(Conflict, match=f"the run {run_id} exists already"):
        _run(runs)
    with pytest.raises(NotFound, match="no run run_nope"):
        runs.set_run_state("run_nope", "done")
    runs.set_run_state(run_id, "cancelled")
    for state in ("running", "done", "cancelled"):  # cancel of a finished run: a conflict
        with pytest.raises(Conflict, match=f"the run {run_id} is already cancelled") as e:
            runs.set_run_state(run_id, state)
        assert e.value.current["state"] == "cancelled"


def test_steps_are_kept_in_order_updated_in_place_and_summarised_in_listings(
    runs: RunStore,
) -> None:
    run_id = _run(runs)
    runs.set_steps(run_id, PLAN)
    step = runs.update_step(run_id, "s2", status="ok", decision="user", result={"stdout": "x"})
    assert step == {**PLAN[1], "status": "ok", "decision": "user", "result": {"stdout": "x"}}
    runs.set_steps(run_id, [{"step_id": "s1", "tool": "notify", "status": "pending"}], append=True)
    runs.update_step(run_id, "s1", status="ok")  # the latest step of that id: the new round's
    full = runs.run(run_id)
    assert full is not None
    assert [(s["step_id"], s["tool"], s["status"]) for s in full["steps"]] == [
        ("s1", "file_read", "ok"),
        ("s2", "shell_exec", "ok"),
        ("s3", "file_write", "pending"),
        ("s1", "notify", "ok"),
    ]
    assert full["steps"][1]["result"] == {"stdout": "x"}
    listed = runs.runs()[0]["steps"]
    assert listed[1] == {
        "step_id": "s2",
        "tool": "shell_exec",
        "risk": "high",
        "status": "ok",
        "decision": "user",
        "text": "ls -l",
    }
    runs.set_steps(run_id, PLAN[:1])  # without append: the plan is replaced
    assert [s["step_id"] for s in (runs.run(run_id) or {})["steps"]] == ["s1"]
    with pytest.raises(NotFound, match=f"run {run_id} has no step 's9'"):
        runs.update_step(run_id, "s9", status="ok")
    with pytest.raises(NotFound, match="no run run_nope"):
        runs.set_steps("run_nope", PLAN)
    with pytest.raises(ValueError, match="has no step_id"):
        runs.set_steps(run_id, [{"tool": "notify"}])


def test_runs_are_listed_newest_first_by_session_active_and_limit(
    runs: RunStore, clock: Clock
) -> None:
    for n in range(6):
        clock.now += 1
        _run(runs, n, session="sess_a" if n % 2 == 0 else "sess_b")
    runs.set_run_state(_run_id(0), "done")
    runs.set_run_state(_run_id(3), "waiting")
    assert [r["run_id"] for r in runs.runs()] == [_run_id(n) for n in (5, 4, 3, 2, 1, 0)]
    assert [r["run_id"] for r in runs.runs(session="sess_a")] == [_run_id(n) for n in (4, 2, 0)]
    assert [r["run_id"] for r in runs.runs(active=True, limit=3)] == [_run_id(n) for n in (5, 4, 3)]
    assert [r["run_id"] for r in runs.runs(session="sess_a", active=True)] == [
        _run_id(4),
        _run_id(2),
    ]
    assert len(runs.runs(limit=0)) == 1  # clamped to at least one
    first = runs.runs(limit=1)[0]
    assert set(first) == {
        "run_id",
        "session_id",
        "app",
        "kind",
        "state",
        "created",
        "updated",
        "text",
        "stopped_at",
        "steps",
    }


def _run_id(n: int) -> str:
    return f"run_{n:016x}"


# ---------------------------------------------------------- interactions


def test_an_interaction_is_answered_once_and_the_same_answer_again_is_same(
    runs: RunStore,
) -> None:
    run_id = _run(runs)
    ia = _ia(runs, run_id)
    assert ia["state"] == "pending" and ia["steps"][0]["text"] == "ls -l"
    assert ia["answer"] is None and ia["expires"] == 2_000_000.0
    outcome, row = runs.answer_interaction(ia["id"], {"decision": "allow"})
    assert outcome == "answered" and row["state"] == "answered"
    assert row["answer"] == {"decision": "allow"}
    assert runs.answer_interaction(ia["id"], {"decision": "allow"}) == ("same", row)
    outcome, first = runs.answer_interaction(ia["id"], {"decision": "deny"})
    assert outcome == "conflict" and first["answer"] == {"decision": "allow"}
    assert runs.answer_interaction("ia_nope", {"decision": "allow"}) == ("missing", {})
    assert runs.set_interaction_state(ia["id"], "expired") is False  # answered stays answered
    assert (runs.interaction(ia["id"]) or {})["state"] == "answered"


def test_an_expired_or_withdrawn_interaction_cannot_be_answered(runs: RunStore) -> None:
    run_id = _run(runs)
    a, b = _ia(runs, run_id, 1), _ia(runs, run_id, 2)
    assert runs.set_interaction_state(a["id"], "expired") is True
    assert runs.set_interaction_state(a["id"], "withdrawn") is False
    assert runs.set_interaction_state(b["id"], "withdrawn") is True
    for ia, state in ((a, "expired"), (b, "withdrawn")):
        outcome, row = runs.answer_interaction(ia["id"], {"decision": "allow"})
        assert (outcome, row["state"], row["answer"]) == ("conflict", state, None)
    with pytest.raises(ValueError, match="unknown interaction state 'answered': use one of exp"):
        runs.set_interaction_state(a["id"], "answered")
    assert runs.set_interaction_state("ia_nope", "expired") is False


def test_interactions_are_listed_by_pending_session_and_run(runs: RunStore, clock: Clock) -> None:
    r1, r2 = _run(runs, 1), _run(runs, 2, session="sess_b")
    clock.now += 1
    _ia(runs, r1, 1)
    clock.now += 1
    _ia(runs, r2, 2, session_id="sess_b")
    clock.now += 1
    _ia(runs, r1, 3)
    runs.answer_interaction(_ia_id(3), {"decision": "deny"})
    assert [i["id"] for i in runs.interactions()] == [_ia_id(1), _ia_id(2), _ia_id(3)]
    assert [i["id"] for i in runs.interactions(pending=True)] == [_ia_id(1), _ia_id(2)]
    assert [i["id"] for i in runs.interactions(pending=True, session="sess_a")] == [_ia_id(1)]
    assert [i["id"] for i in runs.interactions(run_id=r1)] == [_ia_id(1), _ia_id(3)]


def _ia_id(n: int) -> str:
    return f"ia_{n:016x}"


def test_interactions_need_an_active_run_and_an_id(runs: RunStore) -> None:
    with pytest.raises(NotFound, match="no run run_nope for interaction"):
        _ia(runs, "run_nope")
    run_id = _run(runs)
    _ia(runs, run_id)
    with pytest.raises(Conflict, match="exists already"):
        _ia(runs, run_id)
    with pytest.raises(ValueError, match="an interaction needs 'id'"):
        runs.create_interaction({"run_id": run_id, "kind": "approval"})
    runs.set_run_state(run_id, "done")
    with pytest.raises(Conflict, match=f"the run {run_id} is already done"):
        _ia(runs, run_id, 9)


def test_ending_a_run_withdraws_its_pending_interactions_only(runs: RunStore) -> None:
    r1, r2 = _run(runs, 1), _run(runs, 2)
    _ia(runs, r1, 1)
    _ia(runs, r1, 2)
    _ia(runs, r2, 3)
    runs.answer_interaction(_ia_id(2), {"decision": "allow"})
    runs.set_run_state(r1, "waiting")
    assert runs.set_run_state(r1, "running")["withdrawn"] == []  # not ended: still pending
    ended = runs.set_run_state(r1, "cancelled")
    assert ended["withdrawn"] == [_ia_id(1)]
    states = {i["id"]: i["state"] for i in runs.interactions()}
    assert states == {_ia_id(1): "withdrawn", _ia_id(2): "answered", _ia_id(3): "pending"}


@pytest.mark.parametrize("answers", ["different", "equal"])
@pytest.mark.parametrize("stores", ["one store", "two stores on one file"])
def test_two_answers_at_once_exactly_one_wins(db_path: Path, answers: str, stores: str) -> None:
    first = Store(db_path)
    second = first if stores == "one store" else Store(db_path)
    tabs = (RunStore(first), RunStore(second))
    run_id = _run(tabs[0])
    decisions = ("allow", "deny") if answers == "different" else ("allow", "allow")
    rounds = 40
    for n in range(rounds):
        _ia(tabs[0], run_id, n)
    outcomes: list[list[tuple[str, dict[str, Any]]]] = [[], []]
    barrier = threading.Barrier(2)

    def tab(k: int) -> None:
        for n in range(rounds):
            barrier.wait()
            outcomes[k].append(tabs[k].answer_interaction(_ia_id(n), {"decision": decisions[k]}))

    threads = [threading.Thread(target=tab, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loser = "conflict" if answers == "different" else "same"
    for n in range(rounds):
        pair = [outcomes[0][n], outcomes[1][n]]
        kinds = sorted(o for o, _ in pair)
        assert kinds == sorted(["answered", loser]), (n, pair)
        won = next(row for o, row in pair if o == "answered")
        assert all(row["answer"] == won["answer"] for _, row in pair)  # the loser sees the winner
        assert (tabs[0].interaction(_ia_id(n)) or {})["answer"] == won["answer"]
    first.close()
    second.close()


# -------------------------------------------------------------- recovery

CRASH_AFTER_ANSWERING = """
import os, signal, sys
from aios.store import Store
from aios.store.runs import RunStore
rs = RunStore(Store(sys.argv[1]))
rs.create_run("run_crash", session_id="sess_a", app="notes", kind="instruction", text="ls")
rs.set_steps("run_crash", [{"step_id": "s1", "tool": "shell_exec", "status": "pending"}])
rs.set_run_state("run_crash", "waiting")
rs.create_interaction({"id": "ia_crash", "run_id": "run_crash", "kind": "approval"})
rs.create_interaction({"id": "ia_open", "run_id": "run_crash", "kind": "approval"})
assert rs.answer_interaction("ia_crash", {"decision": "allow"})[0] == "answered"
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_an_answer_given_before_a_crash_is_kept_and_the_run_is_interrupted(
    db_path: Path,
) -> None:
    db_path.parent.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_AFTER_ANSWERING, str(db_path)], env=env, capture_output=True
    )
    assert proc.returncode == -9, proc.stderr.decode()
    store = Store(db_path)
    rs = RunStore(store)
    assert (rs.interaction("ia_crash") or {})["answer"] == {"decision": "allow"}
    changed = rs.interrupt_unfinished_runs()
    assert [(r["run_id"], r["state"], r["stopped_at"]) for r in changed] == [
        ("run_crash", "interrupted", "s1")
    ]
    assert changed[0]["withdrawn"] == ["ia_open"]
    assert (rs.interaction("ia_crash") or {})["state"] == "answered"  # not lost, not re-asked
    assert rs.answer_interaction("ia_crash", {"decision": "allow"})[0] == "same"
    assert rs.answer_interaction("ia_crash", {"decision": "deny"})[0] == "conflict"
    with pytest.raises(Conflict):  # an interrupted run never runs again by itself
        rs.set_run_state("run_crash", "running")
    store.close()


def test_runs_left_running_or_waiting_are_interrupted_at_start(db_path: Path) -> None:
    store = Store(db_path)
    rs = RunStore(store)
    running, waiting, done = _run(rs, 1), _run(rs, 2), _run(rs, 3)
    rs.set_steps(
        running,
        [{**s, "status": st} for s, st in zip(PLAN, ("ok", "started", "pending"), strict=True)],
    )
    rs.set_steps(waiting, PLAN)
    rs.set_run_state(waiting, "waiting")
    _ia(rs, waiting, 1)
    _ia(rs, running, 2)
    rs.set_run_state(done, "done")
    store.close()  # the system stops without finishing them

    store = Store(db_path)
    rs = RunStore(store)
    changed = rs.interrupt_unfinished_runs()
    assert [(r["run_id"], r["state"], r["stopped_at"], r["withdrawn"]) for r in changed] == [
        (running, "interrupted", "s2", [_ia_id(2)]),
        (waiting, "interrupted", "s2", [_ia_id(1)]),
    ]
    assert (rs.run(done) or {})["state"] == "done"
    assert rs.interactions(pending=True) == []
    assert {i["state"] for i in rs.interactions()} == {"withdrawn"}
    assert rs.runs(active=True) == []
    assert rs.interrupt_unfinished_runs() == []
    store.close()


def test_the_system_interrupts_unfinished_runs_when_it_starts_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from aios.system import System  # noqa: PLC0415 - the whole system only for this test

    config = Config(data_dir=str(tmp_path / "data"), apps_dir=str(tmp_path / "apps"))
    (tmp_path / "apps").mkdir()
    store = Store(config.data_path / "aios.db")
    rs = RunStore(store)
    run_id = _run(rs)
    rs.set_run_state(run_id, "waiting")
    _ia(rs, run_id)
    store.close()
    caplog.set_level(logging.INFO, logger="aios.system")
    system = System(config, port=0)
    try:
        assert (system.runstore.run(run_id) or {})["state"] == "interrupted"
        assert (system.runstore.interaction(_ia_id(0)) or {})["state"] == "withdrawn"
        lines = [r.getMessage() for r in caplog.records if r.name == "aios.system"]
        assert "1 run(s) left running or waiting marked interrupted" in lines
    finally:
        system.stop()
        system.store.close()


# ---------------------------------------------------------------- policy


def test_policy_overrides_are_set_cleared_and_survive_reopening(db_path: Path) -> None:
    store = Store(db_path)
    rs = RunStore(store)
    assert rs.policy("notes") == {}
    rs.set_policy("notes", "shell_exec", "allow")  # an "always allow"
    rs.set_policy("notes", "file_write", "ask")
    rs.set_policy("notes", "file_write", "never")
    rs.set_policy("weather", "http_request", "ask")
    with pytest.raises(ValueError, match="unknown policy value 'always': use one of allow, ask"):
        rs.set_policy("notes", "shell_exec", "always")
    store.close()
    store = Store(db_path)
    rs = RunStore(store)
    assert rs.policy("notes") == {"shell_exec": "allow", "file_write": "never"}
    rs.set_policy("notes", "shell_exec", None)  # revoked
    rs.set_policy("notes", "nothing_set", None)  # clearing what is not set is no error
    assert rs.policy("notes") == {"file_write": "never"}
    assert rs.policy("weather") == {"http_request": "ask"}
    store.close()


# ------------------------------------------------------------- retention


def test_the_pruner_deletes_old_finished_runs_with_their_steps_and_interactions(
    runs: RunStore, clock: Clock
) -> None:
    old_done, old_active = _run(runs, 1), _run(runs, 2)
    for run_id in (old_done, old_active):
        runs.set_steps(run_id, PLAN)
        _ia(runs, run_id, int(run_id[-1]))
    runs.set_run_state(old_done, "done")
    clock.now += 100 * DAY
    fresh = _run(runs, 3)
    runs.set_run_state(fresh, "failed")
    pruner = Pruner(runs.store, lambda: RetentionConfig(history_days=90), clock=clock)
    deleted = pruner.run_once()
    assert deleted["runs"] == 1
    assert runs.run(old_done) is None and runs.interaction(_ia_id(1)) is None
    leftover = runs.store._query("SELECT count(*) FROM run_steps WHERE run_id=?", (old_done,))
    assert leftover[0][0] == 0
    assert {r["run_id"] for r in runs.runs()} == {old_active, fresh}  # active ones stay
    assert runs.interaction(_ia_id(2)) is not None
    assert pruner.run_once()["runs"] == 0


def test_the_pruner_keeps_the_newest_finished_runs_of_each_session(
    runs: RunStore, clock: Clock
) -> None:
    keep = 10
    for n in range(keep + 5):
        clock.now += 1
        run_id = _run(runs, n, session="sess_a")
        runs.set_run_state(run_id, "done")
    active = _run(runs, 99, session="sess_a")
    other = _run(runs, 100, session="sess_b")
    runs.set_run_state(other, "done")
    pruner = Pruner(runs.store, lambda: RetentionConfig(history_rows_per_session=keep), clock=clock)
    assert pruner.run_once()["runs"] == 5
    left = [r["run_id"] for r in runs.runs(session="sess_a", limit=100)]
    assert left == [active] + [_run_id(n) for n in range(keep + 4, 4, -1)]
    assert runs.run(other) is not None


# ----------------------------------------------------------------- faults


def test_a_full_database_is_store_full_not_a_sqlite_error(tmp_path: Path) -> None:
    store = Store(tmp_path / "aios.db", pool_size=1)  # one connection: the PRAGMA below holds
    rs = RunStore(store)
    run_id = _run(rs)
    _ia(rs, run_id)
    pages = store._query("PRAGMA page_count")[0][0]
    store._query(f"PRAGMA max_page_count={pages}")
    with pytest.raises(StoreFull, match=f"the disk holding {tmp_path} is full"):
        for n in range(10_000):
            rs.set_steps(run_id, [{"step_id": f"s{n}", "text": "x" * 1000}], append=True)
    with pytest.raises(StoreFull):
        rs.create_run("run_big", session_id="s", app="a", kind="instruction", text="x" * 1_000_000)
    store._query(f"PRAGMA max_page_count={pages * 1000}")  # space returns
    assert rs.answer_interaction(_ia_id(0), {"decision": "allow"})[0] == "answered"
    store.close()


def test_a_damaged_database_is_store_corrupt_not_a_sqlite_error(tmp_path: Path) -> None:
    path = tmp_path / "aios.db"
    store = Store(path, pool_size=1)
    rs = RunStore(store)
    for n in range(300):
        _run(rs, n)
    store._query("PRAGMA wal_checkpoint(TRUNCATE)")
    store._discard(store._idle.pop())  # the next operation reads the file afresh
    with path.open("r+b") as f:
        f.seek(4096 * 3)
        f.write(os.urandom(4096 * 40))
    for call in (
        lambda: rs.runs(limit=1000),
        lambda: rs.run(_run_id(200)),
        lambda: _run(rs, 1000),
        lambda: rs.answer_interaction("ia_x", {"decision": "allow"}),
        lambda: rs.interrupt_unfinished_runs(),
    ):
        with pytest.raises(StoreCorrupt, match="is damaged"):
            call()
    store.close()
