"""Question cards on the desktop in Chromium (DESIGN §13 "Ask the user").

The real system with the ``planner`` fixture app (tests/fixtures/apps_runs), whose
action ``plan`` runs the steps it is given and shows their results in its next view.
Each plan asks one question and then runs a command that waits for a gate file the
test writes, so the answered card can be looked at before the app's next view
replaces it. Cards are answered as a user answers them: buttons, the keyboard, a reload.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from aios.runs.interactions import INPUT_MAX
from tests.conftest import ROOT
from tests.e2e.conftest import Desk, start_e2e_system, wait_until
from tests.e2e.test_runs_ui import drop_events
from tests.integration.conftest import Running, copy_apps

APP = "planner"
RUNS_APPS = ROOT / "tests" / "fixtures" / "apps_runs"
DRINKS = [{"value": "tea", "label": "Tea"}, {"value": "coffee", "label": "Coffee"}, "water"]
GATE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]):\n    time.sleep(0.02)\n"
"""The plan's second step: a command that ends once the test writes its gate file."""


def start_planner_system(tmp: Path, **overrides: Any) -> Running:
    copy_apps(tmp / "apps", [APP], source=RUNS_APPS)
    return start_e2e_system(tmp, [], **overrides)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    system = start_planner_system(tmp_path_factory.mktemp("e2e"))
    yield system
    system.stop()


def ask(desk: Desk, gate: str, **args: Any) -> dict[str, Any]:
    """Run a plan that asks ``args`` and then waits for ``gate``; the paused reply."""
    if not desk.win(APP).count():
        body = desk.open_app(APP)
        expect(body).to_contain_text("idle")
    steps = [
        {"step_id": "q", "tool": "ask", "args": args},
        {"step_id": "gate", "tool": "shell_exec", "args": {"cmd": ["python3", "-c", GATE, gate]}},
    ]
    reply: dict[str, Any] = desk.api(
        "POST", "/api/action", {"app": APP, "action_id": "plan", "params": {"steps": steps}}
    )
    assert [p["kind"] for p in reply.get("pending", [])] == [args["kind"]], reply
    return reply


def release(running: Running, gate: str) -> None:
    (Path(running.apps_dir) / APP / "workspace" / gate).write_text("go")


def card_of(desk: Desk, reply: dict[str, Any]) -> Locator:
    ia_id = reply["pending"][0]["id"]
    card = desk.win(APP).locator(f'.ask-card[data-interaction="{ia_id}"]')
    expect(card).to_be_visible()
    return card


def expect_disabled(card: Locator) -> None:
    controls = card.locator("button, input")
    assert controls.count() > 0
    for i in range(controls.count()):
        expect(controls.nth(i)).to_be_disabled()
        expect(controls.nth(i)).to_have_attribute("aria-disabled", "true")


def expect_next_view(desk: Desk, card: Locator, value: Any) -> None:
    """The app's next view shows the answer it was given; the card went with the old view."""
    expect(desk.body(APP)).to_contain_text(json.dumps({"value": value}, ensure_ascii=False))
    expect(card).to_have_count(0)


def test_a_choice_answered_in_the_window_shows_the_answer_and_is_disabled(desk: Desk) -> None:
    page = desk.page
    reply = ask(desk, "go_choice", kind="choice", prompt="Which drink?", options=DRINKS)
    card = card_of(desk, reply)
    expect(card).to_have_attribute("data-kind", "choice")
    expect(card).to_have_attribute("data-state", "pending")
    expect(card.locator(".run-card-title")).to_have_text("Please choose")
    expect(card.locator(".ask-prompt")).to_have_text("Which drink?")
    options = card.locator("[data-value]")
    expect(options).to_have_count(3)
    assert [options.nth(i).get_attribute("data-value") for i in range(3)] == [
        '"tea"',
        '"coffee"',
        '"water"',
    ]
    expect(options).to_have_text(["Tea", "Coffee", "water"])
    expect(card.locator(".run-card-expires")).to_contain_text(re.compile(r"Expires in \d+ min"))
    expect(desk.win(APP).locator(".run-progress")).to_have_text("Waiting for your answer")
    desk.shot("choice_pending")

    # the card has the keyboard; Escape does not answer it
    expect(card).to_be_focused()
    page.keyboard.press("Escape")
    expect(card).to_have_attribute("data-state", "pending")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(card.locator("[data-value='\"coffee\"']")).to_be_focused()
    page.keyboard.press("Enter")

    expect(card).to_have_attribute("data-state", "answered")
    expect(card.locator(".ask-outcome")).to_have_text("You chose Coffee")
    expect(card.locator(".ask-option.is-chosen")).to_have_text("Coffee")
    expect_disabled(card)
    # stays in the window's record without covering its content
    expect(desk.win(APP).locator(".run-cards")).to_have_attribute("data-settled", "")
    assert desk.api("GET", "/api/interactions?pending=1") == []
    desk.shot("choice_answered")
    release(desk.running, "go_choice")
    expect_next_view(desk, card, "coffee")


def test_confirm_no_is_declined(desk: Desk) -> None:
    reply = ask(desk, "go_confirm", kind="confirm", prompt="Delete the note?")
    card = card_of(desk, reply)
    expect(card.locator(".run-card-title")).to_have_text("Please confirm")
    expect(card.locator("[data-value]")).to_have_text(["Yes", "No"])
    expect(card.locator('[data-value="true"]')).to_have_text("Yes")
    card.locator('[data-value="false"]').click()
    expect(card.locator(".ask-outcome")).to_have_text("Declined")
    expect_disabled(card)
    release(desk.running, "go_confirm")
    expect_next_view(desk, card, False)


def test_input_with_text_after_a_refused_answer(desk: Desk) -> None:
    desk.allow_console(r"status of 400 \(BAD REQUEST\).*/api/interactions/")
    reply = ask(
        desk, "go_input", kind="input", prompt="Your name?", placeholder="a name", default="Ann"
    )
    card = card_of(desk, reply)
    field = card.locator("input.ask-input")
    expect(field).to_be_focused()  # an input card gives the keyboard to its field
    expect(field).to_have_attribute("placeholder", "a name")
    expect(field).to_have_value("Ann")
    # a too long answer is refused by the server, which says why; the card stays operable
    field.fill("x" * (INPUT_MAX + 1))
    field.press("Enter")
    error = card.locator(".run-card-error")
    expect(error).to_have_text(re.compile(rf"not sent: .*at most {INPUT_MAX} characters"))
    expect(card).to_have_attribute("data-state", "pending")
    expect(field).to_be_enabled()
    field.fill("小明")
    field.press("Enter")
    expect(card.locator(".ask-outcome")).to_have_text("You entered: 小明")
    expect(field).to_have_value("小明")
    expect_disabled(card)
    release(desk.running, "go_input")
    expect_next_view(desk, card, "小明")


def test_a_late_answer_from_a_second_tab_sees_the_first_answer(
    desk: Desk, open_desk: Callable[..., Desk]
) -> None:
    reply = ask(desk, "go_late", kind="choice", prompt="Which drink?", options=DRINKS)
    card = card_of(desk, reply)
    late = open_desk(desk.running)
    late.allow_console(r"status of 409 \(CONFLICT\).*/api/interactions/")  # the late answer
    # The late tab misses the "answered" event, as a tab does whose answer crosses it.
    late.page.route_web_socket(re.compile(r"/api/events"), drop_events("interaction_done"))
    late.page.reload()
    expect(late.page.locator("#tray_net")).to_have_attribute("data-state", "open")
    late_card = card_of(late, reply)

    card.locator("[data-value='\"tea\"']").click()
    expect(card.locator(".ask-outcome")).to_have_text("You chose Tea")
    expect(late_card).to_have_attribute("data-state", "pending")
    late_card.locator("[data-value='\"water\"']").click()
    expect(late_card).to_have_attribute("data-state", "answered")
    expect(late_card.locator(".ask-outcome-text")).to_have_text("You chose Tea")
    expect(late_card.locator(".ask-elsewhere")).to_have_text("Answered elsewhere first")
    expect(late_card.locator(".ask-option.is-chosen")).to_have_text("Tea")
    expect_disabled(late_card)
    expect(late_card.locator(".run-card-error")).to_be_hidden()  # quietly, not an error
    release(desk.running, "go_late")
    expect_next_view(desk, card, "tea")
    expect_next_view(late, late_card, "tea")


def test_a_reload_shows_the_pending_question_card_again(desk: Desk) -> None:
    page = desk.page
    reply = ask(desk, "go_reload", kind="choice", prompt="Which drink?", options=DRINKS)
    card_of(desk, reply)
    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    again = card_of(desk, reply)
    expect(again.locator(".ask-prompt")).to_have_text("Which drink?")
    expect(again.locator("[data-value]")).to_have_count(3)
    expect(desk.win(APP).locator('[data-action="stop-run"]')).to_be_visible()
    expect(desk.body(APP)).to_contain_text("idle")  # the reopened window's view is drawn
    # answered elsewhere (here: the API) while the page looks: it says so, disabled
    desk.api("POST", f"/api/interactions/{reply['pending'][0]['id']}", {"value": "water"})
    expect(again.locator(".ask-outcome-text")).to_have_text("You chose water")
    expect(again.locator(".ask-elsewhere")).to_be_visible()
    expect_disabled(again)
    release(desk.running, "go_reload")
    expect_next_view(desk, again, "water")


def test_a_cancelled_run_withdraws_its_question_and_the_card_says_so(desk: Desk) -> None:
    # The app's next view would replace the card at once: this page does not get it.
    desk.page.route_web_socket(re.compile(r"/api/events"), drop_events("view"))
    desk.page.reload()
    expect(desk.page.locator("#tray_net")).to_have_attribute("data-state", "open")
    reply = ask(desk, "go_cancel", kind="input", prompt="Your name?")
    card = card_of(desk, reply)
    desk.win(APP).locator('.win-titlebar [data-action="stop-run"]').click()
    expect(card).to_have_attribute("data-state", "withdrawn")
    expect(card.locator(".ask-outcome")).to_have_text("Withdrawn: the run was cancelled")
    expect_disabled(card)
    wait_until(
        lambda: desk.api("GET", f"/api/runs/{reply['run_id']}")["state"] == "cancelled",
        what="the run to be cancelled",
    )


@pytest.fixture
def zh_running(tmp_path: Path) -> Iterator[Running]:
    """A system of the test's own in Chinese (stopped after its pages are closed)."""
    system = start_planner_system(tmp_path, language="zh-CN")
    yield system
    system.stop()


def test_in_chinese_a_choice_and_a_confirm(
    zh_running: Running, open_desk: Callable[..., Desk]
) -> None:
    running = zh_running
    desk = open_desk(running)
    options = [{"value": "notes", "label": "记事本"}, {"value": "weather", "label": "天气"}]
    reply = ask(
        desk, "go_zh1", kind="choice", prompt="你是想用 记事本 还是 天气？", options=options
    )
    card = card_of(desk, reply)
    expect(card.locator(".run-card-title")).to_have_text("请选择")
    expect(card.locator(".run-card-expires")).to_contain_text("后自动过期")
    expect(desk.win(APP).locator(".run-progress")).to_have_text("等待你的回答")
    desk.shot("choice_pending_zh")
    card.locator("[data-value='\"weather\"']").click()
    expect(card.locator(".ask-outcome")).to_have_text("你选择了 天气")
    expect_disabled(card)
    desk.shot("choice_answered_zh")
    release(running, "go_zh1")
    expect_next_view(desk, card, "weather")

    reply = ask(desk, "go_zh2", kind="confirm", prompt="删除这条笔记？")
    card = card_of(desk, reply)
    expect(card.locator("[data-value]")).to_have_text(["是", "否"])
    card.locator('[data-value="true"]').click()
    expect(card.locator(".ask-outcome")).to_have_text("已确认")
    expect_disabled(card)
    desk.shot("confirm_answered_zh")
    release(running, "go_zh2")
    expect_next_view(desk, card, True)
