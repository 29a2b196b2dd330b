"""Task threads (aios/control/app_client.py ``run_in_thread``): kept for the next task,
yet a task never waits behind another one, and each runs in its caller's context."""

from __future__ import annotations

import contextvars
import threading

from aios.control.app_client import run_in_thread

who: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


def test_a_task_never_waits_behind_a_hung_one() -> None:
    hung = threading.Event()
    release = threading.Event()

    def hang() -> str:
        hung.set()
        release.wait(60)
        return "hung"

    stuck = run_in_thread(hang)
    assert hung.wait(30)
    try:
        # every other task still runs at once, each beside the hung one
        results = [run_in_thread(lambda i=i: i * 2).result(timeout=30) for i in range(20)]
        assert results == [i * 2 for i in range(20)]
        assert not stuck.done()
    finally:
        release.set()
    assert stuck.result(timeout=30) == "hung"


def test_a_task_runs_in_its_callers_context_and_gives_back_its_error() -> None:
    for name in ("alice", "bob"):
        token = who.set(name)
        try:
            assert run_in_thread(who.get).result(timeout=30) == name
        finally:
            who.reset(token)

    def fail() -> None:
        raise ValueError("no")

    error = run_in_thread(fail).exception(timeout=30)
    assert isinstance(error, ValueError)
    assert run_in_thread(who.get).result(timeout=30) == "nobody"  # no context leaks across
