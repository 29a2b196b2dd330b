"""The interruption engine: whether to speak up about a draft, how, and when (DESIGN §18).

A draft is what the user has typed so far in the command bar, not yet sent.
The engine gets the facts a listener gathered about it (:class:`DraftFacts`:
where it would go, whether two apps tie, what a delete in it would remove, a
memory it recalls) and answers with at most one :class:`Decision` — ``{level,
urgency, style, reason, text}`` — or nothing.

Triggers, each a rule on the facts (:func:`candidates`), strongest first:

========================  =====  ==========  ========  =================================
trigger                   level  urgency     style     e.g.
========================  =====  ==========  ========  =================================
danger (a bulk delete)    7-8    now         firm      "诶，等一下——这会删掉 12 个文件"
ambiguity (a tie)         5      next_break  question  "你是说用记事本，还是音乐？"
missing slot              4      next_break  question  "几点提醒你？"
heavy deletion            3      next_break  gentle    "重新想想怎么说？…"
memory association        2      next_break  gentle    "说到这个——你之前跟我说过：…"
the model's judgement     1-6    next_break  any       (``duplex.llm``, at a pause)
========================  =====  ==========  ========  =================================

When: ``now`` is said at once; ``next_break`` waits for a natural break — a pause
mid-draft (``duplex.pause_s`` without a keystroke) or the end of a sentence — so
the user is not cut off while still thinking. A pause is only reported by the
listener when something waits for it (:meth:`InterruptionEngine.waiting`).

How often (per session): at most one new interjection per ``duplex.min_interval_s``
and ``duplex.session_budget`` in all, except level 7 and up; none at all once
the user muted the session. The same interjection, still true as the user types
on, is kept (not counted again); one the user dismissed is not raised again; a
draft that no longer warrants it takes it away. The model's judgement is
capped below 7: it can never skip the limits.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aios.config import DuplexConfig
from aios.duplex import drafts
from aios.duplex.texts import say

Urgency = Literal["now", "soon", "next_break", "defer"]
Style = Literal["gentle", "question", "excited", "firm"]
Kind = Literal["danger", "ambiguity", "missing_slot", "heavy_deletion", "memory", "llm"]
KINDS: tuple[Kind, ...] = ("danger", "ambiguity", "missing_slot", "heavy_deletion", "memory", "llm")
STYLES: tuple[Style, ...] = ("gentle", "question", "excited", "firm")

UNLIMITED_LEVEL = 7
"""Interjections of this level and up pass the rate limit and the budget (DESIGN §18)."""
LLM_MAX_LEVEL = 6
"""The highest level the model's judgement may claim (below :data:`UNLIMITED_LEVEL`)."""
HEAVY_DELETE_CHARS = 8
HEAVY_DELETE_SHARE = 0.4
"""A heavy deletion: at least this many characters and this share of the longest the
draft was, taken away with something left (emptying the bar is not rethinking)."""
SESSIONS_MAX = 512
"""Sessions whose state is kept (least recently used dropped): a draft stores nothing."""
MEMORY_QUOTE_CHARS = 60
"""Characters of a recalled memory quoted in an interjection."""


@dataclass(frozen=True)
class Decision:
    """One interjection: what to say about a draft, how strongly and when."""

    kind: Kind
    level: int
    urgency: Urgency
    style: Style
    reason: str
    """Why, for the trace and the tests ("delete would remove 12 files in files")."""
    text: str
    """What the desktop says, in the user's language."""
    key: str
    """Same key, same interjection: kept while the user types on, never raised twice."""

    @property
    def id(self) -> str:
        return "ij_" + hashlib.sha1(self.key.encode("utf-8")).hexdigest()[:12]

    def public(self) -> dict[str, Any]:
        """The interjection as the page gets it."""
        return {
            "id": self.id,
            "kind": self.kind,
            "level": self.level,
            "urgency": self.urgency,
            "style": self.style,
            "reason": self.reason,
            "text": self.text,
        }


@dataclass
class DraftFacts:
    """What a listener found out about a draft (aios/duplex/listener.py)."""

    text: str
    lang: str
    paused: bool = False
    apps: list[str] = field(default_factory=list)
    """The apps the draft would go to, in order."""
    tie: list[str] = field(default_factory=list)
    """The apps too close to call for its first step (best first), or []."""
    names: dict[str, str] = field(default_factory=dict)
    """App id → its name in ``lang``."""
    deletion: drafts.Deletion | None = None
    count: drafts.Count | None = None
    memory: str | None = None
    """A memory of the user's the draft recalls."""


@dataclass
class SessionState:
    """What the engine keeps about one session's drafts (memory only, never stored)."""

    muted: bool = False
    active: Decision | None = None
    shown_at: float | None = None
    spent: int = 0
    dismissed: set[str] = field(default_factory=set)
    peak: int = 0
    """The longest the current draft was since it was last empty (heavy deletion)."""
    text: str = ""
    waiting: bool = False
    """A ``next_break`` interjection waits for a pause."""
    llm_tokens: int = 0
    llm_at: float | None = None
    llm_text: str = ""


# ------------------------------------------------------------------ the rules


def candidates(facts: DraftFacts, peak: int = 0) -> list[Decision]:
    """Every interjection the offline rules find for ``facts``, strongest first."""
    out = [
        d
        for d in (
            _danger(facts),
            _ambiguity(facts),
            _missing(facts),
            _heavy_deletion(facts, peak),
            _memory(facts),
        )
        if d is not None
    ]
    return sorted(out, key=lambda d: -d.level)


def _danger(f: DraftFacts) -> Decision | None:
    what = f.deletion
    if what is None:
        return None
    if what.code is not None:
        return Decision(
            "danger",
            8,
            "now",
            "firm",
            f"code deletes: {what.code}",
            say("danger_code", f.lang, what=what.code),
            f"danger:code:{what.code}",
        )
    if not f.apps or not what.bulk:
        return None  # a single item: the app asks before it deletes
    app = f.apps[0]
    count = f.count
    if count is not None:
        if count.files == 0 or (count.folder is None and count.files < 2):
            return None  # nothing, or one file, would go: nothing to warn about
        n = f"{count.files}+" if count.capped else str(count.files)
        if count.folder is not None:
            text = say("danger_folder", f.lang, name=count.folder, n=n)
        else:
            text = say("danger_files", f.lang, n=n)
        reason = f"delete would remove {n} files in {app}" + (
            f" (folder {count.folder})" if count.folder else ""
        )
        return Decision(
            "danger", 8, "now", "firm", reason, text, f"danger:{app}:{n}:{count.folder}"
        )
    noun = {"files": "all_files", "notes": "all_notes"}.get(what.about, "all_things")
    return Decision(
        "danger",
        7,
        "now",
        "firm",
        f"bulk delete in {app} ({what.about})",
        say("danger_all", f.lang, what=say(noun, f.lang)),
        f"danger:{app}:all:{what.about}",
    )


def _ambiguity(f: DraftFacts) -> Decision | None:
    if len(f.tie) < 2:
        return None
    shown = [f.names.get(a, a) for a in f.tie]
    a, b = shown[0], say("or", f.lang).join(shown[1:])
    return Decision(
        "ambiguity",
        5,
        "next_break",
        "question",
        f"tie between {', '.join(f.tie)}",
        say("ambiguity", f.lang, a=a, b=b),
        "tie:" + "|".join(sorted(f.tie)),
    )


def _missing(f: DraftFacts) -> Decision | None:
    key = drafts.missing_slot(f.text)
    if key is None:
        return None
    return Decision(
        "missing_slot",
        4,
        "next_break",
        "question",
        f"missing slot: {key.removeprefix('slot_')}",
        say(key, f.lang),
        f"slot:{key}",
    )


def _heavy_deletion(f: DraftFacts, peak: int) -> Decision | None:
    left = len(f.text.strip())
    gone = peak - len(f.text)
    if not left or gone < HEAVY_DELETE_CHARS or gone < HEAVY_DELETE_SHARE * peak:
        return None
    return Decision(
        "heavy_deletion",
        3,
        "next_break",
        "gentle",
        f"{gone} of {peak} characters deleted",
        say("heavy_deletion", f.lang),
        f"heavy:{peak}",
    )


def _memory(f: DraftFacts) -> Decision | None:
    if not f.memory:
        return None
    quoted = (
        f.memory if len(f.memory) <= MEMORY_QUOTE_CHARS else f.memory[:MEMORY_QUOTE_CHARS] + "…"
    )
    return Decision(
        "memory",
        2,
        "next_break",
        "gentle",
        "the draft recalls a memory",
        say("memory", f.lang, memory=quoted),
        f"memory:{f.memory}",
    )


def llm_decision(answer: dict[str, Any], lang: str) -> Decision | None:
    """The model's judgement (``{interrupt, level, style, reason, say}``) as a decision,
    its level capped at :data:`LLM_MAX_LEVEL`; None when it says not to interrupt or
    its answer is unusable."""
    if answer.get("interrupt") is not True:
        return None
    text = str(answer.get("say") or "").strip()
    if not text:
        return None
    try:
        level = int(answer.get("level") or 1)
    except (TypeError, ValueError):
        level = 1
    level = max(1, min(LLM_MAX_LEVEL, level))
    style = answer.get("style")
    return Decision(
        "llm",
        level,
        "next_break",
        style if style in STYLES else "gentle",
        str(answer.get("reason") or "the model's judgement")[:200],
        text[:300],
        f"llm:{text}",
    )


# ------------------------------------------------------------------ the gate


class InterruptionEngine:
    """The rules plus the session's limits: one decision (or none) per draft."""

    def __init__(
        self,
        settings: Callable[[], DuplexConfig],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.settings = settings
        self.clock = clock
        self._sessions: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.RLock()

    def session(self, key: str) -> SessionState:
        with self._lock:
            state = self._sessions.get(key)
            if state is None:
                state = self._sessions[key] = SessionState()
                while len(self._sessions) > SESSIONS_MAX:
                    self._sessions.popitem(last=False)
            self._sessions.move_to_end(key)
            return state

    def adopt(self, old: str, new: str) -> None:
        """The session ``old`` (a tab without a session yet) is ``new`` from now on."""
        with self._lock:
            if old in self._sessions and new not in self._sessions:
                self._sessions[new] = self._sessions.pop(old)

    def observe(self, key: str, facts: DraftFacts) -> Decision | None:
        """The interjection for the session's new draft ``facts``, after the limits."""
        with self._lock:
            state = self.session(key)
            if not facts.text.strip():
                self.reset(key)
                return None
            state.peak = max(state.peak, len(facts.text))
            found = candidates(facts, state.peak)
            state.text = facts.text
            if state.active is not None and all(d.key != state.active.key for d in found):
                state.active = None  # what it said no longer holds
            return self._pick(state, found, facts)

    def offer(self, key: str, decision: Decision, facts: DraftFacts) -> Decision | None:
        """A decision found later (the model's) for the draft ``facts``: shown when the
        draft is still the same and the limits let it."""
        with self._lock:
            state = self.session(key)
            if state.text != facts.text or state.active is not None:
                return None
            return self._pick(state, [decision], facts)

    def _pick(
        self, state: SessionState, found: list[Decision], facts: DraftFacts
    ) -> Decision | None:
        state.waiting = False
        if state.muted:
            return None
        at_break = facts.paused or drafts.sentence_end(facts.text)
        for d in found:
            if state.active is not None and d.key == state.active.key:
                return state.active
            if d.key in state.dismissed:
                continue
            if d.urgency in ("next_break", "defer") and not at_break:
                state.waiting = True
                continue
            if d.level < UNLIMITED_LEVEL and not self._allowed(state):
                continue
            return self._show(state, d)
        return None

    def _allowed(self, state: SessionState) -> bool:
        cfg = self.settings()
        if state.spent >= cfg.session_budget:
            return False
        return state.shown_at is None or self.clock() - state.shown_at >= cfg.min_interval_s

    def _show(self, state: SessionState, d: Decision) -> Decision:
        state.active = d
        if d.level < UNLIMITED_LEVEL:
            state.spent += 1
            state.shown_at = self.clock()
        if d.kind == "heavy_deletion":
            state.peak = len(state.text)
        return d

    def charge(self, key: str, tokens: int) -> None:
        """The model's judgement of a draft of this session used ``tokens``."""
        with self._lock:
            self.session(key).llm_tokens += tokens

    def waiting(self, key: str) -> bool:
        """Whether something waits for a pause in this session's draft."""
        with self._lock:
            return self.session(key).waiting

    def reset(self, key: str) -> None:
        """The draft was sent or emptied: what was said about it goes."""
        with self._lock:
            state = self.session(key)
            state.active, state.peak, state.text, state.waiting = None, 0, "", False

    def mute(self, key: str, muted: bool = True) -> None:
        """ "Mute for this session": no interjection until unmuted (the route chip stays)."""
        with self._lock:
            state = self.session(key)
            state.muted, state.active = muted, None

    def dismiss(self, key: str, decision_id: str) -> bool:
        """The user closed an interjection: it is not raised again this session."""
        with self._lock:
            state = self.session(key)
            if state.active is None or state.active.id != decision_id:
                return False
            state.dismissed.add(state.active.key)
            state.active = None
            return True
