"""docs/screenshots/ shows every bundled app at both sizes in both languages, and the
README links them (they are made by ``python3 scripts/screenshots.py``)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

SHOTS = ROOT / "docs" / "screenshots"
SIZES = ("1024x700", "1440x900")
LANGS = ("zh-CN", "en")
JPEG_MAGIC = b"\xff\xd8\xff"


def test_every_bundled_app_has_its_screenshots() -> None:
    apps = sorted(p.name for p in (ROOT / "apps").iterdir() if (p / "manifest.json").is_file())
    assert apps, "no bundled apps found"
    wanted = {
        f"{name}-{lang}-{size}.jpg"
        for name in [*apps, "desktop"]
        for lang in LANGS
        for size in SIZES
    }
    have = {p.name for p in SHOTS.glob("*.jpg")}
    missing = sorted(wanted - have)
    assert not missing, f"run python3 scripts/screenshots.py: missing {missing}"
    stale = sorted(have - wanted)
    assert not stale, f"screenshots of no bundled app: {stale}"
    for name in wanted:
        assert (SHOTS / name).read_bytes()[:3] == JPEG_MAGIC, f"{name} is not a JPEG"


def test_the_readme_links_the_screenshots() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"docs/screenshots/([\w.-]+\.jpg)", readme))
    assert linked, "the README links no screenshot"
    assert all((SHOTS / name).is_file() for name in linked)
