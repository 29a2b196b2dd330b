"""Resumable events over the real ``/api/events`` WebSocket (DESIGN §12 "Events"): a client
that reconnects with ``?since=&epoch=`` gets what it missed with no gap and no duplicate,
or ``resync`` first when the system cannot fill the gap; a malformed ``since`` is a 400."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests
import simple_websocket

from tests.integration.conftest import TOKEN, Running
from tests.util import WsClient

WAIT = 10.0
"""Seconds a client waits for a message that must come."""


@pytest.fixture
def running(make_system: Callable[..., Running]) -> Running:
    return make_system(["echo"])


def ws_url(running: Running, **query: Any) -> str:
    q = "&".join(f"{k}={v}" for k, v in {"token": TOKEN, **query}.items())
    return running.url.replace("http", "ws") + f"/api/events?{q}"


@contextmanager
def connect(running: Running, **query: Any) -> Iterator[WsClient]:
    ws = WsClient.open(ws_url(running, **query), headers={"Origin": running.url})
    try:
        yield ws
    finally:
        if ws.connected:
            ws.close()


def receive(ws: WsClient) -> dict[str, Any]:
    raw = ws.receive(timeout=WAIT)
    assert raw is not None, f"no message within {WAIT}s"
    msg: dict[str, Any] = json.loads(raw)
    return msg


def receive_until(ws: WsClient, seq: int) -> list[dict[str, Any]]:
    """Every message up to and including the one with ``seq``."""
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        got.append(receive(ws))
        if got[-1].get("seq") == seq:
            return got
    raise AssertionError(f"seq {seq} did not arrive within {WAIT}s")


def wait_for(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_hello_carries_seq_and_epoch(running: Running) -> None:
    bus = running.system.bus
    bus.emit("notify", {"app": "echo", "title": "before"})
    with connect(running) as ws:
        hello = receive(ws)
        assert hello["type"] == "hello" and hello["epoch"] == bus.epoch
        assert hello["seq"] == bus.seq and {a["id"] for a in hello["apps"]} == {"echo"}
        wait_for(lambda: bus.subscribers == 1, "the subscription")
        bus.emit("notify", {"app": "echo", "title": "live"})
        live = receive(ws)
        assert live["seq"] == hello["seq"] + 1 and live["epoch"] == bus.epoch
        assert live["title"] == "live" and live["type"] == "notify"


def test_events_missed_while_disconnected_are_replayed_without_gap_or_duplicate(
    running: Running,
) -> None:
    bus = running.system.bus
    with connect(running) as ws:
        hello = receive(ws)
        wait_for(lambda: bus.subscribers == 1, "the subscription")
        bus.emit("notify", {"app": "echo", "title": "seen"})
        last = receive(ws)
        assert last["seq"] == hello["seq"] + 1
    wait_for(lambda: bus.subscribers == 0, "the server to notice the disconnect")

    for i in range(50):
        bus.emit("notify", {"app": "echo", "title": f"missed {i}"})
    # and more from another thread while the client reconnects and replays
    stop = threading.Event()
    live: list[int] = []

    def keep_emitting() -> None:
        n = 0
        while not stop.is_set() and n < 200:
            live.append(bus.emit("push", {"app": "echo", "data": {"n": n}})["seq"])
            n += 1

    t = threading.Thread(target=keep_emitting)
    t.start()
    try:
        with connect(running, since=last["seq"], epoch=hello["epoch"]) as ws:
            again = receive(ws)
            assert again["type"] == "hello" and again["epoch"] == hello["epoch"]
            t.join(WAIT)
            assert not t.is_alive()
            got = receive_until(ws, bus.seq)
    finally:
        stop.set()
        t.join(WAIT)
    seqs = [e["seq"] for e in got]
    assert seqs == list(range(last["seq"] + 1, bus.seq + 1))  # no gap, no duplicate
    assert [e["title"] for e in got[:50]] == [f"missed {i}" for i in range(50)]
    assert all(s in seqs for s in live) and "resync" not in {e["type"] for e in got}


def test_resync_first_on_a_wrong_epoch(running: Running) -> None:
    running.system.bus.emit("notify", {"app": "echo", "title": "x"})
    with connect(running, since=1, epoch="0123456789abcdef") as ws:
        assert receive(ws)["type"] == "hello"
        first = receive(ws)
        assert first["type"] == "resync" and first["epoch"] == running.system.bus.epoch
        assert first["seq"] == running.system.bus.seq
        wait_for(lambda: running.system.bus.subscribers == 1, "the subscription")
        running.system.bus.emit("notify", {"app": "echo", "title": "after"})
        assert receive(ws)["title"] == "after"  # then live events, nothing replayed


def test_resync_first_when_since_is_older_than_the_buffer(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], events={"replay_max": 5, "replay_ceiling": 5})
    bus = running.system.bus
    for i in range(20):
        bus.emit("notify", {"app": "echo", "title": str(i)})
    oldest_held = bus.seq - 4
    with connect(running, since=oldest_held - 2, epoch=bus.epoch) as ws:
        receive(ws)
        assert receive(ws)["type"] == "resync"
    # one step later the buffer still holds everything after since: a replay
    with connect(running, since=oldest_held - 1, epoch=bus.epoch) as ws:
        receive(ws)
        got = receive_until(ws, bus.seq)
        assert [e["seq"] for e in got] == list(range(oldest_held, bus.seq + 1))


def test_a_malformed_since_is_a_400_json_naming_it(running: Running) -> None:
    # the handshake a browser sends, read as the plain HTTP reply it gets
    upgrade = {
        "Origin": running.url,
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    for since in ["abc", "-1", "1.5", "", "１"]:
        r = requests.get(
            running.url + "/api/events",
            params={"token": TOKEN, "since": since},
            headers=upgrade,
            timeout=WAIT,
        )
        assert r.status_code == 400, since
        assert r.headers["Content-Type"].startswith("application/json")
        assert "since must be a non-negative integer" in r.json()["error"]
    r = requests.get(
        running.url + "/api/events",
        params={"token": TOKEN, "since": "1", "epoch": "e" * 65},
        headers=upgrade,
        timeout=WAIT,
    )
    assert r.status_code == 400 and "epoch must be" in r.json()["error"]


def test_the_server_ending_subscriptions_hangs_up_and_the_client_resumes(
    running: Running,
) -> None:
    bus = running.system.bus
    with connect(running) as ws:
        hello = receive(ws)
        wait_for(lambda: bus.subscribers == 1, "the subscription")
        assert bus.end_subscriptions() == 1
        with pytest.raises(simple_websocket.ConnectionClosed):
            while True:
                ws.receive(timeout=WAIT)
    bus.emit("notify", {"app": "echo", "title": "while away"})
    with connect(running, since=hello["seq"], epoch=hello["epoch"]) as ws:
        receive(ws)
        assert receive(ws)["title"] == "while away"
