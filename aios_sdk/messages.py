"""Bilingual (Chinese / English) messages for an app's replies.

Two ways, for the two habits of the bundled apps: inline, ``tr(lang, "你好",
"Hello")``; or a table of keyed pairs with ``str.format`` fields::

    T = Messages({"title": ("音乐", "Music"), "playing": ("正在播放 {song}", "Playing {song}")})
    T("playing", lang, song=name)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aios_sdk.context import Lang


def tr(lang: Lang | str, zh: str, en: str) -> str:
    """``en`` when ``lang`` is ``"en"``, else ``zh``."""
    return en if lang == "en" else zh


class Messages:
    """A table of ``key -> (zh, en)`` messages; calling it picks one and fills it in."""

    def __init__(self, table: Mapping[str, tuple[str, str]]) -> None:
        self.table = dict(table)

    def __call__(self, key: str, lang: Lang | str, **fields: Any) -> str:
        zh, en = self.table[key]
        return tr(lang, zh, en).format(**fields)

    def __contains__(self, key: object) -> bool:
        return key in self.table

    def pair(self, key: str) -> tuple[str, str]:
        """The ``(zh, en)`` pair of ``key``, unformatted."""
        return self.table[key]
