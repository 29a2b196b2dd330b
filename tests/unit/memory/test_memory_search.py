"""Memory search in real SQLite files (DESIGN §15, issue 23): English word forms through
trigram, 1-2 character Chinese keywords through the short-gram fallback, scopes kept
apart, ranking by recency, use and pin, and queries that are hostile to FTS5."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from aios.errors import BadRequest
from aios.memory.store import SEARCH_K_MAX, MemoryStore
from aios.store import Store

MEMORIES = [
    "I go running every morning before work",
    "Our team meetings are on Monday at 10",
    "My daughter studies piano on weekends",
    "I liked the jazz concert last year",
    "Boxes of old books are in the garage",
    "我每天早上喝一杯绿茶",
    "周三下午两点开会，别迟到",
    "我的猫叫咪咪，三岁了",
    "我住在上海浦东",
    "我最喜欢的茶是龙井",
]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "aios.db", clock=Clock())
    yield s
    s.close()


@pytest.fixture
def mem(store: Store) -> MemoryStore:
    m = MemoryStore(store)
    for text in MEMORIES:
        m.add(text)
    return m


def found(
    mem: MemoryStore, query: str, *, scopes: tuple[str, ...] = ("user",), k: int = 5
) -> list[str]:
    return [m["text"] for m in mem.search(query, scopes=list(scopes), k=k, touch=False)]


# ------------------------------------------------------------------ English


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("run", MEMORIES[0]),
        ("runs", MEMORIES[0]),
        ("running", MEMORIES[0]),
        ("meeting", MEMORIES[1]),
        ("MEETINGS", MEMORIES[1]),
        ("study", MEMORIES[2]),
        ("studying", MEMORIES[2]),
        ("like", MEMORIES[3]),
        ("likes", MEMORIES[3]),
        ("box", MEMORIES[4]),
        ("book", MEMORIES[4]),
        ("go", MEMORIES[0]),
    ],
)
def test_english_word_forms_find_the_memory_first(mem: MemoryStore, query: str, text: str) -> None:
    assert found(mem, query)[0] == text


def test_stop_words_alone_do_not_match_everything(mem: MemoryStore) -> None:
    assert found(mem, "what do you know about my piano")[0] == MEMORIES[2]
    assert MEMORIES[2] not in found(mem, "the")  # "the" is in it, but only as a word


# ------------------------------------------------------------------ Chinese


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("杯", MEMORIES[5]),  # one character: trigram cannot match it
        ("猫", MEMORIES[7]),
        ("开会", MEMORIES[6]),  # two characters
        ("上海", MEMORIES[8]),
        ("绿茶", MEMORIES[5]),
        ("什么时候开会", MEMORIES[6]),  # a question around a two-character keyword
        ("我的猫叫什么", MEMORIES[7]),
        ("龙井茶", MEMORIES[9]),  # three characters the memory holds only two of
    ],
)
def test_short_chinese_keywords_are_found(mem: MemoryStore, query: str, text: str) -> None:
    assert found(mem, query)[0] == text


def test_a_paraphrase_sharing_a_keyword_finds_both_memories(mem: MemoryStore) -> None:
    assert set(found(mem, "茶", k=2)) == {MEMORIES[5], MEMORIES[9]}
    assert set(found(mem, "我喜欢喝什么茶", k=2)) == {MEMORIES[5], MEMORIES[9]}


def test_mixed_language_query(mem: MemoryStore) -> None:
    top = found(mem, "猫 and jazz", k=2)
    assert set(top) == {MEMORIES[3], MEMORIES[7]}


# ------------------------------------------------------------------ scopes


def test_an_apps_memory_never_shows_in_another_scope(store: Store) -> None:
    mem = MemoryStore(store)
    mem.add("secret plan about tea", scope="notes")
    mem.add("茶叶店的地址", scope="notes")
    mem.add("tea playlist", scope="music")
    assert found(mem, "tea") == []
    assert found(mem, "茶") == []
    assert found(mem, "tea", scopes=("music",)) == ["tea playlist"]
    assert found(mem, "茶", scopes=("music", "user")) == []
    assert set(found(mem, "tea", scopes=("notes", "music"))) == {
        "secret plan about tea",
        "tea playlist",
    }
    assert mem.search("tea", scopes=[]) == []
    assert found(mem, "tea", scopes=("music", "music")) == ["tea playlist"]


# ------------------------------------------------------------------ ranking


def test_recency_breaks_a_tie_and_use_and_pin_lift(store: Store) -> None:
    mem = MemoryStore(store)
    old = mem.add("coffee beans from Yunnan")
    new = mem.add("coffee beans from Kenya")
    assert [m["id"] for m in mem.search("coffee beans", scopes=["user"], touch=False)] == [
        new["id"],
        old["id"],
    ]
    mem.touch([old["id"]])
    mem.touch([old["id"]])
    assert mem.search("coffee beans", scopes=["user"], touch=False)[0]["id"] == old["id"]
    third = mem.add("coffee beans to try: Ethiopia", pinned=True)
    first = mem.search("coffee beans", scopes=["user"], touch=False)[0]
    assert first["id"] == third["id"] and first["score"] > 0


def test_search_touches_what_it_returns(mem: MemoryStore) -> None:
    hit = mem.search("猫", scopes=["user"], k=1)[0]
    assert hit["uses"] == 1 and hit["last_used"] is not None
    assert (mem.get(hit["id"]) or {})["uses"] == 1
    mem.search("猫", scopes=["user"], k=1, touch=False)
    assert (mem.get(hit["id"]) or {})["uses"] == 1


def test_k_bounds_the_results(mem: MemoryStore) -> None:
    assert len(mem.search("我", scopes=["user"], k=1)) == 1
    assert len(mem.search("e", scopes=["user"], k=SEARCH_K_MAX + 10)) <= SEARCH_K_MAX
    with pytest.raises(BadRequest, match="k must be an integer"):
        mem.search("tea", scopes=["user"], k="3")  # type: ignore[arg-type]


# ------------------------------------------------------------------ hostile queries


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "*",
        '"',
        '"AND OR NEAR(',
        "NOT",
        "tea AND",
        "col:tea",
        "tea*",
        "^tea",
        "NEAR(tea coffee, 2)",
        "'; DROP TABLE memories; --",
        "{text tags}: tea",
        "\x00\x01 tea",
        "🍵🍵🍵",
        "(((",
        '茶"',
    ],
)
def test_fts_syntax_in_a_query_is_plain_text(mem: MemoryStore, query: str) -> None:
    out = mem.search(query, scopes=["user"])
    assert isinstance(out, list)
    assert found(mem, "茶")  # the table is intact


def test_a_query_of_ten_kilobytes_answers(mem: MemoryStore) -> None:
    assert isinstance(mem.search("tea " * 2500, scopes=["user"]), list)
    assert isinstance(mem.search("茶" * 10_000, scopes=["user"]), list)
    assert isinstance(mem.search("x" * 10_240, scopes=["user"]), list)
    assert found(mem, "龙井 " + "z" * 10_000)[0] == MEMORIES[9]


def test_a_query_that_is_not_text_is_refused(mem: MemoryStore) -> None:
    with pytest.raises(BadRequest, match="string"):
        mem.search(None, scopes=["user"])  # type: ignore[arg-type]


def test_a_search_answers_when_its_uses_cannot_be_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store(tmp_path / "aios.db", busy_timeout=0.2)
    try:
        mem = MemoryStore(store)
        m = mem.add("我的猫叫咪咪")
        writer = sqlite3.connect(tmp_path / "aios.db", isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            out = mem.search("猫", scopes=["user"])
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        assert [x["id"] for x in out] == [m["id"]] and out[0]["uses"] == 0
        assert "could not count the uses" in caplog.text
    finally:
        store.close()
