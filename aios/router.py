"""Offline (no-LLM) intent router: split a compound instruction, score apps by their text.

Without a language model the controller still has to pick apps (DESIGN §9.1).
Each app is described by its manifest text; an instruction is split into
clauses ("然后", "再", "and then" …) and each clause goes to the app whose
text it matches best.

Scoring, per clause:

- Chinese runs give character bigrams (weight 1) and unigrams (weight 0.3);
  Latin words are lowercased, stop-words dropped and lightly stemmed
  (``notes`` → ``note``, ``playing`` → ``play``), so mixed text such as
  "看看系统CPU占用" yields both kinds.
- An app's terms come from its id and keywords and name (field weight 1.0),
  description (0.6) and role prompt (0.4); a term keeps its best field weight
  only, so a long role prompt repeating a word gains nothing.
- Each matched term also counts by how specific it is across the installed
  apps (an IDF factor in (0, 1]): a word every app mentions, like "打开",
  decides little.
- The sum is divided by the clause's own total weight, so the score is the
  share of the clause explained by the app: apps with long texts match more
  words but cannot outscore a short app that matches the clause's key words.
- Naming an app ("打开记事本", "open notes") picks it outright.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

logger = logging.getLogger(__name__)

# ------------------------------------------------------------------ models


class Task(BaseModel):
    """One node of the task DAG the controller dispatches."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    app: str = Field(min_length=1)
    instruction: str = Field(min_length=1)
    depends_on: list[str] = Field(default_factory=list)
    alternatives: list[str] = Field(default_factory=list, exclude=True)
    """Other apps the offline router found too close to call: the controller asks the user
    to choose between ``app`` and these before the task runs (DESIGN §13)."""


NEAR_TIE = 0.9
"""A score within this fraction of the best counts as a tie (see OfflineRouter.prefer)."""


@dataclass
class AppProfile:
    """What the router and the planner know about an app: its manifest text."""

    id: str
    name: str
    description: str = ""
    keywords: list[str] = field(default_factory=list)
    role_prompt: str = ""
    installed: int = 0
    """Install order: on a tie (same score, same name) the app installed first wins."""
    other_names: tuple[str, ...] = ()
    other_descriptions: tuple[str, ...] = ()
    """The other UI languages' name and description (manifests per locale): scored too."""

    @property
    def all_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for n in (self.name, *self.other_names) if n))

    @classmethod
    def from_manifest(
        cls, app_id: str, manifest: Any, role_prompt: str | None = None
    ) -> AppProfile:
        """Build from an ``aios.protocol.Manifest`` (``role.md`` text may be passed in)."""
        return cls(
            id=app_id,
            name=manifest.name,
            description=manifest.description or "",
            keywords=list(manifest.keywords or []),
            role_prompt=role_prompt or manifest.role_prompt or "",
            other_names=tuple(getattr(manifest, "names", {}).values()),
            other_descriptions=tuple(getattr(manifest, "descriptions", {}).values()),
        )


# ------------------------------------------------------------- splitting

# "再" splits only after a separator or in "先…再…"; these words keep their "再".
_ZAI_WORDS = ("再见", "再会", "再说", "再次", "再一次", "再来一")
_CLAUSE_PUNCT = "，,、；;。.…！!？? \t\n"

_SPLIT_RE = re.compile(
    r"""
      \s*[;；。！!？?]+\s*                           # sentence / clause enders
    | (?<=[A-Za-z0-9])\.\s+(?=[A-Za-z])              # English sentence end
    | [，,、\s]*(?:然后|接着|随后|并且)再?            # Chinese sequencers (然后再 …)
    | [，,、]\s*(?:之后|以后)再?                     # "，之后…" (not "五分钟之后")
    | [，,、\s]\s*再(?!KEEP)                        # "，再播放…"
    | \s*,?\s*\b(?:and\s+then|and\s+also|after\s+that|afterwards|then)\b\s*,?\s*
    """.replace("KEEP", "|".join(w[1:] for w in _ZAI_WORDS)),
    re.VERBOSE | re.IGNORECASE,
)


def _split_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each clause in ``text``, separators excluded, empty clauses dropped."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SPLIT_RE.finditer(text):
        # A sequencer at the very start ("接着播放") means "continue", not a new clause.
        if not text[pos : m.start()].strip(_CLAUSE_PUNCT):
            if not spans:
                continue
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    spans = [_strip_span(text, s, e) for s, e in spans]
    spans = [(s, e) for s, e in spans if e > s]
    return _split_xian_zai(text, spans)


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in _CLAUSE_PUNCT:
        start += 1
    while end > start and text[end - 1] in _CLAUSE_PUNCT:
        end -= 1
    return start, end


def _split_xian_zai(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """ "先打开记事本再播放音乐": "先 A 再 B" is two steps even without a comma."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        clause = text[s:e]
        i = clause.find("再", 2)
        if clause.startswith("先") and i > 1 and not clause.startswith(_ZAI_WORDS, i):
            out.append(_strip_span(text, s + 1, s + i))
            out.append(_strip_span(text, s + i + 1, e))
        else:
            out.append((s, e))
    return [(s, e) for s, e in out if e > s]


def split_instruction(text: str) -> list[str]:
    """Split a compound instruction into its clauses, in order.

    >>> split_instruction("打开记事本然后播放音乐")
    ['打开记事本', '播放音乐']
    >>> split_instruction("再说一次")
    ['再说一次']
    """
    return [text[s:e] for s, e in _split_spans(text or "")]


# ------------------------------------------------------------ tokenising

_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORD = re.compile(r"[a-z0-9]+(?:[+#][a-z0-9+#]*)?", re.IGNORECASE)

UNIGRAM_WEIGHT = 0.3
FIELD_WEIGHTS = {"name": 1.0, "keywords": 1.0, "id": 1.0, "description": 0.6, "role": 0.4}
MAX_CHOICES = 3
"""At most this many apps are offered when the router cannot tell which one is meant."""
MIN_SCORE = 0.08
"""Below this share of the clause's weight an app is not a match."""
NAME_BONUS = 0.5
"""Mentioning an app's name (or id) anywhere in the clause."""

_CN_STOP_UNIGRAMS = frozenset(
    "的了我你他她它们帮把一个下是在和与吗呢吧啊请给让要想能可以这那些就也都很还有么"
)
_CN_STOP_BIGRAMS = frozenset(
    {
        "帮我",
        "给我",
        "请你",
        "一下",
        "一个",
        "我的",
        "我想",
        "我要",
        "可以",
        "能不",
        "不能",
        "这个",
        "那个",
        "一些",
        "你是",
        "负责",
        "用户",
        "你可",
        "小a",
        "应用",
    }
)
_EN_STOP = frozenset(
    """
a an the some any me my mine i you your we our us it its this that these those please
to for of in on at by with from and or but then also can could would will should shall
do does did is are was were be been am what which who whom how let lets just now up app
application want need like get give tell about some kindly hey hi
""".split()
)

_OPEN_CN = re.compile(
    r"^(?:请|帮我|麻烦)?(?:打开|启动|运行|开启|进入|切换到)(?:一下)?"
    r"(.+?)(?:应用|程序|app)?$",
    re.IGNORECASE,
)
_OPEN_EN = re.compile(
    r"^(?:please\s+)?(?:open|launch|start|run|show)\s+(?:the\s+|my\s+)?"
    r"(.+?)(?:\s+app(?:lication)?)?$",
    re.IGNORECASE,
)


def _stem(word: str) -> str:
    """A tiny stemmer: plural -s/-ies/-es, -ing, -ed. Enough to match "notes" and "note"."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
        return w[:-1] if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls" else w
    if len(w) > 4 and w.endswith("ed") and not w.endswith("eed"):
        w = w[:-2]
        return w[:-1] if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls" else w
    if len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def tokenize(text: str) -> dict[str, float]:
    """Terms of ``text`` with their weights (bigram 1, unigram 0.3, word 1)."""
    terms: dict[str, float] = {}
    lowered = (text or "").lower()
    for run in _CJK_RUN.findall(lowered):
        for ch in run:
            if ch not in _CN_STOP_UNIGRAMS:
                terms[ch] = max(terms.get(ch, 0.0), UNIGRAM_WEIGHT)
        for i in range(len(run) - 1):
            bg = run[i : i + 2]
            if bg not in _CN_STOP_BIGRAMS:
                terms[bg] = 1.0
    for word in _WORD.findall(lowered):
        if word in _EN_STOP or (len(word) < 2 and not word.isdigit()):
            continue
        terms[_stem(word)] = 1.0
    return terms


# --------------------------------------------------------------- routing


def _norm_name(s: str) -> str:
    s = re.sub(r"[\s_\-]+", "", (s or "").lower())
    for suffix in ("应用", "程序", "application", "app"):
        if len(s) > len(suffix) and s.endswith(suffix):
            s = s[: -len(suffix)]
    return s


class OfflineRouter:
    """Routes instructions to apps by their manifest text (no network, deterministic)."""

    def __init__(self, apps: list[AppProfile], *, prefer: str | None = None):
        """``prefer``: the app the session used last; it wins near-ties ("搜索 牛奶"
        right after using notes means notes, not music)."""
        self.prefer = prefer
        # Stable: equal install orders keep the caller's order. Every "first app that
        # matches" below is then the one installed first (an app cannot take over a name).
        self.apps = sorted(apps, key=lambda a: a.installed)
        self._rank = {a.id: (a.installed, a.id) for a in self.apps}
        self._terms: dict[str, dict[str, float]] = {a.id: self._app_terms(a) for a in self.apps}
        df: dict[str, int] = {}
        for terms in self._terms.values():
            for t in terms:
                df[t] = df.get(t, 0) + 1
        n = max(1, len(self.apps))
        top = math.log(1 + n)
        # In (0, 1]: 1 for a term only one app has; log 2 / log(1+n) for one every app has.
        self._idf = {t: math.log(1 + n / c) / top for t, c in df.items()}
        self._names: dict[str, set[str]] = {a.id: self._app_names(a) for a in self.apps}
        # A one-character keyword ("记", "歌", "算") is the author saying that character
        # alone is telling, so it counts like a word instead of a weak unigram.
        self._key_chars: dict[str, set[str]] = {
            a.id: {
                k.strip().lower()
                for k in a.keywords
                if len(k.strip()) == 1 and _CJK_RUN.fullmatch(k.strip())
            }
            for a in self.apps
        }

    @staticmethod
    def _app_terms(app: AppProfile) -> dict[str, float]:
        fields = [
            ("id", app.id.replace("_", " ")),
            ("name", " ".join(app.all_names)),
            ("keywords", " ".join(app.keywords)),
            ("description", " ".join(dict.fromkeys((app.description, *app.other_descriptions)))),
            ("role", app.role_prompt),
        ]
        out: dict[str, float] = {}
        for fname, text in fields:
            fw = FIELD_WEIGHTS[fname]
            for term in tokenize(text):
                out[term] = max(out.get(term, 0.0), fw)
        return out

    @staticmethod
    def _app_names(app: AppProfile) -> set[str]:
        names = {_norm_name(app.id), *(_norm_name(n) for n in app.all_names)}
        names.update(
            _norm_name(p) for p in app.id.split("_") if len(p) > 2 and p not in ("app", "agent")
        )
        names.update(_norm_name(k) for k in app.keywords)
        return {n for n in names if n}

    # ------------------------------------------------------------ scoring

    def _opened_app(self, clause: str) -> str | None:
        """ "打开记事本" / "open notes": the app named exactly, if any."""
        text = clause.strip().strip(_CLAUSE_PUNCT)
        m = _OPEN_CN.match(text) or _OPEN_EN.match(text)
        if not m:
            return None
        target = _norm_name(m.group(1))
        stemmed = _norm_name(" ".join(_stem(w) for w in m.group(1).split()))
        for app in self.apps:  # names and ids first, then keywords
            primary = {_norm_name(app.id), *(_norm_name(n) for n in app.all_names)}
            if (
                target in primary
                or stemmed in primary
                or {target, stemmed} & {_norm_name(_stem(app.id))}
            ):
                return app.id
        for app in self.apps:
            if target in self._names[app.id] or stemmed in self._names[app.id]:
                return app.id
        return None

    def _addressed_app(self, clause: str) -> str | None:
        """ "files preview hello.txt" / "记事本 搜索牛奶": a clause that starts with an
        app's id or name is addressed to that app, whatever words follow."""
        text = clause.strip().strip(_CLAUSE_PUNCT).lower()
        best: tuple[int, str] | None = None
        for app in self.apps:
            for name in {app.id.lower(), *(n.lower() for n in app.all_names)}:
                if len(name) < 2 or not text.startswith(name):
                    continue
                rest = text[len(name) : len(name) + 1]
                if name.isascii() and rest and (rest.isalnum() or rest == "_"):
                    continue  # "filesystem" does not address "files"
                if best is None or len(name) > best[0]:
                    best = (len(name), app.id)
        return best[1] if best else None

    def score(self, text: str) -> list[tuple[str, float]]:
        """(app id, score) for every app with a positive score, best first."""
        query = tokenize(text)
        total = sum(query.values())
        if not total:
            return []
        flat = _norm_name(text)
        scores: list[tuple[str, float]] = []
        for app in self.apps:
            terms, keys = self._terms[app.id], self._key_chars[app.id]
            matched = sum(
                (1.0 if t in keys else w) * terms[t] * self._idf[t]
                for t, w in query.items()
                if t in terms
            )
            score = matched / total
            names = (*(_norm_name(n) for n in app.all_names), _norm_name(app.id))
            if any(len(n) >= 2 and n in flat for n in names):
                score += NAME_BONUS
            if score > 0:
                scores.append((app.id, round(score, 4)))
        scores.sort(key=lambda p: (-p[1], self._rank[p[0]]))
        return scores

    def best(self, clause: str) -> tuple[str, float] | None:
        """The app for one clause, or None when nothing matches well enough."""
        opened = self._opened_app(clause) or self._addressed_app(clause)
        if opened:
            return opened, 1.0 + NAME_BONUS
        query = tokenize(clause)
        scores = self.score(clause)
        if not scores or scores[0][1] < MIN_SCORE:
            return None
        app_id, score = scores[0]
        if self.prefer and self.prefer != app_id:
            near = dict(scores).get(self.prefer, 0.0)
            if near >= score * NEAR_TIE:
                app_id, score = self.prefer, near
        # Unigrams alone ("歌" in "你好歌") are too weak to decide; require a word or bigram.
        strong = [
            t
            for t, w in query.items()
            if t in self._terms[app_id] and (w >= 1.0 or t in self._key_chars[app_id])
        ]
        if not strong and score < NAME_BONUS:
            return None
        return app_id, score

    def close_call(self, clause: str) -> list[str]:
        """Apps that score too close to the best one for ``clause`` to call (best excluded).

        Nothing when the clause names its app, when the session's last app
        decided a near-tie, or when the rivals share the best one's display
        name (then the app installed first keeps it, DESIGN §11).
        """
        if self._opened_app(clause) or self._addressed_app(clause):
            return []
        pick = self.best(clause)
        if pick is None or pick[0] == self.prefer:
            return []
        scores = self.score(clause)
        top = dict(scores).get(pick[0], 0.0)
        names = {a.id: _norm_name(a.name) for a in self.apps}
        return [
            app_id
            for app_id, score in scores
            if app_id != pick[0]
            and score >= max(MIN_SCORE, top * NEAR_TIE)
            and names.get(app_id) != names.get(pick[0])
        ][: MAX_CHOICES - 1]

    def route(self, text: str) -> list[Task]:
        """Tasks for ``text``: one per run of clauses routed to the same app, in order.

        A clause that matches nothing stays with its neighbour's task (it usually
        continues it: "打开记事本并且写下购物清单"); consecutive clauses for the
        same app become one task holding the user's original words. Each task
        depends on the previous one, since "然后" means order. Nothing matched → [].
        """
        spans = _split_spans(text or "")
        picks = [(s, e, self.best(text[s:e])) for s, e in spans]
        if not any(p for _, _, p in picks):
            return []
        groups: list[list[Any]] = []  # [start, end, app]
        pending_start: int | None = None
        for s, e, pick in picks:
            if pick is None:
                if groups:
                    groups[-1][1] = e
                elif pending_start is None:
                    pending_start = s
                continue
            app_id = pick[0]
            if groups and groups[-1][2] == app_id:
                groups[-1][1] = e
            else:
                start = pending_start if pending_start is not None and not groups else s
                groups.append([start, e, app_id])
            pending_start = None
        tasks: list[Task] = []
        for i, (s, e, app_id) in enumerate(groups, start=1):
            deps = [tasks[-1].id] if tasks else []
            clause = text[s:e].strip()
            tasks.append(
                Task(
                    id=f"t{i}",
                    app=app_id,
                    instruction=clause,
                    depends_on=deps,
                    alternatives=self.close_call(clause),
                )
            )
        logger.debug("offline route %r -> %s", text, [(t.id, t.app) for t in tasks])
        return tasks
