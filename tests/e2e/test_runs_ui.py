"""Runs on the desktop in Chromium (DESIGN §12): the plan preview card, stop, progress.

The real system in smart mode (a command asks first, a write does not) with the
``e2e_runs`` app, whose buttons return a plan of a command and a write, or a 30 s
command. The page is driven as a user drives it: buttons, the keyboard, a reload.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from playwright.sync_api import Locator, WebSocketRoute, expect

from tests.e2e.conftest import Desk, start_e2e_system, wait_until
from tests.integration.conftest import Running

SYSTEM_APPS = ["e2e_runs"]
APP = "e2e_runs"
LONG_CODE = "import time; time.sleep(30); open('late.txt', 'w').write('late')"
ENDED = ("done", "failed", "cancelled")
STOPPED_WITHIN_S = 2.0
"""The issue's bound from the stop request to the command's process being gone."""
SMART = {"mode": "smart"}
EXPIRES_S = 8
"""approvals.timeout of the expiry test: time enough to read the card, short to wait out."""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """The module's system in the default mode, smart (the test systems' default is auto)."""
    system = start_e2e_system(tmp_path_factory.mktemp("e2e"), SYSTEM_APPS, approvals=SMART)
    yield system
    system.stop()


def workspace(desk: Desk) -> Path:
    return Path(desk.running.apps_dir) / APP / "workspace"


def start_plan(desk: Desk, action_id: str) -> Locator:
    """Press the app's button for a plan; the approval card that it waits on."""
    if not desk.win(APP).count():
        desk.open_app(APP)
    desk.control(APP, action_id).click()
    card = desk.win(APP).locator(".run-card[data-interaction]")
    expect(card).to_have_count(1)
    return card


def final_data(desk: Desk, run_id: str) -> dict[str, Any]:
    """The app's view of the results it was given in round 2 (the run's response)."""
    expect(desk.body(APP)).to_contain_text("codes: step_")

    def ended() -> dict[str, Any] | None:
        row: dict[str, Any] = desk.api("GET", f"/api/runs/{run_id}")
        return row if row["state"] in ENDED else None

    row = wait_until(ended, what=f"run {run_id} to end")
    response: dict[str, Any] = row["response"]
    return response["data"]


def run_of(card: Locator) -> str:
    run_id = card.get_attribute("data-run-id")
    assert run_id and run_id.startswith("run_"), run_id
    return run_id


def pending_ids(desk: Desk) -> list[str]:
    return [p["id"] for p in desk.api("GET", "/api/interactions?pending=1")]


def drop_events(kind: str) -> Callable[[WebSocketRoute], None]:
    """A route for the page's event stream that passes everything but events of ``kind``."""

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()

        def to_page(message: str | bytes) -> None:
            try:
                dropped = json.loads(message).get("type") == kind
            except (ValueError, AttributeError):
                dropped = False
            if not dropped:
                ws.send(message)

        server.on_message(to_page)
        ws.on_message(server.send)

    return route


def sleeper() -> psutil.Process | None:
    for p in psutil.process_iter(["cmdline"]):
        try:
            if LONG_CODE in " ".join(p.info["cmdline"] or []):
                return p
        except psutil.Error:
            continue
    return None


def test_the_card_shows_the_whole_plan_and_allow_runs_it(desk: Desk) -> None:
    page = desk.page
    card = start_plan(desk, "both")
    ia_id = card.get_attribute("data-interaction")
    assert ia_id and ia_id.startswith("ia_") and pending_ids(desk) == [ia_id]
    run_id = run_of(card)
    # over the window's content, in the window
    expect(desk.win(APP).locator(".run-cards")).to_be_visible()
    prompt = "Runs wants to run 2 step(s); 1 need(s) your approval: shell_exec"
    expect(card.locator(".run-card-prompt")).to_have_text(prompt)
    steps = card.locator(".run-step")
    expect(steps).to_have_count(2)
    say, note = steps.nth(0), steps.nth(1)
    expect(say.locator(".run-step-text")).to_contain_text("python3 -c")
    expect(say.locator(".run-step-text")).to_contain_text("hello from the command")
    expect(say.locator(".risk-badge")).to_have_text("high risk")
    expect(say.locator(".risk-badge")).to_have_attribute("data-risk", "high")
    expect(say.locator(".run-step-mark")).to_have_text("needs your approval")
    expect(note.locator(".run-step-text")).to_contain_text("note.txt")
    expect(note.locator(".risk-badge")).to_have_text("medium risk")
    expect(note.locator(".run-step-mark")).to_have_count(0)  # smart mode: a write runs unasked
    expect(card.locator(".run-card-expires")).to_contain_text(re.compile(r"Expires in \d+ min"))
    decisions = card.locator("[data-decision]")
    expect(decisions).to_have_count(4)
    assert [decisions.nth(i).get_attribute("data-decision") for i in range(4)] == [
        "allow",
        "allow_session",
        "allow_always",
        "deny",
    ]
    expect(card.locator('[data-decision="allow_session"]')).to_have_text("Allow for this session")

    # the card has the keyboard; details on demand; Escape does not answer it
    expect(card).to_be_focused()
    detail = say.locator(".run-step-detail")
    expect(detail.locator(".run-step-facts")).to_be_hidden()
    detail.locator("summary").click()
    expect(detail.locator(".run-step-facts")).to_contain_text("shell_exec")
    card.focus()
    page.keyboard.press("Escape")
    expect(card).to_be_visible()
    assert pending_ids(desk) == [ia_id]
    desk.shot("card")
    page.keyboard.press("Tab")  # the first step's detail disclosure
    page.keyboard.press("Tab")  # the second step's
    page.keyboard.press("Tab")
    expect(card.locator('[data-decision="allow"]')).to_be_focused()
    page.keyboard.press("Enter")

    expect(card).to_have_count(0)
    data = final_data(desk, run_id)
    assert data["codes"] == {"step_say": "ok", "step_note": "ok"}, data["codes"]
    assert data["results"]["step_say"]["result"]["stdout"].strip() == "hello from the command"
    assert (workspace(desk) / "note.txt").read_text() == "written by the plan"
    expect(desk.win(APP).locator(".run-progress")).to_have_count(0)
    expect(desk.win(APP).locator('[data-action="stop-run"]')).to_be_hidden()
    assert pending_ids(desk) == []


def test_deny_shows_the_denial_in_the_window(desk: Desk) -> None:
    (workspace(desk) / "note.txt").unlink(missing_ok=True)
    card = start_plan(desk, "both")
    run_id = run_of(card)
    card.locator('[data-decision="deny"]').click()
    expect(card).to_have_count(0)
    note = desk.win(APP).locator(".run-note")
    expect(note).to_have_text(re.compile("Denied: these steps were not run"))
    data = final_data(desk, run_id)
    assert data["codes"] == {"step_say": "denied"}, data["codes"]
    assert data["results"]["step_say"]["error"] == "denied by the user"
    expect(desk.body(APP)).to_contain_text("codes: step_say=denied")
    assert not (workspace(desk) / "note.txt").exists()
    desk.shot("denied")


def test_the_stop_button_stops_a_long_command(desk: Desk) -> None:
    card = start_plan(desk, "long")
    run_id = run_of(card)
    stop = desk.win(APP).locator('.win-titlebar [data-action="stop-run"]')
    expect(stop).to_be_visible()  # a waiting run is an active run
    card.locator('[data-decision="allow"]').click()
    proc = wait_until(sleeper, what="the long command to start")
    progress = desk.win(APP).locator(".run-progress")
    expect(progress).to_contain_text("Step 1 of 1 · shell_exec · python3 -c")
    expect(progress).to_contain_text(re.compile(r"· \d+ s$"))
    desk.shot("progress")
    stop.click()
    wait_until(lambda: not proc.is_running(), timeout=STOPPED_WITHIN_S, what="the command gone")
    note = desk.win(APP).locator(".run-note")
    expect(note).to_have_text(re.compile("Stopped: the run was cancelled"))
    data = final_data(desk, run_id)
    assert data["codes"] == {"step_sleep": "cancelled"}, data["codes"]
    expect(stop).to_be_hidden()
    expect(progress).to_have_count(0)
    assert not (workspace(desk) / "late.txt").exists()


def test_the_command_bar_stops_the_instruction_it_sent(desk: Desk) -> None:
    page = desk.page
    page.locator("#command_input").fill("runs long")
    page.locator("#command_input").press("Enter")
    # the card opens the app's window itself: the reply has no results while it waits
    card = desk.win(APP).locator(".run-card[data-interaction]")
    expect(card).to_have_count(1)
    stop = page.locator('#command_stop[data-action="stop-run"]')
    expect(stop).to_be_visible()
    card.locator('[data-decision="allow"]').click()
    proc = wait_until(sleeper, what="the long command to start")
    stop.click()
    wait_until(lambda: not proc.is_running(), timeout=STOPPED_WITHIN_S, what="the command gone")
    expect(stop).to_be_hidden()
    runs = desk.api("GET", "/api/runs?limit=1")
    assert runs[0]["kind"] == "instruction"
    wait_until(
        lambda: desk.api("GET", f"/api/runs/{runs[0]['run_id']}")["state"] == "cancelled",
        what="the instruction's run to be cancelled",
    )


def test_a_reload_shows_the_pending_card_again(desk: Desk) -> None:
    page = desk.page
    card = start_plan(desk, "both")
    ia_id = card.get_attribute("data-interaction")
    run_id = run_of(card)
    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    again = desk.win(APP).locator(f'.run-card[data-interaction="{ia_id}"]')
    expect(again).to_be_visible()
    expect(again.locator(".run-step")).to_have_count(2)
    expect(desk.win(APP).locator('[data-action="stop-run"]')).to_be_visible()
    again.locator('[data-decision="allow"]').click()
    expect(again).to_have_count(0)
    data = final_data(desk, run_id)
    assert data["codes"] == {"step_say": "ok", "step_note": "ok"}, json.dumps(data)


def test_a_second_tab_answering_late_sees_the_first_answer(
    desk: Desk, open_desk: Callable[..., Desk]
) -> None:
    """Two tabs show one card; the first answer wins and the late tab is told, not failed."""
    card = start_plan(desk, "both")
    ia_id = card.get_attribute("data-interaction")
    late = open_desk(desk.running)
    late.allow_console(r"status of 409 \(CONFLICT\).*/api/interactions/")  # the late answer
    # The late tab misses the "answered" event, as a tab does whose answer crosses it.
    late.page.route_web_socket(re.compile(r"/api/events"), drop_events("interaction_done"))
    late.page.reload()
    expect(late.page.locator("#tray_net")).to_have_attribute("data-state", "open")
    late_card = late.win(APP).locator(f'.run-card[data-interaction="{ia_id}"]')
    expect(late_card).to_be_visible()

    card.locator('[data-decision="allow"]').click()
    expect(card).to_have_count(0)
    expect(late_card).to_be_visible()
    late_card.locator('[data-decision="deny"]').click()
    expect(late_card).to_have_count(0)
    expect(late.win(APP).locator(".run-note")).to_have_text(
        re.compile("Answered elsewhere first: Allowed, running")
    )
    expect(late.body(APP)).to_contain_text("codes: step_say=ok, step_note=ok")
    expect(desk.body(APP)).to_contain_text("codes: step_say=ok, step_note=ok")


def test_in_chinese_a_card_nobody_answers_expires(
    system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    approvals = {**SMART, "timeout": EXPIRES_S}
    running = system_factory(SYSTEM_APPS, language="zh-CN", approvals=approvals)
    desk = open_desk(running)
    card = start_plan(desk, "both")
    run_id = run_of(card)
    expect(card.locator(".run-card-title")).to_have_text("确认执行这 2 个步骤？")
    prompt = "Runs 想执行 2 个步骤，其中 1 个需要你的确认：shell_exec"  # the app's name is its own
    expect(card.locator(".run-card-prompt")).to_have_text(prompt)
    expect(card.locator(".risk-badge").first).to_have_text("高风险")
    expect(card.locator(".risk-badge").nth(1)).to_have_text("中风险")
    expect(card.locator('[data-decision="allow"]')).to_have_text("允许")
    expect(card.locator('[data-decision="allow_session"]')).to_have_text("本次会话内允许")
    expect(card.locator('[data-decision="deny"]')).to_have_text("拒绝")
    expect(card.locator(".run-card-expires")).to_contain_text("后自动过期")
    desk.shot("card_zh")
    expect(card).to_have_count(0)  # nobody answered: it expired
    expect(desk.win(APP).locator(".run-note")).to_have_text(re.compile("已过期"))
    data = final_data(desk, run_id)
    assert data["codes"] == {"step_say": "expired"}, data["codes"]
    assert not (workspace(desk) / "note.txt").exists()
