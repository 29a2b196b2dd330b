"""Pure helpers of the notes app: tags, instruction parsing, input checks. No I/O.

Tags are free text: a note has up to :data:`MAX_TAGS` of them, typed comma separated
(or as ``#hashtags`` in an instruction). The suggested ones (:data:`TAGS`) are stored by
key, so that they read in the UI language; any other tag is kept as the user typed it.
The ``tag`` column holds them joined by commas.
"""

from __future__ import annotations

import re
from typing import Any

from aios_sdk import Lang, slots, tr

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
    r"^(?:请|帮我)?(?P<verb>"
    r"(?:帮我)?(?:添加|新建|新增|写|记|建|创建)(?:一)?(?:条|个|份)?(?:新)?(?:笔记|备忘|记录)(?:一下)?|"
    r"记一下|记下来|记下|记住|记个事|记件事|记得|记录一下|记录|记个|新笔记|写下来|写下|备忘一下|备忘|"
    r"提醒我一下|提醒一下|提醒我|提醒|添加|记(?![一下住得录个])|"
    r"(?:add|save|put)\s+(?:this\s+|it\s+)?(?:to|in|into)\s+(?:my\s+|the\s+)?notes?|to-?do|"
    r"(?:add|make|take|create|write|save|jot)\s+(?:a\s+|an\s+|one\s+)?(?:new\s+|quick\s+)?note"
    r"(?:\s+(?:that|saying|to\s+self|to|about))?|"
    r"new\s+note|note\s+down|note\s+that|jot\s+(?:this\s+|it\s+)?down|jot|"
    r"write\s+(?:this\s+|it\s+)?down|write\s+that|"
    r"remind\s+me\s+(?:to|that|about)|remind\s+me|"
    r"remember\s+that|remember\s+to|remember|don'?t\s+(?:let\s+me\s+)?forget\s+(?:to|that)?|"
    r"add|note)"
    r"(?![a-z])[\s:：,，]*(?P<text>[\s\S]+)$",
    re.IGNORECASE,
)
_ADD_TAIL = re.compile(
    r"[\s,，]*(?:to|in|into)\s+(?:my\s+|the\s+)?(?:notes?|notebook)\s*$"
    r"|[\s,，]*(?:到|进)?(?:笔记|记事本|备忘录)(?:里|中)?\s*$",
    re.IGNORECASE,
)
_TAG_WORDS = re.compile(
    r"[\s,，。.;；]*(?:(?:with\s+(?:the\s+)?|and\s+)?tag(?:ged)?(?:\s+(?:it\s+)?(?:as|with))?"
    r"|(?:打上|加上?|用)?标签(?:是|为|：|:)?)"
    r"[\s:：]*[#＃]?(?P<tag>[^\s#＃,，。.]+)[\s。.]*$",
    re.IGNORECASE,
)
_SEARCH = re.compile(
    r"^(?:搜索一下|搜索|搜一下|搜搜|查找|查一下|查查|找一下|找找|搜|找|查|"
    r"search(?:\s+(?:my\s+|the\s+)?notes?)?(?:\s+for)?|find(?:\s+(?:my\s+|the\s+)?notes?)?|"
    r"look\s+for|look\s+up|about|regarding|关于|有关|"
    r"what\s+(?:notes|did\s+i\s+(?:write|note))\s+(?:do\s+i\s+have\s+)?(?:about|on)|(?:show|list)\s+(?:me\s+)?(?:my\s+|the\s+|all\s+)?notes?)"
    r"(?![a-z])[\s:：]*(?P<text>.+)$",
    re.IGNORECASE,
)
_SEARCH_ZH = re.compile(r"^有没有(?:关于)?(?P<text>.+?)的?(?:笔记|记录)$")
_SEARCH_NOISE = re.compile(
    r"^(?:(?:about|with|containing|mentioning|on|for|that\s+mention|related\s+to)\s+)+"
    r"|\s+(?:in\s+)?(?:my\s+|the\s+)?notes?$|^(?:关于|有关|包含|里的)|的?(?:笔记|记录)$",
    re.IGNORECASE,
)
_LIST = re.compile(
    r"^(?:列出|显示|查看|看看|看一下|打开|给我看|list|show(?:\s+me)?|view|see|open|what\s+are)?\s*"
    r"(?:全部|所有|all(?:\s+of)?|my|我的|the)?\s*(?:我的|my)?\s*(?:的)?\s*"
    r"(?:笔记|记事|notes?|备忘录)?(?:列表|list)?$",
    re.IGNORECASE,
)
_DONE = re.compile(
    r"^(?:mark|set|flag|tick|check)\s+(?P<a>.+?)\s+(?:as\s+)?(?P<v>done|complete|completed|finished|"
    r"not\s+done|undone|incomplete|unfinished|open|to\s*do)$"
    r"|^(?:tick|check|cross)\s+off\s+(?P<b>.+)$"
    r"|^(?:complete|finish(?:ed)?|i\s+(?:have\s+)?(?:finished|did|completed|done))\s+(?P<c>.+)$"
    r"|^(?:done\s+with|finished\s+with)\s+(?P<d>.+)$"
    r"|^(?P<e>.+?)\s*(?:is\s+|are\s+)?(?:done|finished|completed)$"
    r"|^(?:把|将)?(?P<f>.+?)(?:标记|标|设|设置|改)(?:为|成)?(?P<w>已?完成|未完成|没完成|待办)$"
    r"|^(?:标记|标)(?:为|成)?(?P<x>已?完成|未完成)[\s:：]*(?P<g>.+)$"
    r"|^(?:完成了?|做完了?)[\s:：]*(?P<h>.+)$"
    r"|^(?P<i>.+?)(?:已经|已)?(?:完成了|完成|做完了|做完|搞定了|搞定|办完了|办完)$",
    re.IGNORECASE,
)
_DELETE = re.compile(
    r"^(?:delete|remove|erase|drop|get\s+rid\s+of|trash|throw\s+away)\s+(?P<a>.+)$"
    r"|^(?:把|将)(?P<b>.+?)(?:删掉|删除|删了|去掉|移除)(?:吧|了)?$"
    r"|^(?:删掉|删除|删了|去掉|移除|删(?![除掉了]))(?P<c>.+)$",
    re.IGNORECASE,
)
_TARGET_NOISE = re.compile(
    r"^(?:the|my|a|one|that|this)\s+|^(?:notes?|to-?do)\s+(?:about|on|for|called|titled|named|"
    r"saying|that\s+says|with|mentioning|containing)\s+|^(?:about|on|called|titled|named|saying)\s+"
    r"|\s+(?:notes?|to-?do|entry|item|one)$|^(?:notes?)[\s:：]+|\s+(?:from|in)\s+(?:my\s+)?notes$"
    r"|^(?:关于|有关|叫做?|名为|标题是|内容是)|^(?:笔记|那条|这条|一条)[\s:：]*"
    r"|(?:的|那|这)?(?:一)?(?:条|个)?(?:笔记|记录|备忘|待办)$|(?:那|这)(?:一)?条$|的$",
    re.IGNORECASE,
)
_CHECK_IT = re.compile(
    r"\s*[,，;；]\s*(?:(?:please|so|now)\s+)?(?:check|tick|cross|mark)\s+(?:it|that|this)"
    r"(?:\s+(?:off|as\s+done|done|complete))?[.!]?$"
    r"|\s*[,，;；]\s*(?:请|帮我)?(?:把它|把这条|把那条|把它们)?(?:勾掉|划掉|勾上|标记完成|标成完成|标为完成)"
    r"(?:吧|了)?[。！]?$",
    re.IGNORECASE,
)
"""A closing "…, check it off" / "…，把它勾掉": what comes before is the note that is done."""
_UNDONE_WORDS = re.compile(
    r"not\s+done|undone|incomplete|unfinished|open|to\s*do|未完成|没完成|待办"
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


def _target(text: str) -> str:
    """The words that name a note: "the dentist note" → "dentist", "关于牛奶的笔记" → "牛奶"."""
    rest = text.strip().strip("\"'“”「」『』《》")
    prev = None
    while prev != rest:
        prev = rest
        rest = _TARGET_NOISE.sub("", rest).strip().strip("\"'“”「」『』《》 ")
    return rest


def _tagged(text: str) -> str:
    """A note's text with a spoken tag ("… tag work", "… 标签 工作") as a ``#hashtag``."""
    text = _ADD_TAIL.sub("", text).strip()
    m = _TAG_WORDS.search(text)
    if m and m.start() > 0:
        text = f"{text[: m.start()].strip()} #{m.group('tag')}"
    return _ADD_TAIL.sub("", text).strip() or text


def _done_target(m: re.Match[str]) -> str:
    """The words naming the note in a :data:`_DONE` match (its flags aside)."""
    return next(v for k, v in m.groupdict().items() if v and k not in ("v", "w", "x"))


def parse_instruction(text: str | None) -> tuple[str, str]:
    """``(intent, text)``: intent is list, add, search, done, undone, delete, vague or unknown.

    add: the note's text (a spoken tag turned into a ``#hashtag``); search: the words
    looked for; done/undone/delete: the words naming the note (see :func:`_target`);
    vague: done, undone or delete said of no particular note ("delete all notes").
    """
    rest = slots.strip_filler(text)
    rest = _APP_WORDS.sub("", rest, count=1).strip()
    rest = slots.strip_filler(rest)
    if not rest or _LIST.match(rest):
        return "list", ""
    m = _ADD.match(rest)
    if m and m.group("verb").lower() not in _WEAK_ADD:
        # "提醒我把作业做完" is a new note, not marking one done
        return "add", _tagged(m.group("text").strip())
    checked = _CHECK_IT.search(rest)
    if checked and checked.start() > 0:
        said = rest[: checked.start()].strip()
        m = _DONE.match(said)
        target = _target(_done_target(m) if m else said)
        if target and target.lower() not in _VAGUE:
            return "done", target
    m = _DONE.match(rest)
    if m:
        which = _done_target(m)
        flag = m.group("v") or m.group("w") or m.group("x") or ""
        target = _target(which)
        if target:
            intent = "undone" if _UNDONE_WORDS.fullmatch(flag.lower()) else "done"
            return ("vague", intent) if target.lower() in _VAGUE else (intent, target)
    m = _DELETE.match(rest)
    if m:
        target = _target(next(v for v in m.groupdict().values() if v))
        if target:
            return ("vague", "delete") if target.lower() in _VAGUE else ("delete", target)
    m = _SEARCH_ZH.match(rest) or _SEARCH.match(rest)
    if m:
        words = m.group("text").strip()
        prev = None
        while prev != words:
            prev = words
            words = _SEARCH_NOISE.sub("", words).strip().strip("\"'“”「」 ?？")
        if words:
            return "search", words
    m = _ADD.match(rest)
    if m:
        return "add", _tagged(m.group("text").strip())
    return "unknown", rest


def note_words(target: str) -> list[str]:
    """The words of a target to match one by one when the whole phrase matches no note."""
    words = [w for w in re.split(r"[\s,，、]+", target) if w]
    return [w for w in words if w.lower() not in _STOP and (len(w) >= 2 or not w.isascii())]


_VAGUE = frozenset(
    {"all", "everything", "all of them", "them", "it", "this", "that", "these", "those"}
    | {"所有", "全部", "全部的", "所有的", "它", "它们", "这个", "那个", "这些", "那些"}
)
"""Words that name no particular note: "delete all notes", "mark it as done"."""
_WEAK_ADD = frozenset({"记", "note", "add", "添加"})
"""Add words that may also start a request of another kind ("note: dentist done")."""
_STOP = frozenset(
    "the a an my to of for and or in on at with about note notes that this is it".split()
)


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
