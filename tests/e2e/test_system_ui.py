"""Only the system draws system UI (DESIGN §14.3, issue 20 item 3), in Chromium.

The real system with the hostile apps of ``tests/fixtures/apps_spoof``: ``forger`` puts
forged cards (an approval "for Hello", an input card asking for the DeepSeek key), a run id,
``desktop`` ops and chips on its replies and pushes, and tries to cover a real card with
desktop UI operations; ``settings`` is an app folder named like the Settings window.
Positive controls beside the attacks: the real card of ``forger``'s own plan is drawn (in its
window and in the conversation panel, with the system's mark) and answers; Hello's window
shows Hello's view; the Settings window shows the real settings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from tests.e2e.conftest import Desk, wait_until
from tests.integration.conftest import FIXTURES, Running, copy_apps, start_system

pytestmark = pytest.mark.e2e

SPOOF = FIXTURES / "apps_spoof"
FORGER = "forger"
FORGED_TEXT = re.compile(r"DeepSeek|ia_forged|Hello wants", re.I)
TAIL = "TAIL-" + "B" * 200 + " precious.db"
"""The end of forger's long command (tests/fixtures/apps_spoof/forger/main.py)."""
SCROLLS_TO_END = """n => {
  n.scrollTop = n.scrollHeight;
  return n.scrollTop + n.clientHeight >= n.scrollHeight - 1;
}"""
"""A step's box scrolls to its end: nothing of the text is out of reach."""
HIT = """([x, y]) => {
  const n = document.elementFromPoint(x, y);
  const button = n && n.closest('[data-decision]');
  return button ? button.dataset.decision : (n ? n.id || n.className : null);
}"""
"""What the user's click at (x, y) lands on: a card's decision, or what covers it."""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """forger (granted desktop.control, so that its UI operations reach the page), hello,
    and the app folder named ``settings``; smart mode, so a command asks."""
    tmp = tmp_path_factory.mktemp("e2e")
    apps = copy_apps(tmp / "apps", [FORGER, "hello", "settings"], source=SPOOF)
    system = start_system(
        apps,
        tmp / "data",
        language="en",
        voice={"welcome": False},
        handle_timeout=15,
        approvals={"mode": "smart"},
        apps={"default_grants": {FORGER: ["desktop.control"]}},
    )
    yield system
    system.stop()


def cover_card(desk: Desk) -> Locator:
    """forger's ``cover`` button: a plan with one long command; the real card it waits on."""
    desk.open_app(FORGER)
    desk.control(FORGER, "cover").click()
    card = desk.win(FORGER).locator(".run-card[data-interaction]")
    expect(card).to_have_count(1)
    return card


def pending(desk: Desk) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = desk.api("GET", "/api/interactions?pending=1")
    return rows


def deny_all(desk: Desk) -> None:
    for ia in pending(desk):
        desk.api("POST", f"/api/interactions/{ia['id']}", {"decision": "deny"})


def open_panel(desk: Desk) -> Locator:
    conv = desk.page.locator("#conversation")
    if not conv.is_visible():
        desk.page.locator("#conversation_button").click()
    expect(conv).to_be_visible()
    return conv


def no_forged_ui(desk: Desk) -> None:
    page = desk.page
    expect(page.locator(".run-card")).to_have_count(0)
    expect(page.locator("[data-interaction]")).to_have_count(0)
    expect(page.locator("#win_settings")).to_have_count(0)  # forged desktop op not applied
    expect(page.locator("#intent_reply")).to_be_hidden()  # forged chips not drawn
    expect(page.locator("body")).not_to_contain_text(FORGED_TEXT)


def test_no_forged_card_is_drawn_from_an_apps_replies_or_pushes(desk: Desk) -> None:
    """The issue's example: a ``pending`` list in an app's reply drew real cards in any window."""
    page = desk.page
    desk.open_app("hello")
    expect(desk.body("hello")).to_have_text("hello")  # positive control
    body = desk.open_app(FORGER)
    expect(body).to_contain_text("forger ready")  # the app's own view is drawn
    expect(desk.win("hello")).to_be_visible()  # forged close_app not applied
    no_forged_ui(desk)
    desk.control(FORGER, "push_forged").click()
    expect(body).to_contain_text(re.compile("pushed"))
    no_forged_ui(desk)
    conv = open_panel(desk)
    expect(conv.locator(".conv-entry").first).to_be_visible()
    expect(conv.locator('[data-kind="interaction"]')).to_have_count(0)
    expect(conv).not_to_contain_text(FORGED_TEXT)
    assert pending(desk) == []
    desk.shot("no-forged-card")

    # positive control: the system's own card for forger's plan, in the window and the panel
    card = cover_card(desk)
    expect(card.locator(".sys-mark")).to_be_visible()
    expect(card.locator(".card-app-name")).to_have_text("Forger")
    in_panel = conv.locator(f'[data-interaction="{card.get_attribute("data-interaction")}"]')
    expect(in_panel.locator(".sys-mark")).to_be_visible()
    expect(in_panel.locator(".run-step")).to_have_count(1)
    expect(page.locator(".run-card")).to_have_count(1)  # only the real one
    card.locator('[data-decision="deny"]').click()
    expect(card).to_have_count(0)


def test_a_long_command_is_whole_on_the_card_in_the_window_and_the_panel(desk: Desk) -> None:
    """Whatever the system puts on the card is shown whole: never cut, never folded away."""
    card = cover_card(desk)
    [ia] = pending(desk)
    text = ia["steps"][0]["text"]
    assert len(text) >= 300, text
    conv = open_panel(desk)
    in_panel = conv.locator(f'[data-interaction="{ia["id"]}"]')
    for where in (card, in_panel):
        step = where.locator(".run-step-text")
        expect(step).to_have_text(text)  # the whole text, as the system sent it
        expect(step).to_be_visible()
        expect(where.locator(".risk-badge")).to_have_attribute("data-risk", "high")
        # not inside a <details> (folded or not), and its length is said
        assert step.evaluate("n => n.closest('details') === null")
        expect(where.locator(".run-step-length")).to_contain_text(f"{len(text)} characters")
        # it scrolls in its box to its end: nothing hidden that cannot be reached
        assert step.evaluate(SCROLLS_TO_END)
    desk.shot("long-command")
    deny_all(desk)
    expect(card).to_have_count(0)


def test_a_600_character_command_is_visible_text_to_its_end(desk: Desk) -> None:
    card = cover_card(desk)
    try:
        conv = open_panel(desk)
        in_panel = conv.locator(f'[data-interaction="{card.get_attribute("data-interaction")}"]')
        for where in (card, in_panel):
            expect(where.locator(".run-step-text")).to_contain_text(TAIL, timeout=2000)
    finally:
        deny_all(desk)


def test_a_card_stays_visible_and_clickable_when_the_app_tries_to_cover_it(desk: Desk) -> None:
    page = desk.page
    card = cover_card(desk)
    ia_id = card.get_attribute("data-interaction")
    title = card.locator(".run-card-title")
    title_text = title.text_content()
    allow = card.locator('[data-decision="deny"]')
    # The view's own attempt: a `style` in its data is never applied (views are text, CSP).
    fixed = desk.body(FORGER).evaluate(
        "b => [...b.querySelectorAll('*')].some(n => getComputedStyle(n).position === 'fixed')"
    )
    assert not fixed
    desk.allow_console(r"ui_op|refused")
    # Desktop UI operations: move and stretch its own content over the window (pinned at the
    # top of the page's stacking), retitle / hide / recolour the card and the Settings window.
    ops = [
        {"op": "move", "id": f"winbody_{FORGER}", "x": 0, "y": 0},
        {"op": "resize", "id": f"winbody_{FORGER}", "width": 1280, "height": 800},
        {"op": "change_text", "id": f"iatitle_{ia_id}", "text": "All good, click Allow"},
        {"op": "hide", "id": f"iaprompt_{ia_id}"},
        {"op": "hide", "id": f"win_{FORGER}"},
        {"op": "change_color", "id": "conversation", "color": "red"},
        # the desktop's own voice while the user types (DESIGN §18): not the app's to forge
        {"op": "change_text", "id": "draft_route", "text": "→ nothing will be deleted"},
        {"op": "move", "id": "draft_bubble", "x": 0, "y": 0},
    ]
    for op in ops:
        desk.api("POST", "/api/action", {"app": FORGER, "action_id": "ui", "params": {"ops": [op]}})
    refused = page.locator(".toast", has_text="system's own UI")
    expect(refused.first).to_be_visible()
    expect(card).to_be_visible()
    expect(title).to_have_text(title_text or "")
    expect(card.locator(".run-card-prompt")).to_be_visible()
    expect(page.locator("#draft_route")).to_have_text("")
    assert page.locator("#uiop_layer #draft_bubble").count() == 0
    # nothing is drawn over the card's buttons: the point under each is the button itself
    box = allow.bounding_box()
    assert box is not None
    hit = page.evaluate(HIT, [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    assert hit == "deny", hit
    desk.shot("covered")
    allow.click()
    expect(card).to_have_count(0)
    wait_until(lambda: not pending(desk), what="the card to be answered")
    # UI changes are kept by the system and replayed on every load (DESIGN §9): take them
    # back, or the next test's page would find forger's body pinned over the taskbar.
    reset = {"op": "reset", "id": f"winbody_{FORGER}"}
    desk.api("POST", "/api/action", {"app": FORGER, "action_id": "ui", "params": {"ops": [reset]}})
    expect(desk.body(FORGER)).not_to_have_class(re.compile(r"\buiop-pinned\b"))


def test_an_app_named_settings_is_invalid_and_settings_is_the_real_one(desk: Desk) -> None:
    """The issue's example: an app folder ``settings`` drew a key form in the Settings window."""
    page = desk.page
    apps = desk.api("GET", "/api/apps")
    rows = {a["id"]: a for a in (apps["apps"] if isinstance(apps, dict) else apps)}
    assert rows["settings"]["status"] == "invalid"
    assert "reserved for the system's own windows" in rows["settings"]["error"]
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    win = page.locator("#win_settings")
    expect(win).to_have_count(1)
    expect(win).to_have_class(re.compile(r"\bwindow-system\b"))
    expect(win.locator(".win-titlebar .sys-mark")).to_be_visible()
    expect(win.locator(".win-title")).to_have_text("Settings")
    expect(win.locator("#set_llm_base_url")).to_be_visible()  # the real settings form
    expect(win).not_to_contain_text("API key expired")
    # an app window never carries the system's mark
    desk.open_app("hello")
    expect(desk.win("hello").locator(".sys-mark")).to_have_count(0)
    desk.shot("settings")


def test_an_apps_question_for_a_key_says_it_is_the_apps_not_the_systems(desk: Desk) -> None:
    """The system never asks for a key in an app window; an app's question is labelled as its."""
    desk.open_app(FORGER)
    desk.control(FORGER, "ask_key").click()
    card = desk.win(FORGER).locator('.run-card[data-kind="input"]')
    expect(card).to_have_count(1)
    expect(card.locator(".card-app-name")).to_have_text("Forger")
    expect(card.locator(".ask-from")).to_have_text(
        "Forger asks you (the app's question, not the system's)"
    )
    expect(card.locator(".ask-no-secrets")).to_have_text(
        "The system never asks for a key or a password here."
    )
    expect(card.locator(".ask-prompt")).to_have_text(
        "Your session expired: re-enter your DeepSeek API key"
    )
    conv = open_panel(desk)
    in_panel = conv.locator(f'[data-interaction="{card.get_attribute("data-interaction")}"]')
    expect(in_panel.locator(".ask-from")).to_contain_text("Forger asks you")
    expect(in_panel.locator(".ask-no-secrets")).to_be_visible()
    desk.shot("app-question")
    for ia in pending(desk):
        desk.api("POST", f"/api/interactions/{ia['id']}", {"value": "no"})
    expect(desk.body(FORGER)).to_contain_text("ran: ")
