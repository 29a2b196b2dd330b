"""ReplyStream (aios/duplex/replies.py): what of a streamed answer reaches the panel, and when."""

from __future__ import annotations

from typing import Any

from aios.duplex.replies import GATE_CHARS, ReplyStream, internal


def stream(flush_s: float = 0.0) -> tuple[ReplyStream, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    return ReplyStream(events.append, session_id="s", run_id="r", app="a", flush_s=flush_s), events


def test_nothing_is_shown_until_the_start_says_it_is_words() -> None:
    sink, events = stream()
    sink.delta("Hello")
    assert events == [] and not sink.shown
    sink.delta(" there, friend")
    assert [e["text"] for e in events] == ["Hello there, friend"] and sink.shown


def test_pieces_that_come_quicker_than_the_flush_interval_go_together() -> None:
    sink, events = stream(flush_s=60.0)  # no timer fires within this test
    sink.delta("A" * GATE_CHARS)
    for _ in range(5):
        sink.delta(" more")
    assert [e["phase"] for e in events] == ["delta"]  # the first words at once, the rest held
    sink.end()
    assert [e["phase"] for e in events] == ["delta", "delta", "end"]
    assert "".join(e.get("text", "") for e in events) == "A" * GATE_CHARS + " more" * 5


def test_a_retry_forgets_what_was_held_back() -> None:
    sink, events = stream()
    sink.delta('{"name": "x", "arguments": {}}')
    sink.restart()
    sink.delta("Plain words for a person.")
    sink.end()
    assert [e.get("text") for e in events] == ["Plain words for a person.", None]


def test_an_error_or_a_cancel_without_shown_words_sends_nothing() -> None:
    for close in ("error", "cancelled"):
        sink, events = stream()
        sink.delta("short")
        getattr(sink, close)(*(["boom\nwith a traceback"] if close == "error" else []))
        assert events == []


def test_an_error_after_words_is_one_line() -> None:
    sink, events = stream()
    sink.delta("Words for the user, then")
    sink.error("the server failed\n  Traceback (most recent call last):\n  x")
    assert events[-1]["phase"] == "error" and "\n" not in events[-1]["error"]


def test_internal_texts() -> None:
    assert internal('{"tasks": []}') and internal("```python\nprint(1)") and internal("<tool_call>")
    assert internal("dispatch_tasks with two tasks")
    assert not internal("Photosynthesis is how plants make sugar.") and not internal("光合作用是")


def test_words_held_for_the_next_send_are_shown_before_an_error() -> None:
    sink, events = stream(flush_s=60.0)
    sink.delta("Words for the user, ")
    sink.delta("and more words")
    sink.error("broke off")
    assert [e["phase"] for e in events] == ["delta", "delta", "error"]
    assert "".join(e.get("text", "") for e in events) == "Words for the user, and more words"
