"""Who owns the words of an instruction (DESIGN §14.7): a later app never silently takes them.

An app's routing words are its names (every locale), its id, its keywords
and its examples. When an instruction routed to app N uses words that N
shares with an app O installed before it (an earlier install generation,
:attr:`aios.apphost.manifests.AppRecord.installed`), N is taking O's words: the
controller asks the user which app is meant before anything reaches N, and
remembers the answer (:meth:`aios.store.Store.set_route_owner_choice`).

Words are matched the way the router matched them
(:meth:`aios.control.router.OfflineRouter.matched_words`: names, keywords, the start
an instruction shares with an example, a similar example) and compared with
:func:`aios.apphost.confusables.name_keys`, so a copy in look-alike letters, in
another case or with invisible characters is still a copy. Words of one
character (after normalising) decide nothing. An instruction that names N
by a name of its own (one that looks like no earlier app's name, id or
keyword) is N's, whatever else it says.
"""

from __future__ import annotations

from dataclasses import dataclass

from aios.apphost.confusables import name_keys
from aios.control.router import AppProfile, OfflineRouter

MIN_WORD = 2
"""A word shorter than this (after normalising) never makes an app an owner."""


@dataclass(frozen=True)
class Contest:
    """An instruction routed to ``newcomer`` that uses words earlier apps own."""

    newcomer: str
    owners: tuple[str, ...]
    """The earlier apps whose words the instruction uses, installed first first."""
    words: tuple[str, ...]
    """Those words, as the owners spell them."""


def _keys(words: list[str] | tuple[str, ...]) -> set[str]:
    return {k for w in words for k in name_keys(w) if len(k) >= MIN_WORD}


def _overlap(mine: set[str], theirs: set[str]) -> bool:
    """Whether two sets of keys share a word (or one's word holds the other's)."""
    return any(a == b or a in b or b in a for a in mine for b in theirs)


def _own_name(app: AppProfile, earlier: list[AppProfile], named: list[str]) -> bool:
    """Whether ``named`` (words of ``app`` the instruction used) holds a name or id of
    ``app`` that looks like nothing an earlier app is called or keyed by."""
    names = {n for n in (*app.all_names, app.id) if n in named}
    if not names:
        return False
    taken = _keys([w for o in earlier for w in (*o.all_names, o.id, *o.keywords)])
    return any(not (_keys([n]) & taken) for n in names if _keys([n]))


def contest(router: OfflineRouter, app_id: str, text: str) -> Contest | None:
    """The earlier apps whose words ``text`` uses and ``app_id`` shares, or None."""
    apps = {a.id: a for a in router.apps}
    app = apps.get(app_id)
    if app is None:
        return None
    earlier = [a for a in router.apps if a.installed < app.installed]
    if not earlier:
        return None
    named = router.matched_words(app_id, text)
    if not named or _own_name(app, earlier, named):
        return None
    mine = _keys(named)
    owners: list[str] = []
    words: list[str] = []
    for other in earlier:
        theirs = [w for w in router.matched_words(other.id, text) if _overlap(_keys([w]), mine)]
        if theirs:
            owners.append(other.id)
            words += [w for w in theirs if w not in words]
    if not owners:
        return None
    return Contest(app_id, tuple(owners), tuple(words))


__all__ = ["MIN_WORD", "Contest", "contest"]
