"""System control end to end (spec §9, §12.3): a typed or spoken command goes to the
system-control app, which reads the desktop's snapshot and sends UI operations that
move, recolour, hide and rotate a real element of the page in Chromium."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk, wait_until
from tests.integration.conftest import Running

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["system_agent", "gallery"]


def command(desk: Desk, text: str) -> None:
    box = desk.page.locator("#command_input")
    box.fill(text)
    box.press("Enter")
    expect(desk.win("system_agent")).to_be_visible()


def snapshot_ids(running: Running) -> set[str]:
    snap = running.system.store.cache_get("desktop", "ui_snapshot") or {}
    return {e["id"] for e in snap.get("elements", [])}


def test_typed_commands_move_recolour_hide_and_rotate_the_clock(
    running: Running, open_desk: Callable[..., Desk]
) -> None:
    desk = open_desk(running)
    clock = desk.page.locator("#clock")
    wait_until(lambda: "clock" in snapshot_ids(running), "the desktop's snapshot")

    command(desk, "把时钟变成红色")
    expect(clock).to_have_css("background-color", "rgb(255, 0, 0)")

    command(desk, "把时钟移到左上角")
    wait_until(
        lambda: (b := clock.bounding_box()) is not None and b["x"] < 60 and b["y"] < 60,
        "the clock in the top-left corner",
    )

    command(desk, "旋转时钟 45 度")
    expect(clock).to_have_css("rotate", "45deg")

    command(desk, "hide the clock")
    expect(clock).to_be_hidden()
    command(desk, "显示时钟")
    expect(clock).to_be_visible()
    desk.shot("clock_moved_red_rotated")
    # the app answered each time in its own window, and every operation was audited
    ops = [r for r in running.get("/api/audit?app=system_agent").json() if r["tool"] == "ui_op"]
    assert {'"change_color"', '"move"', '"rotate"', '"hide"', '"show"'} <= {
        '"' + r["args"].split('"op": "')[1].split('"')[0] + '"' for r in ops
    }
    assert desk.problems() == []


@pytest.mark.skipif(
    not (shutil.which("espeak-ng") and shutil.which("sox")),
    reason="needs espeak-ng and sox: scripts/install --test",
)
def test_a_spoken_command_hides_the_clock(
    running: Running, open_desk: Callable[..., Desk], tmp_path: Path
) -> None:
    desk = open_desk(running)
    clock = desk.page.locator("#clock")
    expect(clock).to_be_visible()
    wait_until(lambda: "clock" in snapshot_ids(running), "the desktop's snapshot")
    wav = tmp_path / "hide.wav"
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(wav), "hide the clock"], check=True)
    r = running.http.post(
        running.url + "/api/voice/transcribe?run=1",
        data=wav.read_bytes(),
        headers={"Content-Type": "audio/wav"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert r.json()["text"] == "hide the clock"
    assert [t["app"] for t in r.json()["result"]["plan"]] == ["system_agent"]
    expect(clock).to_be_hidden()
    assert desk.problems() == []
