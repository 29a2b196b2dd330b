"""The words the user gets from the planner: in the language they wrote in, never its own.

Two pure checks, no I/O:

- :func:`text_lang` says which language a text is written in, when it clearly is
  one: the share of Chinese characters among its words (a Chinese character
  counts as half a word, :data:`CJK_CHARS_PER_WORD`), after quoted names, file
  names, paths and code are set aside ("create a file called 你好.txt" is
  English; "运行 Python 代码 print(1+2)" is Chinese; "用 Memo 记录 buy milk" is
  neither). :func:`reply_lang` is the language to answer in: the text's when
  it is clear, else the UI's — a person answers in the language they were
  asked in.
- :func:`withheld` says why a model's direct reply must not reach the user:
  the planner's own words (its correction prompt, its schema, tool names),
  JSON or code, the user's words echoed back, or another language than the
  user wrote in.
"""

from __future__ import annotations

import re

from aios.llm.toolcalls import looks_like_code
from aios.names import Locale as Lang, lang_of

__all__ = ["phrase_lang", "planner_words", "reply_lang", "text_lang", "withheld"]

CJK_CHARS_PER_WORD = 2.0
"""Chinese characters that weigh as much as one English word (a Chinese word is about two)."""
ZH_MIN_CHARS = 2
ZH_SHARE = 0.7
"""Chinese when at least this many Chinese characters make at least this share of the words."""
EN_MIN_WORDS = 2
EN_SHARE = 0.25
"""English when at least this many English words leave Chinese at most this share."""

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
_QUOTED = re.compile(
    r'"[^"\n]*"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』|《[^》\n]*》|‘[^’\n]*’|(?<![A-Za-z])\'[^\'\n]*\''
)
"""Quoted names and contents: the user's data, not the language they speak."""
_CODEISH = re.compile(r"[!-~]*[/\\_=(){}\[\]<>][!-~]*|[!-~]+\.[A-Za-z0-9][!-~]*")
"""ASCII tokens that are file names, paths or code (``todo.txt``, ``print(1+2)``)."""


def text_lang(text: str | None) -> Lang | None:
    """``"zh-CN"`` or ``"en"`` when ``text`` is clearly written in it, else None (mixed,
    too short, no words)."""
    s = _CODEISH.sub(" ", _QUOTED.sub(" ", text or ""))
    chars = len(_CJK.findall(s))
    words = len(_LATIN_WORD.findall(s))
    weight = chars / CJK_CHARS_PER_WORD + words
    if not weight:
        return None
    share = chars / CJK_CHARS_PER_WORD / weight
    if chars >= ZH_MIN_CHARS and share >= ZH_SHARE:
        return "zh-CN"
    if words >= EN_MIN_WORDS and share <= EN_SHARE:
        return "en"
    return None


def reply_lang(text: str | None, ui: str | None) -> Lang:
    """The language to answer ``text`` in: its own when clear, else the UI language ``ui``."""
    return text_lang(text) or lang_of(ui)


def phrase_lang(text: str | None) -> Lang | None:
    """The language of a short phrase the system knows (help, small talk, time): one with
    a Chinese character is Chinese, one with an English word of 3 letters or more and no
    Chinese is English ("goodbye", "hey!", "帮助"); None otherwise ("ok", "hi")."""
    s = text or ""
    if _CJK.search(s):
        return "zh-CN"
    return "en" if re.search(r"[A-Za-z]{3,}", s) else None


_PLANNER_WORDS = re.compile(
    r"dispatch[_ ]tasks|reply[_ ]directly|depends[_ ]on|invalid plan|plan_max_tokens"
    r"|call exactly one function|installed apps|answer with one json|json schema"
    r"|tool[_ ]calls?\b|\"tasks\"|\"reply\"|\"instruction\"",
    re.IGNORECASE,
)
"""What only the planner's prompts, schema and corrections say (aios/control/planner.py)."""
_ECHO_STRIP = re.compile(r"[\s\W_]+")


def _bare(text: str) -> str:
    return _ECHO_STRIP.sub("", text.casefold())


def planner_words(text: str | None) -> str | None:
    """The first of the planner's own words ``text`` holds ("dispatch_tasks", "Invalid
    plan"…), or None."""
    m = _PLANNER_WORDS.search(text or "")
    return m.group(0) if m else None


PROMISE_MAX_CHARS = 60
"""A direct reply this short that promises to act is a non-answer: nothing was done."""
_PROMISE = re.compile(
    r"^(?:好的?|行|没问题|当然|OK|Okay|Sure|Of course|Alright)?[，,!！。.\s]*"
    r"(?:我(?:来|会|马上|这就|现在)(?:帮你|为你|给你)?(?:处理|办|做|完成|执行|操作|看看|查)"
    r"|马上(?:帮你|为你)?(?:处理|办)"
    r"|(?:I'll|I will|let me|I'm going to|I am going to)\s+(?:handle|take care of|do|help|get|look)"
    r")",
    re.IGNORECASE,
)


def withheld(reply: str | None, said: str) -> str | None:
    """Why the model's direct ``reply`` to the user's ``said`` is not shown (None: show it)."""
    s = (reply or "").strip()
    if not s:
        return "the reply is empty"
    if looks_like_code(s) or s.startswith(("<", "`")):
        return "the reply is JSON or code"
    own = planner_words(s)
    if own:
        return f"the reply holds the planner's own words ({own!r})"
    if _bare(s) and _bare(s) == _bare(said):
        return "the reply only echoes the user's words"
    if _PROMISE.search(s) and len(s) <= PROMISE_MAX_CHARS:
        return "the reply only promises to act (nothing was done)"
    asked, answered = text_lang(said), text_lang(s)
    if asked and answered and asked != answered:
        return f"the reply is in {answered}, the user wrote in {asked}"
    return None
