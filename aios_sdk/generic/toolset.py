"""Which tools the generic app offers the LLM for a request, and in how many words.

Eleven full tool schemas are ~2,000 tokens a small local model reads on every call
(issue 15). A request that names what it is about gets only the tools of those
words (files for file words, http for a URL...: each tool's ``offer_words`` in its
``ToolSpec``) plus ``show_view``; one that names
nothing gets them all. Schemas are shortened: titles dropped, descriptions cut to
their first sentence.
"""

from __future__ import annotations

import re
from typing import Any

from aios.tools import tools

SCHEMA_DESCRIPTION_CHARS = 120
"""A description in an offered schema is cut to its first sentence, at most this long."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|(?<=[。！？])")


def relevant_tools(text: str) -> set[str] | None:
    """The atomic tools ``text`` calls for, or None when it names none (offer them all)."""
    low = (text or "").lower()
    chosen = {name for name, spec in tools().items() if any(w in low for w in spec.offer_words)}
    return chosen or None


def short_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """The function schema without titles, its descriptions cut to their first sentence,
    ``anyOf [X, null]`` (an optional value) as X."""
    short: dict[str, Any] = _shorten(spec)
    return short


def _shorten(value: Any, *, in_properties: bool = False) -> Any:
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    options = value.get("anyOf")
    if not in_properties and isinstance(options, list) and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1 and isinstance(rest[0], dict):
            value = {**{k: v for k, v in value.items() if k != "anyOf"}, **rest[0]}
            if value.get("default", 0) is None:
                del value["default"]
    for key, item in value.items():
        if not in_properties and key == "title" and isinstance(item, str):
            continue
        if not in_properties and key == "description" and isinstance(item, str):
            item = _first_sentence(item)
        out[key] = _shorten(item, in_properties=(key == "properties" and not in_properties))
    return out


def _first_sentence(text: str) -> str:
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    if len(first) > SCHEMA_DESCRIPTION_CHARS:
        first = first[: SCHEMA_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return first
