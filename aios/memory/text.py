"""What the memory indexes hold and what a query asks of them: pure functions, no I/O.

A search (:mod:`aios.memory.store`) reads two FTS5 indexes of the same memories:

- **trigram** (SQLite's ``tokenize='trigram'``): every 3-character substring of a
  memory's text and tags. A query term of 3 or more characters is one quoted
  phrase there, so it matches wherever it occurs as a substring, in any script.
- **short grams** (``tokenize='unicode61'`` over :func:`short_grams`): what trigram
  cannot match — every 1- and 2-character substring of a run of CJK script
  (茶, 开会) and the first two letters of every other word (``go`` finds "going").
  This is the substring fallback for terms under three characters, served by an
  index instead of an ``instr()`` scan over every row (which costs ~60 ms at
  100k memories on this machine; the index answers in well under one).

Chinese has no spaces, so a CJK run of a query is split into overlapping trigrams
for the first index and into pairs and single characters for the second (a paraphrase
of "我最喜欢的茶是龙井" asked as "我喜欢喝什么茶" shares no trigram with it, only 喜欢
and 茶): the pairs of two characters that are not stop characters (的, 什, 么, ...), and
the characters no such pair holds. English query words are lowercased, stop words
dropped, and cut to the part their other forms share (:func:`stem`: "meetings" →
"meet", "running" → "run", "stories" → "stor"), which trigram then finds as a
substring of every form.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

QUERY_CHARS_MAX = 1000
"""Characters of a query read; the rest is ignored (a 10 KB query costs what 1 KB does)."""
TERMS_MAX = 32
"""Terms per index in one query, the first ones kept."""
TRIGRAM = 3
"""Characters a term needs for the trigram index."""

_CJK = (
    "\u2e80-\u2fff"  # radicals
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3100-\u312f"  # bopomofo
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # compatibility ideographs
    "\U00020000-\U0003134f"  # extensions B-G
)
_RUNS = re.compile(f"([{_CJK}]+)|([^\\W_{_CJK}]+)")
"""A run of CJK script (group 1) or a word of any other script (group 2)."""

STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be been before being
    both but by can could did do does doing done for from had has have having he her here
    hers him his how i if in into is it its just me more most my no nor not of off on once
    only or other our ours out over own please same she should so some such than that the
    their theirs them then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours""".split()
)
"""English words a query term is never made of (unless the query holds nothing else)."""
CJK_STOP = frozenset("的了是我你他她它们吗呢吧啊呀在和与也都就这那个么什怎哪谁一把被给着过还很又")
"""CJK characters a query term is never made of, alone or in a pair (in a trigram they count)."""


def normalize(text: str) -> str:
    """NFKC, lowercase, whitespace collapsed: the form two texts are compared in."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def _runs(text: str) -> list[tuple[str, bool]]:
    """``(run, is_cjk)`` for each CJK run and each other word of normalized ``text``."""
    return [(m.group(0), m.group(1) is not None) for m in _RUNS.finditer(text)]


def short_grams(text: str) -> str:
    """The short-gram index's text for a memory: its CJK characters and character pairs
    and each other word's first two letters, space-separated, each once."""
    grams: dict[str, None] = {}
    for run, cjk in _runs(normalize(text)):
        if cjk:
            grams.update(dict.fromkeys(run))
            grams.update(dict.fromkeys(run[i : i + 2] for i in range(len(run) - 1)))
        else:
            grams[run[:2]] = None
    return " ".join(grams)


def stem(word: str) -> str:
    """The part of an English word its other forms share, for a substring match.

    Plural, then -ing / -ed, then a doubled last consonant or a final e / y after a
    consonant: meetings → meet, running → run, liked / likes / like → lik,
    studies / study → stud, boxes → box. Not a word, only what every form contains;
    a word that would keep fewer than three letters is left whole (sing, need).
    """
    w = word
    if len(w) < 4 or not (w.isascii() and w.isalpha()):
        return word
    if w.endswith(("sses", "shes", "ches", "xes", "zes")):
        w = w[:-2]
    elif w.endswith(("ies", "ied")):
        w = w[:-3]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing"):
        w = w[:-3]
    elif w.endswith("ed") and not w.endswith("eed"):
        w = w[:-2]
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouylsfz":
        w = w[:-1]
    elif len(w) >= 4 and w[-1] in "ey" and w[-2] not in "aeiou":
        w = w[:-1]
    return w if len(w) >= TRIGRAM else word


@dataclass
class Terms:
    """What one query asks of each index (each list in query order, without repeats)."""

    trigram: list[str] = field(default_factory=list)
    short: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.trigram or self.short)


def _cjk_terms(run: str, terms: Terms) -> None:
    """A CJK run's trigrams, and its pairs and characters for the short-gram index: the
    pairs of two non-stop characters, and the characters no such pair holds (茶 in
    什么茶). Fewer terms than every pair and character, so a question's union of
    postings stays small; a character a pair holds is found through the pair."""
    if len(run) >= TRIGRAM:
        terms.trigram.extend(run[i : i + TRIGRAM] for i in range(len(run) - TRIGRAM + 1))
    if len(run) <= 2:
        terms.short.append(run)
        return
    pairs = [run[i : i + 2] for i in range(len(run) - 1)]
    content = [p for p in pairs if p[0] not in CJK_STOP and p[1] not in CJK_STOP]
    terms.short.extend(content)
    held = {c for p in content for c in p}
    terms.short.extend(c for c in run if c not in CJK_STOP and c not in held)


def analyze(query: str) -> Terms:
    """The terms of ``query`` for the trigram and the short-gram index."""
    terms = Terms()
    words: list[str] = []
    for run, cjk in _runs(normalize(query[:QUERY_CHARS_MAX])):
        if cjk:
            _cjk_terms(run, terms)
        else:
            words.append(run)
    for word in [w for w in words if w not in STOPWORDS] or words:
        if len(word) < TRIGRAM:
            terms.short.append(word)  # "go", "tv": a word prefix in the short-gram index
        else:
            terms.trigram.append(stem(word))
    terms.trigram = list(dict.fromkeys(terms.trigram))[:TERMS_MAX]
    terms.short = list(dict.fromkeys(terms.short))[:TERMS_MAX]
    return terms


def match_expr(terms: list[str]) -> str:
    """An FTS5 query matching any of ``terms``, each quoted: user text is never FTS syntax."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
