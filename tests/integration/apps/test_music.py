"""音乐 (music) end to end: real WAV files in the copied app's workspace, the real system and
app process, and a real HTTP search API on 127.0.0.1 for the online path."""

from __future__ import annotations

import json
import math
import shutil
import socket
import struct
import sys
import threading
import wave
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps

APP = "music"


def write_wav(path: Path, freq: float = 440.0, seconds: float = 0.2) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    rate = 8000
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * freq * i / rate)))
        for i in range(int(rate * seconds))
    )
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return path.read_bytes()


class SearchAPI:
    """A music search API: /search?q= answers the documented shape; /bad a wrong one."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.wav = b""
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                q = parse_qs(parts.query).get("q", [""])[0]
                if parts.path == "/search":
                    api.queries.append(q)
                    base = f"http://127.0.0.1:{api.port}"
                    body = {
                        "results": [
                            {"title": f"{q} 精选", "artist": q, "url": f"{base}/song.wav"},
                            {"title": "稻香", "artist": "周杰伦", "url": f"{base}/daoxiang.wav"},
                            {"title": "no url"},
                            {"title": "bad scheme", "url": "javascript:alert(1)"},
                        ]
                    }
                    self._send(
                        200, json.dumps(body, ensure_ascii=False).encode(), "application/json"
                    )
                elif parts.path == "/bad":
                    api.queries.append(q)
                    self._send(200, b'{"songs": []}', "application/json")
                elif parts.path.endswith(".wav"):
                    self._send(200, api.wav, "audio/wav")
                else:
                    self._send(404, b'{"error": "no route"}', "application/json")

            def _send(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def api() -> Iterator[SearchAPI]:
    server = SearchAPI()
    yield server
    server.close()


@pytest.fixture
def apps_dir(tmp_path: Path) -> Path:
    apps = copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps")
    ws = apps / APP / "workspace"
    write_wav(ws / "周杰伦 - 七里香.wav", 440)
    write_wav(ws / "周杰伦 - 晴天.wav", 523)
    write_wav(ws / "Beyond" / "海阔天空.wav", 330)
    write_wav(ws / "deep" / "more" / "too-deep.wav")  # two levels down: not in the library
    write_wav(ws / ".hidden.wav")
    (ws / "notes.txt").write_text("not a song")
    return apps


@pytest.fixture
def running(make_system: Callable[..., Running], apps_dir: Path) -> Running:
    return make_system(apps_dir=apps_dir)


def workspace(running: Running) -> Path:
    return running.apps_dir / APP / "workspace"


def set_api(running: Running, url: str) -> None:
    (workspace(running) / "settings.json").write_text(json.dumps({"search_api": url}))


def act(running: Running, action_id: str, sid: str | None = None, **payload: Any) -> dict[str, Any]:
    return running.act(APP, {"action_id": action_id, **payload}, sid)


def say(running: Running, text: str, sid: str | None = None) -> dict[str, Any]:
    out = running.instruct(text, sid)
    assert [r["app"] for r in out["results"]] == [APP], out
    return out["results"][0]["response"]


def file_url(path: str) -> str:
    return f"/apps/{APP}/files/{quote(path, safe='/')}"


def test_library_lists_audio_one_level_deep_with_a_play_button_per_song(running: Running) -> None:
    reply = running.open(APP)["response"]
    assert reply["view_type"] == "list"
    items = reply["data"]["items"]
    assert [(i["title"], i["id"]) for i in items] == [
        ("海阔天空", "Beyond/海阔天空.wav"),
        ("七里香", "周杰伦 - 七里香.wav"),
        ("晴天", "周杰伦 - 晴天.wav"),
    ]
    assert items[1]["sub"] == "周杰伦" and items[0]["sub"] == "Beyond · Beyond"
    plays = [a for a in reply["actions"] if a["action_id"] == "play"]
    assert [a["params"]["id"] for a in plays] == [i["id"] for i in items]
    assert reply["message"] == "本地曲库共 3 首歌。"
    kinds = {a["action_id"]: a["type"] for a in reply["actions"]}
    assert kinds["volume"] == "slider" and kinds["search"] == "input"


def test_play_next_previous_and_the_file_is_served(running: Running) -> None:
    reply = say(running, "播放七里香")
    data = reply["data"]
    assert reply["view_type"] == "media" and reply["message"] == "正在播放：七里香 - 周杰伦"
    assert data["url"] == file_url("周杰伦 - 七里香.wav")
    assert data["type"] == "audio" and data["title"] == "七里香" and data["volume"] == 80
    served = running.get(data["url"])
    assert served.status_code == 200
    assert served.content == (workspace(running) / "周杰伦 - 七里香.wav").read_bytes()
    playlist = running.system.store.cache_get(APP, "playlist")
    assert [s["title"] for s in playlist["items"]] == ["海阔天空", "七里香", "晴天"]
    assert playlist["index"] == 1

    assert say(running, "下一首")["data"]["title"] == "晴天"
    assert say(running, "next")["data"]["title"] == "海阔天空"  # wraps around
    assert say(running, "上一首")["data"]["title"] == "晴天"
    assert say(running, "play 海阔天空")["data"]["url"] == file_url("Beyond/海阔天空.wav")
    # an artist plays all of their songs
    reply = say(running, "播放周杰伦的歌")
    assert reply["data"]["title"] == "七里香" and reply["data"]["count"] == 2
    assert act(running, "next")["data"]["title"] == "晴天"
    paused = act(running, "pause")
    assert paused["data"]["autoplay"] is False and paused["message"].startswith("已暂停")
    # the play button of a list row
    reply = act(running, "play", params={"id": "Beyond/海阔天空.wav"})
    assert reply["data"]["title"] == "海阔天空"


def test_a_new_track_starts_from_its_beginning_only_resume_and_volume_keep_its_place(
    running: Running,
) -> None:
    """``start: 0`` tells the desktop to play from the beginning; without it the desktop
    keeps the track's place (and, without ``autoplay``, its playing or paused state)."""
    first = say(running, "播放七里香")["data"]
    assert first["start"] == 0 and first["autoplay"] is True
    assert first["id"] == "周杰伦 - 七里香.wav"
    for step in (lambda: say(running, "下一首"), lambda: act(running, "prev")):
        data = step()["data"]
        assert data["start"] == 0 and data["autoplay"] is True, data
    assert act(running, "play", params={"id": "周杰伦 - 晴天.wav"})["data"]["start"] == 0
    paused = act(running, "pause")["data"]
    assert paused["autoplay"] is False and "start" not in paused
    for reply in (act(running, "resume"), say(running, "继续播放"), say(running, "resume")):
        assert reply["data"]["title"] == "晴天" and reply["data"]["autoplay"] is True
        assert "start" not in reply["data"], reply["data"]
        assert [a["action_id"] for a in reply["actions"]][:3] == ["prev", "pause", "next"]
    volume = act(running, "volume", value=40)["data"]
    assert volume["title"] == "晴天" and "start" not in volume and "autoplay" not in volume


def test_the_end_of_a_track_plays_the_next_and_the_playlist_stops_after_the_last(
    running: Running,
) -> None:
    reply = say(running, "播放周杰伦的歌")
    assert reply["data"]["on_end"] == "ended" and reply["data"]["count"] == 2
    reply = act(running, "ended", params={"id": "周杰伦 - 七里香.wav"})
    assert reply["data"]["title"] == "晴天" and reply["data"]["start"] == 0
    assert reply["data"]["autoplay"] is True and reply["message"] == "正在播放：晴天 - 周杰伦"
    # a late end of the song before does not skip the one now playing
    late = act(running, "ended", params={"id": "周杰伦 - 七里香.wav"})["data"]
    assert late["title"] == "晴天" and "start" not in late and "autoplay" not in late
    done = act(running, "ended", params={"id": "周杰伦 - 晴天.wav"})
    assert done["data"]["title"] == "七里香" and done["data"]["autoplay"] is False
    assert done["message"].startswith("播放列表已播完")
    assert running.system.store.cache_get(APP, "playlist")["index"] == 0


def test_titles_come_from_the_file_name_and_only_a_spaced_dash_names_the_artist() -> None:
    sys.path.insert(0, str(ROOT / "apps" / APP))
    try:
        from library import local_song
    finally:
        sys.path.remove(str(ROOT / "apps" / APP))
    cases = {
        "second_song.wav": ("second song", ""),
        "周杰伦 - 七里香.wav": ("七里香", "周杰伦"),
        "Queen – Bohemian_Rhapsody.mp3": ("Bohemian Rhapsody", "Queen"),
        "a-ha.ogg": ("a-ha", ""),
        "Beyond/海阔天空.flac": ("海阔天空", "Beyond"),
        "__.wav": ("__", ""),
    }
    for path, expected in cases.items():
        song = local_song(path, APP)
        assert (song.title, song.artist) == expected, path


def test_a_fresh_install_gets_free_sample_tracks_and_play_music_plays_the_first(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    apps = copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps")
    ws = apps / APP / "workspace"
    shutil.rmtree(ws)  # what a fresh clone has (a developer's run may have filled the copy)
    ws.mkdir()
    running = make_system(apps_dir=apps)
    samples = sorted((ws / "samples").glob("*.wav"))
    assert len(samples) == 3
    for path in samples:
        assert path.stat().st_size <= 300_000, path
        with wave.open(str(path)) as w:
            assert 2 <= w.getnframes() / w.getframerate() <= 10, path
    assert "CC0" in (ws / "samples" / "LICENSE.txt").read_text()

    reply = say(running, "播放音乐")
    assert reply["view_type"] == "media" and reply["data"]["start"] == 0
    assert reply["data"]["url"] == file_url(f"samples/{samples[0].name}")
    assert reply["message"] == f"正在播放：{reply['data']['title']} - Triton AIOS"
    assert running.get(reply["data"]["url"]).content == samples[0].read_bytes()

    # English UI: the app answers in English only
    assert running.post("/api/config", {"updates": {"language": "en"}}).status_code == 200
    reply = say(running, "play music")
    assert reply["message"] == f"Now playing: {reply['data']['title']} - Triton AIOS"
    labels = [a["label"] for a in reply["actions"]]
    assert labels[:4] == ["Previous", "Pause", "Next", "Playlist"]
    home = running.open(APP)["response"]
    assert home["data"]["title"] == "Local library (3 songs)"
    assert home["message"] == "3 songs in the local library."
    assert not any("\u4e00" <= c <= "\u9fff" for c in json.dumps(home, ensure_ascii=False))
    # deleted samples are the user's choice: a restart does not write them again
    shutil.rmtree(ws / "samples")
    running.system.launcher.restart(APP)
    reply = running.open(APP)["response"]
    assert reply["data"]["items"] == [] and not (ws / "samples").exists()


def test_volume_slider_is_kept_and_sent_with_the_media(running: Running) -> None:
    say(running, "播放晴天")
    reply = act(running, "volume", value=35)
    assert reply["view_type"] == "media" and reply["data"]["volume"] == 35
    assert reply["message"] == "音量已调到 35。"
    assert running.system.store.cache_get(APP, "volume") == 35
    assert say(running, "下一首")["data"]["volume"] == 35
    assert say(running, "音量调到50")["data"]["volume"] == 50
    assert say(running, "volume 60")["data"]["volume"] == 60
    assert say(running, "大声点")["data"]["volume"] == 70
    for bad in (101, -1, "loud", None, True):
        reply = act(running, "volume", value=bad)
        assert reply["status"] == "error" and "0 到 100" in reply["message"], bad
    assert running.system.store.cache_get(APP, "volume") == 70


def test_online_search_through_steps_then_play_a_result(running: Running, api: SearchAPI) -> None:
    set_api(running, f"http://127.0.0.1:{api.port}/search?q={{query}}")
    # beside the apps, not in the app folder: a file added there restarts the app (§14.1)
    api.wav = write_wav(running.apps_dir.parent / "remote.wav", 600)
    reply = say(running, "搜索 周杰伦")
    assert reply["view_type"] == "list" and reply["status"] == "ok", reply
    assert api.queries == ["周杰伦"]
    items = reply["data"]["items"]
    # rows without a playable http(s) url are left out
    assert [i["title"] for i in items] == ["周杰伦 精选", "稻香"]
    assert "在线找到 2 首" in reply["message"]
    url = f"http://127.0.0.1:{api.port}/song.wav"
    play = next(a for a in reply["actions"] if a["action_id"] == "play")
    assert play["params"] == {"id": url}
    # spec §12.2: ① http_request ② cache_set, both run as audited steps
    rows = running.get(f"/api/audit?app={APP}").json()
    tools = [r["tool"] for r in rows if r["step_id"]]
    assert "http_request" in tools and "cache_set" in tools
    assert running.system.store.cache_get(APP, "last_search")["query"] == "周杰伦"

    reply = act(running, "play", params={"id": url})
    assert reply["view_type"] == "media" and reply["data"]["url"] == url
    assert act(running, "next")["data"]["title"] == "稻香"
    # an English search through the input control
    reply = act(running, "search", value="jay chou")
    assert api.queries[-1] == "jay chou" and reply["data"]["items"][0]["title"] == "jay chou 精选"
    # a song that is not local is looked up online
    reply = say(running, "播放 双截棍")
    assert api.queries[-1] == "双截棍"
    assert reply["message"].startswith("本地曲库里没有“双截棍”") and "在线找到" in reply["message"]
    # a URL that was never in the results is not played
    reply = act(running, "play", params={"id": "http://evil.example/x.mp3"})
    assert reply["status"] == "error" and "找不到这首歌" in reply["message"]


def test_offline_or_refused_search_says_why_and_falls_back_to_the_library(
    running: Running, api: SearchAPI
) -> None:
    with socket.socket() as s:  # a port nobody listens on: connection refused
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    set_api(running, f"http://127.0.0.1:{dead}/search?q={{query}}")
    reply = say(running, "搜索 周杰伦")
    assert reply["message"].startswith("在线搜索失败：")
    assert str(dead) in reply["message"] or "refused" in reply["message"].lower()
    assert "已改为在本地曲库中查找“周杰伦”：找到 2 首" in reply["message"]
    assert [i["title"] for i in reply["data"]["items"]] == ["七里香", "晴天"]

    set_api(running, f"http://127.0.0.1:{api.port}/bad?q={{query}}")
    reply = say(running, "search beyond")
    # asked in English: answered in English (issue 22)
    assert "reply is malformed" in reply["message"] and "results" in reply["message"]
    assert [i["title"] for i in reply["data"]["items"]] == ["海阔天空"]

    # no settings.json: the default placeholder is written and fails clearly (no network)
    (workspace(running) / "settings.json").unlink()
    reply = say(running, "搜索 不存在的歌")
    assert reply["status"] == "error" and reply["message"].startswith("在线搜索失败：")
    assert "本地曲库里也没有" in reply["message"]
    written = json.loads((workspace(running) / "settings.json").read_text())
    assert "{query}" in written["search_api"]

    (workspace(running) / "settings.json").write_text("{not json")
    reply = say(running, "搜索 晴天")
    assert "settings.json 有问题" in reply["message"]
    assert (workspace(running) / "settings.json").read_text() == "{not json"  # left alone


GARBAGE: list[dict[str, Any]] = [
    {"action_id": "explode"},
    {"action_id": "play"},
    {"action_id": "play", "params": {"id": 42}},
    {"action_id": "play", "params": {"id": "../../../etc/passwd"}},
    {"action_id": "play", "params": {"id": "notes.txt"}},
    {"action_id": "volume"},
    {"action_id": "volume", "value": {"v": 1}},
    {"action_id": "search"},
    {"action_id": "search", "value": ["a"]},
    {"action_id": "search", "value": "   "},
]


def test_garbage_actions_are_clear_errors_and_the_app_keeps_working(running: Running) -> None:
    before = sorted(p.name for p in workspace(running).rglob("*"))
    for payload in GARBAGE:
        reply = act(running, **payload)
        assert reply["status"] == "error" and reply["view_type"] == "text", (payload, reply)
        assert reply["message"], payload
    assert "explode" in act(running, "explode")["message"]
    assert "找不到这首歌" in act(running, "play", params={"id": "notes.txt"})["message"]
    for payload in (
        {"action_id": "library", "params": {"x": [1]}},
        {"action_id": "next", "on": True},
        {"action_id": "playlist"},
        {"action_id": "pause", "checked": [1]},
    ):
        assert act(running, **payload)["status"] == "ok", payload
    assert sorted(p.name for p in workspace(running).rglob("*")) == before
    assert say(running, "播放七里香")["view_type"] == "media"


def test_router_sends_music_system_control_and_monitor_commands_apart(
    make_system: Callable[..., Running], apps_dir: Path
) -> None:
    copy_apps(apps_dir, ["system_agent", "monitor"], source=ROOT / "apps")
    running = make_system(apps_dir=apps_dir)
    cases = {
        "播放七里香": APP,
        "play 七里香": APP,
        "下一首": APP,
        "搜索 周杰伦": APP,
        "把播放按钮移到左上角": "system_agent",
        "hide the clock": "system_agent",
        "把时钟变成红色": "system_agent",
        "看看CPU占用": "monitor",
        "show memory usage": "monitor",
    }
    for text, app in cases.items():
        out = running.instruct(text)
        assert [r["app"] for r in out["results"]] == [app], (text, out["plan"])


def player(running: Running, reply: dict[str, Any]) -> tuple[str, bool | None, int]:
    """What the user hears after a request: the song, playing (True) / paused (False) /
    as it was (None), the volume; the playlist and the volume kept by the app agree."""
    assert reply["view_type"] == "media", reply
    data = reply["data"]
    playlist = running.system.store.cache_get(APP, "playlist")
    assert playlist["items"][playlist["index"]]["id"] == data["id"]
    assert running.system.store.cache_get(APP, "volume") in (None, data["volume"])
    return data["title"], data.get("autoplay"), data["volume"]


def test_plain_requests_drive_the_player(running: Running) -> None:
    """Library order: 海阔天空, 七里香, 晴天."""
    steps: list[tuple[str, tuple[str, bool | None, int]]] = [
        ("放一首 七里香", ("七里香", True, 80)),
        ("next song", ("晴天", True, 80)),
        ("skip this one", ("海阔天空", True, 80)),
        ("切歌", ("七里香", True, 80)),
        ("go back one song", ("海阔天空", True, 80)),
        ("previous track", ("晴天", True, 80)),
        ("上一首", ("七里香", True, 80)),
        ("pause the music", ("七里香", False, 80)),
        ("继续放", ("七里香", True, 80)),
        ("暂停一下", ("七里香", False, 80)),
        ("resume the music", ("七里香", True, 80)),
        ("turn it up", ("七里香", None, 90)),
        ("volume to 30", ("七里香", None, 30)),
        ("声音调到 45", ("七里香", None, 45)),
        ("音量调到50", ("七里香", None, 50)),
        ("声音小一点", ("七里香", None, 40)),
        ("please play 晴天", ("晴天", True, 40)),
        ("下一首", ("海阔天空", True, 40)),
        ("I want to listen to 七里香", ("七里香", True, 40)),
    ]
    for text, expected in steps:
        assert player(running, say(running, text)) == expected, text
    assert running.system.store.cache_get(APP, "volume") == 40


def test_plain_requests_in_english_answer_in_english(
    make_system: Callable[..., Running], apps_dir: Path
) -> None:
    running = make_system(apps_dir=apps_dir, language="en")
    reply = say(running, "play 晴天")
    assert reply["message"] == "Now playing: 晴天 - 周杰伦"
    reply = say(running, "could you pause it?")
    assert reply["data"]["autoplay"] is False and reply["message"] == "Paused: 晴天 - 周杰伦"
    reply = say(running, "set the volume to 25 please")
    assert reply["data"]["volume"] == 25 and reply["message"] == "Volume set to 25."
    assert running.system.store.cache_get(APP, "volume") == 25
    reply = say(running, "keep playing")
    assert reply["data"]["autoplay"] is True and reply["data"]["title"] == "晴天"
