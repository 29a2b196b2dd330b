"""The conversation panel in Chromium (DESIGN §13 "Conversation panel").

The real system in smart mode (a command asks first) with the bundled gallery (it
answers "gallery" with a message) and the ``e2e_runs`` app (a typed "runs both"
returns a plan of a command and a write, so the run waits on an approval card).
The page is driven as a user drives it: the command bar, Ctrl+., buttons, a reload.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.conftest import ROOT
from tests.e2e.conftest import RESULTS, Desk, start_e2e_system, wait_until
from tests.integration.conftest import Running, copy_apps

SYSTEM_APPS = ["e2e_runs", "gallery"]
PLANNER = "planner"
"""tests/fixtures/apps_runs/planner: its action ``plan`` runs the steps it is given."""
GATE = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]):\n    time.sleep(0.02)\n"
"""A plan's last step: a command that ends once the test writes its gate file, so an
answered card can be looked at before the app's next view replaces it."""
RUNS = "e2e_runs"
GALLERY_REPLY = "Which view? Here are all of them."
"""The gallery's reply to a typed "gallery" (in English)."""
ACTIVE = re.compile(r"(^|\s)active(\s|$)")
"""The class of the window in front."""
SHOTS = RESULTS.parent
"""The panel's screenshots go to test-results/conversation-<lang>.png."""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("e2e")
    copy_apps(tmp / "apps", [PLANNER], source=ROOT / "tests" / "fixtures" / "apps_runs")
    system = start_e2e_system(tmp, SYSTEM_APPS, approvals={"mode": "smart"})
    yield system
    system.stop()


def panel(page: Page) -> Locator:
    return page.locator("#conversation")


def say(page: Page, text: str) -> None:
    box = page.locator("#command_input")
    box.fill(text)
    box.press("Enter")
    expect(page.locator("#command_bar")).not_to_have_class("is-busy")


def open_panel(page: Page) -> Locator:
    page.keyboard.press("Control+.")
    expect(panel(page)).to_be_visible()
    return panel(page)


def card_in_panel(page: Page, ia_id: str) -> Locator:
    return panel(page).locator(f'[data-kind="interaction"][data-interaction="{ia_id}"]')


def window_card(desk: Desk) -> Locator:
    card = desk.win(RUNS).locator(".run-card[data-interaction]")
    expect(card).to_have_count(1)
    return card


def run_done(desk: Desk, run_id: str) -> None:
    wait_until(
        lambda: desk.api("GET", f"/api/runs/{run_id}")["state"] == "done",
        what=f"run {run_id} to be done",
    )


def test_the_panel_shows_a_typed_instruction_and_its_reply(desk: Desk) -> None:
    page = desk.page
    button = page.locator('#command_bar [data-action="conversation"]')
    expect(button).to_have_attribute("title", "Conversation (Ctrl+.)")
    conv = open_panel(page)
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(conv.locator(".conv-empty")).to_be_visible()
    say(page, "gallery")
    user = conv.locator(".conv-user .conv-text")
    expect(user).to_have_text(["gallery"])
    reply = conv.locator(".conv-reply")
    expect(reply.locator(".conv-text")).to_have_text([GALLERY_REPLY])
    expect(conv.locator(".conv-empty")).to_be_hidden()
    # the reply's app link raises the app's window over another one
    desk.open_app(RUNS)
    expect(desk.win(RUNS)).to_have_class(ACTIVE)
    reply.locator('.conv-app[data-app="gallery"]').click()
    expect(desk.win("gallery")).to_have_class(ACTIVE)
    # the command bar's button closes it again; Ctrl+. opens it
    button.click()
    expect(conv).to_be_hidden()
    open_panel(page)
    page.keyboard.press("Escape")
    expect(conv).to_be_hidden()


def test_an_approval_answered_in_the_panel_runs_the_plan_and_is_disabled_everywhere(
    desk: Desk,
) -> None:
    page = desk.page
    conv = open_panel(page)
    say(page, "runs both")
    in_window = window_card(desk)
    ia_id = in_window.get_attribute("data-interaction")
    run_id = in_window.get_attribute("data-run-id")
    assert ia_id and run_id
    card = card_in_panel(page, ia_id)
    expect(card).to_have_attribute("data-state", "pending")
    # the same card as the window's (DESIGN §14.3): the prompt, every step with its risk
    expect(card.locator(".conv-card-prompt")).to_have_text(
        "Runs wants to run 2 step(s); 1 need(s) your approval: shell_exec"
    )
    steps = card.locator(".run-step")
    expect(steps).to_have_count(2)
    expect(steps.nth(0).locator(".risk-badge")).to_have_attribute("data-risk", "high")
    expect(steps.nth(0).locator(".run-step-text")).to_contain_text("hello from the command")
    expect(steps.nth(1).locator(".run-step-text")).to_contain_text("note.txt")
    expect(card.locator(".sys-mark")).to_be_visible()
    run = conv.locator(f'[data-kind="run"][data-run-id="{run_id}"]')
    expect(run).to_have_attribute("data-state", "waiting")
    card.locator('[data-decision="allow"]').click()
    expect(card).to_have_attribute("data-state", "answered")
    expect(card.locator(".conv-card-answer")).to_have_text("You chose: allow")
    expect(card.locator(".conv-card-btn:not([disabled])")).to_have_count(0)
    # the window's card can no longer be operated either
    live = desk.win(RUNS).locator(f'.run-card[data-interaction="{ia_id}"] button:not([disabled])')
    expect(live).to_have_count(0)
    run_done(desk, run_id)
    expect(run).to_have_attribute("data-state", "done")
    expect(conv.locator(".conv-reply .conv-text").last).to_have_text("plan finished")


def test_after_a_reload_the_panel_and_a_pending_card_are_back(desk: Desk) -> None:
    page = desk.page
    open_panel(page)
    say(page, "runs both")
    ia_id = window_card(desk).get_attribute("data-interaction")
    assert ia_id
    expect(card_in_panel(page, ia_id)).to_have_attribute("data-state", "pending")
    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    expect(panel(page)).to_be_visible()
    expect(panel(page).locator(".conv-user .conv-text")).to_have_text(["runs both"])
    card = card_in_panel(page, ia_id)
    expect(card).to_have_attribute("data-state", "pending")
    expect(card.locator('[data-decision="allow"]')).to_be_enabled()
    # answered in the window this time: the panel's card shows it and is disabled
    window_card(desk).locator('[data-decision="deny"]').click()
    expect(card).to_have_attribute("data-state", "answered")
    expect(card.locator(".conv-card-answer")).to_have_text("You chose: deny")
    expect(card.locator(".conv-card-btn:not([disabled])")).to_have_count(0)


def test_a_new_conversation_starts_empty_and_switching_back_shows_the_old_one(
    desk: Desk,
) -> None:
    page = desk.page
    conv = open_panel(page)
    say(page, "gallery")
    expect(conv.locator(".conv-user .conv-text")).to_have_text(["gallery"])
    old = page.evaluate("() => localStorage.getItem('aios.session')")
    assert old
    conv.locator('[data-action="new-conversation"]').click()
    expect(conv.locator(".conv-empty")).to_be_visible()
    expect(conv.locator(".conv-entry")).to_have_count(0)
    fresh = page.evaluate("() => localStorage.getItem('aios.session')")
    assert fresh and fresh != old
    # the next instruction belongs to the new conversation
    say(page, "gallery again")
    expect(conv.locator(".conv-user .conv-text")).to_have_text(["gallery again"])
    picker = conv.locator(".conv-sessions")
    expect(picker.locator(f'option[value="{old}"]')).to_contain_text("gallery")
    picker.select_option(old)
    expect(conv.locator(".conv-user .conv-text")).to_have_text(["gallery"])
    expect(conv.locator(".conv-reply .conv-text")).to_have_text([GALLERY_REPLY])
    timeline = desk.api("GET", f"/api/sessions/{fresh}/timeline")["entries"]
    assert [e.get("text") for e in timeline if e["kind"] == "user"] == ["gallery again"]


def test_screenshots_of_the_panel_in_both_languages(desk: Desk) -> None:
    page = desk.page
    conv = open_panel(page)
    say(page, "gallery")
    expect(conv.locator(".conv-reply")).to_have_count(1)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        for lang, new_label in (("zh-CN", "新对话"), ("en", "New conversation")):
            desk.api("POST", "/api/config", {"updates": {"language": lang}})
            page.reload()
            expect(conv).to_be_visible()
            expect(conv.locator('[data-action="new-conversation"]')).to_have_text(new_label)
            expect(conv.locator(".conv-user .conv-text").first).to_have_text("gallery")
            expect(conv.locator(".conv-reply .conv-text").first).not_to_be_empty()
            short = "zh" if lang == "zh-CN" else "en"
            page.screenshot(path=str(SHOTS / f"conversation-{short}.png"))
    finally:
        desk.api("POST", "/api/config", {"updates": {"language": "en"}})


def ask(desk: Desk, sid: str, gate: str, **args: Any) -> str:
    """In session ``sid``, a plan that asks ``args`` and then waits for ``gate``; the card's id."""
    steps = [
        {"step_id": "q", "tool": "ask", "args": args},
        {"step_id": "gate", "tool": "shell_exec", "args": {"cmd": ["python3", "-c", GATE, gate]}},
    ]
    body = {"app": PLANNER, "action_id": "plan", "params": {"steps": steps}, "session_id": sid}
    reply = desk.api("POST", "/api/action", body)
    (approval,) = reply["pending"]  # smart mode: the gate's command is approved first
    assert approval["kind"] == "approval", reply
    desk.api("POST", f"/api/interactions/{approval['id']}", {"decision": "allow"})

    def question() -> str | None:
        pending = desk.api("GET", f"/api/interactions?pending=1&session={sid}")
        return next((p["id"] for p in pending if p["kind"] == args["kind"]), None)

    ia_id: str = wait_until(question, what=f"the {args['kind']} card")
    return ia_id


def release(running: Running, gate: str) -> None:
    (Path(running.apps_dir) / PLANNER / "workspace" / gate).write_text("go")


def test_question_cards_answered_in_the_window_or_the_panel_are_disabled_in_both(
    desk: Desk,
) -> None:
    page = desk.page
    conv = open_panel(page)
    say(page, "gallery")  # the page's session, which the plans below belong to
    expect(conv.locator(".conv-reply")).to_have_count(1)
    sid = page.evaluate("() => localStorage.getItem('aios.session')")
    drinks = [{"value": "tea", "label": "Tea"}, "water"]
    ia_id = ask(desk, sid, "go_choice", kind="choice", prompt="Which drink?", options=drinks)
    card = card_in_panel(page, ia_id)
    expect(card.locator(".conv-card-prompt")).to_have_text("Which drink?")
    expect(card.locator(".conv-card-btn")).to_have_text(["Tea", "water"])
    in_window = desk.win(PLANNER).locator(f'[data-interaction="{ia_id}"]')
    in_window.locator("[data-value='\"tea\"']").click()
    expect(card).to_have_attribute("data-state", "answered")
    expect(card.locator(".conv-card-answer")).to_have_text("You chose Tea")
    expect(card.locator(".conv-card-btn:not([disabled])")).to_have_count(0)
    release(desk.running, "go_choice")

    ia_id = ask(desk, sid, "go_input", kind="input", prompt="Your name?", placeholder="name")
    card = card_in_panel(page, ia_id)
    field = card.locator(".conv-card-input")
    expect(field).to_have_attribute("placeholder", "name")
    field.fill("Ada")
    field.press("Enter")
    expect(card).to_have_attribute("data-state", "answered")
    expect(card.locator(".conv-card-answer")).to_have_text("You entered: Ada")
    expect(field).to_be_disabled()
    in_window = desk.win(PLANNER).locator(f'[data-interaction="{ia_id}"]')
    expect(in_window).to_have_attribute("data-state", "answered")
    expect(in_window.locator("button:not([disabled]), input:not([disabled])")).to_have_count(0)
    release(desk.running, "go_input")
    row = desk.api("GET", f"/api/interactions?session={sid}")
    assert [ia["answer"] for ia in row if ia["kind"] in ("choice", "input")] == [
        {"value": "tea"},
        {"value": "Ada"},
    ]
