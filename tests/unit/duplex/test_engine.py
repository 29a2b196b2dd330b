"""The interruption engine (aios/duplex/engine.py): each trigger, when it speaks (now or at
a natural break), the rate limit and the budget (level 7 and up exempt), mute, dismiss,
and an interjection kept — not counted again — while the user types on."""

from __future__ import annotations

from pathlib import Path

import pytest

from aios.config import DuplexConfig
from aios.duplex import drafts
from aios.duplex.engine import (
    LLM_MAX_LEVEL,
    Decision,
    DraftFacts,
    InterruptionEngine,
    llm_decision,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def engine(**cfg: object) -> tuple[InterruptionEngine, Clock]:
    clock = Clock()
    settings = DuplexConfig.model_validate(cfg)
    return InterruptionEngine(lambda: settings, clock=clock), clock


def facts(text: str, *, paused: bool = True, lang: str = "en", **kw: object) -> DraftFacts:
    f = DraftFacts(text=text, lang=lang, paused=paused, names={"notes": "Notes", "music": "Music"})
    for k, v in kw.items():
        setattr(f, k, v)
    f.deletion = drafts.deletion(text) if "deletion" not in kw else f.deletion
    return f


def danger(text: str = "delete all the .log files", n: int = 12) -> DraftFacts:
    lang = "en" if text.isascii() else "zh-CN"
    return facts(text, paused=False, lang=lang, apps=["files"], count=drafts.Count(files=n))


# ------------------------------------------------------------------ triggers


def test_a_bulk_delete_says_how_many_files_at_once_firmly() -> None:
    eng, _ = engine()
    d = eng.observe("s", danger("删除所有 .log 文件"))
    assert d is not None
    assert (d.kind, d.level, d.urgency, d.style) == ("danger", 8, "now", "firm")
    assert d.text == "诶，等一下——这会删掉 12 个文件，删了就找不回来了。先看看吗？"
    assert "12 files" in d.reason


def test_a_delete_of_one_file_or_of_nothing_is_left_to_the_app() -> None:
    eng, _ = engine()
    assert eng.observe("a", danger("delete all the .log files", n=0)) is None
    assert eng.observe("b", facts("delete a.txt", apps=["files"])) is None


def test_a_folder_delete_names_the_folder_and_what_is_in_it(tmp_path: Path) -> None:
    (tmp_path / "photos" / "2024").mkdir(parents=True)
    for i in range(3):
        (tmp_path / "photos" / "2024" / f"{i}.jpg").write_bytes(b"x")
    what = drafts.deletion("delete the photos folder")
    assert what is not None and what.folder == "photos"
    count = drafts.count_targets(tmp_path, what)
    eng, _ = engine()
    d = eng.observe("s", facts("delete the photos folder", apps=["files"], count=count))
    assert d is not None and d.kind == "danger"
    assert d.text == "Hang on — “photos” still holds 3 files; they'd go too. Look first?"


def test_code_that_deletes_is_a_danger_wherever_it_goes() -> None:
    eng, _ = engine()
    d = eng.observe("s", facts("rm -rf build", paused=False))
    assert d is not None and d.kind == "danger" and "rm -rf build" in d.text


def test_a_tie_asks_at_a_break_not_while_typing() -> None:
    eng, _ = engine()
    typing = facts("search milk", paused=False, apps=["notes"], tie=["notes", "music"])
    assert eng.observe("s", typing) is None
    assert eng.waiting("s")
    d = eng.observe("s", facts("search milk", apps=["notes"], tie=["notes", "music"]))
    assert d is not None
    assert (d.kind, d.style, d.text) == ("ambiguity", "question", "Do you mean Notes, or Music?")


def test_a_sentence_end_is_a_break_too() -> None:
    eng, _ = engine()
    d = eng.observe("s", facts("remind me to call mom.", paused=False))
    assert d is not None and d.kind == "missing_slot" and d.text == "Remind you when?"


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("提醒我开会", "几点提醒你？"),
        ("remind me to water the plants", "Remind you when?"),
        ("rename todo.txt", "Rename it to what?"),
        ("音量调到", "调到多少？"),
    ],
)
def test_a_missing_slot_asks_for_it(text: str, question: str) -> None:
    eng, _ = engine()
    d = eng.observe("s", facts(text, lang="zh-CN" if not text.isascii() else "en"))
    assert d is not None and d.kind == "missing_slot" and d.text == question


@pytest.mark.parametrize(
    "text",
    ["提醒我明天下午三点开会", "remind me at 5 to call mom", "rename a.txt to b.txt", "播放音乐"],
)
def test_a_complete_request_is_left_alone(text: str) -> None:
    eng, _ = engine()
    assert eng.observe("s", facts(text)) is None


def test_heavy_deletion_offers_help_once_something_is_left() -> None:
    eng, _ = engine()
    assert (
        eng.observe("s", facts("write a long letter to the landlord about", paused=False)) is None
    )
    assert eng.observe("s", facts("write a", paused=False)) is None  # waits for a pause
    d = eng.observe("s", facts("write a"))
    assert d is not None and d.kind == "heavy_deletion" and d.style == "gentle"
    eng.reset("s")  # emptied: not rethinking, just starting again
    eng.observe("s", facts("abc"))
    assert eng.session("s").peak == 3


def test_a_recalled_memory_is_mentioned_gently() -> None:
    eng, _ = engine()
    d = eng.observe("s", facts("book a flight to Osaka", memory="I prefer window seats"))
    assert d is not None and (d.kind, d.level, d.style) == ("memory", 2, "gentle")
    assert "I prefer window seats" in d.text


def test_nothing_to_say_says_nothing() -> None:
    eng, _ = engine()
    assert eng.observe("s", facts("play some jazz", apps=["music"])) is None
    assert not eng.waiting("s")


# ------------------------------------------------------------------ limits


def test_one_interjection_per_interval_but_a_danger_always_passes() -> None:
    eng, clock = engine(min_interval_s=20)
    assert eng.observe("s", facts("remind me to call mom")) is not None
    eng.reset("s")
    tie = facts("search milk", apps=["notes"], tie=["notes", "music"])
    assert eng.observe("s", tie) is None  # 0 s later: held back
    eng.reset("s")
    assert eng.observe("s", danger()) is not None  # level 8
    eng.reset("s")
    clock.now += 20
    shown = eng.observe("s", tie)
    assert shown is not None and shown.kind == "ambiguity"


def test_the_session_budget_runs_out_but_not_for_dangers() -> None:
    eng, clock = engine(min_interval_s=0, session_budget=2)
    texts = ["remind me to call mom", "rename a.txt", "set the volume to"]
    shown = []
    for text in texts:
        eng.reset("s")
        clock.now += 1
        shown.append(eng.observe("s", facts(text)))
    assert [d is not None for d in shown] == [True, True, False]
    eng.reset("s")
    assert eng.observe("s", danger()) is not None
    assert eng.observe("other", facts("rename a.txt")) is not None  # another session's own


def test_the_same_interjection_is_kept_as_the_user_types_on_not_counted_again() -> None:
    eng, _ = engine(session_budget=1)
    first = eng.observe("s", facts("remind me to call mom"))
    again = eng.observe("s", facts("remind me to call mom and"))
    assert first is not None and again is first
    assert eng.session("s").spent == 1
    assert eng.observe("s", facts("remind me to call mom tomorrow")) is None  # answered


def test_mute_silences_everything_for_the_session_only() -> None:
    eng, _ = engine()
    eng.mute("s")
    assert eng.observe("s", danger()) is None
    assert not eng.waiting("s")
    assert eng.observe("t", danger()) is not None
    eng.mute("s", False)
    assert eng.observe("s", danger()) is not None


def test_a_dismissed_interjection_is_not_raised_again() -> None:
    eng, _ = engine()
    d = eng.observe("s", danger())
    assert d is not None and eng.dismiss("s", d.id)
    assert eng.observe("s", danger()) is None
    assert not eng.dismiss("s", "ij_unknown")


def test_a_tab_becomes_its_session() -> None:
    eng, _ = engine()
    eng.mute("tab:t1")
    eng.adopt("tab:t1", "session:s1")
    assert eng.session("session:s1").muted


def test_a_late_decision_is_shown_only_for_the_same_draft() -> None:
    eng, _ = engine()
    f = facts("write to the landlord")
    assert eng.observe("s", f) is None
    late = Decision("llm", 3, "next_break", "gentle", "r", "Want a polite template?", "llm:x")
    assert eng.offer("s", late, facts("write to the landlord about")) is None
    assert eng.offer("s", late, f) == late


def test_the_model_cannot_claim_a_level_that_skips_the_limits() -> None:
    d = llm_decision({"interrupt": True, "level": 10, "style": "firm", "say": "Stop!"}, "en")
    assert d is not None and d.level == LLM_MAX_LEVEL and d.kind == "llm"
    assert llm_decision({"interrupt": False, "say": "x"}, "en") is None
    assert llm_decision({"interrupt": True, "say": ""}, "en") is None
    odd = llm_decision({"interrupt": True, "level": "high", "style": "rude", "say": "hm"}, "en")
    assert odd is not None and (odd.level, odd.style) == (1, "gentle")


# ------------------------------------------------------------------ the count


def test_the_count_reads_nothing_and_stays_in_the_workdir(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    for name in ("a.log", "b.log", "c.txt", "sub/d.log"):
        (work / name).write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(5):
        (outside / f"{i}.log").write_text("x")
    (work / "link").symlink_to(outside, target_is_directory=True)
    before = sorted(p.name for p in work.rglob("*"))
    what = drafts.deletion("删除所有 .log 文件")
    assert what is not None
    count = drafts.count_targets(work, what)
    assert count is not None and count.files == 3  # the link's five are not followed
    every = drafts.deletion("delete all files")
    # every file, and the link itself (a delete removes the link, not what it points to)
    assert every is not None and (c := drafts.count_targets(work, every)) and c.files == 5
    escape = drafts.Deletion(bulk=True, about="files", folder="../outside")
    assert drafts.count_targets(work, escape) is None
    assert sorted(p.name for p in work.rglob("*")) == before
