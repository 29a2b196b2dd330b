"""The music library and the words of music commands: pure functions, no I/O.

Songs are files in the app's workspace (and one level of sub-folders); their
title and artist come from the file name ("周杰伦 - 七里香.wav") or the folder
("周杰伦/七里香.mp3"). Online results follow the shape documented in role.md:
``{"results": [{"title", "artist", "url"}]}``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from aios_sdk import slots

AUDIO_EXTENSIONS = (".wav", ".mp3", ".ogg", ".flac", ".m4a")
RESULTS_MAX = 50
LIBRARY_MAX = 500


@dataclass
class Song:
    id: str
    """The path relative to the workdir (local) or the URL (online)."""
    title: str
    artist: str = ""
    url: str = ""
    source: str = "local"
    folder: str = ""

    def item(self, online: str = "online") -> dict[str, Any]:
        """A list-view row; ``id`` lets the desktop draw the row's own play button.

        ``online`` is the word that marks an online result, in the user's language.
        """
        sub = " · ".join(
            x for x in (self.artist, self.folder, online if self.source == "online" else "") if x
        )
        return {"id": self.id, "title": self.title, "sub": sub}

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "artist": self.artist,
            "url": self.url,
            "source": self.source,
            "folder": self.folder,
        }

    @classmethod
    def from_dict(cls, raw: Any) -> Song | None:
        if not isinstance(raw, dict):
            return None
        fields = {k: raw.get(k) for k in ("id", "title", "artist", "url", "source", "folder")}
        if not all(isinstance(v, str) for v in fields.values()):
            return None
        if not fields["id"] or not fields["url"] or fields["source"] not in ("local", "online"):
            return None
        return cls(**fields)  # type: ignore[arg-type]


def is_audio(name: str) -> bool:
    return name.lower().endswith(AUDIO_EXTENSIONS) and not name.startswith(".")


def local_song(path: str, app_id: str) -> Song:
    """A song from its path in the workdir: "周杰伦 - 七里香.wav", "周杰伦/七里香.mp3".

    Underscores read as spaces ("second_song.wav" is the title "second song"); a hyphen
    without spaces around it is part of the title ("a-ha.wav").
    """
    folder, _, name = path.rpartition("/")
    stem = name.rsplit(".", 1)[0]
    # "second_song" is one title, "second song": only " - " separates an artist from a title
    stem = re.sub(r"\s+", " ", stem.replace("_", " ")).strip() or stem
    artist, title = "", stem
    m = re.match(r"^(.+?)\s+[-–—]\s+(.+)$", stem)
    if m:
        artist, title = m.group(1).strip(), m.group(2).strip()
    elif folder:
        artist = folder
    return Song(
        id=path,
        title=title or stem,
        artist=artist,
        url=f"/apps/{app_id}/files/{quote(path, safe='/')}",
        folder=folder,
    )


def online_results(body: Any) -> list[Song]:
    """Songs from a search API reply; raises ValueError naming what is wrong with it."""
    if not isinstance(body, dict) or not isinstance(body.get("results"), list):
        kind = (
            type(body).__name__
            if not isinstance(body, dict)
            else f"an object with keys {', '.join(list(body)[:8]) or 'none'}"
        )
        raise ValueError(f'expected {{"results": [{{"title", "artist", "url"}}]}}, got {kind}')
    songs: list[Song] = []
    for raw in body["results"][:RESULTS_MAX]:
        if not isinstance(raw, dict):
            continue
        url, title = raw.get("url"), raw.get("title")
        if (
            not isinstance(url, str)
            or urlsplit(url).scheme not in ("http", "https")
            or not isinstance(title, str)
            or not title.strip()
        ):
            continue  # a row we cannot play is left out, the others stay
        artist = raw.get("artist") if isinstance(raw.get("artist"), str) else ""
        songs.append(
            Song(
                id=url[:2000],
                title=title.strip()[:200],
                artist=artist.strip()[:200],
                url=url[:2000],
                source="online",
            )
        )
    return songs


# -------------------------------------------------------------- matching


def _norm(text: str) -> str:
    return re.sub(r"[\s\-–—_·.,，。!！?？'\"“”《》()（）]+", "", (text or "").lower())


def match(query: str, songs: list[Song]) -> list[Song]:
    """Songs for ``query``: the title first, then every song of an artist, then near misses."""
    q = _norm(query)
    if not q:
        return []
    exact = [s for s in songs if _norm(s.title) == q or _norm(s.id.rsplit(".", 1)[0]) == q]
    if exact:
        return exact
    in_title = [
        s
        for s in songs
        if q in _norm(s.title) or (len(_norm(s.title)) >= 2 and _norm(s.title) in q)
    ]
    by_artist = [
        s
        for s in songs
        if s.artist
        and (_norm(s.artist) == q or (len(_norm(s.artist)) >= 2 and _norm(s.artist) in q))
    ]
    if in_title and by_artist:
        both = [s for s in in_title if s in by_artist]
        return both or in_title
    if in_title or by_artist:
        return in_title or by_artist
    titles = {_norm(s.title): s for s in songs}
    close = difflib.get_close_matches(q, list(titles), n=5, cutoff=0.6)
    return [titles[c] for c in close]


# ------------------------------------------------------------- commands

_ROUTING = re.compile(
    r"^\s*(?:请|帮我|麻烦)?\s*(?:打开|启动|用|使用|open|launch|start|use)?\s*"
    r"(?:the\s+)?(?:音乐播放器|音乐|music(?:\s+player)?(?![a-z]))(?:应用|app)?"
    r"\s*[:：,，]?\s*(?=\S|$)",
    re.IGNORECASE,
)
_PLAY = re.compile(
    r"^(?:请|帮我|给我|我想|我要)?\s*(?:播放一下|播放一首|播放|放一下|放一首|放首|放点|放|来一首|来首|来点"
    r"|听一下|听听|听一首|听|play(?:\s+me)?(?:\s+the\s+song)?|listen\s+to|put\s+on"
    r"|(?:i\s+)?(?:want|wanna|would\s+like)\s+to\s+(?:hear|listen\s+to)|let\s+me\s+hear)"
    r"\s*(?P<q>.*)$",
    re.IGNORECASE,
)
_SEARCH = re.compile(
    r"^(?:请|帮我)?\s*(?:在线搜索|网上搜索|在线找|搜索一下|搜索|搜一下|搜"
    r"|找一下|找歌|查找|search(?:\s+online)?(?:\s+for)?|find|look\s+up)\s*(?P<q>.*)$",
    re.IGNORECASE,
)
_NEXT = re.compile(
    r"^(?:播放|放|来|切到|换到|跳到|听)?(?:下一首|下首|下一曲|下一个|切歌|切一首|换一首|换首|换歌|换一个)(?:歌曲?|吧)?$"
    r"|^(?:play\s+|go\s+to\s+|skip\s+to\s+|on\s+to\s+)?(?:the\s+)?next(?:\s+(?:song|track|one|tune))?$"
    r"|^skip(?:\s+(?:this|it|that|ahead|forward|the\s+song|the\s+track))?"
    r"(?:\s+(?:one|song|track|tune))?$"
    r"|^(?:change|switch)\s+(?:the\s+)?(?:song|track)$|^(?:another|different)\s+(?:song|track|one)$",
    re.I,
)
_PREV = re.compile(
    r"^(?:播放|放|回到|返回|切回|切到|回|听|再听|再放)?(?:上一首|上首|上一曲|上一个|前一首)(?:歌曲?|吧)?$"
    r"|^(?:play\s+|(?:go\s+|skip\s+|jump\s+)?back\s+to\s+|go\s+to\s+|return\s+to\s+)?"
    r"(?:the\s+)?(?:previous|prev|last|prior)(?:\s+(?:song|track|one|tune))?"
    r"(?:\s+again)?$"
    r"|^(?:go\s+)?back(?:\s+(?:one|a))?(?:\s+(?:song|track))?$"
    r"|^(?:play\s+)?the\s+(?:song|track|one)\s+before(?:\s+this(?:\s+one)?)?$",
    re.I,
)
_RESUME = re.compile(
    r"^(?:继续|接着|恢复|重新)(?:播放|放|听|播)?(?:音乐|歌曲?|吧)?$"
    r"|^(?:resume|continue|unpause|keep\s+playing|start\s+again|play\s+again|carry\s+on)"
    r"(?:\s+(?:playing|playback|the\s+music|music|the\s+song|it|the\s+track))?$",
    re.I,
)
_PAUSE = re.compile(
    r"^(?:先|请)?(?:暂停|停止|停|停下|别放了|不要放了|关掉|关闭)(?:一下|播放|音乐|歌曲?|下来)*$"
    r"|^(?:把|将)?(?:音乐|歌曲?)(?:暂停|停下|停了|关了|停止)(?:一下)?$"
    r"|^(?:pause|stop|hold|halt)(?:\s+(?:it|this|that|the\s+music|music|the\s+song|the\s+track"
    r"|playback|playing|for\s+a\s+(?:moment|sec(?:ond)?|bit)))*$",
    re.I,
)
_VOLUME_WORD = re.compile(r"音量|声音|volume|(?<![a-z])vol(?![a-z])", re.IGNORECASE)
_VOLUME_TO = re.compile(
    r"(?:音量|声音|volume|vol)\s*(?:调|设|开|放|改|变)?(?:到|成|为|至|在|:|：|=|to|at)?\s*\d"
    r"|(?:调|设|开|放|改)(?:到|成|为|至)|(?:\bto|\bat)\s+\d",
    re.IGNORECASE,
)
_LOUDER = re.compile(
    r"大声|调大|开大|大点声|大一点|大一些|音量加|加大|增大|提高音量|调高|louder|"
    r"volume\s+up|(?:turn|crank|pump)\s+(?:it|this|the\s+(?:music|volume|sound))\s+up|"
    r"turn\s+up|raise\s+the\s+volume|increase\s+the\s+volume|more\s+volume",
    re.I,
)
_QUIETER = re.compile(
    r"小声|调小|关小|小点声|小一点|小一些|音量减|减小|降低音量|调低|quieter|softer|"
    r"volume\s+down|turn\s+(?:it|this|the\s+(?:music|volume|sound))\s+down|turn\s+down|"
    r"lower\s+the\s+volume|decrease\s+the\s+volume|reduce\s+the\s+volume|less\s+volume",
    re.I,
)
_MUTE = re.compile(r"静音|mute", re.I)
_LIST = re.compile(
    r"^(?:曲库|歌单|播放列表|列表|本地音乐|所有歌曲|全部歌曲|我的音乐"
    r"|library|playlist|songs|all songs|my music|list)$",
    re.I,
)
_NOTHING = frozenset(
    {
        "music",
        "some music",
        "a song",
        "song",
        "songs",
        "something",
        "歌",
        "音乐",
        "歌曲",
        "一首歌",
        "点歌",
        "首歌",
        "it",
        "some",
        "any",
        "anything",
        "any music",
        "some songs",
        "a tune",
        "some tunes",
        "tunes",
        "点音乐",
        "点歌曲",
        "些音乐",
        "随便",
        "随便什么",
    }
)
_TRIM = re.compile(
    r"(?:的歌曲?|的音乐|这首歌|歌曲|的歌|一首歌|一首|音乐|听听|听一听|来听听|吧|\s+songs?|\s+music|"
    r"\s+by\s*$)$",
    re.IGNORECASE,
)


_CLAUSES = re.compile(r"[,，。.!！;；]+")
_CONTROLS = frozenset({"next", "prev", "pause", "resume"})


def strip_routing(text: str) -> str:
    text = (text or "").strip()
    m = _ROUTING.match(text)
    return text[m.end() :].strip() if m and m.end() else text


def clean_query(q: str) -> str:
    q = (q or "").strip().strip("\"'“”《》「」")
    prev = None
    while prev != q:
        prev = q
        q = _TRIM.sub("", q).strip()
    if q.lower() in _NOTHING:
        return ""
    q = re.sub(r"^(?:by|some|a|the|歌手)\s+", "", q, flags=re.IGNORECASE).strip()
    q = q.strip("\"'“”《》「」 ")
    return "" if q.lower() in _NOTHING else q


def _volume(t: str) -> tuple[str, int] | None:
    """ "volume to 30" / "声音调到三十" (absolute), "turn it up" / "小声点" (a step of 10,
    or "by N"); None when the text is not about the volume."""
    if _PLAY.match(t) and not _VOLUME_WORD.search(t):
        return None  # "play up all night" is a song
    louder, quieter = _LOUDER.search(t), _QUIETER.search(t)
    number = slots.find_number(t) if len(t) <= 40 else None
    number = int(number) if isinstance(number, int | float) and 0 <= number <= 1000 else None
    if number is not None and (_VOLUME_WORD.search(t) or louder or quieter):
        if (louder or quieter) and not _VOLUME_TO.search(t):
            return "volume_step", number if louder else -number
        return "volume", number
    if louder:
        return "volume_step", 10
    if quieter:
        return "volume_step", -10
    return None


def parse_command(text: str) -> tuple[str, Any]:
    """(kind, argument) for one instruction.

    kinds: home, play (query or ""), search (query), next, prev, pause, resume,
    volume (absolute number), volume_step (+/-), unknown (text).
    """
    t = slots.strip_filler(strip_routing(slots.strip_filler(text)))
    if not t:
        return "home", None
    parts = [p.strip() for p in _CLAUSES.split(t) if p.strip()]
    if len(parts) > 1:  # "先别放了，暂停一下": every part says the same control
        kinds = {parse_command(p)[0] for p in parts}
        if len(kinds) == 1 and kinds <= _CONTROLS:
            return kinds.pop(), None
    if _NEXT.match(t):
        return "next", None
    if _PREV.match(t):
        return "prev", None
    if _PAUSE.match(t):
        return "pause", None
    if _RESUME.match(t):
        return "resume", None
    if _MUTE.search(t) and len(t) <= 12:
        return "volume", 0
    volume = _volume(t)
    if volume is not None:
        return volume
    if _LIST.match(t):
        return "home", None
    m = _SEARCH.match(t)
    if m:
        return "search", clean_query(m.group("q"))
    m = _PLAY.match(t)
    if m:
        return "play", clean_query(m.group("q"))
    return "unknown", clean_query(t)
