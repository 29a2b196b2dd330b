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
- An app's terms come from its id, name and keywords (field weight
  :data:`STRONG_WEIGHT`), its ``examples`` (sample utterances,
  :data:`EXAMPLE_WEIGHT`), its description (:data:`DESCRIPTION_WEIGHT`) and
  role prompt (:data:`ROLE_WEIGHT`); a term keeps its best field weight only,
  so a long role prompt repeating a word gains nothing, and a word that only
  describes the app's data ("明天" in a weather app's description) weighs
  less than a keyword or an example that uses it.
- Each example is also compared with the clause as a whole (a Dice
  similarity of their terms: character bigrams for Chinese, stemmed words for
  English); the best example adds :data:`EXAMPLE_MATCH_WEIGHT` times that
  similarity, so an instruction phrased like one of the app's own examples
  wins even when its words are common.
- Each matched term also counts by how specific it is across the installed
  apps (an IDF factor in (0, 1]): a word every app mentions, like "打开",
  decides little.
- The sum is divided by the clause's own total weight, so the score is the
  share of the clause explained by the app: apps with long texts match more
  words but cannot outscore a short app that matches the clause's key words.
- Naming an app ("打开记事本", "open notes") picks it outright.

Clauses are independent tasks (``depends_on`` empty) unless a later clause
says it uses an earlier one's result ("然后用它…", "把结果…", "and use that
to…", "with the result"): then it depends on the task before it. Each task
carries :attr:`Task.routed`, what the app receives as ``context["routed"]``:
its part of the instruction with the routing words (the app's name, "打开",
"用 X") stripped, the words the router matched, the score and the source.

``OfflineRouter(apps, mode="baseline")`` is the router before examples,
weights and independence (name/keywords 1.0, description 0.6, role 0.4,
every clause chained): ``bench/bench_routing.py`` measures against it.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

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
    routed: dict[str, Any] | None = Field(default=None, exclude=True)
    """What the app gets as ``context["routed"]``: ``{text, matched, score, source}``
    (see :func:`routed_info`); None for a task the router did not make (an LLM plan)."""


RoutedSource = Literal["offline", "llm", "system"]


def routed_as(text: str, source: RoutedSource, score: float = 1.0) -> dict[str, Any]:
    """``context["routed"]`` for a task the offline router did not make: an LLM's task (its
    instruction is already the app's part) or the system's own (undo / reset)."""
    return {"text": text, "matched": [], "score": score, "source": source}


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
    examples: tuple[str, ...] = ()
    """Sample utterances from the manifest (every locale's): scored like keywords, and
    each compared with the whole instruction."""

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
            examples=manifest_examples(manifest),
        )


def manifest_examples(manifest: Any) -> tuple[str, ...]:
    """Every locale's ``examples`` of an ``aios.protocol.Manifest``, once each, in order."""
    given = getattr(manifest, "examples", None) or {}
    lists = given.values() if isinstance(given, dict) else [given]
    return tuple(dict.fromkeys(e for es in lists for e in es if isinstance(e, str) and e.strip()))


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
    | \s*,?\s*\band\s+(?=(?:use|save|put|send|write|copy|note|add)\s+(?:it|that|them|the\s+))
    | 并(?=把|用它|将)                                # "…并把结果记下来"
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
_HYPHEN = re.compile(r"\b([a-z]+)-([a-z]+)\b")
"""'to-do', 'e-mail': one word ('todo', 'email'), not two stop-words."""
_DATA = re.compile(
    r"'[^']*'|\"[^\"]*\"|“[^”]*”|‘[^’]*’|「[^」]*」|《[^》]*》|[\w\-]+\.[a-z0-9]{1,5}\b",
    re.IGNORECASE,
)
"""Quoted text and file names are the task's data ("print('hello')", "hello.txt"), not
an app's name or keyword: they do not count for :data:`NAME_BONUS` or keyword phrases."""
_WORD = re.compile(r"[a-z0-9]+(?:[+#][a-z0-9+#]*)?", re.IGNORECASE)

UNIGRAM_WEIGHT = 0.3
STRONG_WEIGHT = 1.0
"""Field weight of a term from the app's id, name or keywords: the author's own routing words."""
EXAMPLE_WEIGHT = 0.8
"""Field weight of a term from the app's ``examples`` (what users say to it)."""
DESCRIPTION_WEIGHT = 0.3
"""Field weight of a term found only in the description: it describes the app's data
("明天" in a weather app's description), so it counts for less than a keyword."""
ROLE_WEIGHT = 0.2
"""Field weight of a term found only in the role prompt (written for the model, not routing)."""
FIELD_WEIGHTS = {
    "name": STRONG_WEIGHT,
    "keywords": STRONG_WEIGHT,
    "id": STRONG_WEIGHT,
    "examples": EXAMPLE_WEIGHT,
    "description": DESCRIPTION_WEIGHT,
    "role": ROLE_WEIGHT,
}
BASELINE_WEIGHTS = {
    "name": 1.0,
    "keywords": 1.0,
    "id": 1.0,
    "examples": 0.0,
    "description": 0.6,
    "role": 0.4,
}
"""The weights before examples were scored (``mode="baseline"``, for the benchmark)."""
EXAMPLE_MATCH_WEIGHT = 0.5
"""Added times the best example's similarity to the clause (Dice of their terms, in [0, 1])."""
EXAMPLE_LEAD_WEIGHT = 0.5
"""Added times the share of the clause in the words it starts with like one of
the app's examples ("记一下…" and the example "记一下周五交报告", "remind me to…"): an
instruction leads with what it asks, the rest is its data ("明天下午开会")."""
EXAMPLE_MATCH_MIN = 0.3
"""An example counts (and is listed in ``routed["matched"]``) from this similarity on."""
DECIDING_WEIGHT = DESCRIPTION_WEIGHT
"""A clause goes to an app only when one of its words or bigrams is in a field weighing at
least this: words the app knows only from its role prompt ("好的" in "友好的") do not decide."""
MAX_CHOICES = 3
"""At most this many apps are offered when the router cannot tell which one is meant."""
MIN_SCORE = 0.08
"""Below this share of the clause's weight an app is not a match."""
NAME_BONUS = 0.5
"""Mentioning an app's name (or id) anywhere in the clause."""
KEYWORD_PHRASE_WEIGHT = 0.5
"""Added times the share of the clause (characters) that the app's keywords of two or more
characters cover verbatim: "记一下" is the author's phrase, more than its bigrams."""

_CN_STOP_UNIGRAMS = frozenset(
    "的了我你他她它们帮把一个下是在和与吗呢吧啊请给让要想能可以这那些就也都很还有么"
)
CN_FUNCTION_CHARS = _CN_STOP_UNIGRAMS
"""Chinese characters that carry no subject ("的", "了", "把"): a bigram holding one says
little of what a turn is about (aios/control/topics.py drops it)."""
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


_FILE_NAME = re.compile(
    r"(?<![\w.])[\w\-\u4e00-\u9fff]+\.(?:"
    r"txt|md|markdown|csv|tsv|json|jsonl|log|ya?ml|toml|ini|cfg|conf|xml|html?|css|js|ts|py|sh"
    r"|c|cpp|h|java|go|rs|rb|sql|db|sqlite|pdf|docx?|xlsx?|pptx?|odt|rtf"
    r"|png|jpe?g|gif|svg|webp|bmp|mp3|wav|flac|ogg|m4a|mp4|mov|mkv|zip|tar|gz|7z)(?![\w.])",
    re.IGNORECASE,
)
"""A file name with an extension people use ("junk.log", "菜谱.txt"): the clause is about a
file whatever verb it uses, so the name counts as the word "file" / "文件", not as its parts."""


_CONTENT = re.compile(
    r"(?:\b(?:with|containing|that says|saying)\s+(?:the\s+)?(?:text|content|contents|words?|line)"
    r"\b|\b(?:that says|saying)\b|内容(?:是|为)|写(?:入|上|着))[\s:：]*\S.*$",
    re.IGNORECASE | re.DOTALL,
)
"""Where the words to write start ("… with the text hello world", "… 内容是你好"): what
follows is the user's data, not words about which app ("hello world" is not the Hello app)."""


def routing_text(text: str) -> str:
    """What the router reads of ``text``: the contents to write dropped, and a file name as
    the word "file" ("文件" in a Chinese clause) instead of its own words ("delete junk.log"
    is about a file, not about junk or logs)."""
    said = _CONTENT.sub(" ", text or "")
    if not _FILE_NAME.search(said):
        return said
    word = " 文件 " if _CJK_RUN.search(_FILE_NAME.sub(" ", said)) else " file "
    return _FILE_NAME.sub(word, said)


def query_terms(text: str) -> dict[str, float]:
    """:func:`tokenize` of :func:`routing_text`."""
    return tokenize(routing_text(text))


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
    for word in _WORD.findall(_HYPHEN.sub(r"\1\2", lowered)):
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


RouterMode = Literal["default", "baseline"]
"""``default``: examples, field weights, independent clauses; ``baseline``: the router as it
was before them (for ``bench/bench_routing.py``)."""

# A later clause that refers to an earlier one's result depends on it.
_DEPENDS_CN = re.compile(
    r"它|结果|根据|据此|基于|上面的|上一步|刚才的|前面的|得到的|输出|把这|把那|这些|那些"
    r"|(?:记|存|保存|写|抄|录)下来"
)
_DEPENDS_EN = re.compile(
    r"\b(?:it|them|its|(?:use|using|with|from|save|send|note|write|put|add|copy)\s+"
    r"(?:that|this|those|these)|the\s+(?:results?|output|answer|outcome)|based\s+on"
    r"|accordingly)\b",
    re.IGNORECASE,
)


def refers_back(clause: str) -> bool:
    """Whether ``clause`` uses an earlier step's result ("然后用它…", "and use that to…")."""
    return bool(_DEPENDS_CN.search(clause) or _DEPENDS_EN.search(clause))


_POLITE_CN = r"(?:请|帮我|麻烦|给我)?\s*"
_VERB_CN = r"打开|启动|运行|使用|用|让|叫|在|通过|去"
_TAIL_CN = (
    r"\s*(?:应用|程序|app)?\s*(?:里面|里|中|上)?\s*(?:来|去|帮我|给我|并且|然后|并|，|,|:|：|\s)*"
)
_POLITE_EN = r"(?:please\s+)?"
_VERB_EN = r"(?:open|launch|start|use|using|with|in|ask|tell)\s+"
_ARTICLE_EN = r"(?:the\s+|my\s+)?"
_TAIL_EN = (
    r"(?:\s+app(?:lication)?)?(?:\s*[,:，：]\s*|\s+|(?=[^\x00-\x7f]))(?:(?:and|to|please)\s+)?"
)
_TRAIL_CN = r"(?:，|,|\s)*(?:用|在|使用|通过)\s*{name}\s*(?:应用|程序|app)?\s*(?:里面|里|中|上)?$"
_TRAIL_EN = r"(?:,|\s)+(?:in|with|using|on)\s+(?:the\s+|my\s+)?{name}(?:\s+app(?:lication)?)?$"


def _contains_word(text: str, word: str) -> bool:
    """``word`` in ``text`` (both lower case): a substring for Chinese, whole words else."""
    if not word:
        return False
    if not word.isascii():
        return word in text
    return re.search(r"(?<![a-z0-9])" + re.escape(word) + r"(?![a-z0-9]{3,})", text) is not None


_POLITE_LEAD = re.compile(
    r"^(?:请问|请你|请|麻烦你|麻烦|你帮我|帮我|给我|能不能|可以|please\s+|can\s+you\s+|could\s+you\s+)+",
    re.IGNORECASE,
)
LEAD_MIN_CJK = 2
"""A common start of fewer Chinese characters than this ("记") is chance, not a phrase."""


def _lead_text(text: str) -> str:
    return _POLITE_LEAD.sub("", (text or "").strip().lower()).strip()


def _common_lead(a: str, b: str) -> str:
    """The start ``a`` and ``b`` share: whole words for Latin text, characters for Chinese."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    lead = a[:n]
    if n < len(a) and n < len(b) and lead[-1:].isascii() and lead[-1:].isalnum():
        lead = lead[: max(lead.rfind(" "), 0)]  # an English word cut in half does not count
    lead = lead.strip()
    if not lead:
        return ""
    if not lead.isascii() and len(_CJK_RUN.sub("", lead)) == 0 and len(lead) < LEAD_MIN_CJK:
        return ""
    return lead


def _dice(a: dict[str, float], b: dict[str, float], idf: dict[str, float]) -> float:
    """Dice similarity of two term bags, each term weighted by how specific it is, in [0, 1]:
    sharing "show" with an example says less than sharing "memo"."""
    both = sum(min(w, b[t]) * idf.get(t, 1.0) for t, w in a.items() if t in b)
    total = sum(w * idf.get(t, 1.0) for bag in (a, b) for t, w in bag.items())
    return 2 * both / total if total else 0.0


PROFILE_CACHE = 256
"""App profiles whose terms are kept: the controller builds a router per instruction."""

_ProfileKey = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...], str]


def _profile_key(app: AppProfile) -> _ProfileKey:
    descriptions = tuple(dict.fromkeys((app.description, *app.other_descriptions)))
    return (app.id, app.all_names, tuple(app.keywords), app.examples, descriptions, app.role_prompt)


@lru_cache(maxsize=PROFILE_CACHE)
def _profile_terms(key: _ProfileKey, mode: RouterMode) -> dict[str, float]:
    """An app's terms, each with its best field weight (see the module docstring)."""
    app_id, names, keywords, examples, descriptions, role = key
    weights = BASELINE_WEIGHTS if mode == "baseline" else FIELD_WEIGHTS
    fields = [
        ("id", app_id.replace("_", " ")),
        ("name", " ".join(names)),
        ("keywords", " ".join(keywords)),
        ("examples", " ".join(examples)),
        ("description", " ".join(descriptions)),
        ("role", role),
    ]
    out: dict[str, float] = {}
    for fname, text in fields:
        fw = weights[fname]
        if fw <= 0:
            continue
        for term in tokenize(text):
            out[term] = max(out.get(term, 0.0), fw)
    return out


@lru_cache(maxsize=PROFILE_CACHE)
def _profile_names(
    app_id: str, names: tuple[str, ...], keywords: tuple[str, ...]
) -> frozenset[str]:
    """Every spelling that names the app: id (and its parts), names, keywords; normalised."""
    out = {_norm_name(app_id), *(_norm_name(n) for n in names)}
    out.update(_norm_name(p) for p in app_id.split("_") if len(p) > 2 and p not in ("app", "agent"))
    out.update(_norm_name(k) for k in keywords)
    return frozenset(n for n in out if n)


@lru_cache(maxsize=PROFILE_CACHE)
def _example_terms(examples: tuple[str, ...]) -> tuple[tuple[str, dict[str, float]], ...]:
    return tuple((e, tokenize(e)) for e in examples)


@lru_cache(maxsize=PROFILE_CACHE)
def _idf(keys: tuple[_ProfileKey, ...], mode: RouterMode) -> dict[str, float]:
    """How specific each term is across the installed apps, in (0, 1]: 1 for a term only one
    app has, log 2 / log(1+n) for one every app has."""
    df: dict[str, int] = {}
    for key in keys:
        for t in _profile_terms(key, mode):
            df[t] = df.get(t, 0) + 1
    n = max(1, len(keys))
    top = math.log(1 + n)
    return {t: math.log(1 + n / c) / top for t, c in df.items()}


@lru_cache(maxsize=PROFILE_CACHE * 8)
def _routing_patterns(name: str, verb_needed: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The patterns that find ``name`` used to pick its app, leading and trailing a clause
    (compiled once: :meth:`OfflineRouter.strip_routing` runs for every routed task)."""
    esc = re.escape(name)
    if name.isascii():
        # an English name after a Chinese verb too: "用 Memo 记录 …"
        verb = f"(?:{_VERB_EN}|(?:{_VERB_CN})\\s*)" + ("" if verb_needed else "?")
        lead = re.compile(
            f"(?:{_POLITE_EN}|{_POLITE_CN})"
            + verb
            + _ARTICLE_EN
            + esc
            + r"(?![a-z0-9])"
            + _TAIL_EN,
            re.IGNORECASE,
        )
        trail = re.compile(_TRAIL_EN.format(name=esc), re.IGNORECASE)
    else:
        verb = f"(?:{_VERB_CN})" if verb_needed else f"(?:{_VERB_CN})?"
        lead = re.compile(_POLITE_CN + verb + r"\s*" + esc + _TAIL_CN, re.IGNORECASE)
        trail = re.compile(_TRAIL_CN.format(name=esc), re.IGNORECASE)
    return lead, trail


class OfflineRouter:
    """Routes instructions to apps by their manifest text (no network, deterministic)."""

    def __init__(
        self, apps: list[AppProfile], *, prefer: str | None = None, mode: RouterMode = "default"
    ):
        """``prefer``: the app the session used last; it wins near-ties ("搜索 牛奶"
        right after using notes means notes, not music). ``mode``: see :data:`RouterMode`."""
        self.prefer = prefer
        self.mode: RouterMode = mode
        # Stable: equal install orders keep the caller's order. Every "first app that
        # matches" below is then the one installed first (an app cannot take over a name).
        self.apps = sorted(apps, key=lambda a: a.installed)
        self._rank = {a.id: (a.installed, a.id) for a in self.apps}
        self._terms: dict[str, dict[str, float]] = {a.id: self._app_terms(a) for a in self.apps}
        self._examples: dict[str, list[tuple[str, dict[str, float]]]] = {
            a.id: list(_example_terms(a.examples)) if mode == "default" else [] for a in self.apps
        }
        self._idf = _idf(tuple(_profile_key(a) for a in self.apps), mode)
        self._scores: dict[str, list[tuple[str, float]]] = {}
        self._names: dict[str, frozenset[str]] = {a.id: self._app_names(a) for a in self.apps}
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

    def _app_terms(self, app: AppProfile) -> dict[str, float]:
        return _profile_terms(_profile_key(app), self.mode)

    @staticmethod
    def _app_names(app: AppProfile) -> frozenset[str]:
        return _profile_names(app.id, app.all_names, tuple(app.keywords))

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

    def _lead_share(self, app_id: str, text: str) -> float:
        """The largest share of the clause's characters in a start it has in common with one
        of the app's examples (polite words aside), times how specific that start's terms
        are (a shared "show" says less than a shared "记一下"); 0 without examples."""
        said = _lead_text(text)
        size = len(said.replace(" ", ""))
        if not size or not self._examples[app_id]:
            return 0.0
        best = 0.0
        for example, _ in self._examples[app_id]:
            lead = _common_lead(said, _lead_text(example))
            terms = tokenize(lead) if lead else {}
            weight = sum(terms.values())
            if not weight:
                continue
            specific = sum(w * self._idf.get(t, 1.0) for t, w in terms.items()) / weight
            best = max(best, len(lead.replace(" ", "")) / size * specific)
        return min(1.0, best)

    def _best_example(self, app_id: str, query: dict[str, float]) -> tuple[str, float]:
        """The app's example most like ``query`` and its similarity ("", 0 without any)."""
        best = ("", 0.0)
        for text, terms in self._examples[app_id]:
            sim = _dice(query, terms, self._idf)
            if sim > best[1]:
                best = (text, sim)
        return best

    def _keyword_cover(self, app: AppProfile, low: str) -> float:
        """Share of ``low``'s characters (spaces aside) covered by the app's keywords found
        verbatim (two or more characters; 0 in the baseline mode)."""
        size = len(low.replace(" ", ""))
        if self.mode == "baseline" or not size:
            return 0.0
        covered = [False] * len(low)
        for k in app.keywords:
            k = k.strip().lower()
            if len(k) < 2:
                continue
            for m in re.finditer(re.escape(k), low):
                if k.isascii() and not _contains_word(low[m.start() :], k):
                    continue
                for i in range(m.start(), m.end()):
                    covered[i] = True
        return sum(1 for i, c in enumerate(covered) if c and low[i] != " ") / size

    def score(self, text: str) -> list[tuple[str, float]]:
        """(app id, score) for every app with a positive score, best first."""
        cached = self._scores.get(text)
        if cached is None:
            cached = self._scores[text] = self._score(text)
        return list(cached)

    def _score(self, text: str) -> list[tuple[str, float]]:
        query = query_terms(text)
        total = sum(query.values())
        if not total:
            return []
        low = _DATA.sub(" ", routing_text(text)).lower()
        flat = _norm_name(low)
        scores: list[tuple[str, float]] = []
        for app in self.apps:
            terms, keys = self._terms[app.id], self._key_chars[app.id]
            matched = sum(
                (1.0 if t in keys else w) * terms[t] * self._idf[t]
                for t, w in query.items()
                if t in terms
            )
            score = matched / total
            if score > 0:
                sim = self._best_example(app.id, query)[1]
                score += EXAMPLE_MATCH_WEIGHT * sim if sim >= EXAMPLE_MATCH_MIN else 0.0
                score += EXAMPLE_LEAD_WEIGHT * self._lead_share(app.id, text)
            score += KEYWORD_PHRASE_WEIGHT * self._keyword_cover(app, low)
            names = (*(_norm_name(n) for n in app.all_names), _norm_name(app.id))
            if any(len(n) >= 2 and n in flat for n in names):
                score += NAME_BONUS
            if score > 0:
                scores.append((app.id, round(score, 4)))
        scores.sort(key=lambda p: (-p[1], self._rank[p[0]]))
        return scores

    def matched(self, text: str, app_id: str, limit: int = 8) -> list[str]:
        """The words (stems, Chinese bigrams) of ``text`` that count for ``app_id``, the
        heaviest first: what the trace viewer shows beside a candidate's score."""
        terms = self._terms.get(app_id)
        if not terms:
            return []
        keys = self._key_chars[app_id]
        weights = {
            t: (1.0 if t in keys else w) * terms[t] * self._idf[t]
            for t, w in query_terms(text).items()
            if t in terms
        }
        return sorted(weights, key=lambda t: (-weights[t], t))[:limit]

    def best(self, clause: str) -> tuple[str, float] | None:
        """The app for one clause, or None when nothing matches well enough."""
        opened = self._opened_app(clause) or self._addressed_app(clause)
        if opened:
            return opened, 1.0 + NAME_BONUS
        query = query_terms(clause)
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
            if self._terms[app_id].get(t, 0.0) >= DECIDING_WEIGHT
            and (w >= 1.0 or t in self._key_chars[app_id])
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

    # ------------------------------------------------------------ routed

    def matched_words(self, app_id: str, clause: str) -> list[str]:
        """The app's names, keywords and examples ``clause`` matched (longest first kept)."""
        app = next((a for a in self.apps if a.id == app_id), None)
        if app is None:
            return []
        low, flat = clause.lower(), _norm_name(clause)
        found = [
            n for n in (*app.all_names, app.id) if len(_norm_name(n)) >= 2 and _norm_name(n) in flat
        ]
        found += [k for k in app.keywords if _contains_word(low, k.strip().lower())]
        found = list({w.lower(): w for w in found[::-1]}.values())[::-1]  # first spelling kept
        # "记" inside a matched "记一下" says nothing more
        found = [w for w in found if not any(w != o and w.lower() in o.lower() for o in found)]
        leads = [_common_lead(_lead_text(clause), _lead_text(e)) for e, _ in self._examples[app_id]]
        lead = max((x for x in leads if tokenize(x)), key=len, default="")
        if lead and not any(lead in w.lower() for w in found):
            found.append(lead)  # "记一下", shared with an example
        example, sim = self._best_example(app_id, tokenize(clause))
        if example and sim >= EXAMPLE_MATCH_MIN:
            found.append(example)
        return found

    def strip_routing(self, app_id: str, clause: str) -> str:
        """``clause`` without the words that only chose the app: "打开记事本，记一下买牛奶"
        → "记一下买牛奶", "用音乐播放七里香" → "播放七里香", "play jazz in music" → "play jazz"."""
        app = next((a for a in self.apps if a.id == app_id), None)
        text = clause.strip().strip(_CLAUSE_PUNCT)
        if app is None:
            return text
        names = {n for n in (*app.all_names, app.id, app.id.replace("_", " ")) if len(n) >= 2}
        # a keyword names the app only after a verb that picks one ("用回声说你好"); alone
        # it is part of the request ("记一下买牛奶" keeps its 记一下)
        aliases = {k.strip() for k in app.keywords if len(k.strip()) >= 2} - names
        spellings = sorted(
            [(n, False) for n in names] + [(k, True) for k in aliases],
            key=lambda p: len(p[0]),
            reverse=True,
        )
        for name, verb_needed in spellings:
            lead, trail = _routing_patterns(name, verb_needed)
            m = lead.match(text + " ") if name.isascii() else lead.match(text)
            if m:
                return text[m.end() :].strip().strip(_CLAUSE_PUNCT)
            m = trail.search(text)
            if m and m.start() > 0:
                return text[: m.start()].strip().strip(_CLAUSE_PUNCT)
        return text

    def routed_info(self, app_id: str, text: str, clauses: list[str]) -> dict[str, Any]:
        """``context["routed"]`` for a task of ``app_id`` made of ``clauses`` (its ``text``)."""
        score = 0.0
        for c in clauses:
            pick = self.best(c)  # "打开记事本" scores as the app it names; a rival by its words
            mine = pick[1] if pick and pick[0] == app_id else dict(self.score(c)).get(app_id, 0.0)
            score = max(score, mine)
        matched: list[str] = []
        for c in clauses:
            matched += self.matched_words(app_id, c)
        parts = [self.strip_routing(app_id, c) for c in clauses]
        stripped = "，".join(p for p in parts if p) if len(parts) > 1 else parts[0]
        if len(parts) > 1 and all(parts) and stripped.replace("，", "") == text.replace("，", ""):
            stripped = text
        return {
            "text": stripped,
            "matched": list(dict.fromkeys(matched)),
            "score": round(score, 4),
            "source": "offline",
        }  # the shape of routed_as()

    def route(self, text: str) -> list[Task]:
        """Tasks for ``text``: one per run of clauses routed to the same app, in order.

        A clause that matches nothing stays with its neighbour's task (it usually
        continues it: "打开记事本并且写下购物清单"); consecutive clauses for the
        same app become one task holding the user's original words. Tasks are
        independent unless a later one refers to an earlier result
        (:func:`refers_back`); the baseline mode chains every task. Nothing
        matched → [].
        """
        spans = _split_spans(text or "")
        picks = [(s, e, self.best(text[s:e])) for s, e in spans]
        if not any(p for _, _, p in picks):
            return []
        groups: list[list[Any]] = []  # [start, end, app, [clauses]]
        pending: list[tuple[int, int]] = []
        for s, e, pick in picks:
            if pick is None:
                if groups:
                    groups[-1][1] = e
                    groups[-1][3].append(text[s:e])
                else:
                    pending.append((s, e))
                continue
            app_id = pick[0]
            if groups and groups[-1][2] == app_id:
                groups[-1][1] = e
                groups[-1][3].append(text[s:e])
            else:
                start = pending[0][0] if pending and not groups else s
                clauses = [text[ps:pe] for ps, pe in pending] if not groups else []
                groups.append([start, e, app_id, [*clauses, text[s:e]]])
            pending = []
        tasks: list[Task] = []
        for i, (s, e, app_id, clauses) in enumerate(groups, start=1):
            clause = text[s:e].strip()
            chained = self.mode == "baseline" or refers_back(clause)
            deps = [tasks[-1].id] if tasks and chained else []
            tasks.append(
                Task(
                    id=f"t{i}",
                    app=app_id,
                    instruction=clause,
                    depends_on=deps,
                    alternatives=self.close_call(clause),
                    routed=self.routed_info(app_id, clause, clauses),
                )
            )
        logger.debug("offline route %r -> %s", text, [(t.id, t.app, t.depends_on) for t in tasks])
        return tasks
