"""A manifest's icon: a name from the vendored icon set, an image file inside the app folder
or a short text (emoji); anything else makes the manifest invalid with a reason."""

from __future__ import annotations

import pytest

from aios.errors import ProtocolError
from aios.protocol import icon_file, parse_manifest


def manifest(icon: str) -> dict[str, str]:
    return {"name": "A", "entry": "main.py", "role_prompt": "r", "icon": icon}


@pytest.mark.parametrize(
    "icon", ["music", "sliders-horizontal", "icon.png", "img/logo.SVG", "🎵", "🗂️", "A", ""]
)
def test_accepted_icons(icon: str) -> None:
    assert parse_manifest(manifest(icon)).icon == icon


@pytest.mark.parametrize(
    "icon",
    [
        "../secret.png",
        "/etc/logo.png",
        "http://evil.example/x.png",
        "C:\\logo.png",
        "a sentence is not an icon",
        "logo.exe",
    ],
)
def test_refused_icons_name_the_field(icon: str) -> None:
    with pytest.raises(ProtocolError, match=r"icon: .*must be an icon name such as 'music'"):
        parse_manifest(manifest(icon))


def test_only_image_paths_are_icon_files() -> None:
    assert icon_file("icon.png") == "icon.png"
    assert icon_file("music") is None and icon_file("🎵") is None
