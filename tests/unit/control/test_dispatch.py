"""Per-app call slots and the rotating log pump, without processes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from aios.apphost.applog import LogPump
from aios.config import AppsConfig
from aios.control.app_client import AppSlots
from aios.errors import AppBusy
from tests.util import wait_for


def test_a_full_app_refuses_at_once_while_another_app_still_gets_a_slot() -> None:
    slots, limits = AppSlots(), AppsConfig(max_concurrent_calls=1, max_waiting_calls=0)
    with slots.slot("hung", limits):
        with pytest.raises(AppBusy, match="app 'hung' is busy: 1 calls are in flight"):
            with slots.slot("hung", limits):
                pass
        with slots.slot("other", limits):
            assert slots.load("other") == (1, 0)
    assert slots.load("hung") == (0, 0)


def test_a_waiting_call_gets_the_slot_when_it_frees_or_gives_up_after_busy_wait() -> None:
    slots = AppSlots()
    limits = AppsConfig(max_concurrent_calls=1, max_waiting_calls=1, busy_wait=30)
    release, got = threading.Event(), threading.Event()

    def holder() -> None:
        with slots.slot("a", limits):
            release.wait()

    def waiter() -> None:
        with slots.slot("a", limits):
            got.set()

    t1 = threading.Thread(target=holder)
    t1.start()
    wait_for(lambda: slots.load("a") == (1, 0), "the slot taken")
    t2 = threading.Thread(target=waiter)
    t2.start()
    wait_for(lambda: slots.load("a") == (1, 1), "one call waiting")
    with pytest.raises(AppBusy, match="1 waiting"):  # no room left to wait
        with slots.slot("a", limits):
            pass
    release.set()
    assert got.wait(10)
    t1.join()
    t2.join()
    with slots.slot("a", limits):
        with pytest.raises(AppBusy, match="none of its 1 call slots freed within 0 s"):
            with slots.slot("a", AppsConfig(max_concurrent_calls=1, busy_wait=0)):
                pass


def test_the_log_pump_never_lets_a_log_pass_its_cap_and_keeps_one_backup(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    read_end, write_end = os.pipe()
    pump = LogPump(read_end, log, max_bytes=1000, name="log-test")
    pump.start()
    for i in range(10):
        os.write(write_end, (f"{i}" * 700).encode())  # chunks that straddle the cap
    os.close(write_end)
    pump.join(10)
    assert not pump.is_alive()
    backup = log.with_name("app.log.1")
    assert log.stat().st_size <= 1000 and backup.stat().st_size == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.log", "app.log.1"]
    assert log.read_text().endswith("9" * 700)
