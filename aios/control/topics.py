"""A session's turns as a topic tree (DESIGN §18 "Topics", seed 004's 话题树).

A flat list of messages becomes a tree the desktop can go back along: one **root topic**
per app the user worked with, and **sub-topics** where a turn narrows it (the same app,
new key words: "记一下买牛奶", then "记一下周五交报告", are two sub-topics of the notes).
Each topic has ``id, label, state (active | paused | archived), app, terms, turns`` (the
history ids of its turns), the ``view`` it last showed (the history id of its app's
reply) and the window ``instance`` it was in, ``started`` / ``updated``.

The rules (offline, the default; :class:`Tree` is pure, no I/O):

- A turn is routed to an app first (the router or a system intent decides); its **key
  terms** are the router's own terms (:func:`aios.control.router.query_terms`: Chinese
  bigrams and unigrams, stemmed English words — one tokeniser for both) without the words
  that only name an app or a command ("打开", "show", "记事本") and the Chinese bigrams of
  a function word ("了吗", "把牛").
- The turn goes to the app's live root (a paused one is **resumed**: the previous active
  topic becomes paused), or opens a new root. Inside the root it continues the node whose
  terms hold at least :data:`CONTINUE` of its key words, or the node the user was on when it has no
  key words ("删掉它"), or opens a **sub-topic** when its words are new.
- A topic untouched for ``duplex.topic_archive_s`` is archived (a later turn for its app
  opens a new root); a session keeps at most ``duplex.topics_max`` topics.
- with ``duplex.topic_llm`` and a model, the model's labels replace the rules' ones
  (:mod:`aios.control.topic_labels`: debounced, budgeted, off by default).
- "回到刚才的…" / "back to …" (:func:`resume_words`, answered by the controller) resumes
  the paused topic its words name (:meth:`Tree.resolve`): the app they name, the words of
  its label and terms — in one line of talk, the node the user left it on; the most recent
  paused topic when they name nothing; several when two lines of talk match alike (then
  the user is asked which).

:class:`TopicTree` keeps each session's tree in the store (``aios/store/topics.py``) so
it survives a restart, and says on the event bus (``topics``) when it changed.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from aios.control.router import CN_FUNCTION_CHARS, query_terms, tokenize
from aios.errors import NotFound
from aios.names import new_id

if TYPE_CHECKING:
    from aios.config import Config
    from aios.events import EventBus
    from aios.store import Store

log = logging.getLogger(__name__)

MATCH = 0.34
"""Share of the key words of "back to …" a topic must hold to be the one they name."""
CONTINUE = 0.15
"""Share of a turn's key words a topic must already hold for the turn to continue it (one
shared word of a short turn: "把牛奶改成两盒" goes on with "买牛奶")."""
STRONG_TERM = 1.0
"""A term this heavy (a Chinese bigram, an English word) is a key word; unigrams alone
(0.3) never open a sub-topic."""
TERMS_MAX = 24
"""Key terms a topic keeps (the newest turn's first)."""
TURNS_MAX = 200
"""Turn ids a topic keeps (the newest)."""
LABEL_MAX_CHARS = 40
"""A label made from a turn's words is cut to this many characters."""
NAMING_CACHE = 64
"""Sets of app words whose terms are kept (one per routed app, in practice)."""
PUBLIC_TERMS = 8
"""Terms a topic shows in the API (the heaviest)."""
ACTIVE, PAUSED, ARCHIVED = "active", "paused", "archived"

GENERIC_WORDS = (
    "打开 启动 显示 列出 列一下 看看 看一下 查看 搜索 查找 找一下 删除 删掉 添加 新建 创建 "
    "播放 放一首 记一下 记下 所有 全部 现在 刚才 之前 继续 回到 一下 东西 事情 那个 这个 "
    "open show list find search look delete remove add create new make play all every "
    "thing stuff one please now again back continue resume earlier before"
)
"""Command and filler words: they say what to do, not what the topic is about."""
_GENERIC_TERMS = frozenset(tokenize(GENERIC_WORDS))


@dataclass
class Topic:
    """One node of a session's topic tree (a root when ``parent`` is None)."""

    id: str
    session_id: str
    app: str
    label: str
    state: str
    started: float
    updated: float
    parent: str | None = None
    labelled_by: str = "rules"
    terms: dict[str, float] = field(default_factory=dict)
    turns: list[int] = field(default_factory=list)
    view: int | None = None
    instance: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Topic:
        return cls(**{k: row[k] for k in cls.__dataclass_fields__ if k in row})

    def row(self) -> dict[str, Any]:
        return asdict(self)

    def public(self) -> dict[str, Any]:
        """The API's form: terms as the heaviest words, turns and view as timeline ids."""
        heaviest = sorted(self.terms, key=lambda t: (-self.terms[t], -len(t)))
        return {
            "id": self.id,
            "parent": self.parent,
            "label": self.label,
            "labelled_by": self.labelled_by,
            "state": self.state,
            "app": self.app,
            "terms": [t for t in heaviest if self.terms[t] >= STRONG_TERM][:PUBLIC_TERMS],
            "turns": [f"h{t}" for t in self.turns],
            "view": f"h{self.view}" if self.view is not None else None,
            "instance": self.instance,
            "started": self.started,
            "updated": self.updated,
        }


# ------------------------------------------------------------------ words


@lru_cache(maxsize=NAMING_CACHE)
def _naming(app_words: tuple[str, ...]) -> frozenset[str]:
    return _GENERIC_TERMS.union(*(tokenize(w) for w in app_words))


def key_terms(text: str, app_words: Iterable[str] = ()) -> dict[str, float]:
    """The router's terms of ``text`` without command words and the words of ``app_words``
    (the apps' names, ids and keywords: they chose the app, they are not the subject)."""
    naming = _naming(tuple(app_words))
    return {
        t: w
        for t, w in query_terms(text).items()
        if t not in naming and not (len(t) == 2 and CN_FUNCTION_CHARS.intersection(t))
    }


def coverage(turn: dict[str, float], topic: dict[str, float]) -> float:
    """The share of ``turn``'s key words (its strong terms) that ``topic`` holds too, in
    [0, 1]: unigrams alone say too little ("买" is in many a note)."""
    words = [t for t, w in turn.items() if w >= STRONG_TERM]
    if not words:
        return 0.0
    return sum(1 for t in words if t in topic) / len(words)


def strong(terms: dict[str, float]) -> bool:
    return any(w >= STRONG_TERM for w in terms.values())


_LABEL_PUNCT = " ,.!?;:，。！？；：、"
LABEL_HEAD_MAX_CHARS = 24
"""A turn's words before a colon this short are the command ("add a note:", "记一下："), not
the subject: the label is what follows."""


def make_label(text: str, fallback: str) -> str:
    """A topic's label from the turn that opened it: its words, cut short; ``fallback``
    (the app's name) when they say nothing of their own."""
    s = " ".join((text or "").split()).strip(_LABEL_PUNCT)
    head, colon, tail = s.replace("：", ":").partition(":")
    clock = head[-1:].isdigit() and tail[:1].isdigit()  # "10:30"
    if colon and not clock and tail.strip(_LABEL_PUNCT) and len(head) <= LABEL_HEAD_MAX_CHARS:
        s = s[len(head) + 1 :].strip(_LABEL_PUNCT)  # "add a note: buy milk" is about milk
    if not s:
        return fallback
    return s if len(s) <= LABEL_MAX_CHARS else s[: LABEL_MAX_CHARS - 1] + "…"


_RESUME = (
    re.compile(
        r"^(?:我们|咱们)?(?:再)?(?P<verb>回到|回去|切回到?|返回到?|继续|接着|接回到?|再说回?)"
        r"(?P<recent>刚才|刚刚|之前|前面|上次|先前|原来)?(?:的|那个|那件|说的|聊的|做的)*"
        r"(?P<target>.*?)(?:那个|那件事|的事|的事情|的话题|话题|那边|吧|上)*$"
    ),
    re.compile(
        r"^(?:lets |let us |ok |okay |now )*(?:go |get |come |switch |jump |head )?"
        r"(?P<verb>back to|return to|resume|pick up|continue with|continue)"
        r"(?P<target>.*?)(?P<recent> (?:from )?(?:before|earlier|from a minute ago))?$"
    ),
)
_STRONG_VERBS = ("回到", "切回", "切回到", "back to", "return to")
"""Verbs that mean going back whatever follows; the others ("继续", "返回", "resume",
"continue") only with a word of before ("刚才", "earlier", "where we left off"):
"继续播放", "返回上一页", "resume the music", "continue playing" are the apps' business."""
_TARGET_FILLERS = re.compile(
    r"^(?:(?:the|my|that|this|our|what we were doing|what we were talking about|"
    r"where we were|with|on|in)\b\s*)+|\s*\b(?:thing|stuff|topic|one|bit|part|again|"
    r"where we left off|where we left it)\s*$"
)
_EN_WHAT = re.compile(r"^\s*(?:with\s+)?(?:what we|where we)\b")


_BARE = frozenset({"go back", "take me back", "回去", "我们回去", "回到刚才", "回到之前"})
"""Going back with no words of what to: the most recent paused topic."""


def _goes_back(m: re.Match[str], target: str) -> bool:
    """Whether a match of :data:`_RESUME` is a going back (see :data:`_STRONG_VERBS`)."""
    if m.group("recent"):
        return True
    if m.group("verb") in _STRONG_VERBS:
        return bool(target) or m.group("verb").isascii()  # "回到" alone says nothing
    return bool(_EN_WHAT.match(m.group("target"))) and m.group("verb").isascii()


def resume_words(said: str) -> str | None:
    """What a normalised utterance asks to go back to ("回到刚才的笔记" → "笔记", "back to
    the notes thing" → "notes", "go back" → ""), or None when it is no "back to …"."""
    if said in _BARE:
        return ""
    for pattern in _RESUME:
        m = pattern.match(said)
        if m is None:
            continue
        target = m.group("target").strip(" ,，")
        if not _goes_back(m, target):
            return None
        previous = None
        while target != previous:
            previous, target = target, _TARGET_FILLERS.sub("", target).strip(" ,，的")
        return target
    return None


# ------------------------------------------------------------------ the rules


class Tree:
    """One session's topics and the rules that move them (pure: the caller stores them)."""

    def __init__(self, session_id: str, topics: Sequence[Topic]):
        self.session_id = session_id
        self.topics: dict[str, Topic] = {t.id: t for t in topics}
        self.changed: set[str] = set()
        self.removed: set[str] = set()

    # ------------------------------------------------------------ reading

    def roots(self) -> list[Topic]:
        return [t for t in self.topics.values() if t.parent is None]

    def children(self, root: Topic) -> list[Topic]:
        return [t for t in self.topics.values() if t.parent == root.id]

    def active(self) -> Topic | None:
        """The node the user is on (a sub-topic before its root)."""
        on = [t for t in self.topics.values() if t.state == ACTIVE]
        return max(on, key=lambda t: (t.parent is not None, t.updated), default=None)

    def paused(self) -> list[Topic]:
        """Paused topics, the most recently left first (a sub-topic before its root)."""
        found = [t for t in self.topics.values() if t.state == PAUSED]
        return sorted(found, key=lambda t: (-t.updated, t.parent is None))

    def root_of(self, topic: Topic) -> Topic:
        return self.topics.get(topic.parent or "", topic)

    def public(self) -> dict[str, Any]:
        """``{session_id, active, topics: [root + children]}``, the newest root first."""
        active = self.active()
        roots = sorted(self.roots(), key=lambda t: -t.updated)
        return {
            "session_id": self.session_id,
            "active": active.id if active else None,
            "topics": [
                {
                    **r.public(),
                    "children": [
                        c.public() for c in sorted(self.children(r), key=lambda t: t.started)
                    ],
                }
                for r in roots
            ],
        }

    # ------------------------------------------------------------ changing

    def _touch(self, topic: Topic, now: float) -> None:
        topic.updated = now
        self.changed.add(topic.id)

    def activate(self, topic: Topic, now: float) -> None:
        """``topic`` (and its root) become active; whatever else was active is paused."""
        root = self.root_of(topic)
        for other in self.topics.values():
            if other.state == ACTIVE and other.id not in (topic.id, root.id):
                other.state = PAUSED
                self.changed.add(other.id)
        for node in {root.id: root, topic.id: topic}.values():
            node.state = ACTIVE
            self._touch(node, now)

    def archive(self, topic: Topic) -> None:
        """``topic`` folds away (a root with its sub-topics)."""
        nodes = [topic, *self.children(topic)] if topic.parent is None else [topic]
        for node in nodes:
            if node.state != ARCHIVED:
                node.state = ARCHIVED
                self.changed.add(node.id)

    def archive_stale(self, now: float, archive_s: float) -> None:
        if archive_s <= 0:
            return
        for topic in list(self.topics.values()):
            if topic.state != ARCHIVED and topic.updated < now - archive_s:
                self.archive(topic)

    def bound(self, most: int) -> None:
        """At most ``most`` topics: the oldest archived roots go first, then the oldest
        paused ones (each with its sub-topics); the active line stays."""
        for state in (ARCHIVED, PAUSED):
            for root in sorted(self.roots(), key=lambda t: t.updated):
                if len(self.topics) <= most:
                    return
                if root.state == state:
                    self._remove([*self.children(root), root])
            if state == PAUSED:  # paused sub-topics of the active root, oldest first
                subs = [t for t in self.topics.values() if t.parent and t.state != ACTIVE]
                for sub in sorted(subs, key=lambda t: t.updated):
                    if len(self.topics) <= most:
                        return
                    self._remove([sub])

    def _remove(self, nodes: list[Topic]) -> None:
        for node in nodes:
            self.topics.pop(node.id, None)
            self.changed.discard(node.id)
            self.removed.add(node.id)

    def _new(self, app: str, label: str, now: float, parent: Topic | None = None) -> Topic:
        topic = Topic(
            id=new_id("topic"),
            session_id=self.session_id,
            app=app,
            label=label,
            state=PAUSED,
            started=now,
            updated=now,
            parent=parent.id if parent else None,
        )
        self.topics[topic.id] = topic
        self.changed.add(topic.id)
        return topic

    def live_root(self, app: str) -> Topic | None:
        """The app's root the user may still be on or go back to (not archived)."""
        found = [t for t in self.roots() if t.app == app and t.state != ARCHIVED]
        return max(found, key=lambda t: t.updated, default=None)

    def place(self, app: str, terms: dict[str, float]) -> tuple[Topic | None, Topic | None]:
        """Where a turn of ``app`` with ``terms`` goes: ``(node, root)``; ``node`` None: a
        new sub-topic of ``root``; both None: a new root."""
        root = self.live_root(app)
        if root is None:
            return None, None
        nodes = [root, *(c for c in self.children(root) if c.state != ARCHIVED)]
        if not strong(terms):
            current = self.active()
            if current is not None and self.root_of(current).id == root.id:
                return current, root
            return max(nodes, key=lambda t: (t.updated, t.parent is not None)), root
        best = max(nodes, key=lambda t: (coverage(terms, t.terms), t.updated))
        if coverage(terms, best.terms) >= CONTINUE:
            return best, root
        if not strong(root.terms) and len(nodes) == 1:
            return root, root  # opened without words: this turn says what it is about
        return None, root

    def add_turn(
        self,
        turn: int,
        app: str,
        terms: dict[str, float],
        label: str,
        now: float,
        *,
        instance: str | None = None,
    ) -> Topic:
        """A turn routed to ``app``: continues, resumes or opens a topic (see the module)."""
        node, root = self.place(app, terms)
        if node is None:
            node = self._new(app, label, now, parent=root)
        elif node is root and not strong(root.terms) and strong(terms):
            node.label = label  # "打开记事本" opened it; "记一下买牛奶" names it
        for t, w in terms.items():
            node.terms.pop(t, None)
            node.terms[t] = w
        while len(node.terms) > TERMS_MAX:
            node.terms.pop(next(iter(node.terms)))
        node.turns = [*node.turns, turn][-TURNS_MAX:]
        if instance is not None:
            node.instance = instance
        self.activate(node, now)
        return node

    def saw(self, app: str, view: int, now: float, instance: str | None = None) -> Topic | None:
        """``app`` answered in the session (history id ``view``): the newest view of the
        topic it answered for (the active one if it is the app's, else its newest live one).
        No state changes: an opened window or a click is no turn."""
        current = self.active()
        if current is None or current.app != app:
            live = [t for t in self.topics.values() if t.app == app and t.state != ARCHIVED]
            current = max(live, key=lambda t: (t.updated, t.parent is not None), default=None)
        if current is None:
            return None
        current.view = view
        if instance is not None:
            current.instance = instance
        self.changed.add(current.id)
        return current

    def resolve(self, words: dict[str, float], app: str | None) -> list[Topic]:
        """The topics "back to …" with ``words`` (key terms) naming ``app`` (or None) may
        mean — the paused ones, and the root of the sub-topic the user is on: one, several
        that match alike (ask which), or none."""
        paused = self.paused()
        if not words and app is None:
            return paused[:1]
        current = self.active()
        if current is not None and current.parent is not None:
            paused.append(self.root_of(current))  # on a sub-topic, its root is left too
        scored: list[tuple[float, Topic]] = []
        for topic in paused:
            said = coverage(words, {**topic.terms, **key_terms(topic.label)})
            score = (1.0 if app is not None and topic.app == app else 0.0) + (
                said if said >= MATCH else 0.0
            )
            if score > 0:
                scored.append((score, topic))
        if not scored:
            return []
        top = max(s for s, _ in scored)
        best = [t for s, t in scored if s >= top - 1e-9]
        lines: dict[str, list[Topic]] = {}
        for topic in best:
            lines.setdefault(self.root_of(topic).id, []).append(topic)
        # in one line of talk, where the user left it (its sub-topic, on a tie with the root)
        picks = [
            max(found, key=lambda t: (t.updated, t.parent is not None)) for found in lines.values()
        ]
        return sorted(picks, key=lambda t: -t.updated)


# ------------------------------------------------------------------ the store


class TopicTree:
    """Each session's :class:`Tree`, kept in the store, announced on the bus (``topics``)."""

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        settings: Callable[[], Config],
        clock: Callable[[], float] = time.time,
    ):
        self.store = store
        self.bus = bus
        self._settings = settings
        self._clock = clock
        self._lock = threading.Lock()

    def _load(self, sid: str) -> Tree:
        tree = Tree(sid, [Topic.from_row(r) for r in self.store.topics(sid)])
        duplex = self._settings().duplex
        tree.archive_stale(self._clock(), duplex.topic_archive_s)
        return tree

    def _save(self, tree: Tree) -> None:
        tree.bound(self._settings().duplex.topics_max)
        if not tree.changed and not tree.removed:
            return
        rows = [tree.topics[i].row() for i in sorted(tree.changed) if i in tree.topics]
        self.store.save_topics(rows, sorted(tree.removed))
        active = tree.active()
        self.bus.emit(
            "topics",
            {"session_id": tree.session_id, "active": active.id if active else None},
        )
        tree.changed.clear()
        tree.removed.clear()

    def tree(self, sid: str) -> dict[str, Any]:
        """The session's tree as the API shows it (stale topics archived first)."""
        with self._lock:
            tree = self._load(sid)
            self._save(tree)
            return tree.public()

    def paused(self, sid: str) -> list[Topic]:
        with self._lock:
            tree = self._load(sid)
            self._save(tree)
            return tree.paused()

    def recent(self, sid: str) -> Topic | None:
        """What the session was last about: the topic left most recently, else the one it
        is on (the thinker's idle remark brings it up)."""
        with self._lock:
            tree = self._load(sid)
            self._save(tree)
            return next(iter(tree.paused()), None) or tree.active()

    def turn(
        self,
        sid: str,
        turn: int,
        text: str,
        app: str,
        *,
        fallback_label: str,
        app_words: Iterable[str] = (),
        instance: str | None = None,
    ) -> Topic:
        """A user's turn (history id ``turn``) routed to ``app``: the topic it went to."""
        terms = key_terms(text, app_words)
        label = make_label(text, fallback_label) if strong(terms) else fallback_label
        with self._lock:
            tree = self._load(sid)
            topic = tree.add_turn(turn, app, terms, label, self._clock(), instance=instance)
            self._save(tree)
            return topic

    def saw(self, sid: str, app: str, view: int, instance: str | None = None) -> None:
        with self._lock:
            tree = self._load(sid)
            tree.saw(app, view, self._clock(), instance)
            self._save(tree)

    def resolve(self, sid: str, words: dict[str, float], app: str | None) -> list[Topic]:
        with self._lock:
            tree = self._load(sid)
            self._save(tree)
            return tree.resolve(words, app)

    def _get(self, tree: Tree, topic_id: str) -> Topic:
        topic = tree.topics.get(topic_id)
        if topic is None:
            raise NotFound(f"no topic {topic_id!r} in session {tree.session_id!r}")
        return topic

    def get(self, sid: str, topic_id: str) -> Topic:
        """The session's topic ``topic_id``; NotFound naming it."""
        with self._lock:
            return self._get(self._load(sid), topic_id)

    def resume(self, sid: str, topic_id: str, turn: int | None = None) -> Topic:
        """``topic_id`` becomes active (an archived one comes back); NotFound naming it."""
        with self._lock:
            tree = self._load(sid)
            topic = self._get(tree, topic_id)
            if turn is not None:
                topic.turns = [*topic.turns, turn][-TURNS_MAX:]
            tree.activate(topic, self._clock())
            self._save(tree)
            return topic

    def relabel(self, sid: str, labels: dict[str, str]) -> dict[str, str]:
        """The model's ``labels`` (topic id -> label) replace the rules' ones; those kept
        (a topic gone meanwhile is skipped)."""
        with self._lock:
            tree = self._load(sid)
            kept = {}
            for topic_id, label in labels.items():
                topic = tree.topics.get(topic_id)
                if topic is None or not label:
                    continue
                topic.label, topic.labelled_by = label, "llm"
                tree.changed.add(topic_id)
                kept[topic_id] = label
            self._save(tree)
            return kept

    def archive(self, sid: str, topic_id: str) -> Topic:
        """``topic_id`` (with its sub-topics) is archived; NotFound naming it."""
        with self._lock:
            tree = self._load(sid)
            topic = self._get(tree, topic_id)
            tree.archive(topic)
            self._save(tree)
            return topic
