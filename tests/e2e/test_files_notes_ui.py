"""The files and notes apps as a person uses them, in Chromium at 1024×700 (issue 13).

One system with the real files and notes apps: the file list fills the files window at
its default size (it was squeezed to 2 px under the new-file form), a delete asks once
(the confirm card is also the approval of the delete command), and a note's own done box
marks that note done, struck through, and only that one.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import Desk, wait_until
from tests.integration.conftest import Running

SYSTEM_APPS = ["files", "notes"]
SMALL = {"width": 1024, "height": 700}
"""The smaller of the issue's two screens."""
MIN_LIST_PX = 100
"""A list a person can read: several rows, not a sliver."""


def test_the_file_list_fills_the_default_window_at_1024x700(desk: Desk, running: Running) -> None:
    workspace = running.apps_dir / "files" / "workspace"
    for name in ("budget.csv", "notes.txt", "plan.md"):
        (workspace / name).write_text(name)
    desk.page.set_viewport_size(SMALL)
    body = desk.open_app("files")
    desk.wait_view("files", "table")
    wrap = body.locator(".table-wrap")
    expect(wrap.locator("tr", has_text="plan.md")).to_be_visible()
    box = wrap.bounding_box()
    assert box is not None and box["height"] > MIN_LIST_PX, box
    expect(body.locator(".table-count")).to_have_text("3 items")  # not "3 rows"
    # the delete button of a row is red (danger), New file is the main action
    delete = wrap.locator("tr", has_text="plan.md").get_by_role("button", name="Delete")
    expect(delete).to_have_class(re.compile(r"\bbtn-danger\b"))
    desk.shot("files_1024x700")


def test_a_delete_asks_once_even_when_commands_ask(desk: Desk, running: Running) -> None:
    """The user's policy asks about the app's commands: the confirm card lists the delete
    command, and its yes is the approval, so no second card comes before the file goes."""
    (running.apps_dir / "files" / "workspace" / "old.log").write_text("x")
    desk.api("POST", "/api/apps/files/policy", {"shell_exec": "ask"})
    try:
        body = desk.open_app("files")
        row = body.locator(".table-wrap tr", has_text="old.log")
        row.get_by_role("button", name="Delete").click()
        card = desk.win("files").locator(".ask-card")
        expect(card).to_have_count(1)
        expect(card.locator(".ask-covers .run-step-text")).to_contain_text("old.log")
        card.get_by_role("button", name="Yes", exact=True).click()
        # deleted: had the command been asked about again, it would wait for that card
        expect(desk.win("files").locator(".win-message")).to_have_text("Deleted 'old.log'")
        expect(row).to_have_count(0)
        expect(desk.page.locator(".run-card:not(.ask-card)")).to_have_count(0)
        assert not (running.apps_dir / "files" / "workspace" / "old.log").exists()
    finally:
        desk.api("POST", "/api/apps/files/policy", {"shell_exec": None})


def test_a_notes_row_box_marks_that_note_done_struck_through(desk: Desk, running: Running) -> None:
    for title in ("Buy milk", "Call the bank"):
        running.act("notes", {"action_id": "add", "form_values": {"title": title}})
    desk.page.set_viewport_size(SMALL)
    body = desk.open_app("notes")
    desk.wait_view("notes", "list")
    row = body.locator(".list-item", has_text="Buy milk")
    other = body.locator(".list-item", has_text="Call the bank")
    box = row.locator(".row-check input[type=checkbox]")
    expect(box).not_to_be_checked()
    box.click()
    done = body.locator(".list-item.is-done", has_text="Buy milk")
    expect(done).to_be_visible()
    expect(done.locator(".list-title")).to_have_css(
        "text-decoration-line", re.compile("line-through")
    )
    expect(done.locator(".row-check input")).to_be_checked()
    expect(other).not_to_have_class(re.compile(r"\bis-done\b"))
    # the action bar holds no done switches, whatever the number of notes
    expect(desk.win("notes").locator(".win-actions .switch, .win-actions .chk")).to_have_count(0)
    wait_until(
        lambda: (
            [
                i["done"]
                for i in running.act("notes", {"action_id": "refresh"})["data"]["items"]
                if i["title"] == "Buy milk"
            ]
            == [True]
        ),
        what="the note stored as done",
    )
    desk.shot("notes_done_1024x700")
