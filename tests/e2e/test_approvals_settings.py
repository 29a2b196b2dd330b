"""Settings → Approvals in Chromium (DESIGN §12 "Policy"): the user sets the approval mode
with the keyboard, sets a tool of an app to "never", and revokes an "always allow" given on
an approval card; each change is what the API then answers.

The real system, in smart mode, with the ``e2e_runs`` app (a plan of a command and a write)
and the gallery.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from aios.protocol import ATOMIC_TOOLS
from aios.tools.risk import classify
from tests.e2e.conftest import Desk, start_e2e_system, wait_until
from tests.integration.conftest import Running

SYSTEM_APPS = ["e2e_runs", "gallery"]
RUNS_APP = "e2e_runs"
SMART = {"mode": "smart"}
READ_ARGS: dict[str, dict[str, Any]] = {
    "http_request": {"method": "GET", "url": "http://127.0.0.1/"},
    "db_query": {"sql": "SELECT 1"},
}
WRITE_ARGS: dict[str, dict[str, Any]] = {
    "http_request": {"method": "POST", "url": "http://127.0.0.1/"},
    "db_query": {"sql": "DELETE FROM t"},
}
"""Arguments for the two tools whose risk depends on them: a read and a write."""


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    system = start_e2e_system(tmp_path_factory.mktemp("e2e"), SYSTEM_APPS, approvals=SMART)
    yield system
    system.stop()


@pytest.fixture(autouse=True)
def fresh_settings(running: Running) -> Iterator[None]:
    """Each test starts in smart mode with no per-app rules, and leaves it so."""

    def reset() -> None:
        r = running.post("/api/config", {"updates": {"approvals": SMART, "language": "en"}})
        assert r.status_code == 200, r.text
        for app in SYSTEM_APPS:
            rules = running.get(f"/api/apps/{app}/policy").json()
            if rules:
                cleared = running.post(f"/api/apps/{app}/policy", dict.fromkeys(rules))
                assert cleared.json() == {}, cleared.text

    reset()
    yield
    reset()


def open_approvals(desk: Desk) -> Locator:
    """Start → Settings, then the Approvals tab with the keyboard; the page."""
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    general = page.locator("#settings_tab_general")
    expect(general).to_have_attribute("aria-selected", "true")
    general.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    tab = page.locator("#settings_tab_approvals")
    expect(tab).to_be_focused()
    expect(tab).to_have_attribute("aria-selected", "true")
    approvals = page.locator("#approvals_page")
    expect(approvals.locator(".policy-app")).to_have_count(len(SYSTEM_APPS))
    return approvals


def app_section(desk: Desk, app: str) -> Locator:
    """The app's table, opened with the keyboard if it is closed."""
    section = desk.page.locator(f'.policy-app[data-app="{app}"]')
    if section.get_attribute("open") is None:
        section.locator("summary").focus()
        desk.page.keyboard.press("Enter")
    expect(section).to_have_attribute("open", "")
    return section


def mode(desk: Desk) -> str:
    return str(desk.api("GET", "/api/config")["config"]["approvals"]["mode"])


def test_the_mode_is_set_with_the_keyboard_and_saved(desk: Desk) -> None:
    page = desk.page
    approvals = open_approvals(desk)
    smart = page.locator("#approvals_mode_smart")
    expect(smart).to_be_checked()
    expect(page.locator("#approvals_mode_smart_hint")).to_have_text(
        "Ask before running a command or starting a program (high risk)."
    )
    write_default = app_section(desk, RUNS_APP).locator(
        '.policy-row[data-tool="file_write"] .policy-default'
    )
    expect(write_default).to_have_text("allow")  # smart: a write runs without asking

    smart.focus()
    page.keyboard.press("ArrowDown")  # the next radio: manual
    expect(page.locator("#approvals_mode_manual")).to_be_checked()
    expect(page.locator("#approvals_mode_status")).to_have_text("Approval mode set to: Manual")
    assert mode(desk) == "manual"
    expect(write_default).to_have_text("ask")  # the mode's default follows at once
    db_default = approvals.locator(
        f'.policy-app[data-app="{RUNS_APP}"] .policy-row[data-tool="db_query"] .policy-default'
    )
    expect(db_default).to_have_text("allow reads, ask for writes")
    desk.shot("approvals_manual")

    # two presses in a row: the last one wins, saved after the first
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    expect(page.locator("#approvals_mode_auto")).to_be_checked()
    expect(page.locator("#approvals_mode_status")).to_have_text("Approval mode set to: Auto")
    wait_until(lambda: mode(desk) == "auto", what="the mode saved as auto")

    # a plan in auto mode runs without a card: the saved mode is the one that applies
    reply = desk.api("POST", "/api/action", {"app": RUNS_APP, "action_id": "both"})
    assert "pending" not in reply and reply["response"]["data"]["codes"] == {
        "step_say": "ok",
        "step_note": "ok",
    }


def test_a_tool_set_to_never_is_the_apps_policy_and_shows_after_a_reload(desk: Desk) -> None:
    page = desk.page
    open_approvals(desk)
    section = app_section(desk, "gallery")
    rows = section.locator(".policy-row")
    expect(rows).to_have_count(len(ATOMIC_TOOLS))
    # every tool with the risk classes aios/tools/risk.py gives it
    # (a read and a write where it varies)
    for tool in ATOMIC_TOOLS:
        expected = {
            classify(tool, READ_ARGS.get(tool, {})),
            classify(tool, WRITE_ARGS.get(tool, {})),
        }
        shown = section.locator(f'.policy-row[data-tool="{tool}"] .policy-risk')
        assert set((shown.get_attribute("data-risks") or "").split()) == expected, tool
    shell = page.locator("#policy_gallery_shell_exec")
    expect(shell).to_have_value("default")
    expect(shell).to_have_accessible_name("shell_exec for Gallery")

    shell.select_option("never")
    expect(page.locator("#policy_status")).to_have_text("shell_exec for Gallery: Never")
    assert desk.api("GET", "/api/apps/gallery/policy") == {"shell_exec": "never"}
    page.locator("#policy_gallery_cache_set").select_option("ask")
    expect(page.locator("#policy_status")).to_have_text("cache_set for Gallery: Ask")
    assert desk.api("GET", "/api/apps/gallery/policy") == {
        "shell_exec": "never",
        "cache_set": "ask",
    }
    expect(section.locator(".policy-count")).to_have_text("2 of your choices")
    assert desk.api("GET", f"/api/apps/{RUNS_APP}/policy") == {}  # other apps are untouched

    page.reload()
    open_approvals(desk)
    section = page.locator('.policy-app[data-app="gallery"]')
    expect(section).to_have_attribute("open", "")  # an app with choices of the user's is open
    expect(page.locator("#policy_gallery_shell_exec")).to_have_value("never")
    expect(page.locator("#policy_gallery_cache_set")).to_have_value("ask")
    desk.shot("approvals_never")

    reset = section.locator(".policy-reset")
    reset.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#policy_status")).to_have_text("All tools of Gallery are back to default")
    assert desk.api("GET", "/api/apps/gallery/policy") == {}
    expect(page.locator("#policy_gallery_shell_exec")).to_have_value("default")
    expect(reset).to_be_hidden()


def test_an_always_allow_from_a_card_shows_as_allow_and_is_revoked_here(desk: Desk) -> None:
    page = desk.page
    reply = desk.api("POST", "/api/action", {"app": RUNS_APP, "action_id": "both"})
    assert reply["state"] == "waiting", reply
    card = reply["pending"][0]
    desk.api("POST", f"/api/interactions/{card['id']}", {"decision": "allow_always"})
    wait_until(
        lambda: desk.api("GET", f"/api/runs/{reply['run_id']}")["state"] == "done",
        what="the allowed run to finish",
    )
    assert desk.api("GET", f"/api/apps/{RUNS_APP}/policy") == {"shell_exec": "allow"}

    open_approvals(desk)
    section = page.locator(f'.policy-app[data-app="{RUNS_APP}"]')
    expect(section).to_have_attribute("open", "")
    select = page.locator(f"#policy_{RUNS_APP}_shell_exec")
    expect(select).to_have_value("allow")
    expect(section.locator(".policy-count")).to_have_text("1 of your choices")
    expect(section.locator('.policy-row[data-tool="shell_exec"] .policy-default')).to_have_text(
        "ask"
    )

    select.focus()
    select.select_option("default")
    expect(page.locator("#policy_status")).to_have_text("shell_exec for Runs: Default")
    assert desk.api("GET", f"/api/apps/{RUNS_APP}/policy") == {}
    expect(section.locator(".policy-count")).to_have_text("all default")
    # revoked: the next plan with a command asks again
    again = desk.api("POST", "/api/action", {"app": RUNS_APP, "action_id": "both"})
    assert again["state"] == "waiting"
    desk.api("POST", f"/api/interactions/{again['pending'][0]['id']}", {"decision": "deny"})
    wait_until(
        lambda: desk.api("GET", f"/api/runs/{again['run_id']}")["state"] in ("done", "failed"),
        what="the denied run to end",
    )


def test_the_page_in_chinese(desk: Desk) -> None:
    page = desk.page
    desk.api("POST", "/api/config", {"updates": {"language": "zh-CN"}})
    page.reload()
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    tab = page.locator("#settings_tab_approvals")
    expect(tab).to_have_text("审批")
    tab.click()
    expect(page.locator("#approvals_mode legend")).to_have_text("审批模式")
    expect(page.locator('label[for="approvals_mode_smart"] .approvals-mode-name')).to_have_text(
        "智能（推荐）"
    )
    section = app_section(desk, "gallery")
    expect(section.locator("thead th")).to_have_text(["工具", "风险", "模式默认", "你的选择"])
    shell = page.locator("#policy_gallery_shell_exec")
    expect(shell.locator("option")).to_have_text(["默认", "允许", "询问", "从不"])
    shell.select_option("never")
    expect(page.locator("#policy_status")).to_have_text("组件展示 的 shell_exec：从不")
    assert desk.api("GET", "/api/apps/gallery/policy") == {"shell_exec": "never"}
    desk.shot("approvals_zh")
