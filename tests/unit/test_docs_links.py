"""The docs cite only what is in the repo: every relative link of README.md and docs/*.md
names a file that exists (and a heading that exists, when it has an anchor), every
repo path quoted in code (`aios/control/router.py`) exists, and nothing cites the spec by section
("spec §x.y"), which is not in the repo. The app guide's two languages keep one structure.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
GUIDE_EN = ROOT / "docs" / "app-guide.md"
GUIDE_ZH = ROOT / "docs" / "app-guide.zh-CN.md"

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_CODE_PATH = re.compile(
    r"`((?:aios|aios_sdk|apps|docs|tests|renderer|scripts|bench)/[^`\s<>*{}]+\.[a-z]{1,5})`"
)
"""A repo file quoted in inline code: `aios/control/router.py`, `renderer/js/main.js`."""
_SPEC = re.compile(r"\bspec\s*§", re.IGNORECASE)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercased, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*\*|__", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    text = _FENCE.sub("", doc.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set(_HTML_ID.findall(text))
    for _, title in _HEADING.findall(text):
        base = slug(title)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def prose(doc: Path) -> str:
    """The doc without its fenced code blocks (links inside code are not links)."""
    return _FENCE.sub("", doc.read_text(encoding="utf-8"))


def headings(doc: Path, level: int) -> list[str]:
    return [t for h, t in _HEADING.findall(prose(doc)) if len(h) == level]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_name_files_and_headings_that_exist(doc: Path) -> None:
    broken = []
    for target in _LINK.findall(prose(doc)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT)}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    assert not broken, f"{doc.name} links what is not in the repo:\n" + "\n".join(broken)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_quoted_repo_paths_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = sorted({p for p in _CODE_PATH.findall(text) if not (ROOT / p).exists()})
    assert not missing, f"{doc.name} cites files that are not in the repo: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_doc_cites_the_spec_by_section(doc: Path) -> None:
    lines = [
        f"{i}: {line.strip()}"
        for i, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        if _SPEC.search(line)
    ]
    assert not lines, (
        f"{doc.name} cites 'spec §', which is not in the repo; cite a file instead:\n"
        + "\n".join(lines)
    )


def test_the_app_guide_has_one_structure_in_both_languages() -> None:
    for level in (2, 3):
        en, zh = headings(GUIDE_EN, level), headings(GUIDE_ZH, level)
        assert len(en) == len(zh), (
            f"app-guide.md has {len(en)} level-{level} headings, app-guide.zh-CN.md {len(zh)}"
        )

    def numbers(doc: Path) -> list[str]:
        return [t.split(".", 1)[0] for t in headings(doc, 2)]

    assert numbers(GUIDE_EN) == numbers(GUIDE_ZH), "the guides number their sections apart"
    assert "(app-guide.zh-CN.md)" in GUIDE_EN.read_text(encoding="utf-8")
    assert "(app-guide.md)" in GUIDE_ZH.read_text(encoding="utf-8")
