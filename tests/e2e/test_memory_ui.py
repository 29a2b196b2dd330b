"""The memory window and Settings → Memory in Chromium (DESIGN §15, issue 23).

The real system with the gallery (an app scope). Each test starts from three memories put
there the way they arrive: one the user added (POST /api/memories), one in the gallery's
scope, and one the extraction proposed from a turn the user typed in a conversation
(``extracted:<session>``, linked to that turn). The page is driven as a user drives it —
the tray, the start menu, the command bar, buttons, the keyboard — and every change is
checked against what the API then answers.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import Desk, wait_until
from tests.integration.conftest import Running

SYSTEM_APPS = ["gallery"]
APP = "gallery"
TEA = "The user drinks green tea every morning"
GALLERY_NOTE = "Gallery opens on the table view"
HOSTILE = "<img src=x onerror=alert(1)>"
_names = itertools.count(1)


@dataclass
class Seeded:
    tea: dict[str, Any]
    app_note: dict[str, Any]
    proposal: dict[str, Any]
    session: str
    turn: int


def memories(running: Running, **query: str) -> list[dict[str, Any]]:
    r = running.get("/api/memories", params={"limit": "1000", **query})
    assert r.status_code == 200, r.text
    return list(r.json()["memories"])


def texts(running: Running, **query: str) -> list[str]:
    return [str(m["text"]) for m in memories(running, **query)]


def propose_from_a_conversation(running: Running, said: str) -> tuple[dict[str, Any], str, int]:
    """What the user typed in a conversation, read by the extraction as it reads any turn: the
    proposal it makes (with the session and turn), the session and the turn."""
    store = running.system.store
    sid = store.ensure_session(None)
    turn = store.add_history(sid, "user", {"text": said})
    memory = running.system.memory
    memory.turn_added(sid)
    memory.extractor.flush(sid)  # as a new conversation does: read now, not after the idle time

    def proposed() -> list[dict[str, Any]]:
        return [m for m in memories(running, state="proposed") if m["session_id"] == sid]

    wait_until(lambda: proposed(), what="the extraction's proposal")
    (proposal,) = proposed()
    assert proposal["source"] == f"extracted:{sid}" and proposal["turn"] == turn
    return proposal, sid, turn


def clear(running: Running) -> None:
    for m in memories(running):
        r = running.http.delete(f"{running.url}/api/memories/{m['id']}", timeout=20)
        assert r.status_code == 200, r.text


@pytest.fixture
def seeded(running: Running) -> Iterator[Seeded]:
    clear(running)
    user_md = running.get("/api/self/USER").json()["text"]
    tea = running.post("/api/memories", {"text": TEA, "tags": ["drink"]})
    assert tea.status_code == 201, tea.text
    note = running.post("/api/memories", {"text": GALLERY_NOTE, "scope": APP, "tags": ["view"]})
    assert note.status_code == 201, note.text
    name = f"Lin{next(_names)}"
    proposal, sid, turn = propose_from_a_conversation(running, f"My name is {name}")
    assert running.get("/api/memories", params={"state": "proposed"}).json()["proposed"] == 1
    yield Seeded(tea.json(), note.json(), proposal, sid, turn)
    clear(running)
    r = running.http.put(f"{running.url}/api/self/USER", json={"text": user_md}, timeout=20)
    assert r.status_code == 200, r.text
    r = running.post("/api/config", {"updates": {"language": "en"}})
    assert r.status_code == 200, r.text


def open_from_tray(desk: Desk) -> Locator:
    desk.page.locator("#tray_memory").click()
    win = desk.win("memory")
    expect(win).to_be_visible()
    return win


def row(win: Locator, memory_id: str) -> Locator:
    return win.locator(f'.memory-item[data-id="{memory_id}"]')


def in_active_list(win: Locator) -> Locator:
    return win.locator("#memory_list .memory-item")


def settings_memory_page(page: Page) -> Locator:
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#settings_tab_memory").click()
    expect(page.locator("#settings_tab_memory")).to_have_attribute("aria-selected", "true")
    return page.locator("#self_page")


def self_tab(page: Page, name: str) -> Locator:
    page.locator(f"#self_tab_{name}").click()
    text = page.locator("#self_text")
    expect(text).to_be_enabled()
    return text


def switch_language(page: Page, lang: str) -> None:
    """Through the Settings window, as a user does."""
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#settings_tab_general").click()
    page.locator("#set_language").select_option(lang)
    page.locator("#settings_save").click()
    expect(page.locator("html")).to_have_attribute("lang", lang)
    page.locator("#win_settings .win-close").click()


# ---------------------------------------------------------------------------- proposals


def test_the_badge_counts_proposals_and_accepting_one_moves_it_into_the_list(
    desk: Desk, seeded: Seeded
) -> None:
    page = desk.page
    tray_badge = page.locator("#tray_memory_count")
    expect(tray_badge).to_have_text("1")
    expect(tray_badge).to_be_visible()
    expect(page.locator("#tray_memory")).to_have_attribute(
        "title", "Memory: 1 waiting for your yes"
    )
    page.locator("#start_button").click()
    expect(page.locator("#start_memory_count")).to_have_text("1")
    page.keyboard.press("Escape")

    win = open_from_tray(desk)
    proposal = row(win.locator("#memory_proposed"), seeded.proposal["id"])
    expect(proposal.locator(".memory-text")).to_have_text(seeded.proposal["text"])
    expect(win.locator("#memory_proposed_title")).to_have_text("Waiting for your yes (1)")
    # where it came from: the conversation and the turn
    link = proposal.locator('[data-act="source"]')
    expect(link).to_have_text(re.compile(r"^From the conversation “My name is Lin\d+”$"))
    expect(in_active_list(win)).to_have_count(2)
    desk.shot("memory_window")

    proposal.get_by_role("button", name="Accept").click()
    expect(tray_badge).to_be_hidden()
    expect(page.locator("#tray_memory")).to_have_attribute("data-count", "0")
    expect(win.locator("#memory_proposed")).to_be_hidden()
    accepted = row(win.locator("#memory_list"), seeded.proposal["id"])
    expect(accepted).to_have_attribute("data-state", "active")
    expect(win.locator("#memory_status")).to_have_text("Accepted: it will be used from now on.")
    assert seeded.proposal["text"] in texts(desk.running, state="active")

    # the link opens the conversation on that session with the turn marked
    accepted.locator('[data-act="source"]').click()
    entry = page.locator(f'#conversation [data-entry="h{seeded.turn}"]')
    expect(entry).to_have_class(re.compile(r"\bis-highlighted\b"))
    expect(entry).to_be_in_viewport()
    expect(entry).to_contain_text("My name is")
    desk.shot("memory_source_turn")


def test_a_proposal_rejected_is_gone_and_the_badge_follows(desk: Desk, seeded: Seeded) -> None:
    page = desk.page
    # a second proposal, from an app: an app never writes the user's memory, it proposes
    memory = desk.running.system.memory
    from_app = memory.store(APP, "The user collects stamps", ["hobby"], user=True)
    badge = page.locator("#tray_memory_count")
    expect(badge).to_have_text("2")
    win = open_from_tray(desk)
    proposed = win.locator("#memory_proposed")
    expect(proposed.locator(".memory-item")).to_have_count(2)
    app_row = row(proposed, from_app["id"])
    expect(app_row.locator(".memory-origin")).to_have_text("From the app Gallery")

    app_row.get_by_role("button", name="Reject").click()
    expect(app_row).to_have_count(0)
    expect(badge).to_have_text("1")
    assert [m["id"] for m in memories(desk.running, state="proposed")] == [seeded.proposal["id"]]
    assert "The user collects stamps" not in texts(desk.running)


# ---------------------------------------------------------------------------- editing


def test_edit_in_place_pin_and_delete_after_asking(desk: Desk, seeded: Seeded) -> None:
    page = desk.page
    win = open_from_tray(desk)
    tea = row(win, seeded.tea["id"])
    expect(tea.locator(".memory-tag")).to_have_text(["#drink"])

    tea.get_by_role("button", name="Edit").click()
    field = tea.locator(".memory-edit-text")
    expect(field).to_be_focused()
    field.fill("The user drinks oolong tea every morning")
    tea.locator(".memory-edit-tags").fill("drink morning")
    field.press("Control+Enter")
    expect(tea.locator(".memory-text")).to_have_text("The user drinks oolong tea every morning")
    expect(tea.locator(".memory-tag")).to_have_text(["#drink", "#morning"])
    wait_until(
        lambda: (
            desk.api("GET", "/api/memories?q=oolong")["memories"][0]["text"]
            == "The user drinks oolong tea every morning"
        ),
        what="the edit to reach the API",
    )
    (saved,) = [m for m in memories(desk.running) if m["id"] == seeded.tea["id"]]
    assert saved["tags"] == ["drink", "morning"]

    # Escape leaves an edit without saving it
    tea.get_by_role("button", name="Edit").click()
    tea.locator(".memory-edit-text").fill("not this")
    tea.locator(".memory-edit-text").press("Escape")
    expect(tea.locator(".memory-text")).to_have_text("The user drinks oolong tea every morning")

    pin = tea.locator('[data-act="pin"]')
    expect(pin).to_have_attribute("aria-pressed", "false")
    pin.click()
    expect(tea).to_have_class(re.compile(r"\bis-pinned\b"))
    expect(tea.locator('[data-act="pin"]')).to_have_attribute("aria-pressed", "true")
    expect(tea.locator(".memory-pin")).to_be_visible()
    wait_until(
        lambda: any(m["pinned"] for m in memories(desk.running) if m["id"] == seeded.tea["id"]),
        what="the pin to reach the API",
    )

    # delete asks first: "Cancel" keeps it, OK deletes it
    tea.get_by_role("button", name="Delete").click()
    dialog = page.locator("#modal_layer .modal")
    expect(dialog).to_contain_text("Delete this memory?")
    expect(dialog).to_contain_text("The user drinks oolong tea every morning")
    page.locator("#modal_cancel").click()
    expect(dialog).to_have_count(0)
    expect(tea).to_be_visible()
    assert seeded.tea["id"] in [m["id"] for m in memories(desk.running)]
    tea.get_by_role("button", name="Delete").click()
    page.locator("#modal_ok").click()
    expect(tea).to_have_count(0)
    expect(win.locator("#memory_status")).to_have_text("Deleted.")
    assert seeded.tea["id"] not in [m["id"] for m in memories(desk.running)]


# ---------------------------------------------------------------------------- finding


def test_search_scope_and_source_filters(desk: Desk, seeded: Seeded) -> None:
    win = open_from_tray(desk)
    active = in_active_list(win)
    expect(active).to_have_count(2)

    win.locator("#memory_search").fill("green tea")
    expect(active).to_have_count(1)
    expect(active.locator(".memory-text")).to_have_text([TEA])
    expect(win.locator("#memory_proposed")).to_be_hidden()  # the proposal does not match
    win.locator("#memory_search").fill("nothing like this")
    expect(active).to_have_count(0)
    expect(win.locator("#memory_empty")).to_have_text("No memories match.")
    win.locator("#memory_search").fill("")
    expect(active).to_have_count(2)

    win.locator("#memory_scope").select_option(APP)
    expect(active).to_have_count(1)
    expect(active.first).to_have_attribute("data-scope", APP)
    expect(active.locator(".memory-scope")).to_have_text(["App: Gallery"])
    expect(win.locator("#memory_proposed")).to_be_hidden()  # the proposal is the user's
    win.locator("#memory_scope").select_option("user")
    expect(active.locator(".memory-text")).to_have_text([TEA])
    expect(win.locator("#memory_proposed .memory-item")).to_have_count(1)
    win.locator("#memory_scope").select_option("")

    win.locator("#memory_source").select_option("extracted:")
    expect(active).to_have_count(0)
    expect(win.locator("#memory_proposed .memory-item")).to_have_count(1)
    win.locator("#memory_source").select_option("user")
    expect(active).to_have_count(2)
    expect(win.locator("#memory_proposed")).to_be_hidden()


def test_markup_in_a_memory_is_shown_as_text(desk: Desk, seeded: Seeded) -> None:
    hostile = desk.api("POST", "/api/memories", {"text": HOSTILE, "tags": ["<b>x</b>"]})
    win = open_from_tray(desk)
    item = row(win, hostile["id"])
    expect(item.locator(".memory-text")).to_have_text(HOSTILE)
    expect(item.locator(".memory-tag")).to_have_text(["#<b>x</b>"])
    # no element was made of it (and no alert: the page's dialogs are recorded and fail the test)
    assert desk.body("memory").locator("img, b").count() == 0


# ---------------------------------------------------------------------------- the self files


def test_user_md_is_edited_saved_and_still_there_after_a_reload(desk: Desk, seeded: Seeded) -> None:
    page = desk.page
    settings_memory_page(page)
    text = self_tab(page, "USER")
    expect(page.locator("#self_tab_USER")).to_have_attribute("aria-selected", "true")
    mine = "# About me\n\nI am **Lin**, I write `Python` and like *jazz*.\n\n- tea\n- cats\n"
    text.fill(mine)
    expect(page.locator("#self_tab_USER")).to_have_text("USER.md •")  # unsaved
    preview = page.locator("#self_preview")
    expect(preview.locator("h1")).to_have_text("About me")
    expect(preview.locator("strong")).to_have_text("Lin")
    expect(preview.locator("li")).to_have_text(["tea", "cats"])
    page.locator("#self_save").click()
    expect(page.locator("#self_status")).to_have_text("USER.md saved.")
    expect(page.locator("#self_tab_USER")).to_have_text("USER.md")
    assert desk.api("GET", "/api/self/USER")["text"] == mine

    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    settings_memory_page(page)
    text = self_tab(page, "USER")
    expect(text).to_have_value(mine)
    expect(page.locator("#self_preview h1")).to_have_text("About me")
    desk.shot("settings_memory_user")


def test_a_refused_save_shows_the_servers_reason(desk: Desk, seeded: Seeded) -> None:
    page = desk.page
    desk.allow_console(r"status of 400 .*/api/self/SOUL")
    settings_memory_page(page)
    text = self_tab(page, "SOUL")
    text.fill("x" * (64 * 1024 + 1))  # over the self files' limit
    page.locator("#self_save").click()
    error = page.locator("#self_error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Not saved:")
    expect(page.locator("#self_tab_SOUL")).to_have_text("SOUL.md •")  # the draft is kept
    page.locator("#self_revert").click()
    expect(page.locator("#self_tab_SOUL")).to_have_text("SOUL.md")


def test_editing_memory_md_changes_the_memories(desk: Desk, seeded: Seeded) -> None:
    page = desk.page
    win = open_from_tray(desk)
    active = in_active_list(win)
    expect(active.locator(".memory-text")).to_contain_text([GALLERY_NOTE, TEA])

    settings_memory_page(page)
    text = self_tab(page, "MEMORY")
    expect(page.locator("#self_memory_note")).to_contain_text("regenerated from your memories")
    current = text.input_value()
    assert TEA in current and GALLERY_NOTE in current
    # remove the tea bullet, add one about the piano to the user's section
    lines = [line for line in current.splitlines() if TEA not in line]
    at = lines.index("## user") + 1
    lines[at:at] = ["", "- The user plays the piano  #music"]
    text.fill("\n".join(lines) + "\n")
    expect(page.locator("#self_preview")).to_contain_text("The user plays the piano")
    page.locator("#self_save").click()
    expect(page.locator("#self_status")).to_have_text("MEMORY.md saved.")

    # the memory window follows (the server's memory event), and so does the API
    expect(active.locator(".memory-text")).to_contain_text(["The user plays the piano"])
    expect(active.filter(has_text=TEA)).to_have_count(0)
    now = texts(desk.running, state="active")
    assert "The user plays the piano" in now and TEA not in now and GALLERY_NOTE in now
    # the saved file is the server's rewrite: the new bullet now carries its id
    expect(text).to_have_value(re.compile(r"- The user plays the piano  #music <!-- m_\w+ -->"))


# ---------------------------------------------------------------------------- ways in, languages


def test_the_desktop_intents_and_the_start_menu_open_it(desk: Desk, seeded: Seeded) -> None:
    page = desk.page
    box = page.locator("#command_input")
    box.fill("打开记忆")
    box.press("Enter")
    expect(desk.win("memory")).to_be_visible()
    expect(page.locator("#icon_memory")).to_be_visible()  # a taskbar entry like Settings'
    box.fill("close memory")
    box.press("Enter")
    expect(desk.win("memory")).to_have_count(0)
    box.fill("open memory")
    box.press("Enter")
    expect(desk.win("memory")).to_be_visible()
    desk.win("memory").locator(".win-close").click()
    page.locator("#start_button").click()
    page.locator("#start_memory").click()
    expect(desk.win("memory")).to_be_visible()
    expect(page.locator("#start_menu")).to_be_hidden()


def test_both_languages(desk: Desk, seeded: Seeded) -> None:
    page = desk.page
    win = open_from_tray(desk)
    title = win.locator(".win-title")
    expect(title).to_have_text("Memory")
    expect(win.locator("#memory_list_title")).to_have_text("Remembered (2)")
    expect(row(win, seeded.tea["id"]).locator(".memory-scope")).to_have_text("About you")

    switch_language(page, "zh-CN")
    expect(title).to_have_text("记忆")
    expect(win.locator("#memory_list_title")).to_have_text("已记住（2）")
    expect(win.locator("#memory_proposed_title")).to_have_text("等你确认（1）")
    tea = row(win, seeded.tea["id"])
    expect(tea.locator(".memory-scope")).to_have_text("关于你")
    expect(tea.locator('[data-act="edit"]')).to_have_text("编辑")
    expect(page.locator("#tray_memory")).to_have_attribute("title", "记忆：1 条等你确认")
    expect(page.locator("#memory_search")).to_have_attribute("placeholder", "搜索记忆")
    settings_memory_page(page)
    expect(page.locator("#settings_tab_memory")).to_have_text("记忆")
    expect(page.locator("#self_save")).to_have_text("保存")
    page.locator("#win_settings .win-close").click()
    desk.shot("memory_zh")

    switch_language(page, "en")
    expect(title).to_have_text("Memory")
    expect(win.locator("#memory_list_title")).to_have_text("Remembered (2)")
    expect(row(win, seeded.tea["id"]).locator('[data-act="edit"]')).to_have_text("Edit")
    expect(page.locator("#memory_search")).to_have_attribute("placeholder", "Search memories")
