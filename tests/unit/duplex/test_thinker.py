"""The thinker's decisions with a real store and bus and an injected clock
(aios/duplex/thinker.py): what ends where the user is not looking is said, what they
watched is not; an app that fails is said once; the idle remark comes once per silence;
do not disturb silences all but reminders, which land quiet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.config import Config
from aios.control.topics import TopicTree
from aios.duplex.thinker import Thinker
from aios.events import EventBus
from aios.store import Store
from aios.store.runs import RunStore
from tests.util import ManualClock


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[Thinker, Store, RunStore, ManualClock, dict[str, Any]]]:
    clock = ManualClock()
    store = Store(tmp_path / "aios.db", clock=clock)
    runs = RunStore(store)
    raw: dict[str, Any] = {"language": "en", "duplex": {"idle_s": 0, "dnd": False}}
    bus = EventBus()
    settings = lambda: Config.model_validate(raw)  # noqa: E731
    topics = TopicTree(store, bus, settings, clock)
    thinker = Thinker(
        bus, store, runs, settings, lambda a: a.title(), clock, topic_of=topics.recent
    )
    thinker.topics = topics  # type: ignore[attr-defined]
    yield thinker, store, runs, clock, raw
    store.close()


def _run(runs: RunStore, sid: str, text: str, state: str) -> dict[str, Any]:
    run_id = f"run_{abs(hash((sid, text))) % 10**12:012d}"
    runs.create_run(run_id, session_id=sid, app="notes", kind="instruction", text=text)
    return {"type": "run", "run_id": run_id, "state": state, "session_id": sid,
            "kind": "instruction", "app": "notes"}  # fmt: skip


def test_a_run_ending_where_the_user_looks_is_not_said_elsewhere_it_is(parts: Any) -> None:
    thinker, store, runs, clock, _ = parts
    a, b = store.ensure_session(None), store.ensure_session(None)
    thinker.set_attention(a, True)
    seen = _run(runs, a, "list notes", "running")
    thinker.handle(seen)
    assert thinker.handle({**seen, "state": "done"}) is None
    other = _run(runs, b, "sort notes", "running")
    thinker.handle(other)
    said = thinker.handle({**other, "state": "done"})
    assert said is not None and said["session_id"] == a
    assert said["message"] == "In another conversation: “sort notes” is done."
    assert store.history(a, limit=1)[0]["role"] == "desktop"


def test_a_long_run_and_a_hidden_page_are_said_in_the_run_s_session(parts: Any) -> None:
    thinker, store, runs, clock, raw = parts
    a = store.ensure_session(None)
    thinker.set_attention(a, True)
    long_ = _run(runs, a, "backup", "running")
    thinker.handle(long_)
    clock.now += 31  # duplex.long_run_s is 30
    assert thinker.handle({**long_, "state": "done"}) is not None
    thinker.set_attention(a, False)
    hidden = _run(runs, a, "tidy", "running")
    thinker.handle(hidden)
    said = thinker.handle({**hidden, "state": "failed"})
    assert said is not None and said["about"] == "run_failed" and said["session_id"] == a


def test_an_app_failing_is_said_once_and_nothing_before_a_page_looks(parts: Any) -> None:
    thinker, store, _, _, _ = parts
    crash = {"type": "app_status", "app": "notes", "status": "failed", "error": "exit 1"}
    assert thinker.handle(crash) is None  # nobody looks yet
    thinker.handle({**crash, "status": "running"})
    thinker.set_attention(store.ensure_session(None), True)
    said = thinker.handle(crash)
    assert said is not None and said["message"] == "Notes crashed: exit 1"
    assert thinker.handle(crash) is None


def _turn(thinker: Any, sid: str, text: str, app: str) -> None:
    hid = thinker.store.add_history(sid, "user", {"text": text})
    thinker.topics.turn(sid, hid, text, app, fallback_label=app.title())


def test_the_idle_remark_comes_once_per_silence(parts: Any) -> None:
    thinker, store, _, clock, raw = parts
    sid = store.ensure_session(None)
    _turn(thinker, sid, "plan the trip to Lisbon", "assistant")
    thinker.set_attention(sid, True)
    assert thinker.idle_due() is None  # off by default
    raw["duplex"]["idle_s"] = 60
    assert thinker.idle_due() == clock.now + 60 and thinker.idle_check() is None
    clock.now += 61
    said = thinker.idle_check()
    assert said is not None and "plan the trip to Lisbon" in said["message"]
    clock.now += 600
    assert thinker.idle_check() is None  # once per silence
    _turn(thinker, sid, "play some jazz", "music")
    clock.now += 61
    said = thinker.idle_check()  # the topic left last, not the newest words
    assert said is not None and "plan the trip to Lisbon" in said["message"]
    assert said["topic"] == thinker.topics.tree(sid)["topics"][1]["id"]


def test_do_not_disturb_silences_all_but_reminders(parts: Any) -> None:
    thinker, store, runs, _, raw = parts
    a, b = store.ensure_session(None), store.ensure_session(None)
    thinker.set_attention(a, True)
    raw["duplex"]["dnd"] = True
    other = _run(runs, b, "sort notes", "running")
    thinker.handle(other)
    assert thinker.handle({**other, "state": "done"}) is None
    reminder = thinker.say(a, "Reminder: stretch", "reminder", reminder=True)
    assert reminder is not None and reminder["quiet"] is True
    assert [h["content"]["message"] for h in store.history(a)] == ["Reminder: stretch"]
