"""What a draft says, read before Enter: pure rules on its text, and one read-only count.

Everything here looks at the words only (no router, no store), except
:func:`count_targets`, which counts what a delete would remove in an app's
workdir without opening a file: ``os.scandir`` and ``lstat``, symbolic links
never followed, at most :data:`SCAN_MAX` entries.

- :func:`deletion` finds a delete in a draft: its verb (删除, 删掉, 清空, delete,
  remove, wipe, rm …) not negated nor asked about ("怎么删除", "don't delete"), and
  what it names: file names, an extension ("所有 .log 文件", "all the log files"),
  a folder, everything. A code draft that deletes (``rm -rf``, ``shutil.rmtree``,
  ``DROP TABLE``) is a deletion too.
- :func:`missing_slot` finds a request that lacks the one thing it needs: a
  reminder without a time, a rename without the new name, a search without
  words, a volume without a level.
- :func:`sentence_end` is a natural break: the draft ends a sentence.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

SCAN_MAX = 20_000
"""Entries a count looks at before it stops (a count past it is a lower bound)."""

_NEG_ZH = (
    r"(?:不要|别|不用|不想|不能|不会|怎么|如何|怎样|能不能|可不可以|会不会|是否|为什么|撤销|恢复)"
)
_DELETE_ZH = r"(?:删除|删掉|删了|删光|全删|清空|清除|清理掉|移除|抹掉|格式化|卸载|丢掉|扔掉)"
_DELETE_EN = (
    r"\b(?:delete|remove|erase|wipe|purge|trash|destroy|uninstall|rm"
    r"|clear\s+out|get\s+rid\s+of|throw\s+away|empty)\b"
)
_NEG_EN = re.compile(
    r"\b(?:don'?t|do\s+not|never|not|how\s+(?:do|can|to|would)|can\s+i|undo|restore"
    r"|recover|why|should\s+i)\b[^.!?]*$",
    re.IGNORECASE,
)
_DELETE = re.compile(f"{_DELETE_ZH}|{_DELETE_EN}", re.IGNORECASE)
_BULK = re.compile(
    r"所有|全部|全都|一切|整个|统统|通通|都删|全删|删光|清空|"
    r"\b(?:all|every|everything|entire|whole|each)\b|\*|\brm\s+-\w*r",
    re.IGNORECASE,
)
_CODE_DELETE = re.compile(
    r"\brm\s+-\w*[rf]\w*\s+\S+|\bshutil\.rmtree\b|\bos\.(?:remove|unlink|rmdir|removedirs)\b"
    r"|\bdrop\s+(?:table|database)\b|\btruncate\s+table\b|\bdelete\s+from\s+\w+"
    r"|\bmkfs\b|\bformat\s+[a-z]:",
    re.IGNORECASE,
)
_FILE_NAME = re.compile(r"(?<![\w.])[\w\-\u4e00-\u9fff]+\.[A-Za-z0-9]{1,5}(?![\w.])")
_EXT = re.compile(
    r"(?:\*?\.(?P<a>[A-Za-z0-9]{1,5})\b|(?<![A-Za-z0-9.])(?P<b>[A-Za-z0-9]{2,5})\s*(?:文件|files?\b))",
    re.IGNORECASE,
)
_FOLDER = re.compile(
    r"(?:「(?P<a>[^」]+)」|(?P<b>[\w\-\u4e00-\u9fff]+?))\s*(?:这个|整个)?(?:文件夹|目录)"
    r"|\b(?:the\s+)?(?P<c>[\w\-]+)\s+(?:folder|directory)\b"
    r"|\b(?:folder|directory)\s+(?:called\s+|named\s+)?(?P<d>[\w\-]+)",
    re.IGNORECASE,
)
_FILES_WORD = re.compile(r"文件|\bfiles?\b|\*|\brm\b", re.IGNORECASE)
_NOTES_WORD = re.compile(r"笔记|备忘|\bnotes?\b|\bmemos?\b", re.IGNORECASE)
_NOT_EXT = frozenset({"all", "the", "my", "of", "old", "new", "these", "those", "some", "any"})
_NOT_FOLDER = frozenset(
    {"这个", "那个", "整个", "所有", "全部", "the", "a", "this", "that", "whole", "entire", "my"}
)


@dataclass(frozen=True)
class Deletion:
    """A delete a draft asks for, and what it names."""

    bulk: bool
    """It names many things at once (所有, all, ``*``, an extension, a folder, ``rm -r``)."""
    about: str
    """``files``, ``notes`` or ``things`` (nothing said about what)."""
    names: tuple[str, ...] = ()
    ext: str | None = None
    folder: str | None = None
    code: str | None = None
    """The deleting part of a code draft (``rm -rf build``), when it is one."""


@dataclass
class Count:
    """What a delete would remove in a workdir: ``files`` counted, under ``folder`` if named."""

    files: int
    folder: str | None = None
    capped: bool = False
    seen: list[str] = field(default_factory=list)


def deletion(text: str) -> Deletion | None:
    """The delete ``text`` asks for, or None (no delete verb, negated, or a question)."""
    s = (text or "").strip()
    code = _CODE_DELETE.search(s)
    if code:
        return Deletion(bulk=True, about="files", code=code.group(0).strip())
    m = _DELETE.search(s)
    if m is None:
        return None
    before = s[max(0, m.start() - 8) : m.start()]
    if re.search(_NEG_ZH, before) or _NEG_EN.search(s[: m.start()]) or _asks_how(s):
        return None
    rest = s[m.end() :] if m.end() < len(s) else ""
    scope = s[: m.start()] + " " + rest
    names = tuple(dict.fromkeys(_FILE_NAME.findall(scope)))
    ext = _extension(scope, names)
    folder = _folder(scope)
    about = (
        "files"
        if names or ext or folder or _FILES_WORD.search(s)
        else "notes"
        if _NOTES_WORD.search(s)
        else "things"
    )
    bulk = bool(_BULK.search(s)) or ext is not None or folder is not None or len(names) > 1
    return Deletion(bulk=bulk, about=about, names=names, ext=ext, folder=folder)


def _asks_how(s: str) -> bool:
    """ "删除的文件能找回吗？", "what does delete do?": a question about deleting."""
    return bool(
        re.search(r"(?:吗|呢|么)\s*[?？]?\s*$", s)
        or re.match(r"\s*(?:what|how|why|when|where|which|is|are|does|do|can)\b", s, re.I)
    )


def _extension(scope: str, names: tuple[str, ...]) -> str | None:
    for m in _EXT.finditer(scope):
        ext = (m.group("a") or m.group("b") or "").lower()
        if not ext or ext in _NOT_EXT or any(n.lower().endswith("." + ext) for n in names):
            continue
        return ext
    return None


def _folder(scope: str) -> str | None:
    m = _FOLDER.search(scope)
    if not m:
        return None
    name = next((g for g in m.groups() if g), "").strip()
    name = re.sub(r"^(?:把|将|删除|删掉)", "", name)
    return name if name and name.lower() not in _NOT_FOLDER else None


def count_targets(workdir: Path, what: Deletion) -> Count | None:
    """How many files ``what`` would remove under ``workdir`` (read-only); None when the
    draft names nothing countable there (then no number is said)."""
    if what.about != "files" or what.code is not None:
        return None
    root = workdir
    folder = None
    if what.folder:
        candidate = _inside(workdir, what.folder)
        if candidate is None or not candidate.is_dir() or candidate.is_symlink():
            return None
        root, folder = candidate, what.folder
    elif what.names:
        found = [n for n in what.names if (p := _inside(workdir, n)) is not None and p.is_file()]
        return Count(files=len(found), seen=found) if found else None
    elif not what.bulk:
        return None
    suffix = f".{what.ext}" if what.ext else None
    files, capped = _walk(root, suffix)
    return Count(files=files, folder=folder, capped=capped)


def _inside(workdir: Path, rel: str) -> Path | None:
    """``workdir / rel`` when it stays inside ``workdir`` (no ``..``, no absolute path)."""
    if not rel or rel.startswith(("/", "\\")) or ".." in Path(rel).parts:
        return None
    return workdir / rel


def _walk(root: Path, suffix: str | None) -> tuple[int, bool]:
    """Files under ``root`` (ending in ``suffix`` when given), links not followed; whether
    the count stopped at :data:`SCAN_MAX`."""
    count, seen = 0, 0
    stack = [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    seen += 1
                    if seen > SCAN_MAX:
                        return count, True
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif suffix is None or entry.name.lower().endswith(suffix):
                        count += 1
        except OSError:
            continue  # unreadable or gone: counted as nothing
    return count, False


# ------------------------------------------------------------------ missing slots

_TIME = re.compile(
    r"\d|[一二三四五六七八九十两半]+\s*(?:点|分|小时|天|周)|点|明天|今天|后天|今晚|明早|早上|上午|中午|下午|晚上|"
    r"周[一二三四五六日天末]|星期|礼拜|下周|下个?月|每天|每周|待会|等会|马上|稍后|"
    r"\b(?:tomorrow|today|tonight|morning|noon|afternoon|evening|night|monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday|weekend|week|month|o'?clock|am|pm"
    r"|in\s+(?:a|an|\d+|one|two|five|ten)\s+\w+|later|soon|at\s+\w+|every|daily)\b",
    re.IGNORECASE,
)
_SLOTS: list[tuple[str, re.Pattern[str], re.Pattern[str] | None]] = [
    # (key, the request, what fills it: None = anything after the request)
    ("slot_time", re.compile(r"提醒我|\bremind\s+me\b|\bset\s+a\s+reminder\b", re.I), _TIME),
    (
        "slot_new_name",
        re.compile(
            r"(?:重命名|改名)\s*(?:[\w\-\u4e00-\u9fff]+\.\w+)?\s*$|\brename\s+\S+\s*$", re.I
        ),
        None,
    ),
    (
        "slot_file_name",
        re.compile(
            r"(?:新建|创建|建)(?:一个)?文件\s*$|\b(?:new|create\s+a(?:\s+new)?)\s+file\s*$", re.I
        ),
        None,
    ),
    (
        "slot_level",
        re.compile(r"音量调到\s*$|音量(?:设|调)(?:为|成)\s*$|\bset\s+the\s+volume\s+to\s*$", re.I),
        None,
    ),
    (
        "slot_query",
        re.compile(r"搜索(?:笔记|歌曲)?\s*$|\bsearch(?:\s+(?:notes|songs|for))?\s*$", re.I),
        None,
    ),
    (
        "slot_target",
        re.compile(r"^(?:帮我)?(?:删除|删掉)\s*$|^(?:please\s+)?delete\s*$", re.I),
        None,
    ),
    ("slot_code", re.compile(r"运行代码\s*$|\brun\s+(?:the\s+)?code\s*$", re.I), None),
    ("slot_note", re.compile(r"^(?:帮我)?记一下\s*$|^(?:make\s+a\s+)?note\s*:?\s*$", re.I), None),
]


def missing_slot(text: str) -> str | None:
    """The :mod:`aios.duplex.texts` key of the question a request lacking its one needed
    word asks ("提醒我开会" → "slot_time"), or None."""
    s = (text or "").strip().rstrip("，,。.、")
    for key, request, filler in _SLOTS:
        m = request.search(s)
        if m is None:
            continue
        if filler is None:
            return key
        if not filler.search(s[: m.start()] + " " + s[m.end() :]):
            return key
    return None


_SENTENCE_END = re.compile(r"[。！？!?]\s*$|(?<![.\d])\.\s*$")


def sentence_end(text: str) -> bool:
    """Whether the draft ends a sentence (a natural break to speak in)."""
    return bool(_SENTENCE_END.search(text or ""))
