"""What the card shows is what runs (DESIGN §14.2, §14.4; issue 20 items 2-4), in Chromium.

The server reviews a step with the files its interpreter runs (their content, pinned by
hash), a step whose arguments wait for an earlier result as ``later`` (its own card once
that result is known), and work another app launched with the chain of apps. Here the one
card module draws them, in the app's window and in the conversation panel:

- ``python3 script.py``: the script's content, whole, as text (a script whose content is
  HTML and JavaScript stays text), with its size and short hash; changed after the card,
  the next card shows the new content; a file the system could not read says why;
- a template step: marked on the first card as reviewed later, then its own card with the
  resolved command;
- Evil launching Code: the card names both apps, in English and in Chinese.

Real system (smart mode), real app processes, real bubblewrap, real Chromium.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from tests.conftest import ROOT
from tests.e2e.conftest import ACTIVE, Desk, wait_until
from tests.integration.conftest import FIXTURES, Running, copy_apps, start_system

pytestmark = pytest.mark.e2e

PLANNER = "planner"
"""tests/fixtures/apps_runs/planner: its action ``plan`` runs the steps it is given."""
EVIL = "evil"
"""tests/fixtures/apps_rights/evil: its action ``plan`` too (here: it launches Code)."""
HOSTILE_SCRIPT = (
    "# <img src=x onerror=\"window.__pwned='img'\">\n"
    "print('</pre><script>window.__pwned=\"script\"</script>')\n"
    "# a zero-width space:\u200b<b>bold?</b>\n"
)
"""A script whose content is HTML and JavaScript: it must show as the text it is."""
SCROLLS_TO_END = """n => {
  n.scrollTop = n.scrollHeight;
  return n.scrollTop + n.clientHeight >= n.scrollHeight - 1;
}"""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("e2e")
    apps = copy_apps(tmp / "apps", [PLANNER], source=FIXTURES / "apps_runs")
    copy_apps(apps, [EVIL], source=FIXTURES / "apps_rights")
    shutil.copytree(ROOT / "apps" / "code", apps / "code")
    system = start_system(
        apps,
        tmp / "data",
        language="en",
        voice={"welcome": False},
        handle_timeout=15,
        approvals={"mode": "smart", "timeout": 600},
    )
    yield system
    system.stop()


def workdir(desk: Desk) -> Path:
    wd: Path = desk.running.system.tool_context(PLANNER, None).workdir
    return wd


def session_of(desk: Desk, app: str) -> str:
    """Open ``app``'s window as a user does; the page's session (the panel shows its cards)."""
    desk.open_app(app)
    sid: str = wait_until(
        lambda: desk.page.evaluate("() => localStorage.getItem('aios.session')"),
        what="the page's session",
    )
    return sid


def plan(desk: Desk, app: str, sid: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"app": app, "action_id": "plan", "params": {"steps": steps}, "session_id": sid}
    reply: dict[str, Any] = desk.api("POST", "/api/action", body)
    assert reply.get("state") == "waiting", reply
    return reply


def pending(desk: Desk) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = desk.api("GET", "/api/interactions?pending=1")
    return rows


def next_card(desk: Desk, run_id: str, seen: set[str]) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        cards = [c for c in pending(desk) if c["run_id"] == run_id and c["id"] not in seen]
        return cards[0] if cards else None

    card: dict[str, Any] = wait_until(found, what=f"a new card of {run_id}")
    seen.add(card["id"])
    return card


def answer(desk: Desk, ia_id: str, decision: str) -> None:
    desk.api("POST", f"/api/interactions/{ia_id}", {"decision": decision})


def open_panel(desk: Desk) -> Locator:
    conv = desk.page.locator("#conversation")
    if not conv.is_visible():
        desk.page.locator("#conversation_button").click()
    expect(conv).to_be_visible()
    return conv


def both_cards(desk: Desk, app: str, ia_id: str) -> tuple[Locator, Locator]:
    """The card in ``app``'s window and the same card in the conversation panel."""
    in_window = desk.win(app).locator(f'.run-card[data-interaction="{ia_id}"]')
    expect(in_window).to_have_count(1)
    in_panel = open_panel(desk).locator(f'[data-kind="interaction"][data-interaction="{ia_id}"]')
    expect(in_panel).to_have_count(1)
    return in_window, in_panel


def not_pwned(desk: Desk) -> None:
    assert desk.page.evaluate("() => window.__pwned === undefined")


# ------------------------------------------------------------------ pinned files


def test_a_scripts_content_is_on_the_card_as_text_and_a_change_shows_on_the_next_card(
    desk: Desk,
) -> None:
    script = workdir(desk) / "script.py"
    script.write_text(HOSTILE_SCRIPT, encoding="utf-8")
    sid = session_of(desk, PLANNER)
    steps = [{"step_id": "s", "tool": "shell_exec", "args": {"cmd": "python3 script.py"}}]
    reply = plan(desk, PLANNER, sid, steps)
    (ia,) = reply["pending"]
    (pin,) = ia["steps"][0]["files"]
    assert "⟨U+200B⟩" in pin["content"]  # the server made the invisible visible
    for card in both_cards(desk, PLANNER, ia["id"]):
        box = card.locator(".run-file-content")
        expect(box).to_have_text(pin["content"])  # whole, as the system read it
        expect(box).to_be_visible()
        assert box.evaluate("n => n.closest('details') === null")  # never folded away
        assert box.evaluate(SCROLLS_TO_END)
        # HTML in the content is text: no element was made from it
        expect(card.locator(".run-file img, .run-file script, .run-file b")).to_have_count(0)
        expect(card.locator(".run-file-path")).to_have_text("script.py")
        facts = card.locator(".run-file-facts")
        expect(facts).to_have_text(f"{pin['size']} bytes · sha256 {pin['sha256'][:12]}")
        expect(card.locator(".run-files-note")).to_contain_text("Allow approves this content")
    not_pwned(desk)
    desk.shot("script-card")

    # the app changes the file between the card and the run: a new card, the new content
    script.write_text("print('v2 ran')\n", encoding="utf-8")
    answer(desk, ia["id"], "allow")
    again = next_card(desk, reply["run_id"], {ia["id"]})
    for card in both_cards(desk, PLANNER, again["id"]):
        expect(card.locator(".run-file-content")).to_have_text("print('v2 ran')\n")
        expect(card).not_to_contain_text("__pwned")
    # the old card is gone from the window: only the new one asks
    expect(desk.win(PLANNER).locator(".run-card[data-interaction]")).to_have_count(1)
    desk.shot("script-changed")
    answer(desk, again["id"], "allow")  # positive control: the content shown is what runs
    expect(desk.body(PLANNER)).to_contain_text("v2 ran")
    not_pwned(desk)


def test_a_file_the_system_did_not_read_says_why_and_shows_no_content(desk: Desk) -> None:
    link = workdir(desk) / "evil.py"
    if not link.is_symlink():
        os.symlink("/proc/self/environ", link)
    sid = session_of(desk, PLANNER)
    steps = [{"step_id": "s", "tool": "shell_exec", "args": {"cmd": "python3 evil.py"}}]
    reply = plan(desk, PLANNER, sid, steps)
    (ia,) = reply["pending"]
    try:
        for card in both_cards(desk, PLANNER, ia["id"]):
            expect(card.locator(".run-file-unread")).to_have_text(
                "not read: it leads outside the workdir, content not shown"
            )
            expect(card.locator(".run-file-content")).to_have_count(0)
            expect(card.locator(".run-file-path")).to_have_text("evil.py → /proc/self/environ")
            expect(card).not_to_contain_text("PATH=")
    finally:
        answer(desk, ia["id"], "deny")


def test_a_script_longer_than_the_card_shows_says_so(desk: Desk) -> None:
    """The padding attack on a file: the card must not look whole when it is not."""
    from aios.runs.approved import PIN_SHOW_CHARS

    pad = "#" + "x" * (PIN_SHOW_CHARS + 100) + "\n"
    (workdir(desk) / "long.py").write_text(pad + "print('tail')\n", encoding="utf-8")
    sid = session_of(desk, PLANNER)
    steps = [{"step_id": "s", "tool": "shell_exec", "args": {"cmd": "python3 long.py"}}]
    reply = plan(desk, PLANNER, sid, steps)
    (ia,) = reply["pending"]
    try:
        (card, _) = both_cards(desk, PLANNER, ia["id"])
        expect(card.locator(".run-file-cut")).to_have_text(
            f"Only the first {PIN_SHOW_CHARS} characters are shown: the rest is not on "
            "this card, yet it would run too."
        )
    finally:
        answer(desk, ia["id"], "deny")


# ------------------------------------------------------------------ templates


def test_a_template_step_is_marked_later_then_shown_resolved_on_its_own_card(
    desk: Desk,
) -> None:
    code = "print('<i>from payload</i>')"
    (workdir(desk) / "payload.txt").write_text(code, encoding="utf-8")
    sid = session_of(desk, PLANNER)
    steps = [
        {"step_id": 1, "tool": "shell_exec", "args": {"cmd": "cat payload.txt"}},
        {
            "step_id": 2,
            "tool": "shell_exec",
            "args": {"cmd": ["python3", "-c", "{{step_1.result.stdout}}"]},
        },
    ]
    reply = plan(desk, PLANNER, sid, steps)
    (first,) = reply["pending"]
    for card in both_cards(desk, PLANNER, first["id"]):
        later = card.locator('.run-step[data-step-id="step_2"]')
        expect(later.locator(".run-step-mark")).to_have_text(
            "reviewed on a card of its own once the result of step 1 is known "
            "(this card does not approve it)"
        )
        expect(later.locator(".run-step-text")).to_contain_text("{{step_1.result.stdout}}")
        expect(card.locator('.run-step[data-step-id="step_1"] .run-step-mark')).to_have_text(
            "needs your approval"
        )
    answer(desk, first["id"], "allow")  # step 1 only: step 2 was not known yet
    second = next_card(desk, reply["run_id"], {first["id"]})
    resolved = shlex.join(["python3", "-c", code])
    for card in both_cards(desk, PLANNER, second["id"]):
        step = card.locator(".run-step")
        expect(step).to_have_count(1)
        expect(step.locator(".run-step-text")).to_have_text(resolved)
        expect(step.locator(".run-step-mark")).to_have_text("needs your approval")
        expect(card.locator("i")).to_have_count(0)
    desk.shot("template-resolved")
    answer(desk, second["id"], "deny")
    expect(desk.win(PLANNER).locator(".run-card[data-interaction]")).to_have_count(0)


# ------------------------------------------------------------------ launched work


def switch_language(desk: Desk, lang: str) -> None:
    """Through the Settings window, as a user does (the open cards are drawn again)."""
    page = desk.page
    if page.locator("#conversation").is_visible():  # the panel sits over the Settings window
        page.locator("#conversation_button").click()
        expect(page.locator("#conversation")).to_be_hidden()
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#set_language").select_option(lang)
    page.locator("#settings_save").click()
    expect(page.locator("html")).to_have_attribute("lang", lang)
    # the cards drawn again may bring their window forward over Settings: a user brings
    # Settings back from the start menu before closing it
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    expect(page.locator("#win_settings")).to_have_class(ACTIVE)
    page.locator("#win_settings .win-close").click()


def test_a_launched_childs_card_names_both_apps_in_english_and_in_chinese(desk: Desk) -> None:
    sid = session_of(desk, EVIL)
    launch = {"app": "code", "instruction": "运行 print(6*7)"}
    reply = plan(desk, EVIL, sid, [{"step_id": "kid", "tool": "launch", "args": launch}])
    (ia,) = reply["pending"]
    assert ia["app"] == "code" and ia["chain"] == [EVIL, "code"], ia
    text = ia["steps"][0]["text"]
    try:
        for card in both_cards(desk, "code", ia["id"]):
            expect(card.locator(".card-app-name")).to_have_text("Code")
            expect(card.locator(".card-chain")).to_have_text("asked by Evil")
            expect(card.locator(".run-card-prompt, .conv-card-prompt")).to_have_text(
                "Code, asked by Evil, wants to run 1 step(s); 1 need(s) your approval: shell_exec"
            )
            expect(card.locator(".run-step-text")).to_have_text(text)
            expect(card.locator('[data-decision="allow_always"]')).to_have_count(0)
        desk.shot("launched-en")
        switch_language(desk, "zh-CN")
        for reloaded in (False, True):
            if reloaded:  # the cards as the listing gives them after a reload
                desk.page.reload()
            for card in both_cards(desk, "code", ia["id"]):
                expect(card.locator(".card-app-name")).to_have_text("代码")
                expect(card.locator(".card-chain")).to_have_text("由 Evil 请求")
                expect(card.locator(".run-card-prompt, .conv-card-prompt")).to_have_text(
                    "代码（由 Evil 请求）想执行 1 个步骤，其中 1 个需要你的确认：shell_exec"
                )
                expect(card.locator(".run-step-text")).to_have_text(text)
                expect(card).not_to_contain_text("asked by")
        desk.shot("launched-zh")
    finally:
        desk.api("POST", "/api/config", {"updates": {"language": "en"}})
        answer(desk, ia["id"], "deny")
