"""JSON with a bounded nesting depth (DESIGN §11: deeper than the limit is refused).

``json.loads`` recurses per level: a body of ``[[[[…`` a few thousand deep ends
in a ``RecursionError`` somewhere far from the request, and a merely deep one
passes on to code (validation, logging, the renderer) that recurses again.
:func:`loads` refuses both with one :class:`TooDeep` naming the limit.
"""

from __future__ import annotations

import json
from typing import Any


class TooDeep(ValueError):
    """The document nests deeper than allowed."""


def depth_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` nests more than ``limit`` levels of arrays/objects (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return False


def loads(raw: str | bytes, limit: int) -> Any:
    """``json.loads(raw)``; TooDeep when nested more than ``limit`` levels.

    json.JSONDecodeError and UnicodeDecodeError pass through as from json.loads.
    """
    message = f"JSON nested deeper than {limit} levels is refused"
    try:
        value = json.loads(raw)
    except RecursionError:
        raise TooDeep(message) from None
    if depth_exceeds(value, limit):
        raise TooDeep(message)
    return value
