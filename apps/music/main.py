# Longer than ~500 lines on purpose: a bundled app is what third-party developers copy: its
# handlers, views and bilingual messages stay in one file they can read at once.
"""音乐 (music): a local library in the workspace, a player, a playlist and online search.

- The library is every wav/mp3/ogg/flac/m4a file in the workspace and in its
  sub-folders (one level), listed with ``file_list``; songs play in the
  ``media`` view from ``/apps/<app>/files/<path>``.
- The playlist (cache ``playlist``) drives next/previous; the volume (0-100)
  lives in the cache and the session state and is sent in the media data.
- Online search is the flow of spec §12.2: step ① ``http_request`` to the API
  in ``settings.json`` (``{"search_api": "https://…?q={query}"}``), step ②
  ``cache_set`` of the results; the reply shape is documented in role.md. When
  the search fails (offline, refused, bad reply) the reply says why and falls
  back to the local library.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from library import (
    LIBRARY_MAX,
    Song,
    is_audio,
    local_song,
    match,
    online_results,
    parse_command,
)
from samples import ensure_samples

from aios_sdk import (
    AIOSAgent,
    AIOSError,
    AppContext,
    AppFailure,
    Messages,
    StepResult,
    ToolError,
    action,
    text_view,
)

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
DEFAULT_SEARCH_API = "https://music-search.example.invalid/search?q={query}"
"""A placeholder that never resolves: online search stays off until settings.json names a real
API."""
PLAYLIST_KEY = "playlist"
VOLUME_KEY = "volume"
SEARCH_KEY = "last_search"
DEFAULT_VOLUME = 80
SEARCH_TIMEOUT = 10
SEARCH_STEP = "search"
END_ACTION = "ended"
"""The action the desktop sends when a track plays to its end (the media view's ``on_end``)."""

T: dict[str, tuple[str, str]] = {
    "title": ("音乐", "Music"),
    "library": ("本地曲库（{n} 首）", "Local library ({n} songs)"),
    "library_msg": ("本地曲库共 {n} 首歌。", "{n} songs in the local library."),
    "empty": (
        "曲库是空的：把 wav、mp3、ogg、flac 或 m4a 文件放进 {workdir} 就能播放，也可以在线搜索。",
        "The library is empty: put wav, mp3, ogg, flac or m4a files in {workdir}, or "
        "search online.",
    ),
    "playing": ("正在播放：{title}", "Now playing: {title}"),
    "paused": ("已暂停：{title}", "Paused: {title}"),
    "nothing": ("现在没有在播放的歌曲。", "Nothing is playing."),
    "volume": ("音量已调到 {v}。", "Volume set to {v}."),
    "bad_volume": (
        "音量必须是 0 到 100 之间的数（收到 {v}）",
        "The volume must be a number from 0 to 100 (got {v})",
    ),
    "not_found": ("本地曲库里没有“{q}”。", '"{q}" is not in the local library.'),
    "online_found": (
        "在线找到 {n} 首“{q}”，点“播放”即可收听。",
        'Found {n} songs for "{q}" online; press Play to listen.',
    ),
    "online_none": ("在线没有找到“{q}”。", 'Nothing found online for "{q}".'),
    "search_failed": ("在线搜索失败：{error}", "Online search failed: {error}"),
    "bad_reply": (
        "搜索接口的回复格式不对：{error}",
        "the search API's reply is malformed: {error}",
    ),
    "local_fallback": (
        "已改为在本地曲库中查找“{q}”：找到 {n} 首。",
        'Searched the local library for "{q}" instead: {n} found.',
    ),
    "local_none": ("本地曲库里也没有“{q}”。", '"{q}" is not in the local library either.'),
    "results": ("“{q}”的搜索结果", 'Results for "{q}"'),
    "need_query": (
        "要搜索什么？请说歌名或歌手，例如“搜索 周杰伦”。",
        'Search for what? Say a title or an artist, e.g. "search jay chou".',
    ),
    "bad_settings": (
        "settings.json 有问题（{error}），暂时使用默认搜索接口。",
        "settings.json is unusable ({error}); using the default search API.",
    ),
    "unknown_song": (
        "找不到这首歌（“{id}”），曲库可能变了，请重新打开曲库或重新搜索。",
        'That song ("{id}") is gone; reopen the library or search again.',
    ),
    "bad_action": (
        "无法处理操作“{action}”：{error}",
        'Cannot handle the action "{action}": {error}',
    ),
    "not_understood": (
        "没听懂“{text}”。可以说：“播放七里香”“下一首”“搜索 周杰伦”“音量 50”。",
        'I did not understand "{text}". Try "play 七里香", "next", "search jay chou", "volume 50".',
    ),
    "scan_failed": ("读取曲库失败：{error}", "Could not read the library: {error}"),
    "failed": ("出错了：{error}", "Something went wrong: {error}"),
    "play": ("▶ 播放", "▶ Play"),
    "play_all": ("▶ 全部播放", "▶ Play all"),
    "prev": ("上一首", "Previous"),
    "next": ("下一首", "Next"),
    "pause": ("暂停", "Pause"),
    "resume": ("▶ 继续", "▶ Resume"),
    "vol": ("音量", "Volume"),
    "back": ("曲库", "Library"),
    "rescan": ("重新扫描", "Rescan"),
    "search": ("在线搜索", "Search online"),
    "search_ph": ("歌名或歌手", "Title or artist"),
    "playlist": ("播放列表", "Playlist"),
    "playlist_title": ("播放列表（{n} 首）", "Playlist ({n} songs)"),
    "online": ("在线", "online"),
    "finished": (
        "播放列表已播完。点“▶ 继续”从第一首重新开始。",
        "The playlist has finished. Press ▶ Resume to start again from the first song.",
    ),
}


t = Messages(T)


class _Call:
    """One request: its language, app id, session state and step results."""

    def __init__(self, agent: Music, ctx: AppContext):
        self.ctx = ctx
        self.lang = ctx.lang
        self.app_id = ctx.app or agent.app_id()
        self.workdir = ctx.workdir
        self.state: dict[str, Any] = {k: ctx.cwd_state.get(k) for k in ("volume", "now")}


class Music(AIOSAgent):
    name = "音乐"
    description = "本地音乐播放与在线搜索 / play local music and search songs online"
    icon = "🎵"

    # ------------------------------------------------------------ entry

    messages = t

    def respond(
        self, instruction: str | None, context: Any, action_request: Any = None
    ) -> dict[str, Any]:
        # the SDK answers an AppFailure; a tool's failure or a bug must still answer a view
        try:
            return super().respond(instruction, context, action_request)
        except ToolError as e:
            message = t("failed", AppContext.of(context).lang, error=e.error)
        except Exception as e:  # noqa: BLE001 - a bug must still answer with a view
            log.exception("music failed")
            message = t("failed", AppContext.of(context).lang, error=f"{type(e).__name__}: {e}")
        return self.error_reply(AppContext.of(context), message)

    def handle(
        self,
        instruction: str | None,
        context: AppContext,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        kind, arg = parse_command(instruction if isinstance(instruction, str) else "")
        return self._command(kind, arg, _Call(self, context))

    def _command(self, kind: str, arg: Any, call: _Call) -> dict[str, Any]:
        if kind == "home":
            return self._library_view(call)
        if kind == "next":
            return self._step(+1, call)
        if kind == "prev":
            return self._step(-1, call)
        if kind == "pause":
            return self._pause(call)
        if kind == "resume":
            return self._resume(call)
        if kind == "volume":
            return self._set_volume(arg, call)
        if kind == "volume_step":
            return self._set_volume(self._volume(call) + int(arg), call, clamp=True)
        if kind == "search":
            if not arg:
                raise AppFailure("need_query")
            return self._search(arg, call)
        if kind == "play":
            return self._play_query(arg, call)
        songs = self._library(call)
        found = match(arg, songs) if arg else []
        if found:
            return self._play_found(found, songs, call)
        view = self._library_view(call, songs)
        view["message"] = t("not_understood", call.lang, text=arg)
        return view

    # ---------------------------------------------------------- actions

    @action("play")
    def play(self, ctx: AppContext, id: Any = None) -> dict[str, Any]:
        return self._play_id(id, _Call(self, ctx))

    @action("play_all")
    def play_all(self, ctx: AppContext) -> dict[str, Any]:
        return self._play_query("", _Call(self, ctx), fresh=True)

    @action("next")
    def next(self, ctx: AppContext) -> dict[str, Any]:
        return self._step(+1, _Call(self, ctx))

    @action("prev")
    def prev(self, ctx: AppContext) -> dict[str, Any]:
        return self._step(-1, _Call(self, ctx))

    @action("pause")
    def pause(self, ctx: AppContext) -> dict[str, Any]:
        return self._pause(_Call(self, ctx))

    @action("resume")
    def resume(self, ctx: AppContext) -> dict[str, Any]:
        return self._resume(_Call(self, ctx))

    @action(END_ACTION)
    def ended(self, ctx: AppContext, id: Any = None) -> dict[str, Any]:
        return self._ended(id, _Call(self, ctx))

    @action("volume")
    def volume(self, ctx: AppContext, value: Any = None) -> dict[str, Any]:
        return self._set_volume(value, _Call(self, ctx))

    @action("search")
    def search(self, ctx: AppContext, value: Any = None, query: Any = None) -> dict[str, Any]:
        value = query if value is None else value
        if not isinstance(value, str) or not value.strip():
            raise AppFailure("need_query")
        return self._search(value.strip()[:200], _Call(self, ctx))

    @action("playlist")
    def playlist(self, ctx: AppContext) -> dict[str, Any]:
        return self._playlist_view(_Call(self, ctx))

    @action("library")
    def library(self, ctx: AppContext) -> dict[str, Any]:
        return self._library_view(_Call(self, ctx))

    @action("rescan")
    def rescan(self, ctx: AppContext) -> dict[str, Any]:
        return self._library_view(_Call(self, ctx))

    # ---------------------------------------------------------- library

    def _library(self, call: _Call) -> list[Song]:
        """Audio files in the workdir and its sub-folders (one level), sorted by path."""
        try:
            root = self.call_tool("file_list", path=".")
        except ToolError as e:
            raise AppFailure("scan_failed", error=e.error) from e
        entries = root.get("entries", []) if isinstance(root, dict) else []
        paths = [e["name"] for e in entries if e.get("type") == "file" and is_audio(e["name"])]
        for folder in (
            e["name"] for e in entries if e.get("type") == "dir" and not e["name"].startswith(".")
        ):
            try:
                sub = self.call_tool("file_list", path=folder)
            except ToolError as e:
                log.warning("skipping folder %s: %s", folder, e.error)
                continue
            for e in sub.get("entries", []) if isinstance(sub, dict) else []:
                if e.get("type") == "file" and is_audio(e["name"]):
                    paths.append(f"{folder}/{e['name']}")
        return [local_song(p, call.app_id) for p in sorted(paths)[:LIBRARY_MAX]]

    def _library_view(self, call: _Call, songs: list[Song] | None = None) -> dict[str, Any]:
        songs = self._library(call) if songs is None else songs
        lang = call.lang
        actions: list[dict[str, Any]] = [
            {
                "type": "button",
                "label": t("play", lang),
                "action_id": "play",
                "params": {"id": s.id},
            }
            for s in songs[:100]
        ]
        if songs:
            actions.insert(
                0, {"type": "button", "label": t("play_all", lang), "action_id": "play_all"}
            )
        actions += self._common_actions(call)
        message = (
            t("library_msg", lang, n=len(songs))
            if songs
            else t("empty", lang, workdir=call.workdir or "workspace")
        )
        return {
            "status": "ok",
            "view_type": "list",
            "data": {
                "title": t("library", lang, n=len(songs)),
                "items": [s.item(t("online", lang)) for s in songs],
            },
            "actions": actions,
            "message": message,
            "state": self._state(call),
        }

    # ---------------------------------------------------------- playing

    def _play_query(self, query: str, call: _Call, fresh: bool = False) -> dict[str, Any]:
        if not query:
            songs, index = ([], 0) if fresh else self._playlist()
            if not songs:
                songs, index = self._library(call), 0
            if not songs:
                return self._library_view(call, [])
            return self._play_at(songs, index, call)
        songs = self._library(call)
        found = match(query, songs) or self._llm_pick(query, songs, call)
        if found:
            return self._play_found(found, songs, call)
        return self._search(query, call, local_miss=True)

    def _play_found(self, found: list[Song], songs: list[Song], call: _Call) -> dict[str, Any]:
        if len(found) == 1:  # one song: next/previous walk the whole library from it
            return self._play_at(songs, songs.index(found[0]), call)
        return self._play_at(found, 0, call)

    def _play_id(self, song_id: Any, call: _Call) -> dict[str, Any]:
        if not isinstance(song_id, str) or not song_id:
            raise AppFailure(
                "bad_action",
                action="play",
                error=call.ctx.tr("params.id（歌曲）缺失", "params.id (the song) is missing"),
            )
        if song_id.startswith(("http://", "https://")):
            results = self._cached_results()
            for i, song in enumerate(results):
                if song.id == song_id:
                    return self._play_at(results, i, call)
            raise AppFailure("unknown_song", id=song_id[:80])
        songs = self._library(call)
        for i, song in enumerate(songs):
            if song.id == song_id:
                return self._play_at(songs, i, call)
        raise AppFailure("unknown_song", id=song_id[:80])

    def _step(self, delta: int, call: _Call) -> dict[str, Any]:
        songs, index = self._playlist()
        if not songs:
            songs, index = self._library(call), -1 if delta > 0 else 0
            if not songs:
                return self._library_view(call, [])
        return self._play_at(songs, (index + delta) % len(songs), call)

    def _pause(self, call: _Call) -> dict[str, Any]:
        songs, index = self._playlist()
        if not songs:
            return self._text(t("nothing", call.lang), call)
        return self._media(songs, index, call, autoplay=False)

    def _resume(self, call: _Call) -> dict[str, Any]:
        """Go on where the current song was paused (no ``start``: the desktop keeps its place)."""
        songs, index = self._playlist()
        if not songs:
            return self._play_query("", call)
        return self._media(songs, index, call, autoplay=True)

    def _ended(self, song_id: Any, call: _Call) -> dict[str, Any]:
        """The song ``song_id`` played to its end: the next one of the playlist starts.

        After the last song the playlist stops on its first song; an end reported for a song
        that is no longer the current one (a late event) leaves the current song alone.
        """
        songs, index = self._playlist()
        if not songs:
            return self._library_view(call)
        if isinstance(song_id, str) and song_id and songs[index].id != song_id:
            return self._media(songs, index, call, autoplay=None)
        if index + 1 < len(songs):
            return self._play_at(songs, index + 1, call)
        self._save_playlist(songs, 0)
        return self._media(songs, 0, call, autoplay=False, start=0, note=t("finished", call.lang))

    def _play_at(self, songs: list[Song], index: int, call: _Call) -> dict[str, Any]:
        """Song ``index`` of ``songs`` from its beginning; ``songs`` becomes the playlist."""
        index = max(0, min(index, len(songs) - 1))
        self._save_playlist(songs, index)
        return self._media(songs, index, call, start=0)

    def _media(
        self,
        songs: list[Song],
        index: int,
        call: _Call,
        *,
        autoplay: bool | None = True,
        start: float | None = None,
        note: str = "",
    ) -> dict[str, Any]:
        """The player. ``start`` 0 plays from the beginning (a new track); without it the
        desktop keeps the track's place (pause, resume, a volume change). ``autoplay`` None
        keeps the desktop's playing or paused state."""
        song = songs[index]
        lang = call.lang
        volume = self._volume(call)
        call.state["now"] = {"id": song.id, "title": song.title}
        name = f"{song.title} - {song.artist}" if song.artist else song.title
        message = note or t("paused" if autoplay is False else "playing", lang, title=name)
        actions = [
            {"type": "button", "label": t("prev", lang), "action_id": "prev"},
            {"type": "button", "label": t("resume", lang), "action_id": "resume"}
            if autoplay is False
            else {"type": "button", "label": t("pause", lang), "action_id": "pause"},
            {"type": "button", "label": t("next", lang), "action_id": "next"},
            {"type": "button", "label": t("playlist", lang), "action_id": "playlist"},
        ] + self._common_actions(call)
        data: dict[str, Any] = {
            "id": song.id,
            "url": song.url,
            "type": "audio",
            "title": song.title,
            "artist": song.artist,
            "volume": volume,
            "index": index + 1,
            "count": len(songs),
            "source": song.source,
            "on_end": END_ACTION,
            "on_next": "next",
        }
        if autoplay is not None:
            data["autoplay"] = autoplay
        if start is not None:
            data["start"] = start
        return {
            "status": "ok",
            "view_type": "media",
            "data": data,
            "actions": actions,
            "message": message,
            "state": self._state(call),
        }

    def _playlist_view(self, call: _Call) -> dict[str, Any]:
        songs, index = self._playlist()
        lang = call.lang
        items = [
            {**s.item(t("online", lang)), "status": "▶" if i == index else ""}
            for i, s in enumerate(songs)
        ]
        actions = [
            {
                "type": "button",
                "label": t("play", lang),
                "action_id": "play",
                "params": {"id": s.id},
            }
            for s in songs[:100]
        ] + self._common_actions(call)
        title = t("playlist_title", lang, n=len(songs))
        return {
            "status": "ok",
            "view_type": "list",
            "data": {"title": title, "items": items},
            "actions": actions,
            "message": title if songs else t("nothing", lang),
            "state": self._state(call),
        }

    # ----------------------------------------------------------- volume

    def _volume(self, call: _Call) -> int:
        v = call.state.get("volume")
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100:
            return v
        try:
            v = self.call_tool("cache_get", key=VOLUME_KEY)
        except ToolError:
            v = None
        v = (
            v
            if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100
            else DEFAULT_VOLUME
        )
        call.state["volume"] = v
        return v

    def _set_volume(self, value: Any, call: _Call, clamp: bool = False) -> dict[str, Any]:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise AppFailure("bad_volume", v=repr(value)[:40])
        if clamp:
            value = max(0, min(100, value))
        if not 0 <= value <= 100:
            raise AppFailure("bad_volume", v=repr(value)[:40])
        volume = int(round(value))
        self.call_tool("cache_set", key=VOLUME_KEY, value=volume)
        call.state["volume"] = volume
        note = t("volume", call.lang, v=volume)
        songs, index = self._playlist()
        if songs:  # the song goes on where it is, playing or paused
            return self._media(songs, index, call, autoplay=None, note=note)
        return self._text(note, call)

    # ------------------------------------------------------------ search

    def _search(self, query: str, call: _Call, local_miss: bool = False) -> dict[str, Any]:
        lang = call.lang
        notes: list[str] = [t("not_found", lang, q=query)] if local_miss else []
        api, problem = self._search_api(call)
        if problem:
            notes.append(problem)
        url = api.replace("{query}", quote(query, safe=""))
        steps = [
            {
                "step_id": SEARCH_STEP,
                "tool": "http_request",
                "args": {
                    "method": "GET",
                    "url": url,
                    "timeout": SEARCH_TIMEOUT,
                    "headers": {"Accept": "application/json"},
                },
            },
            {
                "step_id": "cache",
                "tool": "cache_set",
                "on_error": "continue",
                "args": {
                    "key": SEARCH_KEY,
                    "value": {
                        "query": query,
                        "results": f"{{{{step_{SEARCH_STEP}.result.results}}}}",
                    },
                },
            },
        ]
        searching = call.ctx.tr(f"正在搜索“{query}”…", f'Searching for "{query}"…')
        loading = {"status": "ok", "view_type": "loading", "data": {"message": searching}}
        return self.after(
            call.ctx,
            steps,
            then=lambda got: self._searched(query, got, call, notes),
            view={**loading, "actions": []},
            step=SEARCH_STEP,
        )

    def _searched(
        self, query: str, got: StepResult, call: _Call, notes: list[str]
    ) -> dict[str, Any]:
        lang = call.lang
        if got.ok:
            try:
                results = online_results(got.value)
            except ValueError as e:
                return self._local_fallback(query, call, notes, t("bad_reply", lang, error=e))
            if results:
                return self._results_view(
                    query, results, call, notes + [t("online_found", lang, n=len(results), q=query)]
                )
            return self._local_fallback(
                query, call, notes, None, extra=t("online_none", lang, q=query)
            )
        return self._local_fallback(query, call, notes, str(got.raw.get("error") or "?"))

    def _local_fallback(
        self, query: str, call: _Call, notes: list[str], error: Any, extra: str = ""
    ) -> dict[str, Any]:
        lang = call.lang
        songs = self._library(call)
        found = match(query, songs)
        if error is not None:
            notes.append(t("search_failed", lang, error=error) + ("。" if lang == "zh" else "."))
        if extra:
            notes.append(extra)
        if not (notes and notes[0] == t("not_found", lang, q=query)):
            notes.append(
                t("local_fallback", lang, q=query, n=len(found))
                if found
                else t("local_none", lang, q=query)
            )
        view = self._results_view(query, found, call, notes)
        view["status"] = "ok" if found else "error"
        return view

    def _results_view(
        self, query: str, songs: list[Song], call: _Call, notes: list[str]
    ) -> dict[str, Any]:
        lang = call.lang
        actions = [
            {
                "type": "button",
                "label": t("play", lang),
                "action_id": "play",
                "params": {"id": s.id},
            }
            for s in songs[:50]
        ] + self._common_actions(call)
        return {
            "status": "ok",
            "view_type": "list",
            "data": {
                "title": t("results", lang, q=query),
                "items": [s.item(t("online", lang)) for s in songs],
            },
            "actions": actions,
            "message": ("" if lang == "zh" else " ").join(notes),
            "state": self._state(call),
        }

    def _search_api(self, call: _Call) -> tuple[str, str | None]:
        """The search URL template from settings.json (written with the default on first use).

        Read by the app itself (its own configuration in its workdir), not with
        ``file_read``: content a run reads through the system makes its requests ask
        (DESIGN §14.5), and the search URL's destination is checked on its own.
        """
        try:
            text = (workdir() / SETTINGS_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        except (OSError, UnicodeDecodeError) as e:
            return DEFAULT_SEARCH_API, t("bad_settings", call.lang, error=str(e))
        if text is None:
            try:
                self.call_tool(
                    "file_write",
                    path=SETTINGS_FILE,
                    content=json.dumps(
                        {"search_api": DEFAULT_SEARCH_API}, ensure_ascii=False, indent=2
                    )
                    + "\n",
                )
            except ToolError as w:
                log.warning("could not write the default settings: %s", w.error)
            return DEFAULT_SEARCH_API, None
        try:
            settings = json.loads(text) if isinstance(text, str) else None
        except ValueError as e:
            return DEFAULT_SEARCH_API, t("bad_settings", call.lang, error=f"not JSON: {e}")
        api = settings.get("search_api") if isinstance(settings, dict) else None
        if (
            not isinstance(api, str)
            or not api.startswith(("http://", "https://"))
            or "{query}" not in api
        ):
            return DEFAULT_SEARCH_API, t(
                "bad_settings",
                call.lang,
                error="search_api must be an http(s) URL containing {query}",
            )
        return api, None

    # ----------------------------------------------------------- storage

    def _playlist(self) -> tuple[list[Song], int]:
        try:
            raw = self.call_tool("cache_get", key=PLAYLIST_KEY)
        except ToolError as e:
            log.warning("playlist not readable: %s", e.error)
            return [], 0
        if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
            return [], 0
        songs = [s for s in (Song.from_dict(i) for i in raw["items"]) if s]
        index = raw.get("index")
        index = index if isinstance(index, int) and 0 <= index < len(songs) else 0
        return songs, index

    def _save_playlist(self, songs: list[Song], index: int) -> None:
        self.call_tool(
            "cache_set",
            key=PLAYLIST_KEY,
            value={"items": [s.to_dict() for s in songs[:LIBRARY_MAX]], "index": index},
        )

    def _cached_results(self) -> list[Song]:
        try:
            raw = self.call_tool("cache_get", key=SEARCH_KEY)
        except ToolError:
            return []
        results = raw.get("results") if isinstance(raw, dict) else None
        try:
            return online_results({"results": results if isinstance(results, list) else []})
        except ValueError:
            return []

    # --------------------------------------------------------------- llm

    def _llm_pick(self, query: str, songs: list[Song], call: _Call) -> list[Song]:
        """ "来点轻松的" — let the system's LLM (when there is one) choose from the library."""
        if not songs:
            return []
        catalogue = [{"id": s.id, "title": s.title, "artist": s.artist} for s in songs[:200]]
        try:
            reply = self.llm(
                [
                    {
                        "role": "system",
                        "content": "Pick songs from the user's library that fit the "
                        "request. Answer with a JSON list of song ids only, [] if none fits.",
                    },
                    {
                        "role": "user",
                        "content": json.dumps(
                            {"request": query, "library": catalogue}, ensure_ascii=False
                        ),
                    },
                ]
            )
        except AIOSError as e:
            log.info("no LLM pick for %r: %s", query, e)
            return []
        content = reply.get("content") if isinstance(reply, dict) else None
        try:
            ids = (
                json.loads(content[content.index("[") : content.rindex("]") + 1])
                if isinstance(content, str)
                else []
            )
        except ValueError:
            return []
        by_id = {s.id: s for s in songs}
        return [by_id[i] for i in ids if isinstance(i, str) and i in by_id][:50]

    # ------------------------------------------------------------ views

    def _common_actions(self, call: _Call) -> list[dict[str, Any]]:
        lang = call.lang
        return [
            {
                "type": "slider",
                "label": t("vol", lang),
                "action_id": "volume",
                "min": 0,
                "max": 100,
                "step": 1,
                "value": self._volume(call),
            },
            {
                "type": "input",
                "label": t("search", lang),
                "action_id": "search",
                "placeholder": t("search_ph", lang),
            },
            {"type": "button", "label": t("back", lang), "action_id": "library"},
        ]

    def _state(self, call: _Call) -> dict[str, Any]:
        return {"volume": call.state.get("volume"), "now": call.state.get("now")}

    def _text(self, message: str, call: _Call) -> dict[str, Any]:
        return text_view(
            message,
            title=t("title", call.lang),
            actions=self._common_actions(call),
            state=self._state(call),
        )

    def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
        return text_view(
            message,
            title=t("title", ctx.lang),
            status="error",
            actions=[{"type": "button", "label": t("back", ctx.lang), "action_id": "library"}],
        )


def workdir() -> Path:
    """The workdir the system gives the app (``AIOS_WORKDIR``), else the manifest's default."""
    env = os.environ.get("AIOS_WORKDIR")
    return Path(env) if env else Path(__file__).resolve().parent / "workspace"


if __name__ == "__main__":
    ensure_samples(workdir())  # a fresh install plays something on "播放音乐"
    Music().run()
