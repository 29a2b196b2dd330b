"""Pure helpers of the notes app: tags, instruction parsing, input checks. No I/O.

Tags are free text: a note has up to :data:`MAX_TAGS` of them, typed comma separated
(or as ``#hashtags`` in an instruction). The suggested ones (:data:`TAGS`) are stored by
key, so that they read in the UI language; any other tag is kept as the user typed it.
The ``tag`` column holds them joined by commas.
"""

from __future__ import annotations

import re
from typing import Any

from aios_sdk import Lang, tr

TAGS: dict[str, tuple[str, str]] = {
    # the suggestions: key -> (zh, en)
    "work": ("工作", "Work"),
    "life": ("生活", "Life"),
    "shopping": ("购物", "Shopping"),
    "study": ("学习", "Study"),
    "other": ("其他", "Other"),
}
DEFAULT_TAG = "other"
TAG_HINTS: dict[str, tuple[str, ...]] = {
    "shopping": (
        "买",
        "购物",
        "超市",
        "牛奶",
        "面包",
        "鸡蛋",
        "buy",
        "shop",
        "grocer",
        "milk",
        "bread",
        "eggs",
    ),
    "work": (
        "会议",
        "开会",
        "工作",
        "报告",
        "项目",
        "客户",
        "邮件",
        "周报",
        "meeting",
        "work",
        "report",
        "project",
        "client",
        "email",
        "deadline",
    ),
    "study": (
        "学习",
        "复习",
        "考试",
        "作业",
        "读书",
        "上课",
        "study",
        "learn",
        "exam",
        "homework",
        "course",
        "read",
    ),
    "life": (
        "生日",
        "医院",
        "电话",
        "家",
        "运动",
        "跑步",
        "健身",
        "birthday",
        "doctor",
        "call",
        "gym",
        "run",
        "family",
    ),
}
MAX_TAGS = 5
"""Tags one note may carry."""
MAX_TAG_CHARS = 30
TAG_SEPARATORS = re.compile(r"[,，、;；]")
MAX_TITLE = 200
MAX_BODY = 10_000
MAX_QUERY = 200

_APP_WORDS = re.compile(
    r"^\s*(?:请|帮我)?(?:打开|启动|进入|open|launch|start|show)?\s*(?:我的|my|the)?\s*"
    r"(?:记事本|笔记本|notes|notebook)(?:app|应用)?(?![a-z])[\s,，:：]*",
    re.IGNORECASE,
)
_ADD = re.compile(
    r"^(?:请|帮我)?(?:记一下|记下来|记下|记住|记得|记录一下|记录|记个|添加笔记|新建笔记|新笔记|写下|备忘|"
    r"提醒我一下|提醒一下|提醒我|提醒|"
    r"添加|记|add\s+(?:a\s+)?note|new\s+note|note\s+down|take\s+a\s+note|"
    r"remind\s+me\s+(?:to|that|about)|remind\s+me|remember\s+to|remember|add|note)"
    r"(?![a-z])[\s:：,，]*(?P<text>[\s\S]+)$",
    re.IGNORECASE,
)
_SEARCH = re.compile(
    r"^(?:搜索|搜一下|查找|查一下|找一下|搜|找|search(?:\s+notes?)?(?:\s+for)?|find)"
    r"(?![a-z])[\s:：]*(?P<text>.+)$",
    re.IGNORECASE,
)
_LIST = re.compile(
    r"^(?:列出|显示|查看|看看|list|show|view)?\s*(?:全部|所有|all|my)?\s*(?:的)?\s*"
    r"(?:笔记|notes?)?$",
    re.IGNORECASE,
)
_HASHTAG = re.compile(r"[#＃]([^\s#＃,，]+)")


def tag_label(tag: str, lang: Lang) -> str:
    zh, eng = TAGS.get(tag, (tag, tag))
    return tr(lang, zh, eng)


def tag_from_word(word: str) -> str | None:
    """``"购物"``, ``"shopping"``, ``"Shopping"`` → ``"shopping"``; unknown → None."""
    w = word.strip().lower()
    for key, (zh, en) in TAGS.items():
        if w in (key, zh, en.lower()):
            return key
    return None


def guess_tag(text: str) -> str:
    """The tag whose hint words the text mentions (offline; the LLM may do better)."""
    lowered = text.lower()
    for tag, words in TAG_HINTS.items():
        if any(w in lowered for w in words):
            return tag
    return DEFAULT_TAG


def split_hashtags(text: str) -> tuple[str, list[str]]:
    """Text without its ``#tags``, and those tags (checked as :func:`check_tags` does)."""
    words = [m.group(1) for m in _HASHTAG.finditer(text)]
    rest = re.sub(r"\s+", " ", _HASHTAG.sub(" ", text)).strip()
    return (rest or text.strip()), check_tags(",".join(words))


def tags_of(column: str) -> list[str]:
    """The tags stored in a note's ``tag`` column."""
    return [t for t in column.split(",") if t]


def label_of_tags(column: str, lang: Lang) -> str:
    return " ".join(f"#{tag_label(t, lang)}" for t in tags_of(column))


def parse_instruction(text: str | None) -> tuple[str, str]:
    """``(intent, text)``: intent is list, add, search or unknown."""
    rest = _APP_WORDS.sub("", (text or "").strip(), count=1).strip()
    if not rest or _LIST.match(rest):
        return "list", ""
    m = _SEARCH.match(rest)
    if m:
        return "search", m.group("text").strip()
    m = _ADD.match(rest)
    if m:
        return "add", m.group("text").strip()
    return "unknown", rest


class BadInput(ValueError):
    def __init__(self, zh: str, en: str):
        super().__init__(zh)
        self.zh, self.en = zh, en


def check_text(value: Any, field: str, zh: str, limit: int, *, required: bool) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise BadInput(
            f"{zh}必须是文字（收到 {type(value).__name__}）",
            f"{field} must be text (got {type(value).__name__})",
        )
    value = value.strip()
    if required and not value:
        raise BadInput(f"{zh}不能为空", f"{field} is required")
    if len(value) > limit:
        raise BadInput(
            f"{zh}太长（{len(value)} 字，最多 {limit}）",
            f"{field} is too long ({len(value)} characters, at most {limit})",
        )
    return value


def check_tags(value: Any) -> list[str]:
    """Tags typed comma separated (a suggestion by its key, label or English name); the
    empty list for none; BadInput naming the first problem."""
    if value is None:
        return []
    if not isinstance(value, str):
        raise BadInput(
            f"标签必须是文字（收到 {type(value).__name__}）",
            f"tags must be text (got {type(value).__name__})",
        )
    out: list[str] = []
    for raw in TAG_SEPARATORS.split(value):
        word = raw.strip().lstrip("#＃").strip()
        if not word:
            continue
        if len(word) > MAX_TAG_CHARS:
            raise BadInput(
                f"标签「{word[:40]}」太长（最多 {MAX_TAG_CHARS} 字）",
                f"the tag {word[:40]!r} is too long (at most {MAX_TAG_CHARS} characters)",
            )
        tag = tag_from_word(word) or word
        if tag.lower() not in (t.lower() for t in out):
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise BadInput(
            f"标签太多（{len(out)} 个，最多 {MAX_TAGS} 个）",
            f"too many tags ({len(out)}, at most {MAX_TAGS})",
        )
    return out


def check_filter(value: Any) -> str:
    """One tag to filter by ("all" or empty: none); BadInput when it is not one tag."""
    if value in (None, "", "all"):
        return ""
    tags = check_tags(value)
    if len(tags) != 1:
        raise BadInput(f"请选择一个标签（收到 {value!r}）", f"choose one tag (got {value!r})")
    return tags[0]


def tag_pattern(tag: str) -> str:
    """A LIKE pattern matching ``tag`` as one entry of the comma-joined column."""
    return f"%,{like_pattern(tag)[1:-1]},%"


def check_id(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInput(
            f"笔记编号必须是正整数（收到 {value!r}）",
            f"the note id must be a positive integer (got {value!r})",
        )
    return value


def like_pattern(query: str) -> str:
    """A LIKE pattern matching ``query`` literally (with ESCAPE '\\')."""
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
