"""The memory store in real SQLite files (DESIGN §15 "Memories", issue 23): adding and
its checks, states and supersession, the MEMORY.md parse-back, restart survival."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aios.errors import BadRequest, Conflict, NotFound
from aios.memory.store import MEMORY_TEXT_MAX, MemoryStore
from aios.store import Store


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        self.now += 1.0  # every write is a second later: "newest" is never a tie
        return self.now


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "aios.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    s = Store(db_path, clock=Clock())
    yield s
    s.close()


@pytest.fixture
def mem(store: Store) -> MemoryStore:
    return MemoryStore(store)


def texts(found: list[dict[str, object]]) -> list[object]:
    return [m["text"] for m in found]


# ------------------------------------------------------------------ add


def test_add_returns_the_memory_with_every_field(mem: MemoryStore) -> None:
    m = mem.add("  我叫小林  ", tags=["name"], session_id="sess_1", turn=3, key="user.name")
    assert m["id"].startswith("m_") and len(m["id"]) == 14
    assert m["text"] == "我叫小林" and m["tags"] == ["name"]
    assert (m["scope"], m["source"], m["state"]) == ("user", "user", "active")
    assert (m["uses"], m["last_used"], m["pinned"]) == (0, None, False)
    assert (m["session_id"], m["turn"], m["key"]) == ("sess_1", 3, "user.name")
    assert m["supersedes"] is None and m["superseded_by"] is None
    assert m["created"] == m["updated"]
    assert mem.get(m["id"]) == m
    assert mem.get("m_000000000000") is None


def test_the_same_text_again_returns_the_first_memory(mem: MemoryStore) -> None:
    first = mem.add("I like jazz")
    assert mem.add("i  LIKE jazz ")["id"] == first["id"]
    assert len(mem.list()) == 1
    # another scope is another memory
    assert mem.add("I like jazz", scope="music")["id"] != first["id"]


def test_a_user_add_accepts_the_same_text_proposed(mem: MemoryStore) -> None:
    proposed = mem.add("我喜欢爵士乐", state="proposed", source="extracted:sess_9")
    again = mem.add("我喜欢爵士乐")
    assert again["id"] == proposed["id"] and again["state"] == "active"
    # a proposal of what is already active is that active memory
    assert mem.add("我喜欢爵士乐", state="proposed")["state"] == "active"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"text": ""}, "empty"),
        ({"text": "   "}, "empty"),
        ({"text": 42}, "string"),
        ({"text": "x" * (MEMORY_TEXT_MAX + 1)}, f"at most {MEMORY_TEXT_MAX}"),
        ({"text": "ok", "tags": "food"}, "list of strings"),
        ({"text": "ok", "tags": [f"t{i}" for i in range(9)]}, "at most 8"),
        ({"text": "ok", "tags": ["x" * 33]}, "1 to 32"),
        ({"text": "ok", "tags": [""]}, "1 to 32"),
        ({"text": "ok", "scope": "Bad Scope"}, "scope"),
        ({"text": "ok", "scope": ""}, "scope"),
        ({"text": "ok", "source": "web"}, "source"),
        ({"text": "ok", "source": "app:"}, "source"),
        ({"text": "ok", "state": "deleted"}, "state"),
        ({"text": "ok", "pinned": "yes"}, "pinned"),
        ({"text": "ok", "turn": "3"}, "turn"),
        ({"text": "ok", "key": "has space"}, "key"),
    ],
)
def test_bad_input_is_refused_naming_the_problem(
    mem: MemoryStore, kwargs: dict[str, object], words: str
) -> None:
    text = kwargs.pop("text")
    with pytest.raises(BadRequest, match=words):
        mem.add(text, **kwargs)  # type: ignore[arg-type]
    assert mem.list(state=None) == []


def test_the_longest_text_and_most_tags_are_kept(mem: MemoryStore) -> None:
    m = mem.add("长" * MEMORY_TEXT_MAX, tags=[f"t{i}" for i in range(8)])
    assert len(m["text"]) == MEMORY_TEXT_MAX and len(m["tags"]) == 8


# ------------------------------------------------------------------ states


def test_an_active_memory_with_a_key_supersedes_the_old_one(mem: MemoryStore) -> None:
    old = mem.add("I live in Shanghai", key="user.home")
    new = mem.add("I live in Beijing", key="user.home")
    assert new["supersedes"] == old["id"]
    old_now = mem.get(old["id"]) or {}
    assert old_now["state"] == "superseded" and old_now["superseded_by"] == new["id"]
    assert texts(mem.search("live", scopes=["user"])) == ["I live in Beijing"]
    # another scope's same key is left alone
    other = mem.add("home is Paris", scope="travel", key="user.home")
    assert (mem.get(other["id"]) or {})["state"] == "active"
    assert (mem.get(new["id"]) or {})["state"] == "active"


def test_accept_makes_a_proposal_active_and_supersedes_the_same_key(mem: MemoryStore) -> None:
    old = mem.add("我叫小林", key="user.name")
    proposed = mem.add("我叫小王", key="user.name", state="proposed", source="extracted:s1")
    assert mem.proposed_count() == 1
    assert mem.search("小王", scopes=["user"]) == []  # proposed: never searched
    assert (mem.get(old["id"]) or {})["state"] == "active"  # a proposal supersedes nothing
    accepted = mem.accept(proposed["id"])
    assert accepted["state"] == "active" and accepted["supersedes"] == old["id"]
    assert (mem.get(old["id"]) or {})["state"] == "superseded"
    assert mem.proposed_count() == 0
    assert texts(mem.search("我叫", scopes=["user"])) == ["我叫小王"]
    with pytest.raises(Conflict, match="not proposed") as e:
        mem.accept(proposed["id"])
    assert e.value.current["state"] == "active"


def test_reject_deletes_a_proposal(mem: MemoryStore) -> None:
    p = mem.add("I prefer tea", state="proposed", source="extracted:s2")
    assert mem.reject(p["id"])["state"] == "deleted"
    with pytest.raises(Conflict):
        mem.reject(p["id"])
    with pytest.raises(NotFound, match="no memory m_nope"):
        mem.accept("m_nope")


def test_deleted_and_superseded_memories_are_never_found(mem: MemoryStore) -> None:
    gone = mem.add("my cat is called Momo")
    mem.add("cat food brand: Orijen", key="cat.food")
    mem.add("cat food brand: Acana", key="cat.food")
    mem.delete(gone["id"])
    assert texts(mem.search("cat", scopes=["user"], k=10)) == ["cat food brand: Acana"]
    assert mem.delete(gone["id"])["state"] == "deleted"  # again: nothing changes
    assert gone["id"] not in [m["id"] for m in mem.list()]
    assert [m["id"] for m in mem.list(state="deleted")] == [gone["id"]]


def test_forget_app_deletes_its_scope_only(mem: MemoryStore) -> None:
    with pytest.raises(BadRequest, match="not an app"):
        mem.forget_app("user")
    mem.add("playlist for running", scope="music")
    mem.add("favourite album", scope="music")
    mem.add("running shoes size 42")
    assert mem.forget_app("music") == 2
    assert mem.search("running", scopes=["music", "user"], k=10)[0]["scope"] == "user"
    assert len(mem.search("running", scopes=["music", "user"], k=10)) == 1


# ------------------------------------------------------------------ update


def test_update_reindexes_the_text(mem: MemoryStore) -> None:
    m = mem.add("I drink green tea", tags=["beverage"])
    assert texts(mem.search("beverages", scopes=["user"])) == ["I drink green tea"]
    mem.update(m["id"], text="I drink black coffee")
    assert mem.search("green", scopes=["user"]) == []
    assert mem.search("绿茶 tea", scopes=["user"]) == []
    assert texts(mem.search("coffee", scopes=["user"])) == ["I drink black coffee"]
    mem.update(m["id"], tags=["早餐"])
    assert mem.search("beverages", scopes=["user"]) == []  # the old tag no longer matches
    assert texts(mem.search("早餐", scopes=["user"])) == ["I drink black coffee"]
    pinned = mem.update(m["id"], pinned=True)
    assert pinned["pinned"] is True and pinned["updated"] > m["updated"]


def test_update_checks_its_input_and_the_state(mem: MemoryStore) -> None:
    m = mem.add("something")
    with pytest.raises(BadRequest, match="empty"):
        mem.update(m["id"], text=" ")
    with pytest.raises(BadRequest, match="list of strings"):
        mem.update(m["id"], tags="x")  # type: ignore[arg-type]
    mem.delete(m["id"])
    with pytest.raises(Conflict, match="deleted"):
        mem.update(m["id"], text="back")
    with pytest.raises(NotFound):
        mem.update("m_missing00000", text="x")


# ------------------------------------------------------------------ list / active


def test_list_filters_and_pages_newest_first(mem: MemoryStore) -> None:
    a = mem.add("alpha tea", source="user")
    b = mem.add("beta tea", scope="notes", source="app:notes")
    c = mem.add("gamma", state="proposed", source="extracted:sess_1")
    assert [m["id"] for m in mem.list()] == [c["id"], b["id"], a["id"]]
    assert [m["id"] for m in mem.list(scope="notes")] == [b["id"]]
    assert [m["id"] for m in mem.list(source="app:")] == [b["id"]]
    assert [m["id"] for m in mem.list(source="extracted:")] == [c["id"]]
    assert [m["id"] for m in mem.list(state="proposed")] == [c["id"]]
    assert [m["id"] for m in mem.list(q="TEA")] == [b["id"], a["id"]]
    assert [m["id"] for m in mem.list(limit=1, offset=1)] == [b["id"]]
    with pytest.raises(BadRequest, match="state"):
        mem.list(state="gone")


def test_active_puts_pinned_then_used_first(mem: MemoryStore) -> None:
    a = mem.add("one")
    b = mem.add("two")
    c = mem.add("three", pinned=True)
    mem.add("four", state="proposed")
    mem.touch([a["id"]])
    mem.touch([a["id"], b["id"]])
    assert [m["text"] for m in mem.active("user", 10)] == ["three", "one", "two"]
    used = mem.get(a["id"]) or {}
    assert used["uses"] == 2 and used["last_used"] is not None
    assert c["id"] == mem.active("user", 1)[0]["id"]


# ------------------------------------------------------------------ replace_active


def test_replace_active_applies_the_users_file(mem: MemoryStore) -> None:
    keep = mem.add("我喜欢爵士乐", tags=["music"])
    edit = mem.add("I live in Shanghai")
    drop = mem.add("I own a red car")
    proposed = mem.add("我住在北京", state="proposed", source="extracted:s1")
    other = mem.add("notes memory", scope="notes")
    counts = mem.replace_active(
        "user",
        [
            {"id": keep["id"], "text": "我喜欢爵士乐", "tags": ["music"], "pinned": False},
            {"id": edit["id"], "text": "I live in Hangzhou", "tags": [], "pinned": True},
            {"text": "My birthday is May 3", "tags": ["date"], "pinned": False},
        ],
    )
    assert counts == {"added": 1, "changed": 1, "deleted": 1}
    assert mem.get(keep["id"]) == keep
    edited = mem.get(edit["id"]) or {}
    assert (edited["text"], edited["pinned"]) == ("I live in Hangzhou", True)
    assert (mem.get(drop["id"]) or {})["state"] == "deleted"
    assert (mem.get(proposed["id"]) or {})["state"] == "proposed"  # not in the file: untouched
    assert (mem.get(other["id"]) or {})["state"] == "active"
    assert mem.search("Shanghai", scopes=["user"]) == []
    added = mem.search("birthday", scopes=["user"])[0]
    assert (added["source"], added["tags"]) == ("user", ["date"])
    assert sorted(texts(mem.active("user", 10))) == sorted(
        ["我喜欢爵士乐", "I live in Hangzhou", "My birthday is May 3"]
    )


def test_replace_active_matches_an_entry_without_id_by_its_text(mem: MemoryStore) -> None:
    m = mem.add("I like tea")
    counts = mem.replace_active("user", [{"text": "i like tea", "tags": ["drinks"]}])
    assert counts == {"added": 0, "changed": 1, "deleted": 0}
    assert (mem.get(m["id"]) or {})["tags"] == ["drinks"]
    # an id from elsewhere (another scope, unknown) is a new memory
    n = mem.add("other scope", scope="notes")
    counts = mem.replace_active(
        "user", [{"id": n["id"], "text": "I like tea"}, {"id": "m_x", "text": "new one"}]
    )
    assert counts == {"added": 1, "changed": 1, "deleted": 0}
    assert mem.replace_active("user", []) == {"added": 0, "changed": 0, "deleted": 2}
    assert mem.active("user", 10) == []


def test_replace_active_checks_every_entry_before_writing(mem: MemoryStore) -> None:
    mem.add("keep me")
    with pytest.raises(BadRequest, match="empty"):
        mem.replace_active("user", [{"text": "fine"}, {"text": ""}])
    with pytest.raises(BadRequest, match="object"):
        mem.replace_active("user", ["just text"])  # type: ignore[list-item]
    assert texts(mem.active("user", 10)) == ["keep me"]


# ------------------------------------------------------------------ restart


def test_memories_survive_a_restart(db_path: Path) -> None:
    first = Store(db_path)
    mem = MemoryStore(first)
    kept = mem.add("明天下午三点开会", tags=["工作"])
    mem.add("I go running on Sundays", scope="fitness")
    gone = mem.add("forget this one")
    mem.delete(gone["id"])
    first.close()

    second = Store(db_path)
    again = MemoryStore(second)  # the schema again: IF NOT EXISTS everywhere
    try:
        assert again.get(kept["id"]) == kept
        assert texts(again.search("开会", scopes=["user"])) == ["明天下午三点开会"]
        assert texts(again.search("runs", scopes=["fitness"])) == ["I go running on Sundays"]
        assert again.search("forget", scopes=["user"]) == []
    finally:
        second.close()


def test_search_after_vacuum_still_points_at_the_right_rows(store: Store) -> None:
    mem = MemoryStore(store)
    for i in range(30):
        m = mem.add(f"memory number {i} about tea {i}")
        if i % 2:
            mem.delete(m["id"])
    store._delete_batched("memories", "state='deleted'", (), key="rid")  # holes in rowids
    store.vacuum()
    found = mem.search("tea 28", scopes=["user"], k=1)
    assert texts(found) == ["memory number 28 about tea 28"]
