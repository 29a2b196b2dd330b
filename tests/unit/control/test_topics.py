"""The topic tree's rules (aios/control/topics.py) with a real store and bus and an injected
clock: turns group by app and key words (sub-topics where the words are new, both
languages), a turn for a paused app resumes it, stale topics are archived and the tree is
bounded; "back to …" words are read and resolved (an app, a subject, nothing: the most
recent, two alike: both); the tree is stored and announced."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.config import Config
from aios.control.intents import normalise
from aios.control.topics import TopicTree, Tree, key_terms, resume_words
from aios.errors import NotFound
from aios.events import EventBus
from aios.store import Store
from tests.util import ManualClock

APP_WORDS = ["notes 记事本 笔记 记一下 note", "music 音乐 play 播放", "files 文件 file"]


class Parts:
    def __init__(self, tmp: Path) -> None:
        self.clock = ManualClock()
        self.store = Store(tmp / "aios.db", clock=self.clock)
        self.bus = EventBus()
        self.raw: dict[str, Any] = {"duplex": {"topic_archive_s": 600, "topics_max": 8}}
        self.topics = TopicTree(
            self.store, self.bus, lambda: Config.model_validate(self.raw), self.clock
        )
        self.sid = self.store.ensure_session(None)

    def say(self, text: str, app: str) -> str:
        """A user's turn routed to ``app``: the id of the topic it went to."""
        self.clock.now += 5
        hid = self.store.add_history(self.sid, "user", {"text": text})
        topic = self.topics.turn(
            self.sid, hid, text, app, fallback_label=app.title(), app_words=APP_WORDS
        )
        return topic.id

    def tree(self) -> dict[str, Any]:
        return self.topics.tree(self.sid)

    def state(self, topic_id: str) -> str:
        return self.topics.get(self.sid, topic_id).state

    def back(self, words: str, app: str | None = None) -> list[str]:
        return [t.id for t in self.topics.resolve(self.sid, key_terms(words), app)]


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[Parts]:
    p = Parts(tmp_path)
    yield p
    p.store.close()


def test_turns_group_by_app_and_new_words_open_a_sub_topic(parts: Parts) -> None:
    milk = parts.say("记一下买牛奶和鸡蛋", "notes")
    again = parts.say("把牛奶改成两盒", "notes")
    assert again == milk  # same words: the same topic
    meeting = parts.say("记一下周五下午开会", "notes")
    assert meeting != milk and parts.topics.get(parts.sid, meeting).parent == milk
    follow = parts.say("删掉它", "notes")  # no words of its own: where the user is
    assert follow == meeting
    jazz = parts.say("play some jazz", "music")
    assert parts.state(jazz) == "active"
    assert parts.state(milk) == parts.state(meeting) == "paused"
    # a turn for the paused app resumes its line, on the sub-topic its words name
    assert parts.say("牛奶买好了吗", "notes") == milk
    assert parts.state(milk) == "active" and parts.state(jazz) == "paused"
    tree = parts.tree()
    assert tree["active"] == milk
    notes = next(t for t in tree["topics"] if t["app"] == "notes")
    assert notes["label"] == "记一下买牛奶和鸡蛋" and notes["state"] == "active"
    assert [c["label"] for c in notes["children"]] == ["记一下周五下午开会"]
    assert "牛奶" in notes["terms"] and "记事本" not in notes["terms"]
    assert len(notes["turns"]) == 3 and notes["turns"][0].startswith("h")


def test_english_words_and_an_open_without_words(parts: Parts) -> None:
    opened = parts.say("open notes", "notes")
    assert parts.topics.get(parts.sid, opened).label == "Notes"
    named = parts.say("add a note: dentist appointment on Monday", "notes")
    assert named == opened  # opened without words: this turn says what it is about
    assert parts.topics.get(parts.sid, opened).label == "dentist appointment on Monday"
    report = parts.say("add a note: quarterly report draft", "notes")
    assert parts.topics.get(parts.sid, report).parent == opened
    assert parts.say("move the dentist appointments to Tuesday", "notes") == opened


def test_back_to_words_are_read_in_both_languages() -> None:
    cases = {
        "回到刚才的笔记": "笔记",
        "继续刚才那个买牛奶的事": "买牛奶",
        "回到刚才的…": "",
        "back to the notes": "notes",
        "go back to the notes thing": "notes",
        "let's get back to what we were doing": "",
        "go back": "",
        "resume the quarterly report from before": "quarterly report",
        "pick up where we left off": "",
    }
    for said, words in cases.items():
        assert resume_words(normalise(said)) == words, said
    for said in ("继续播放", "continue", "回到", "back up my files", "play it back", "resume"):
        assert resume_words(normalise(said)) is None, said
    for said in ("continue playing", "返回上一页", "接着写", "resume the music"):
        assert resume_words(normalise(said)) is None, said


def test_back_to_resolves_by_app_subject_recency_and_asks_on_a_tie(parts: Parts) -> None:
    assert parts.back("") == []  # nothing paused yet
    milk = parts.say("记一下买牛奶", "notes")
    report = parts.say("记一下季度报告", "notes")
    jazz = parts.say("play some jazz", "music")
    assert parts.back("") == [report]  # the most recent: where the notes were left
    assert parts.back("笔记", "notes") == [report]
    assert parts.back("牛奶") == [milk]  # the subject's words pick the sub-topic
    assert parts.back("spreadsheet") == []
    assert parts.back("jazz") == []  # the active topic is no "back to"
    parts.topics.resume(parts.sid, milk)
    assert parts.back("jazz") == [jazz]


def test_two_paused_lines_matching_alike_are_both_returned(parts: Parts) -> None:
    notes = parts.say("add a note: budget review", "notes")
    files = parts.say("find the budget review spreadsheet", "files")
    parts.say("play some jazz", "music")
    assert set(parts.back("the budget review")) == {notes, files}


def test_stale_topics_are_archived_and_the_tree_is_bounded(parts: Parts) -> None:
    old = parts.say("记一下买牛奶", "notes")
    parts.clock.now += 601  # duplex.topic_archive_s
    assert parts.state(old) == "archived"
    fresh = parts.say("记一下买牛奶", "notes")
    assert fresh != old  # an archived line is not continued
    for i in range(12):
        parts.say(f"play tune{i}", "music")  # each its own sub-topic
    stored = parts.store.topics(parts.sid)
    assert len(stored) <= 8  # duplex.topics_max
    assert old not in {t["id"] for t in stored}  # the archived go first
    on = [t for t in stored if t["state"] == "active"]  # the line the user is on stays
    assert {t["app"] for t in on} == {"music"} and len(on) == 2  # its root and the sub
    assert Tree(parts.sid, []).active() is None


def test_resume_and_archive_by_id_store_and_announce(parts: Parts) -> None:
    sub = parts.bus.reader()
    milk = parts.say("记一下买牛奶", "notes")
    jazz = parts.say("play some jazz", "music")
    event = next(e for e in sub.get_many(1.0, 100) if e["type"] == "topics")
    assert event["session_id"] == parts.sid
    parts.topics.resume(parts.sid, milk)
    assert parts.state(milk) == "active" and parts.state(jazz) == "paused"
    parts.topics.archive(parts.sid, jazz)
    assert parts.state(jazz) == "archived"
    with pytest.raises(NotFound, match="no topic 'topic_nope'"):
        parts.topics.resume(parts.sid, "topic_nope")
    # a new store on the same file: the same tree
    again = TopicTree(
        Store(parts.store.path, clock=parts.clock), parts.bus, lambda: Config(), parts.clock
    )
    assert again.tree(parts.sid) == parts.tree()
    again.store.close()


def test_a_view_goes_to_the_topic_its_app_answered_for(parts: Parts) -> None:
    milk = parts.say("记一下买牛奶", "notes")
    parts.say("play some jazz", "music")
    parts.topics.saw(parts.sid, "notes", 42, "inst_1")  # a click in the notes window
    topic = parts.topics.get(parts.sid, milk)
    assert topic.view == 42 and topic.instance == "inst_1" and topic.state == "paused"
    parts.topics.saw(parts.sid, "files", 43)  # no topic for it: nothing kept
    assert all(t["app"] != "files" for t in parts.tree()["topics"])
