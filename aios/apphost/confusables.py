"""Names as a person sees them: one comparison for every name the desktop shows (DESIGN §14.7).

Two names are the same name when a person could not tell them apart:
``Hello小AI`` followed by a zero-width space, ``Hello小Al`` with a lower-case
L, ``Νotes`` with a Greek capital Nu, ``ｎｏｔｅｓ`` in fullwidth letters,
``Notes`` under a right-to-left override. :func:`name_keys` gives the
comparison keys of a name: NFKC, then the invisible characters removed
(default-ignorable code points, format and control characters, bidi
controls, white space), then the Unicode confusables skeleton of UTS #39,
with case folded, and the combining marks dropped. The skeleton is ICU's
(``icu.SpoofChecker.getSkeleton``, from the ``pyicu-wheels`` package, which
bundles ICU and its copy of Unicode's ``confusables.txt``): no table is
written here.

Case folding and the skeleton do not commute (the skeleton maps a capital
``I`` to ``l``, a small ``i`` to itself), so a name has two keys: the
skeleton of its case-folded skeleton (``Hello小AI`` ~ ``Hello小Al``) and the
skeleton of its case fold (``HELLO小AI`` ~ ``hello小ai``). Two names collide
when they share a key (:func:`same_name`).

:func:`shown` is a name as the desktop draws it: NFC, with the invisible
characters removed, so what the user sees is what was compared (a bidi
override cannot turn ``setoN`` into ``Notes`` on the screen).
"""

from __future__ import annotations

import threading
import unicodedata
from functools import lru_cache

import icu

_INVISIBLE_PATTERN = "[[:Default_Ignorable_Code_Point:][:Cf:][:Cc:][:Bidi_Control:]]"
"""Characters a person does not see: removed before comparing and before showing."""
_SPACE_PATTERN = "[:White_Space:]"
_MARK_PATTERN = "[[:Mn:][:Me:]]"
"""Combining marks: a name differing from another only by them collides with it."""


def _frozen(pattern: str) -> icu.UnicodeSet:
    s = icu.UnicodeSet(pattern)
    s.freeze()
    return s


_INVISIBLE = _frozen(_INVISIBLE_PATTERN)
_SPACE = _frozen(_SPACE_PATTERN)
_MARK = _frozen(_MARK_PATTERN)
_local = threading.local()

KEY_CACHE = 4096
"""Names whose keys are kept (every app's names and keywords, compared on each change)."""


def _checker() -> icu.SpoofChecker:
    """One SpoofChecker per thread (an ICU service object is not shared between threads)."""
    checker = getattr(_local, "checker", None)
    if checker is None:
        checker = _local.checker = icu.SpoofChecker()
    return checker


def _skeleton(text: str) -> str:
    return str(_checker().getSkeleton(0, text))


def _drop(text: str, chars: icu.UnicodeSet) -> str:
    return "".join(c for c in text if not chars.contains(c))


def shown(name: str) -> str:
    """``name`` as the desktop draws it: NFC, invisible characters removed, trimmed."""
    return _drop(unicodedata.normalize("NFC", name or ""), _INVISIBLE).strip()


@lru_cache(maxsize=KEY_CACHE)
def name_keys(name: str) -> frozenset[str]:
    """The comparison keys of ``name`` (see the module docstring); empty for an empty name."""
    base = _drop(_drop(unicodedata.normalize("NFKC", name or ""), _INVISIBLE), _SPACE)
    if not base:
        return frozenset()
    looks = _skeleton(_skeleton(base).casefold()).casefold()
    folded = _skeleton(base.casefold()).casefold()
    # the skeleton is in NFD: a combining mark is its own character here
    keys = {_drop(looks, _MARK), _drop(folded, _MARK)}
    return frozenset(k for k in keys if k)


def same_name(a: str, b: str) -> bool:
    """Whether a person could take ``a`` for ``b`` (they share a comparison key)."""
    return not name_keys(a).isdisjoint(name_keys(b))


__all__ = ["name_keys", "same_name", "shown"]
