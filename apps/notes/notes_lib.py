"""Pure helpers of the notes app: tags, instruction parsing, input checks. No I/O."""

from __future__ import annotations

import re
from typing import Any

from aios_sdk import Lang, tr

TAGS: dict[str, tuple[str, str]] = {
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
    r"添加|记|add\s+(?:a\s+)?note|new\s+note|note\s+down|take\s+a\s+note|remember|add|note)"
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
_HASHTAG = re.compile(r"[#＃](\w+)")


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


def split_hashtag(text: str) -> tuple[str, str | None]:
    """Text without a known ``#tag``, and that tag."""
    for m in _HASHTAG.finditer(text):
        tag = tag_from_word(m.group(1))
        if tag:
            rest = text[: m.start()] + " " + text[m.end() :]
            return re.sub(r"\s+", " ", rest).strip(), tag
    return text.strip(), None


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


def check_tag(value: Any) -> str | None:
    """A tag key from a form or select; None for "no tag chosen"; BadInput otherwise."""
    if value in (None, ""):
        return None
    tag = tag_from_word(value) if isinstance(value, str) else None
    if tag is None:
        raise BadInput(
            f"标签 {value!r} 不存在（可选：{', '.join(TAGS)}）",
            f"unknown tag {value!r} (tags: {', '.join(TAGS)})",
        )
    return tag


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
