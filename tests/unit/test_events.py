"""The event bus: seq/epoch on every event, the replay buffer's bounds, replay on subscribe
with no gap and no duplicate, resync when the gap cannot be filled (DESIGN §12)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from aios.config import EventsConfig
from aios.events import RESYNC, EventBus, Subscription

WAIT = 5.0
"""Seconds a reader waits for an event that must come."""


def drain(sub: Subscription, until_seq: int) -> list[dict[str, Any]]:
    """Every event ``sub`` yields until one with ``seq >= until_seq`` (deadline: WAIT)."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        e = sub.get(timeout=0.1)
        if e is None:
            continue
        got.append(e)
        if e.get("seq", -1) >= until_seq:
            return got
    raise AssertionError(f"no event with seq {until_seq} within {WAIT}s; got {len(got)}")


def test_every_event_carries_seq_epoch_and_ts() -> None:
    bus = EventBus()
    a = bus.emit("notify", {"app": "x", "title": "one"})
    b = bus.emit("log", {"message": "two"})
    assert (a["seq"], b["seq"]) == (1, 2) and bus.seq == 2
    assert a["epoch"] == b["epoch"] == bus.epoch and len(bus.epoch) == 16
    assert a["ts"] <= b["ts"] and a["title"] == "one"
    assert EventBus().epoch != bus.epoch
    with pytest.raises(ValueError, match="unknown event type 'nope'"):
        bus.emit("nope", {})


def test_seq_is_strictly_increasing_and_gapless_across_threads() -> None:
    bus = EventBus(EventsConfig(replay_max=10_000, replay_ceiling=10_000))
    sub = bus.subscribe()
    threads_n, each = 8, 500
    start = threading.Barrier(threads_n)

    def work(i: int) -> None:
        start.wait()
        for k in range(each):
            bus.emit("log", {"thread": i, "k": k})

    threads = [threading.Thread(target=work, args=(i,)) for i in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = drain(sub, threads_n * each)
    assert [e["seq"] for e in got] == list(range(1, threads_n * each + 1))
    # each thread's own events arrive in the order it emitted them
    for i in range(threads_n):
        assert [e["k"] for e in got if e["thread"] == i] == list(range(each))


def test_replay_since_then_live_without_gap_or_duplicate() -> None:
    bus = EventBus()
    for i in range(50):
        bus.emit("notify", {"i": i})
    stop = threading.Event()

    def keep_emitting() -> None:
        while not stop.is_set():
            bus.emit("notify", {"live": True})

    t = threading.Thread(target=keep_emitting)
    t.start()
    try:
        sub = bus.subscribe(since=20, epoch=bus.epoch)
        got = drain(sub, 400)
    finally:
        stop.set()
        t.join()
    assert [e["seq"] for e in got] == list(range(21, 401))
    assert sub.start_seq >= 50 and sub.epoch == bus.epoch


def test_since_equal_to_current_gives_only_live_events() -> None:
    bus = EventBus()
    bus.emit("log", {})
    sub = bus.subscribe(since=1, epoch=bus.epoch)
    assert sub.get(timeout=0) is None
    bus.emit("log", {"n": 2})
    assert drain(sub, 2)[0]["n"] == 2


@pytest.mark.parametrize(
    ("since", "epoch"),
    [(3, "another-epoch"), (0, None), (99, None)],
    ids=["wrong-epoch", "older-than-buffer", "ahead-of-bus"],
)
def test_resync_first_when_the_gap_cannot_be_filled(since: int, epoch: str | None) -> None:
    bus = EventBus(EventsConfig(replay_max=5, replay_seconds=0.001, replay_ceiling=5))
    for _ in range(10):
        bus.emit("log", {})
    assert bus.held() == 5  # seq 6..10
    sub = bus.subscribe(since=since, epoch=epoch)
    first = sub.get(timeout=1)
    assert first == {"type": RESYNC, "seq": 10, "epoch": bus.epoch, "ts": first["ts"]}
    assert sub.get(timeout=0) is None  # nothing replayed after the resync
    bus.emit("log", {"after": True})
    assert sub.get(timeout=1)["seq"] == 11


def test_since_just_before_the_oldest_held_event_replays_all_held() -> None:
    bus = EventBus(EventsConfig(replay_max=5, replay_seconds=0.001, replay_ceiling=5))
    for _ in range(10):
        bus.emit("log", {})
    got = drain(bus.subscribe(since=5, epoch=bus.epoch), 10)
    assert [e["seq"] for e in got] == [6, 7, 8, 9, 10]


def test_buffer_keeps_the_last_n_and_everything_recent_up_to_the_ceiling() -> None:
    # young events are all kept (beyond replay_max), up to the ceiling
    bus = EventBus(EventsConfig(replay_max=3, replay_seconds=600, replay_ceiling=8))
    for _ in range(20):
        bus.emit("log", {})
    assert bus.held() == 8
    # old events beyond the last replay_max go
    now = [0.0]
    cfg = EventsConfig(replay_max=3, replay_seconds=60, replay_ceiling=100)
    old = EventBus(cfg, clock=lambda: now[0])
    for _ in range(10):
        old.emit("log", {})
    assert old.held() == 10  # all younger than a minute
    now[0] = 61.0
    old.emit("log", {})  # trimming happens as events are emitted
    assert old.held() == 3
    assert [e["seq"] for e in drain(old.subscribe(since=8), 11)] == [9, 10, 11]


def test_a_reader_the_buffer_moved_past_gets_resync_not_a_silent_gap() -> None:
    bus = EventBus(EventsConfig(replay_max=4, replay_seconds=0.001, replay_ceiling=4))
    sub = bus.subscribe()
    for _ in range(10):
        bus.emit("log", {})
    first = sub.get(timeout=1)
    assert first["type"] == RESYNC and sub.resyncs == 1
    bus.emit("log", {})
    assert sub.get(timeout=1)["seq"] == 11


def test_end_subscriptions_wakes_readers_and_the_bus_goes_on() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(sub.get(timeout=WAIT)))
    t.start()
    assert bus.end_subscriptions() == 1
    t.join(WAIT)
    assert not t.is_alive() and got == [None] and sub.ended
    assert bus.subscribers == 0
    bus.emit("log", {})
    assert bus.subscribe(since=0, epoch=bus.epoch).get(timeout=1)["seq"] == 1


def test_close_wakes_waiting_readers() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    got: list[Any] = []
    t = threading.Thread(target=lambda: got.append(sub.get(timeout=WAIT)))
    t.start()
    bus.close()
    t.join(WAIT)
    assert not t.is_alive() and got == [None]


def test_get_many_returns_what_is_there_up_to_the_limit_in_order() -> None:
    bus = EventBus()
    sub = bus.subscribe()
    for _ in range(10):
        bus.emit("log", {})
    assert [e["seq"] for e in sub.get_many(timeout=1, limit=4)] == [1, 2, 3, 4]
    assert [e["seq"] for e in sub.get_many(timeout=1, limit=100)] == list(range(5, 11))
    assert sub.get_many(timeout=0, limit=100) == []


def test_events_emitted_between_a_resync_subscription_and_its_first_read_are_kept() -> None:
    """A page of an earlier run reconnects (another epoch): its hello says seq N; what
    the system emits before the stream is first read still follows the resync."""
    bus = EventBus()
    for _ in range(3):
        bus.emit("log", {})
    sub = bus.subscribe(since=2, epoch="an-earlier-run")
    assert sub.start_seq == 3
    bus.emit("notify", {"body": "right after the reconnect"})
    first = sub.get(timeout=1)
    assert first is not None and first["type"] == RESYNC and first["seq"] == 3
    after = sub.get(timeout=1)
    assert after is not None and after["body"] == "right after the reconnect"
