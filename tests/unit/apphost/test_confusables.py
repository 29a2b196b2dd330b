"""Names compared as a person sees them (DESIGN §14.7): aios/apphost/confusables.py,
aios/control/owners.py.

The skeleton is ICU's UTS #39 one; these tests pin the pipeline around it
(NFKC, invisible characters, case, combining marks) on the spellings an
attacker tries, with names that must stay apart beside them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aios.apphost.confusables import name_keys, same_name, shown
from aios.apphost.manifests import AppRecord, assign_display_names
from aios.apphost.supervisor import AppStatus
from aios.control.owners import contest
from aios.control.router import AppProfile, OfflineRouter
from aios.protocol import parse_manifest

LOOK_ALIKES = [
    ("Hello小AI", "Hello小AI\u200b"),  # zero-width space (the example)
    ("Hello小AI", "Hello小Al"),  # lower-case L for a capital I (the example)
    ("Hello小AI", "hello小ai"),  # case
    ("Hello小AI", "HELLO小AI"),
    ("Hello小AI", "Ｈｅｌｌｏ小ＡＩ"),  # fullwidth
    ("Hello小AI", "\u202eHello小AI\u202c"),  # bidi override and pop
    ("Hello小AI", "Hello\u2066小AI\u2069"),  # bidi isolates
    ("Hello小AI", "Hello 小AI"),  # a space
    ("Notes", "\u039dotes"),  # Greek capital Nu
    ("Notes", "N\u03bftes"),  # Greek small omicron
    ("Notes", "N\u043etes"),  # Cyrillic small o
    ("Notes", "No\u0301tes"),  # a combining acute
    ("Notes", "Not\u0323es"),  # a combining dot below
    ("Notes", "Notes\ufe0f"),  # a variation selector
    ("Notes", "Not\u00ades"),  # a soft hyphen
    ("Files", "Fi1es"),  # digit one for l
    ("Music", "Rnusic"),  # r n for m
    ("记事本", "记事本\u200d"),  # zero-width joiner after CJK
]

DIFFERENT = [
    ("Hello小AI", "Hola小AI"),
    ("Notes", "Note"),
    ("Notes", "Votes2"),
    ("记事本", "记账本"),
    ("Music", "Musik"),
    ("天气", "天汽"),
]


@pytest.mark.parametrize(("a", "b"), LOOK_ALIKES)
def test_look_alike_names_collide(a: str, b: str) -> None:
    assert same_name(a, b) and same_name(b, a)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_different_names_stay_apart(a: str, b: str) -> None:
    assert not same_name(a, b)


def test_invisible_only_names_have_no_key_and_collide_with_nothing() -> None:
    assert name_keys("\u200b\u202e\ufe0f ") == frozenset()
    assert not same_name("\u200b", "\u200c")


def test_the_shown_name_has_no_invisible_characters() -> None:
    assert shown("\u202eseto\u039d") == "seto\u039d"  # no override turns it into "Notes"
    assert shown(" Hello小AI\u200b ") == "Hello小AI"
    assert shown("No\u0301tes") == "Nótes"  # NFC: the mark stays, composed


def test_the_skeleton_covers_scripts_beyond_latin_greek_cyrillic() -> None:
    # from Unicode's confusables data as ICU ships it: Cherokee GO, LA, GV look like a, w, e
    assert same_name("\u13aa\u13b3\u13ac", "awe")
    assert not same_name("\u13aa\u13b3\u13ac", "axe")


def _record(app_id: str, installed: int, name: object) -> AppRecord:
    raw = {"name": name, "entry": "main.py", "role_prompt": "x"}
    return AppRecord(
        id=app_id,
        path=Path("/nonexistent"),
        status=AppStatus.RUNNING,
        manifest=parse_manifest(raw),
        installed=installed,
    )


def test_display_names_the_app_installed_first_keeps_the_name_in_every_locale() -> None:
    hello = _record("hello", 1, {"zh-CN": "Hello小AI", "en": "Hello"})
    zwsp = _record("a_zwsp", 2, "Hello小AI\u200b")  # sorts before hello by id
    cross = _record("cross", 2, {"zh-CN": "天气", "en": "HELLO"})  # like Hello's en name
    plain = _record("hola", 2, "Hola小助手")
    assign_display_names([zwsp, plain, cross, hello])
    assert hello.display_names == {"zh-CN": "Hello小AI", "en": "Hello"}
    assert zwsp.display_names == {"zh-CN": "Hello小AI (a_zwsp)", "en": "Hello小AI (a_zwsp)"}
    assert cross.display_names == {"zh-CN": "天气", "en": "HELLO (cross)"}
    assert plain.display_names == {"zh-CN": "Hola小助手", "en": "Hola小助手"}


# ------------------------------------------------------------------ routing words

NOTES = AppProfile(
    id="notes",
    name="记事本",
    other_names=("Notes",),
    keywords=["notes", "记事本", "笔记", "记一下", "记"],
    examples=("帮我记一下明天开会",),
    installed=1,
)


def _router(*apps: AppProfile) -> OfflineRouter:
    return OfflineRouter([NOTES, *apps])


def test_a_later_app_sharing_the_owners_words_is_contested() -> None:
    twin = AppProfile(
        id="twin", name="N\u03bftes", keywords=["记一下", "银行卡", "密码"], installed=2
    )
    found = contest(_router(twin), "twin", "帮我记一下：银行卡密码 4711")
    assert found is not None and found.owners == ("notes",) and "记一下" in found.words


def test_a_word_in_another_case_is_the_same_word() -> None:
    twin = AppProfile(id="twin", name="Twin", keywords=["NOTES", "银行卡"], installed=2)
    found = contest(_router(twin), "twin", "notes 银行卡")
    assert found is not None and found.owners == ("notes",)


def test_the_owner_and_peers_are_never_contested() -> None:
    peer = AppProfile(id="peer", name="Peer", keywords=["记一下"], installed=1)
    router = _router(peer)
    assert contest(router, "notes", "帮我记一下：银行卡密码") is None
    assert contest(router, "peer", "帮我记一下：银行卡密码") is None  # same generation


def test_own_words_and_own_name_are_not_contested() -> None:
    bank = AppProfile(id="bank", name="银行", keywords=["银行卡", "密码"], installed=2)
    # the later app matched only its own words: nothing of Notes' was taken
    assert contest(_router(bank), "bank", "帮我记一下：银行卡密码") is None
    vault = AppProfile(id="vault", name="保险箱", keywords=["记一下"], installed=2)
    assert contest(_router(vault), "vault", "用保险箱记一下：密码") is None
    assert contest(_router(vault), "vault", "记一下：密码") is not None


def test_a_name_that_looks_like_an_owners_is_not_a_name_of_its_own() -> None:
    twin = AppProfile(id="twin", name="笔记", keywords=["记一下"], installed=2)
    assert contest(_router(twin), "twin", "用笔记记一下：密码") is not None
