"""A session's topic tree over real HTTP (DESIGN §18 "Topics", aios/control/topics.py): the
bundled notes and music apps running, three instructions to two apps, then "back to the
notes" — the notes topic is active again, the music paused, the reply carries the notes'
last view; the panel's resume and archive; JSON errors; the tree survives a restart; two
lines of talk that match "back to …" alike get a card, and the one picked comes back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.integration.conftest import Running, copy_apps, final_view, start_system
from tests.util import wait_for

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "apps"


def _tree(running: Running, sid: str) -> dict[str, Any]:
    r = running.get(f"/api/sessions/{sid}/topics")
    assert r.status_code == 200, r.text
    tree: dict[str, Any] = r.json()
    return tree


def _by_app(tree: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["app"]: t for t in tree["topics"]}


def test_back_to_the_notes_resumes_their_topic_and_it_survives_a_restart(tmp_path: Path) -> None:
    apps = copy_apps(tmp_path / "apps", ["notes", "music"], source=BUNDLED)
    running = start_system(apps, tmp_path / "data", language="en")
    try:
        sid = running.instruct("add a note: buy milk and eggs")["session_id"]
        running.instruct("add a note: call the plumber on Friday", sid)
        played = running.instruct("play some jazz music", sid)
        assert [r["app"] for r in played["results"]] == ["music"]
        tree = _tree(running, sid)
        topics = _by_app(tree)
        assert topics["music"]["state"] == "active" and topics["notes"]["state"] == "paused"
        assert tree["active"] == topics["music"]["id"]
        # two notes on different things: a sub-topic narrows the notes' line
        assert len(topics["notes"]["children"]) == 1
        assert "plumber" in topics["notes"]["children"][0]["terms"]

        back = running.instruct("back to the notes", sid)
        assert back["intent"] == "resume_topic" and back["source"] == "system"
        assert back["message"].startswith("OK — back to")
        assert {"op": "focus_app", "app": "notes"} in back["desktop"]
        (result,) = back["results"]
        assert result["app"] == "notes" and result["response"]["status"] == "ok"
        assert "plumber" in str(result["response"]).lower()  # the notes' last view
        tree = _tree(running, sid)
        topics = _by_app(tree)
        assert topics["notes"]["state"] == "active" and topics["music"]["state"] == "paused"
        # "back to …" is the desktop's own: no app got it
        timeline = running.get(f"/api/sessions/{sid}/timeline").json()["entries"]
        assert timeline[-1]["kind"] == "reply" and timeline[-1]["intent"] == "resume_topic"

        nothing = running.instruct("back to the spreadsheet thing", sid)
        assert nothing["intent"] == "resume_topic" and not nothing["results"]
        assert "music" in nothing["message"].lower()  # the paused topics, listed
        assert nothing["suggestions"]
    finally:
        running.stop()

    running = start_system(apps, tmp_path / "data", language="en")
    try:
        assert _tree(running, sid) == tree
        music = _by_app(tree)["music"]["id"]
        r = running.post(f"/api/sessions/{sid}/topics/{music}/resume", {"locale": "zh-CN"})
        assert r.status_code == 200, r.text
        assert r.json()["message"].startswith("好，回到") and r.json()["topic"]["id"] == music
        assert _tree(running, sid)["active"] == music
        r = running.post(f"/api/sessions/{sid}/topics/{music}/archive")
        assert r.status_code == 200 and _by_app(r.json())["music"]["state"] == "archived"
        # bad input: one JSON line naming it
        r = running.post(f"/api/sessions/{sid}/topics/not-a-topic/resume", {})
        assert r.status_code == 400 and "no topic id" in r.json()["error"]
        r = running.post(f"/api/sessions/{sid}/topics/topic_0123456789abcdef/resume", {})
        assert r.status_code == 404 and "no topic" in r.json()["error"]
        assert running.get("/api/sessions/s_nope/topics").status_code == 404
        r = running.post(f"/api/sessions/{sid}/topics/{music}/resume", {"locale": "fr"})
        assert r.status_code == 400 and "locale" in r.json()["error"]
    finally:
        running.stop()


def test_two_lines_matching_alike_get_a_card_and_the_one_picked_comes_back(
    tmp_path: Path,
) -> None:
    apps = copy_apps(tmp_path / "apps", ["notes", "music", "files"], source=BUNDLED)
    running = start_system(apps, tmp_path / "data", language="en")
    try:
        sid = running.instruct("add a note: jazz festival tickets")["session_id"]
        running.instruct("play some jazz", sid)
        running.instruct("list my files", sid)
        asked = running.instruct("back to the jazz", sid)
        assert asked["state"] == "waiting" and asked["intent"] == "resume_topic"
        (card,) = asked["pending"]
        assert card["kind"] == "choice" and "Back to which one" in card["prompt"]
        labels = {o["label"]: o["value"] for o in card["options"]}
        assert set(labels) == {"“jazz festival tickets” (Notes)", "“play some jazz” (Music)"}
        music = labels["“play some jazz” (Music)"]
        sub = running.system.bus.reader()
        r = running.post(f"/api/interactions/{card['id']}", {"value": music})
        assert r.status_code == 200, r.text
        view = final_view(sub, asked["run_id"], "music")
        assert view["status"] in ("ok", "error")  # the music's last view, as it was
        wait_for(lambda: _tree(running, sid)["active"] == music, "the music topic active", 10)
        assert _by_app(_tree(running, sid))["notes"]["state"] == "paused"
    finally:
        running.stop()
