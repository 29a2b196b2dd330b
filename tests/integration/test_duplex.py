"""Draft listening over the real ``/api/events`` WebSocket (DESIGN §18, aios/duplex/): the
bundled apps running, a draft in, a preview out — where it would go, and what the
interruption engine says about it (a bulk delete counted read-only in the files app's
workdir) — nothing stored; what waits for a pause comes when the page reports one; bad
messages get one JSON line and the stream goes on; the tuning set (duplex_dev_drafts.jsonl,
kept apart from bench/data/duplex_drafts.jsonl) is answered as labelled; ``duplex.llm`` asks
the fake OpenAI server at a pause, within its token budget."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.fake_openai import FakeOpenAI
from tests.integration.conftest import TOKEN, Running, copy_apps, start_system
from tests.util import WsClient, wait_for

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "apps"
DEV_SET = Path(__file__).with_name("duplex_dev_drafts.jsonl")
WAIT = 10.0
MEMORIES = ["我在学日语", "I always book window seats on flights"]
"""The user's memories the dev set's memory rows recall."""


def seed_workspace(workspace: Path) -> None:
    """What the dev set's deletes would touch in the files app's workdir."""
    for i in range(7):
        (workspace / f"run-{i}.log").write_text("log\n")
    for folder, n in (("photos", 4), ("old", 3)):
        (workspace / folder).mkdir(exist_ok=True)
        for i in range(n):
            (workspace / folder / f"{i}.dat").write_text("x")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    tmp = tmp_path_factory.mktemp("duplex")
    names = sorted(p.name for p in BUNDLED.iterdir() if (p / "manifest.json").exists())
    apps = copy_apps(tmp / "apps", names, source=BUNDLED)
    seed_workspace(apps / "files" / "workspace")
    system = start_system(apps, tmp / "data")
    for text in MEMORIES:
        system.system.memory.add(text)
    yield system
    system.stop()


@contextmanager
def events(running: Running) -> Iterator[WsClient]:
    url = running.url.replace("http", "ws") + f"/api/events?token={TOKEN}"
    ws = WsClient.open(url, headers={"Origin": running.url})
    try:
        assert json.loads(ws.receive(timeout=WAIT) or "{}").get("type") == "hello"
        yield ws
    finally:
        if ws.connected:
            ws.close()


def answer(ws: WsClient, *types: str) -> dict[str, Any]:
    """The next message of one of ``types`` (bus events in between are skipped)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        raw = ws.receive(timeout=WAIT)
        assert raw is not None, f"no {types} within {WAIT}s"
        msg: dict[str, Any] = json.loads(raw)
        if msg.get("type") in types:
            return msg
    raise AssertionError(f"no {types} within {WAIT}s")


def draft(ws: WsClient, text: str, n: int, *, tab: str, **kw: Any) -> dict[str, Any]:
    ws.send(json.dumps({"type": "draft", "id": n, "text": text, "tab": tab, **kw}))
    msg = answer(ws, "draft_preview", "duplex_error")
    assert msg["type"] == "draft_preview", msg
    assert msg["id"] == n
    return msg


def test_a_draft_gets_its_route_and_a_counted_danger_and_nothing_is_kept(
    running: Running,
) -> None:
    workspace = running.apps_dir / "files" / "workspace"
    before = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*"))
    with events(running) as ws:
        plain = draft(ws, "note: buy milk tomorrow", 1, tab="route", lang="en")
        assert plain["route"] == {"apps": ["notes"], "tie": [], "system": None}
        assert plain["interjection"] is None and plain["pause_after_ms"] is None
        msg = draft(ws, "删除所有 .log 文件", 2, tab="route", lang="en")
    assert msg["route"]["apps"] == ["files"]
    ij = msg["interjection"]
    assert (ij["kind"], ij["level"], ij["urgency"], ij["style"]) == ("danger", 8, "now", "firm")
    assert ij["text"] == "诶，等一下——这会删掉 7 个文件，删了就找不回来了。先看看吗？"
    assert ij["reason"] == "delete would remove 7 files in files"
    # read-only: every file still there; nothing of the drafts stored
    assert sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*")) == before
    assert running.get("/api/sessions?limit=5").json() == []


def test_what_waits_for_a_pause_comes_at_the_pause(running: Running) -> None:
    with events(running) as ws:
        typing = draft(ws, "remind me to call mom", 1, tab="pause")
        assert typing["interjection"] is None
        assert typing["pause_after_ms"] == 1500  # duplex.pause_s
        paused = draft(ws, "remind me to call mom", 2, tab="pause", paused=True)
        assert paused["interjection"]["text"] == "Remind you when?"
        assert paused["pause_after_ms"] is None
        # muted: the route still comes, no interjection, nothing waits
        ws.send(json.dumps({"type": "duplex_mute", "tab": "pause"}))
        assert answer(ws, "duplex_muted")["muted"] is True
        muted = draft(ws, "rm -rf build", 3, tab="pause")
        assert muted["muted"] is True and muted["interjection"] is None
        assert muted["route"] is not None


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("not json", "a message must be JSON"),
        (json.dumps([1, 2]), "a message must be a JSON object"),
        (json.dumps({"type": "shout", "tab": "t"}), "unknown message type 'shout'"),
        (json.dumps({"type": "draft", "text": "hi"}), "needs a session_id or a tab"),
        (json.dumps({"type": "draft", "tab": "t", "text": 5}), "text must be a string"),
        (json.dumps({"type": "draft", "tab": "t" * 65, "text": "x"}), "tab must be a string"),
        (json.dumps({"type": "draft", "tab": "t", "text": "x" * 4001}), "at most 4000"),
        (json.dumps({"type": "draft", "tab": "t", "text": "x", "id": "7"}), "id must be"),
        (json.dumps({"type": "duplex_mute", "tab": "t", "muted": "no"}), "muted must be"),
    ],
)
def test_a_bad_message_gets_one_json_line_and_the_stream_goes_on(
    running: Running, message: str, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with events(running) as ws:
        ws.send(message)
        got = answer(ws, "duplex_error", "draft_preview")
        assert got["type"] == "duplex_error" and error in got["error"], got
        running.system.bus.emit("log", {"message": "still here"})
        assert answer(ws, "log")["message"] == "still here"
        assert draft(ws, "play some jazz", 9, tab="bad")["route"]["apps"] == ["music"]
    assert "Traceback" not in caplog.text


def test_the_tuning_set_is_answered_as_labelled(running: Running) -> None:
    rows = [json.loads(line) for line in DEV_SET.read_text(encoding="utf-8").splitlines()]
    misses = []
    for i, row in enumerate(rows):
        d = running.system.duplex.decision_for(
            row["text"],
            row["lang"],
            key=f"dev:{i}",
            before=row.get("before"),
            paused=row.get("paused", True),
        )
        got = d.kind if d is not None else None
        if got != row["expect"]:
            misses.append(f"{row['text']!r}: expected {row['expect']}, got {got}")
    assert not misses, "\n".join(misses)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test") as f:
        yield f


def test_the_models_judgement_comes_at_a_pause_within_its_budget(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    judgement = {"interrupt": True, "level": 9, "style": "gentle", "say": "Keep it polite?"}
    fake.script([{"content": "", "constrained": json.dumps(judgement)}])
    llm = {
        "api_key": "sk-test",
        "base_url": fake.url,
        "model": "fake",
        "max_retries": 0,
        "planner": "offline",
        "measure_local": False,
    }
    duplex = {"llm": True, "llm_budget_tokens": 1, "llm_min_interval_s": 0}
    running = start_system(
        copy_apps(tmp_path / "apps", ["notes"], source=BUNDLED),
        tmp_path / "data",
        llm=llm,
        duplex=duplex,
    )
    try:
        with events(running) as ws:
            text = "write to my landlord about the rent"
            first = draft(ws, text, 1, tab="llm", paused=True)
            assert first["interjection"] is None  # the offline rules had nothing
            late = answer(ws, "draft_preview")
            assert late["id"] == 1
            ij = late["interjection"]
            assert (ij["kind"], ij["level"], ij["text"]) == ("llm", 6, "Keep it polite?")
            asked = fake.requests[0]["messages"]
            assert text in asked[-1]["content"]
            # the budget is spent: another pause asks nobody
            draft(ws, text + " and the heating", 2, tab="llm", paused=True)
            for listener_thread in running.system.duplex.judging:
                listener_thread.join(WAIT)
            wait_for(lambda: len(fake.requests) == 1, "one judgement only", timeout=WAIT)
    finally:
        running.stop()
