"""When: the time expression of a reminder or an automation, read offline in Chinese or
English (DESIGN §18 "Reminders and automations").

``parse(text, now)`` finds the schedule said in ``text`` and what is to happen then:

- "提醒我三点开会" → a reminder "开会" at the next 3 o'clock (3:00 or 15:00, whichever
  comes first after ``now``: a clock hour without 上午/下午, am/pm or a date is the next one);
- "remind me at 3pm to call Anna" → a reminder "call Anna" at 15:00;
- "每天早上八点读一下我的待办" → a run of "读一下我的待办", cron ``0 8 * * *``;
- "every Monday at 9 list my notes tagged work" → cron ``0 9 * * 1``;
- "remind me in 3 seconds to stretch" → a reminder three seconds after ``now``.

Without "remind me" / "提醒我" a schedule is only read when the text opens with it — a
repetition ("every Monday at 9 …", "每天早上八点 …"), a delay ("in 10 minutes …",
"十分钟后 …") or a clock time ("下午三点读一下我的待办") — and something to run follows;
"明天天气怎么样", "记一下每天要喝水" and "三点了吗" are no automations. Pure: no clock,
no I/O (``now`` is given, local time, timezone-aware), so the labelled sets replay exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

Kind = Literal["reminder", "run"]

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5,
              "六": 6, "七": 7, "八": 8, "九": 9}  # fmt: skip
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
               "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "fifteen": 15,
               "twenty": 20, "thirty": 30, "forty-five": 45}  # fmt: skip
_EN_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_DAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "七": 6}
PERIOD_HOURS = {"morning": 8, "noon": 12, "afternoon": 15, "evening": 20, "night": 21}
"""The hour meant by a part of the day said without a clock time ("明天早上", "tonight")."""
DEFAULT_HOUR = 9
"""The hour of a day said without a clock time or a part of the day ("tomorrow", "每周一")."""
PM_BELOW = 7
"""A clock hour under this, said with a date but without am/pm, is in the afternoon
("tomorrow at 3" is 15:00; "tomorrow at 8" is 8:00)."""

_ZH_PERIOD = {"早上": "morning", "早晨": "morning", "上午": "morning", "清晨": "morning",
              "明早": "morning", "凌晨": "dawn", "中午": "noon", "午饭": "noon",
              "下午": "afternoon", "傍晚": "evening", "晚上": "evening", "今晚": "evening",
              "明晚": "evening", "夜里": "night", "半夜": "night"}  # fmt: skip


@dataclass(frozen=True)
class When:
    """What ``parse`` read: ``at`` (a one-off time) or ``cron`` (five fields, local time)."""

    kind: Kind
    what: str
    at: datetime | None = None
    cron: str | None = None

    def public(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "what": self.what,
            "at": self.at.isoformat(timespec="seconds") if self.at else None,
            "cron": self.cron,
        }


# ------------------------------------------------------------------ numbers


def _cn_number(word: str) -> int | None:
    """一 → 1, 十二 → 12, 二十五 → 25, 两 → 2; digits pass through."""
    if word.isdigit():
        return int(word)
    if not word or any(c not in _CN_DIGITS and c != "十" for c in word):
        return None
    if "十" not in word:
        return _CN_DIGITS[word] if len(word) == 1 else None
    tens, _, ones = word.partition("十")
    t = _CN_DIGITS.get(tens, -1) if tens else 1
    o = _CN_DIGITS.get(ones, -1) if ones else 0
    return None if t < 0 or o < 0 else t * 10 + o


_NUM = r"(\d+|[零〇一二两三四五六七八九十]+)"
_EN_NUM = r"(\d+|" + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True)) + r")"


def _en_number(word: str) -> int | None:
    word = word.lower()
    return int(word) if word.isdigit() else _EN_NUMBERS.get(word)


# ------------------------------------------------------------------ the parts


@dataclass
class _Parts:
    """What the patterns found in one text, before it becomes a time or a cron."""

    hour: int | None = None
    minute: int = 0
    period: str | None = None
    explicit_24h: bool = False
    day_offset: int | None = None
    weekday: int | None = None
    next_week: bool = False
    delay: timedelta | None = None
    every: str | None = None
    """``day`` | ``weekday`` | ``weekend`` | ``week`` | ``month`` | ``minutes`` | ``hours``."""
    every_n: int = 1
    month_day: int | None = None
    first_at: int = 10**9
    """Where the earliest time word starts (a schedule at the very start counts alone)."""


_UNITS = {"s": 1, "sec": 1, "second": 1, "秒": 1, "秒钟": 1, "m": 60, "min": 60,
          "minute": 60, "分": 60, "分钟": 60, "h": 3600, "hr": 3600, "hour": 3600,
          "小时": 3600, "个小时": 3600, "钟头": 3600, "个钟头": 3600, "d": 86400,
          "day": 86400, "天": 86400}  # fmt: skip

_EN_PATTERNS: list[tuple[str, str]] = [
    (
        "delay",
        r"\bin\s+(half\s+an?\s+hour|" + _EN_NUM + r"\s+(sec(?:ond)?s?|min(?:ute)?s?|"
        r"h(?:ou)?rs?|hours?|days?))\b",
    ),
    ("every_n", r"\bevery\s+" + _EN_NUM + r"\s+(min(?:ute)?s?|hours?|hrs?)\b"),
    (
        "every_unit",
        r"\b(?:every|each)\s+(minute|hour|day|morning|afternoon|evening|night|"
        r"weekday|week\s*day|weekend|month)\b|\b(daily|hourly|nightly|weekdays)\b",
    ),
    (
        "every_dow",
        r"\b(?:every|each)\s+("
        + "|".join(_EN_DAYS)
        + r")s?\b|\bon\s+("
        + "|".join(_EN_DAYS)
        + r")s\b",
    ),
    ("month_day", r"\bon\s+the\s+(\d{1,2})(?:st|nd|rd|th)?\b"),
    ("day", r"\b(today|tonight|tomorrow|day after tomorrow)\b"),
    ("dow", r"\b(?:on\s+)?(next\s+|this\s+)?(" + "|".join(_EN_DAYS) + r")\b"),
    ("clock", r"\b(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?=\W|$)"),
    ("clock24", r"\b(?:at\s+)?(\d{1,2}):(\d{2})\b"),
    ("clock_at", r"\bat\s+(\d{1,2})(?:\s+o'?clock)?\b"),
    ("noon", r"\b(?:at\s+)?(noon|midday|midnight)\b"),
    ("period", r"\b(?:in\s+the\s+|this\s+)?(morning|afternoon|evening)\b|\bat\s+night\b"),
]
_ZH_PATTERNS: list[tuple[str, str]] = [
    (
        "delay",
        r"(半个?小时|" + _NUM + r"(秒钟|秒|分钟|分|个小时|小时|个钟头|钟头|天))"
        r"(?:之?后|以后)",
    ),
    ("every_n", r"每隔?" + _NUM + r"(分钟|个小时|小时|个钟头)"),
    ("every_unit", r"(每天|每日|每晚|每个?工作日|工作日|每个?周末|每小时|每个小时|每月|每个月)"),
    ("every_dow", r"每(?:个)?(?:周|星期|礼拜)([一二三四五六日天七])"),
    ("month_day", _NUM + r"(?:号|日)"),
    ("day", r"(今天|今晚|明天|明早|明晚|后天|大后天)"),
    ("dow", r"(下个?|这个?|本)?(?:周|星期|礼拜)([一二三四五六日天七])"),
    ("period", r"(早上|早晨|上午|清晨|凌晨|中午|下午|傍晚|晚上|夜里|半夜)"),
    ("clock_zh", _NUM + r"[点點时](?:(半)|(一刻)|(三刻)|(" + _NUM.strip("()") + r")分?)?(?:钟)?"),
    ("clock24", r"(\d{1,2})[:：](\d{2})"),
]
_REMIND = re.compile(
    r"\b(?:please\s+)?remind\s+me\b(?:\s+(?:to|that|about))?|set\s+a\s+reminder\b(?:\s+to)?|"
    r"提醒(?:一下)?我?(?:一下)?|叫我|记得叫我",
    re.IGNORECASE,
)


def _add_every_unit(p: _Parts, word: str) -> None:
    w = word.lower().replace(" ", "")
    if w in ("minute",):
        p.every, p.every_n = "minutes", 1
    elif w in ("hour", "hourly", "每小时", "每个小时"):
        p.every = "hours"
    elif w in ("weekday", "weekdays", "每个工作日", "每工作日", "工作日"):
        p.every = "weekday"
    elif w in ("weekend", "每个周末", "每周末"):
        p.every = "weekend"
    elif w in ("month", "每月", "每个月"):
        p.every = "month"
    else:
        p.every = "day"
        if w in ("morning", "afternoon", "evening", "night"):
            p.period = w
        elif w in ("nightly", "每晚"):
            p.period = "evening"


def _clock(p: _Parts, hour: int | None, minute: int | None) -> bool:
    if hour is None or hour > 24 or (minute is not None and minute > 59):
        return False
    p.hour, p.minute = hour % 24, minute or 0
    return True


def _apply(p: _Parts, name: str, m: re.Match[str]) -> bool:  # noqa: C901 - one branch per pattern
    g = m.groups()
    if name == "delay":
        if g[0].startswith("half") or g[0].startswith("半"):
            p.delay = timedelta(minutes=30)
            return True
        n = _en_number(g[1]) if g[1].isascii() else _cn_number(g[1])
        unit = g[2].lower().rstrip("s") if g[2] else ""
        seconds = _UNITS.get(unit) or _UNITS.get(unit[:3]) or _UNITS.get(unit[:1])
        if n is None or seconds is None:
            return False
        p.delay = timedelta(seconds=n * seconds)
    elif name == "every_n":
        n = _en_number(g[0]) if g[0].isascii() else _cn_number(g[0])
        if not n:
            return False
        p.every, p.every_n = ("minutes" if g[1].lower().startswith(("min", "分")) else "hours"), n
    elif name == "every_unit":
        _add_every_unit(p, next(x for x in g if x))
    elif name == "every_dow":
        word = next(x for x in g if x)
        p.every, p.weekday = (
            "week",
            (_EN_DAYS.index(word.lower()) if word.isascii() else _ZH_DAYS[word]),
        )
    elif name == "month_day":
        d = _cn_number(g[0]) if not g[0].isdigit() else int(g[0])
        if d is None or not 1 <= d <= 31:
            return False
        p.month_day = d
        if p.every is None and p.day_offset is None:
            p.every = p.every or None
    elif name == "day":
        w = g[0].lower()
        p.day_offset = {"today": 0, "今天": 0, "tonight": 0, "今晚": 0, "tomorrow": 1,
                        "明天": 1, "明早": 1, "明晚": 1, "后天": 2, "day after tomorrow": 2,
                        "大后天": 3}[w]  # fmt: skip
        if w in ("tonight", "今晚", "明晚"):
            p.period = "evening"
        elif w == "明早":
            p.period = "morning"
    elif name == "dow":
        if p.every == "week":
            return False
        word = g[1]
        p.weekday = _EN_DAYS.index(word.lower()) if word.isascii() else _ZH_DAYS[word]
        p.next_week = bool(g[0]) and g[0].strip().lower().startswith(("next", "下"))
    elif name == "period":
        word = next((x for x in g if x), "night")
        p.period = _ZH_PERIOD.get(word, word.lower())
    elif name == "noon":
        word = g[0].lower()
        p.hour, p.minute, p.explicit_24h = (0 if word == "midnight" else 12), 0, True
    elif name == "clock":
        if not _clock(p, int(g[0]), int(g[1]) if g[1] else None) or p.hour is None:
            return False
        pm = g[2].lower().startswith("p")
        p.hour = (p.hour % 12) + (12 if pm else 0)
        p.explicit_24h = True
    elif name in ("clock24", "clock_at"):
        if not _clock(p, int(g[0]), int(g[1]) if len(g) > 1 and g[1] else None):
            return False
        p.explicit_24h = name == "clock24" and int(g[0]) >= 13
    elif name == "clock_zh":
        minute = 30 if g[1] else 15 if g[2] else 45 if g[3] else _cn_number(g[4]) if g[4] else 0
        if not _clock(p, _cn_number(g[0]), minute):
            return False
        p.explicit_24h = (p.hour or 0) >= 13
    return True


def _scan(text: str) -> tuple[_Parts, list[tuple[int, int]]]:
    """Every time word of ``text`` (each pattern once, the first match) and their spans."""
    p = _Parts()
    spans: list[tuple[int, int]] = []
    taken = [False] * len(text)
    for name, pattern in _EN_PATTERNS + _ZH_PATTERNS:
        for m in re.finditer(pattern, text, re.IGNORECASE):
            if any(taken[m.start() : m.end()]):
                continue
            if name == "month_day" and p.every != "month" and "号" not in m.group(0):
                if not m.group(0).lower().startswith("on"):
                    continue
            if _apply(p, name, m):
                spans.append((m.start(), m.end()))
                taken[m.start() : m.end()] = [True] * (m.end() - m.start())
                p.first_at = min(p.first_at, m.start())
                break
    return p, spans


# ------------------------------------------------------------------ resolving


def _hour(p: _Parts, *, dated: bool) -> tuple[int, int] | None:
    """The hour and minute meant, or None when no clock time nor part of the day was said."""
    if p.hour is None:
        if p.period is None:
            return None
        return PERIOD_HOURS.get(p.period, DEFAULT_HOUR if p.period != "dawn" else 5), 0
    h = p.hour
    if not p.explicit_24h:
        if p.period in ("afternoon", "evening", "night") and h < 12:
            h += 12
        elif p.period == "noon" and h < 6:
            h += 12
        elif p.period in ("morning", "dawn") and h == 12:
            h = 0
        elif p.period is None and dated and 0 < h < PM_BELOW:
            h += 12
    return h, p.minute


def _cron(p: _Parts) -> str | None:
    hm = _hour(p, dated=True) or (DEFAULT_HOUR, 0)
    h, m = hm
    if p.every == "minutes":
        return f"*/{p.every_n} * * * *" if p.every_n > 1 else "* * * * *"
    if p.every == "hours":
        return (
            f"{m if p.hour is not None else 0} */{p.every_n} * * *"
            if p.every_n > 1
            else (f"{p.minute if p.hour is not None else 0} * * * *")
        )
    dow = {"day": "*", "weekday": "1-5", "weekend": "0,6"}.get(p.every or "")
    if p.every == "week" and p.weekday is not None:
        dow = str((p.weekday + 1) % 7)
    if p.every == "month":
        return f"{m} {h} {p.month_day or 1} * *"
    if dow is None:
        return None
    return f"{m} {h} * * {dow}"


def _at(p: _Parts, now: datetime) -> datetime | None:
    if p.delay is not None:
        return now + p.delay
    dated = p.day_offset is not None or p.weekday is not None
    hm = _hour(p, dated=dated)
    if hm is None and not dated:
        return None
    h, m = hm or (DEFAULT_HOUR, 0)
    base = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if p.weekday is not None:
        ahead = (p.weekday - now.weekday()) % 7
        if p.next_week:
            ahead += 7 if ahead else 7
        day = base + timedelta(days=ahead)
        at = day.replace(hour=h, minute=m)
        return at if at > now else at + timedelta(days=7)
    if p.day_offset is not None:
        return (base + timedelta(days=p.day_offset)).replace(hour=h, minute=m)
    at = base.replace(hour=h, minute=m)
    candidates = [at, at + timedelta(hours=12)] if (p.period is None and not p.explicit_24h
                                                     and 0 < h < 12) else [at]  # fmt: skip
    candidates += [c + timedelta(days=1) for c in candidates]
    return min(c for c in candidates if c > now)


_LEAD = re.compile(
    r"^[\s,，.。:：;；!！、]*(?:and\s+|to\s+|then\s+|的时候|的|时|就|要|再)?[\s,，:：]*"
)
_TAIL = re.compile(r"[\s,，.。;；!！、]*(?:please|吧|哦|啊|呀)?[\s,，.。;；!！、]*$", re.IGNORECASE)


def _what(text: str, spans: list[tuple[int, int]]) -> str:
    keep = list(text)
    for a, b in spans:
        keep[a:b] = [" "] * (b - a)
    rest = "".join(keep)
    rest = _REMIND.sub(" ", rest, count=1)
    rest = re.sub(r"\s+", " ", rest).strip()
    rest = re.sub(r"\b(at|on|in)\s*$", "", rest, flags=re.IGNORECASE).strip()
    rest = re.sub(r"^(at|on)\b\s*", "", rest, flags=re.IGNORECASE)
    rest = re.sub(r"\s*(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])\s*", "", rest)
    rest = _LEAD.sub("", rest)
    return _TAIL.sub("", rest).strip()


def parse(text: str, now: datetime) -> When | None:
    """The schedule ``text`` asks for and what is to happen then, or None (no schedule)."""
    reminder = _REMIND.search(text) is not None
    parts, spans = _scan(text)
    if not spans:
        return None
    what = _what(text, spans)
    if not reminder and not (_opens_with_time(text, parts) and _is_instruction(what)):
        return None  # "记一下每天要喝水" is a note, not an automation
    if parts.every is not None:
        cron = _cron(parts)
        if cron is None:
            return None
        return When("reminder" if reminder else "run", what, cron=cron)
    at = _at(parts, now)
    if at is None:
        return None
    if not reminder and parts.delay is None and parts.hour is None:
        return None  # "明天打开音乐": no time said, so nothing to schedule
    return When("reminder" if reminder else "run", what, at=at)


def _is_instruction(what: str) -> bool:
    """Something to run is left once the time words are gone, and it is no question
    ("三点了吗" asks the time)."""
    return len(what) >= 2 and not re.search(r"(吗|么|呢|[?？])$", what)


def _opens_with_time(text: str, parts: _Parts) -> bool:
    """The text opens with its schedule: "下午三点读一下我的待办", "every Monday at 9 …"."""
    return not text[: parts.first_at].strip(" ,，")
