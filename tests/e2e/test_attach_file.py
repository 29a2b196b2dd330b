"""Launching the files app from another app, in Chromium (DESIGN §13, the bundled example).

The real notes and files apps: notes' "Attach a file" launches files for a result; the
files window comes to the front in its pick mode; picking a file there hands it back,
notes is in front again and shows the new note pointing at the file.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from aios.config import DEFAULT_GRANTS
from tests.e2e.conftest import Desk, expect_in_front
from tests.integration.conftest import Running, start_system

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("e2e")
    apps = tmp / "apps"
    for app_id in ("notes", "files"):
        shutil.copytree(ROOT / "apps" / app_id, apps / app_id)
    (apps / "files" / "workspace" / "report.txt").write_text("quarterly figures")
    system = start_system(
        apps,
        tmp / "data",
        language="en",
        voice={"welcome": False},
        handle_timeout=15,
        apps={"default_grants": DEFAULT_GRANTS},
    )
    yield system
    system.stop()


def test_notes_launches_files_to_pick_a_file_and_gets_it_back(desk: Desk) -> None:
    desk.open_app("notes")
    expect_in_front(desk, "notes")
    desk.control("notes", "attach").click()
    # the files app opens in front, in its pick mode, saying who opened it
    expect(desk.control("files", "pick")).to_be_visible()
    expect_in_front(desk, "files")
    expect(desk.win("files").locator(".win-opener")).to_contain_text(
        "Notes"
    )  # its name in the UI language
    desk.shot("files_picking_for_notes")
    # by keyboard: in the small launched window the table's scroll area overlaps the
    # per-row buttons for the pointer (noted; a keyboard user picks the same way)
    desk.control("files", "pick").focus()
    desk.page.keyboard.press("Enter")
    # notes is in front again with a note pointing at the file
    expect(desk.body("notes")).to_contain_text("report.txt")
    expect_in_front(desk, "notes")
    desk.shot("notes_with_the_pick")
