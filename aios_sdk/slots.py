"""Slot extraction: the pieces of a plain request an app needs, in Chinese and English.

Pure functions, no I/O, no model. Each ``find_*`` returns the slot or ``None`` when the
text does not hold one — never a guess such as the ``a`` of "create a file"::

    find_file_name("create a new file called todo.txt")      -> "todo.txt"
    find_content("写一个文件 hello.txt 内容是你好")            -> "你好"
    find_folder("list the files in your workspace")          -> ""   (the root)
    find_number("play the 3rd song") -> 3;  find_time("下午3点半") -> time(15, 30)

They are the offline floor of an app's understanding: an app with a model may ask it
to fill the same slots, and falls back to these when it cannot.
"""

from __future__ import annotations

import re
from datetime import time, timedelta

# ------------------------------------------------------------ filler

_LEAD_EN = (
    r"(?:please|pls|plz|kindly|hey|hi|ok(?:ay)?|so|now|then|just|and|also|"
    r"(?:could|can|would|will)\s+you(?:\s+please)?|"
    r"i(?:'d| would)\s+like\s+(?:you\s+)?to|i\s+(?:want|need)\s+(?:you\s+)?to|"
    r"help\s+me(?:\s+to)?|let'?s|go\s+ahead\s+and)"
)
_LEAD_ZH = (
    r"(?:请你?|麻烦你?|劳驾|帮忙|帮我们|帮我|替我|给我|你能不能|你能|你可以|能不能|能否|可以|"
    r"我想要?|我要|我需要|我希望|那么|然后|现在|好的|好|嗯|那)"
)
_TRAIL = (
    r"(?:(?<![a-z])(?:please|pls|for\s+me|thanks|thank\s+you|thx|ok)"
    r"|好吗|好不好|可以吗|行吗|吧|吗|呢|啊|呀|谢谢你?|多谢|[\s,，.。!！?？~～;；])"
)
_LEAD_RE = re.compile(rf"^\s*(?:{_LEAD_EN}(?![a-z])|{_LEAD_ZH})[\s,，:：]*", re.IGNORECASE)
_TRAIL_RE = re.compile(rf"{_TRAIL}\s*$", re.IGNORECASE)


def strip_filler(text: str | None) -> str:
    """``text`` without the politeness and filler around the request: "please could you
    list my files?" → "list my files", "请帮我看看工作区吧" → "看看工作区"."""
    rest = (text or "").strip()
    while True:
        shorter = _TRAIL_RE.sub("", _LEAD_RE.sub("", rest, count=1), count=1).strip()
        if shorter == rest:
            return rest
        rest = shorter


# ------------------------------------------------------------ quoted and named things

_QUOTE_PAIRS = (
    ("「", "」"),
    ("『", "』"),
    ("“", "”"),
    ("‘", "’"),
    ("《", "》"),
    ('"', '"'),
    ("`", "`"),
)
_QUOTED = re.compile(
    "|".join(f"{re.escape(a)}([^{re.escape(b)}\\n]+?){re.escape(b)}" for a, b in _QUOTE_PAIRS)
    # a single quote quotes only when it is not an apostrophe ("what's in Bob's file")
    + r"|(?<![\w])'([^'\n]+?)'(?!\w)"
)
_NOT_A_NAME = {
    "a",
    "an",
    "the",
    "it",
    "this",
    "that",
    "file",
    "folder",
    "one",
    "new",
    "my",
    "一个",
    "这个",
    "那个",
    "文件",
    "文件夹",
    "它",
}


def _quoted_match(text: str) -> re.Match[str] | None:
    return next((m for m in _QUOTED.finditer(text) if (_group(m) or "").strip()), None)


def _group(m: re.Match[str]) -> str | None:
    return next((g for g in m.groups() if g is not None), None)


def find_quoted(text: str | None) -> str | None:
    """The first thing in quotes: 「X」, 『X』, “X”, "X", 'X', 《X》 or `X`."""
    m = _quoted_match(text or "")
    return (_group(m) or "").strip() if m else None


def find_quoted_all(text: str | None) -> list[str]:
    """Every quoted thing, in order: 'rename "a b.txt" to "c d.txt"' → ["a b.txt", "c d.txt"]."""
    found = ((_group(m) or "").strip() for m in _QUOTED.finditer(text or ""))
    return [q for q in found if q]


_NAME_MARK = re.compile(
    r"(?:\b(?:called|named|titled|entitled|name\s+it|with\s+(?:the\s+)?name)\b\s*[:：]?\s*"
    r"|(?:叫做|叫作|名叫|名为|名字叫|名字是|名称是|名称为|命名为|取名为?|标题是|标题为|叫)\s*[:：]?\s*)",
    re.IGNORECASE,
)
_NAME_STOP = r"\s,，。;；、!！?？()（）"
_NAME_TOKEN = re.compile(rf"[^{_NAME_STOP}]+")
_CJK_NAME_END = re.compile(
    r"(?:的文件夹|的文件|的笔记|文件夹|文件|内容|里面|里|写着|写上|并且|并|然后|的).*$"
)


def _clean_token(token: str) -> str | None:
    token = token.strip().rstrip(".:：")
    if re.search(r"[\u4e00-\u9fff]", token):
        token = _CJK_NAME_END.sub("", token)
    return token if token and token.lower() not in _NOT_A_NAME else None


def find_name(text: str | None) -> str | None:
    """A thing the user named: "called X", "named X", "叫X", "名为X" (quoted or one word),
    else the first quoted thing. "create a file" has no name: ``None``."""
    text = text or ""
    for m in _NAME_MARK.finditer(text):
        after = text[m.end() :]
        q = _quoted_match(after)
        if q and q.start() == 0:
            return (_group(q) or "").strip()
        t = _NAME_TOKEN.match(after)
        name = _clean_token(t.group(0)) if t else None
        if name:
            return name
    return find_quoted(text)


# ------------------------------------------------------------ file names and folders

_FILE_TOKEN = re.compile(
    # a name starts after a non-name character, or at a Chinese one glued to Latin text
    r"(?:(?<![A-Za-z0-9_./\\-])|(?=[\u4e00-\u9fff]))"
    r"((?:[\w\-]+/)*[\w\-]+(?:\.[A-Za-z0-9_\-]+)*\.[A-Za-z][A-Za-z0-9]{0,7})(?![A-Za-z0-9_(])"
)
_SPACED_FILE = re.compile(
    r"((?:[A-Za-z0-9_\-]+ ){1,3}[A-Za-z0-9_\-]+\.[A-Za-z][A-Za-z0-9]{0,7})(?![A-Za-z0-9_(])"
)
_LEAD_CJK = re.compile(
    r"^.*(?:文件夹|文件|叫做|叫|名为|一个|个|把|将|的|在|删除|删掉|打开|预览|查看|看看|读取|读|"
    r"编辑|修改|新建|创建|写入|写|重命名|改名|改为|改成|移除|显示|列出|一下|浏览|进入)"
)
_CONNECTORS = {"成", "为", "到", "叫", "是"}


def _trim_lead(token: str) -> str:
    """A name glued to the Chinese words before it: "写一个文件笔记.txt" → "笔记.txt"."""
    head = re.match(r"^[\u4e00-\u9fff]+", token)
    if not head:
        return token
    tail = token[head.end() :]
    trimmed = _LEAD_CJK.sub("", head.group(0))
    if trimmed in _CONNECTORS and re.match(r"[A-Za-z0-9_]", tail):
        trimmed = ""  # "重命名成b.txt" → "b.txt" (but "成绩.txt" stays whole)
    if not trimmed and not re.match(r"[A-Za-z0-9_]", tail):
        return token  # "文件.txt" is a name, not ".txt"
    return trimmed + tail


_QUOTED_FILE = re.compile(r"[^\n]*[^\s./]\.[A-Za-z][A-Za-z0-9]{0,7}")
"""A quoted file name may hold spaces: 'shopping list.txt', 「购物 清单.txt」."""


def file_tokens(text: str | None) -> list[tuple[int, int, str]]:
    """Every ``name.ext`` (or ``folder/name.ext``) written in ``text``, with its span."""
    out = []
    for m in _FILE_TOKEN.finditer(text or ""):
        token = _trim_lead(m.group(1))
        out.append((m.end(1) - len(token), m.end(1), token))
    return out


def find_file_name(text: str | None) -> str | None:
    """The file the user means: a named thing ("called todo.txt", "叫 hello.txt"), a
    ``name.ext`` in free text, or a quoted name — the file's content is never taken
    for its name ("hello.txt 内容是「hi」" → "hello.txt")."""
    text = text or ""
    content = _content_match(text)
    head = text[: content.start()] if content else text
    marked = _NAME_MARK.search(head)
    spaced = _SPACED_FILE.match(head, marked.end()) if marked else None
    if spaced:
        return spaced.group(1)  # "called shopping list.txt"
    named = find_name(head)
    if named and (
        _FILE_TOKEN.fullmatch(named) or _QUOTED_FILE.fullmatch(named) or not file_tokens(head)
    ):
        return named
    tokens = file_tokens(head)
    if tokens:
        return tokens[0][2]
    return named


_ROOT_WORDS = re.compile(
    r"(?:\b(?:(?:the|my|your|our)\s+)?(?:work\s*space|home\s+folder|root\s+folder|root)\b"
    r"|工作区|工作目录|工作空间|根目录|主目录)",
    re.IGNORECASE,
)
_FOLDER_WORD_EN = r"(?:folder|directory|dir)"
_FOLDER_TOKEN = r"([\w\-./]+)"
_FOLDER_MARKS = (
    re.compile(
        rf"\b(?:in|inside|into|under|within|from|of|open|to)\s+(?:the\s+|my\s+|your\s+)?"
        rf"{_FOLDER_WORD_EN}\s+(?:called\s+|named\s+)?{_FOLDER_TOKEN}",
        re.IGNORECASE,
    ),
    re.compile(
        rf"\b(?:in|inside|into|under|within|from|of|open|to|the)\s+(?:the\s+|my\s+|your\s+)?"
        rf"{_FOLDER_TOKEN}\s+{_FOLDER_WORD_EN}\b",
        re.IGNORECASE,
    ),
    re.compile(rf"\b{_FOLDER_WORD_EN}\s+(?:called\s+|named\s+)?{_FOLDER_TOKEN}", re.IGNORECASE),
    re.compile(r"(?:文件夹|目录)\s*(?:叫做?|名为)?\s*([\w\-./]+?)(?:里|中|下|内|$|\s|的)"),
    re.compile(r"([\w\-./]+?)\s*(?:文件夹|目录)"),
    re.compile(r"在\s*([\w\-./]+?)\s*(?:里面|里|中|下面|下|内)"),
)


def find_folder(text: str | None) -> str | None:
    """The folder the user means: "in the docs folder", "docs 文件夹", "在 docs 里" →
    "docs"; the workspace itself ("your workspace", "工作区") → ``""``; none → ``None``."""
    text = text or ""
    hits: list[tuple[int, str]] = []
    for pattern in _FOLDER_MARKS:
        for m in pattern.finditer(text):
            q = find_quoted(m.group(1))
            name = _clean_token(_trim_lead(q or m.group(1)))
            if name and not q and _LEAD_CJK.fullmatch(name):
                continue  # "新建文件夹", "列一下文件夹": a verb, not a folder's name
            if name and not _ROOT_WORDS.fullmatch(name) and not _FILE_TOKEN.fullmatch(name):
                hits.append((m.start(1), name.strip("/")))
    root = _ROOT_WORDS.search(text)
    if root:
        hits.append((root.start(), ""))
    return min(hits)[1] if hits else None


# ------------------------------------------------------------ content

_CONTENT_MARK = re.compile(
    r"(?:(?:内容|正文|文字|文本)\s*(?:是|为|写|：|:)\s*|内容\s*|写上\s*|写着\s*|里面写(?:上|着)?\s*"
    r"|\bwith\s+(?:the\s+)?(?:contents?|text|body|words?)\s*(?:of\s+)?[:：]?\s*"
    r"|\b(?:containing|that\s+says|which\s+says|saying|says)\s*[:：]?\s*"
    r"|\bcontents?\s*[:：=]\s*"
    r"|\bwith\s+(?=[\"“'「『]))",
    re.IGNORECASE,
)


def _content_match(text: str) -> re.Match[str] | None:
    return next((m for m in _CONTENT_MARK.finditer(text) if text[m.end() :].strip()), None)


def find_content(text: str | None) -> str | None:
    """What goes into the thing: "内容是你好" → "你好", "with the content buy milk" →
    "buy milk", 'containing "hi"' → "hi". Without such words: ``None``."""
    m = _content_match(text or "")
    if not m:
        return None
    rest = (text or "")[m.end() :].strip()
    q = _quoted_match(rest)
    if q and q.start() == 0 and q.end() == len(rest.rstrip("。.!！")):
        return _group(q)
    return rest or None


# ------------------------------------------------------------ numbers and times

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5}
_CN_DIGITS |= {"六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_CN_NUMBER = re.compile(r"[零〇一二两三四五六七八九十百千万]+")
_CN_IDIOM = re.compile(r"一(?:下|些|起|点|直|样|般|定|切|共|旦|边|会)|万一|十分")
# a Chinese character just before the digits does not hide them ("音量调到50")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?\d+(?:\.\d+)?(?![\d])")


def cn_number(text: str) -> int | None:
    """A Chinese numeral as an int: "三" 3, "十二" 12, "两百零五" 205; else ``None``."""
    if not text or not _CN_NUMBER.fullmatch(text):
        return None
    if all(ch in _CN_DIGITS for ch in text) and len(text) > 1:
        return int("".join(str(_CN_DIGITS[ch]) for ch in text))  # 二〇二四
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in _CN_DIGITS:
            digit = _CN_DIGITS[ch]
        elif ch == "万":
            section = (section + (digit or 0)) or 1
            total += section * 10000
            section, digit = 0, None
        else:
            section += (1 if digit is None else digit) * _CN_UNITS[ch]
            digit = None
    return total + section + (digit or 0)


def find_number(text: str | None) -> int | float | None:
    """The first number written in digits or Chinese numerals ("3", "-2.5", "十二", "两")."""
    text = text or ""
    hits: list[tuple[int, int | float]] = []
    m = _NUMBER.search(text)
    if m:
        raw = m.group(0)
        hits.append((m.start(), float(raw) if "." in raw else int(raw)))
    masked = _CN_IDIOM.sub(lambda i: "_" * len(i.group(0)), text)
    c = _CN_NUMBER.search(masked)
    if c:
        value = cn_number(c.group(0))
        if value is not None:
            hits.append((c.start(), value))
    return min(hits, key=lambda h: h[0])[1] if hits else None


_NUM = r"(\d{1,2}|[零〇一二两三四五六七八九十]{1,3})"
_CLOCK = re.compile(r"(?<!\d)(\d{1,2})[:：](\d{2})(?!\d)\s*(am|pm|a\.m\.|p\.m\.)?", re.I)
_AMPM = re.compile(r"(?<![\d:])(\d{1,2})\s*(am|pm|a\.m\.|p\.m\.)", re.IGNORECASE)
_AT_HOUR = re.compile(r"\bat\s+(\d{1,2})(?:\s*o'?clock)?\b(?![:.]\d)", re.IGNORECASE)
_ZH_CLOCK = re.compile(
    rf"(凌晨|早上|早晨|上午|中午|下午|傍晚|晚上|今晚|夜里)?\s*{_NUM}\s*点(?:钟)?\s*"
    rf"(?:(半)|(一刻|三刻)|{_NUM}\s*分?)?"
)


def _hour_of(raw: str) -> int | None:
    return int(raw) if raw.isdigit() else cn_number(raw)


def _to_time(hour: int, minute: int, meridiem: str | None) -> time | None:
    mer = (meridiem or "").lower().replace(".", "")
    if mer in ("pm", "下午", "傍晚", "晚上", "今晚", "夜里") and hour < 12:
        hour += 12
    elif mer == "中午" and hour < 11:
        hour += 12
    elif mer in ("am", "凌晨", "早上", "早晨", "上午") and hour == 12:
        hour = 0
    if 0 <= hour <= 23 and 0 <= minute <= 59:
        return time(hour, minute)
    return None


def find_time(text: str | None) -> time | None:
    """A time of day: "15:30", "3pm", "at 7", "下午3点半", "八点一刻" → ``datetime.time``."""
    text = text or ""
    m = _CLOCK.search(text)
    if m:
        return _to_time(int(m.group(1)), int(m.group(2)), m.group(3))
    m = _AMPM.search(text)
    if m:
        return _to_time(int(m.group(1)), 0, m.group(2))
    z = _ZH_CLOCK.search(text)
    if z:
        hour = _hour_of(z.group(2))
        minute = 30 if z.group(3) else {"一刻": 15, "三刻": 45}.get(z.group(4) or "", 0)
        if z.group(5):
            minute = _hour_of(z.group(5)) or 0
        return _to_time(hour, minute, z.group(1)) if hour is not None else None
    m = _AT_HOUR.search(text)
    return _to_time(int(m.group(1)), 0, None) if m else None


_DURATION_UNITS = (
    (r"seconds?|secs?|s|秒钟?", 1),
    (r"minutes?|mins?|m|分钟|分", 60),
    (r"hours?|hrs?|h|个?小时|个?钟头", 3600),
)
_DURATION = re.compile(
    rf"(\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百]+|an?|one)\s*(?:个)?\s*"
    rf"({'|'.join(u for u, _ in _DURATION_UNITS)})(?![a-z])",
    re.IGNORECASE,
)
_HALF = re.compile(r"半\s*(?:个)?\s*(小时|钟头|分钟)|half\s+an?\s+(hour|minute)", re.IGNORECASE)


def find_duration(text: str | None) -> timedelta | None:
    """A length of time: "10 minutes", "90s", "半小时", "两个小时", "half an hour"."""
    text = text or ""
    h = _HALF.search(text)
    if h:
        unit = (h.group(1) or h.group(2) or "").lower()
        return timedelta(minutes=30) if unit in ("小时", "钟头", "hour") else timedelta(seconds=30)
    m = _DURATION.search(text)
    if not m:
        return None
    raw = m.group(1).lower()
    amount = float(raw) if raw[0].isdigit() else 1.0 if raw in ("a", "an", "one") else None
    if amount is None:
        value = cn_number(raw)
        if value is None:
            return None
        amount = float(value)
    unit = m.group(2).lower()
    seconds = next(s for u, s in _DURATION_UNITS if re.fullmatch(u, unit))
    return timedelta(seconds=amount * seconds)
