"""A failing store seen from the desktop: the page says why the system cannot save
anything, and stops saying it once space returns (issue 8, item 7)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Desk, wait_until
from tests.integration.conftest import Running
from tests.util import fill_disk, small_tmpfs

pytestmark = pytest.mark.e2e

TMPFS_SIZE = "2m"


@pytest.fixture
def small_data_dir(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs where the system's data dir goes (skipped where mounting is refused)."""
    with small_tmpfs(tmp_path / "sys0" / "data", TMPFS_SIZE) as mount:
        yield mount


def test_a_full_disk_is_shown_with_its_reason_until_space_returns(
    small_data_dir: Path, system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    running = system_factory(["gallery"])
    assert running.system.data_dir == small_data_dir
    desk = open_desk(running)
    desk.allow_console(r"503|full")  # writes the page makes while the disk is full
    desk.open_app("gallery")
    status = desk.page.locator("#desktop_status")

    filler = fill_disk(small_data_dir)

    def store_failing() -> str | None:
        try:  # a write, as any request of the desktop makes one
            running.system.store.add_history("probe", "user", "x" * 4096)
        except Exception:  # noqa: BLE001 - the failure itself is what we wait for
            pass
        return running.system.store.failure()

    reason = wait_until(store_failing, "the store to fail on the full disk")
    assert "is full" in reason
    expect(status).to_be_visible()
    expect(status).to_contain_text("cannot save anything")
    expect(status).to_contain_text(str(small_data_dir))
    desk.shot("store_full")

    filler.unlink()
    expect(status).not_to_contain_text("cannot save anything")
    assert running.system.store.failure() is None
