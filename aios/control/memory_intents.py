"""What people say to the desktop about its memory (DESIGN §15 "What people say").

Answered by the controller before planning, the same with and without a model:

- "记住 车停在B2层" / "remember that my passport expires in May" — kept at once in the
  user's scope (the user said it: no one else's yes is needed). "remember to …", "帮我记住
  …" and "提醒我 …" are reminders: they go to the apps (Notes) like any request;
- "你记得我什么" / "what do you know about me" — the active memories of the user, a chip
  to the memory window;
- "忘掉 …" / "forget …" — the memories that match, and a question: nothing is deleted
  until the user confirms ("确认忘掉" / "yes, forget"), which must be the very next thing
  said in that conversation;
- a statement about oneself that nothing else took ("我叫小林", "my name is Lin", "我喜欢
  爵士乐", "I prefer tea") — proposed, to accept in the memory window
  (:func:`facts_said`).

Pure parsing here; :class:`~aios.control.controller.Controller` acts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from aios.control.intents import normalise
from aios.memory.extract import Fact, facts_by_rules
from aios.names import Locale as Lang

MemoryVerb = Literal["remember", "recall", "forget", "forget_yes", "forget_no"]

_REMEMBER = re.compile(
    r"^(?:请|你|你要|请你)?(?:记住|记得)(?:一下)?[:：,，\s]*(?P<zh>\S.*)$"
    r"|^(?:please\s+)?(?:remember|keep\s+in\s+mind|note\s+for\s+later)"
    r"(?:\s+that|\s*:|\s+this\s*:)\s*(?P<en>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
"""The user tells the assistant a fact to keep. Not "remember to …" (a reminder: Notes)."""
_RECALL = frozenset(
    normalise(p)
    for p in (
        "你记得我什么",
        "你记得关于我的什么",
        "你知道我什么",
        "你对我了解多少",
        "关于我你知道什么",
        "关于我你记得什么",
        "你都记得什么",
        "你记住了什么",
        "what do you know about me",
        "what do you remember about me",
        "what do you remember",
        "what have you remembered",
        "what do you know of me",
    )
)
_FORGET = re.compile(
    r"^(?:请|你)?(?:忘掉|忘记|忘了|别记得|不要记得|删掉记忆|删除记忆)[:：,，\s]*(?P<zh>\S.*)$"
    r"|^(?:please\s+)?forget(?:\s+about|\s+that)?\s*:?\s*(?P<en>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_FORGET_YES = frozenset(
    normalise(p)
    for p in (
        "确认忘掉",
        "确认忘记",
        "是的忘掉",
        "忘掉吧",
        "对忘掉",
        "yes forget",
        "yes forget it",
        "yes forget them",
        "forget them",
        "forget it",
        "confirm forget",
        "forget",
    )
)
_FORGET_NO = frozenset(
    normalise(p)
    for p in ("算了", "别忘", "不要忘", "取消", "keep it", "keep them", "dont forget", "cancel")
)
_REMINDER = re.compile(r"^(?:to|about)\s", re.IGNORECASE)
"""What follows "remember" when it is a reminder, not a fact: Notes takes those."""
FACT_STATEMENT_MAX = 120
"""A self-statement longer than this is a request with a fact in it, not the fact alone."""


MESSAGES: dict[str, tuple[str, str]] = {
    "remembered": ("好的，我记住了：{text}", "OK, I'll remember: {text}"),
    "known": ("我记得关于你的这些：\n{items}", "Here is what I know about you:\n{items}"),
    "known_none": (
        "我还没有记住关于你的事。可以说“记住 …”告诉我。",
        'I don\'t know anything about you yet. Say "remember that …" to tell me.',
    ),
    "forget_ask": (
        "要忘掉这 {n} 条吗？\n{items}\n说“确认忘掉”来删除，说“算了”保留。",
        'Forget these {n}?\n{items}\nSay "yes, forget" to delete them, or "keep them".',
    ),
    "forget_none": ("我没有关于“{text}”的记忆。", 'I have no memory about "{text}".'),
    "forgotten": ("已忘掉 {n} 条。", "Forgotten: {n}."),
    "forget_nothing_pending": (
        "没有等着确认要忘掉的记忆。",
        "There is nothing waiting to be forgotten.",
    ),
    "forget_kept": ("好的，都保留着。", "OK, I'll keep them."),
    "proposed": (
        "记下了：{items}。在“记忆”里确认后，我以后都会记得。",
        "Noted: {items}. Accept it in Memory and I'll keep it from now on.",
    ),
    "memory_off": (
        "记忆已关闭（设置 → memory.enabled）。",
        "Memory is off (Settings → memory.enabled).",
    ),
    "open_memory": ("打开记忆", "Open Memory"),
    "forget_yes_chip": ("确认忘掉", "yes, forget"),
    "forget_no_chip": ("算了", "keep them"),
}


def say(key: str, lang: str | None, **fields: object) -> str:
    zh, en = MESSAGES[key]
    return (en if str(lang or "").startswith("en") else zh).format(**fields)


_INNER_PUNCT = re.compile(r"[,，.。!！?？;；:：、]+")


@dataclass(frozen=True)
class MemoryIntent:
    verb: MemoryVerb
    text: str = ""


def recognise(text: str) -> MemoryIntent | None:
    """The memory intent ``text`` is, as a whole; None leaves it to the rest."""
    said = (text or "").strip()
    if not said:
        return None
    norm = " ".join(_INNER_PUNCT.sub(" ", normalise(said)).split())  # "yes, forget"
    if norm in _RECALL:
        return MemoryIntent("recall")
    if norm in _FORGET_YES:
        return MemoryIntent("forget_yes")
    if norm in _FORGET_NO:
        return MemoryIntent("forget_no")
    m = _REMEMBER.match(said)
    if m:
        what = (m.group("zh") or m.group("en") or "").strip()
        if what and not _REMINDER.match(what):
            return MemoryIntent("remember", what)
    m = _FORGET.match(said)
    if m:
        what = (m.group("zh") or m.group("en") or "").strip().strip("。.!！")
        if what and norm not in _FORGET_YES:
            return MemoryIntent("forget", what)
    return None


def facts_said(text: str, lang: Lang) -> list[Fact]:
    """Facts the user states about themselves in ``text`` ("我叫小林，我喜欢爵士乐"), by
    the extraction rules; [] for a long text (a request with a fact in it waits for the
    extraction after the conversation goes quiet)."""
    if len(text) > FACT_STATEMENT_MAX:
        return []
    return facts_by_rules([text], lang)


_CLAUSE = re.compile(r"[,，.。;；!！]+")
_ABOUT_ME = re.compile(r"^(?:我|叫我|i\b|i'm\b|im\b|my\b|call\s+me\b)", re.IGNORECASE)
"""A clause that speaks of the user from its first word ("echo my birthday …" does not)."""


def only_facts(text: str, lang: Lang) -> list[Fact]:
    """The facts of ``text`` when every clause of it states one ("I prefer window seats",
    "我叫小林，我喜欢爵士乐"): said to the assistant, not a request for an app ("window"
    is no order to the desktop); [] when any clause is something else ("我喜欢爵士乐，
    放一首")."""
    clauses = [c.strip() for c in _CLAUSE.split(text) if c.strip()]
    if not clauses or len(text) > FACT_STATEMENT_MAX:
        return []
    if not all(_ABOUT_ME.match(c) and facts_by_rules([c], lang) for c in clauses):
        return []
    return facts_by_rules([text], lang)


def bullets(texts: list[str], lang: str | None = None) -> str:
    """The user's memories as a list, each quoted: their words, in whatever language."""
    left, right = ("“", "”") if str(lang or "").startswith("en") else ("「", "」")
    return "\n".join(f"- {left}{t}{right}" for t in texts)
