"""App icons render on a machine without an emoji font (issue 8, item 18): bundled apps name
vendored Lucide icons, an image file in the app folder is another option, and an unknown
name or a missing image falls back to the app's initial on a coloured tile."""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Locator, expect

from tests.conftest import ROOT
from tests.e2e.conftest import BUNDLED_APPS, E2E_APPS, Desk, start_e2e_system
from tests.integration.conftest import Running
from tests.util import wait_for

pytestmark = pytest.mark.e2e

BUNDLED = sorted(p.name for p in BUNDLED_APPS.iterdir() if (p / "manifest.json").is_file())
LUCIDE = ROOT / "renderer" / "vendor" / "lucide" / "icons"
PNG_SIZE = 16
EXTRA = {  # app id -> (icon in the manifest, how the desktop must draw it)
    "e2e_unknown_icon": ("no-such-icon", "initial"),
    "e2e_png_icon": ("icon.png", "file"),
    "e2e_missing_png": ("missing.png", "initial"),
}


def png(size: int) -> bytes:
    """A small solid PNG, written by hand so the test needs no image library."""
    raw = b"".join(b"\x00" + b"\x30\x90\xe0" * size for _ in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def all_apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("icons")
    for app_id, (icon, _) in EXTRA.items():
        folder = tmp / "apps" / app_id
        shutil.copytree(E2E_APPS / "e2e_slow", folder)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        manifest.update(icon=icon, name=f"Zed {app_id}")
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        if icon == "icon.png":
            (folder / "icon.png").write_bytes(png(PNG_SIZE))
    running = start_e2e_system(tmp, BUNDLED)
    yield running
    running.stop()


def manifest_icon(app_id: str) -> str:
    return str(json.loads((BUNDLED_APPS / app_id / "manifest.json").read_text())["icon"])


def assert_drawn(tile: Locator, kind: str) -> None:
    expect(tile).to_have_attribute("data-icon-kind", kind)
    expect(tile).to_be_visible()

    def drawn() -> dict[str, float] | None:  # the taskbar may redraw (grants, app status)
        box = tile.bounding_box()
        return box if box is not None and box["width"] > 0 and box["height"] > 0 else None

    wait_for(drawn, f"the {kind} icon to be drawn with a size")
    if kind in ("set", "file"):
        img = tile.locator("img")
        expect(img).to_have_count(1)
        # decoded, with a real size: not a broken-image box
        assert img.evaluate("i => i.complete && i.naturalWidth > 0"), img.get_attribute("src")
        assert (tile.text_content() or "") == ""  # no emoji character to become a tofu box


def test_bundled_apps_name_icons_of_the_vendored_set(
    all_apps: Running, open_desk: Callable[..., Desk]
) -> None:
    desk = open_desk(all_apps)
    desk.allow_console(r"status of 404")  # e2e_missing_png's image, before its fallback
    page = desk.page
    for app_id in BUNDLED:
        name = manifest_icon(app_id)
        assert name.isascii() and name.islower(), f"{app_id}: icon {name!r} is not a set name"
        assert (LUCIDE / f"{name}.svg").is_file(), f"{app_id}: {name}.svg is not vendored"
        tile = page.locator(f"#icon_{app_id} .app-tile")
        assert_drawn(tile, "set")
        expect(tile.locator("img")).to_have_attribute(
            "src", f"/static/vendor/lucide/icons/{name}.svg"
        )
        assert_drawn(page.locator(f'.desk-app[data-app="{app_id}"] .app-tile'), "set")
    page.locator("#start_button").click()
    for app_id in BUNDLED:
        assert_drawn(page.locator(f"#menu_{app_id} .app-tile"), "set")
    page.keyboard.press("Escape")
    desk.open_app("gallery")
    assert_drawn(desk.win("gallery").locator(".win-icon .app-tile"), "set")
    desk.shot("icons")


@pytest.mark.parametrize("app_id", sorted(EXTRA))
def test_image_files_and_the_initial_tile_fallback(
    all_apps: Running, app_id: str, open_desk: Callable[..., Desk]
) -> None:
    desk = open_desk(all_apps)
    desk.allow_console(r"status of 404")  # the missing image is asked for once, then not
    kind = EXTRA[app_id][1]
    tile = desk.page.locator(f"#icon_{app_id} .app-tile")
    assert_drawn(tile, kind)
    if kind == "initial":
        expect(tile).to_have_text("Z")
        colour = tile.evaluate("t => getComputedStyle(t).backgroundColor")
        assert colour not in ("", "rgba(0, 0, 0, 0)"), colour
    else:
        assert tile.locator("img").evaluate("i => i.naturalWidth") == PNG_SIZE
