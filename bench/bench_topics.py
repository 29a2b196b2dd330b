"""Topics (DESIGN §18, aios/control/topics.py): how well a session's turns are grouped, and
how often "回到刚才的…" / "back to …" resumes the topic the user meant.

    python bench/bench_topics.py [--set bench/data/topics_set.jsonl]

The labelled set (kept apart from the rules' unit tests, tests/unit/control/test_topics.py)
holds sessions in both languages; each step is a turn (``say``, the ``app`` it was routed
to, the ``topic`` a person would file it under: two labels are two nodes of the tree, a
sub-topic included) or a ``back`` phrase with the topic it means (``expect``: a label,
several when two lines of talk match alike and the desktop should ask, or null when
nothing should be resumed). Steps run in order through the rules offline, with the
bundled apps' names and keywords as the controller gives them; a resumed topic becomes
active as the controller makes it.

Printed, with a baseline measured in the same run (one topic per app; "back to …" always
the topic left last):

- **grouping**: pairwise agreement (for every two turns of a session, whether the rules
  put them together exactly when the labels do) and node purity (turns whose node's
  majority label is their own);
- **resolution**: "back to …" phrases recognised and resolved to the meant topic (or to
  none, or to the tie), with the misses listed;
- the time one turn and one resolution take.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aios.control import intents  # noqa: E402
from aios.control.topics import Topic, Tree, key_terms, resume_words  # noqa: E402

SET_PATH = ROOT / "bench" / "data" / "topics_set.jsonl"
APPS_DIR = ROOT / "apps"


def bundled_apps() -> tuple[list[intents.AppInfo], dict[str, list[str]]]:
    """The bundled apps as the intents see them, and per app the words that only choose it
    (every app's id and names, its own keywords), as the controller gives the rules."""
    infos: list[intents.AppInfo] = []
    names: dict[str, list[str]] = {}
    keywords: dict[str, list[str]] = {}
    for path in sorted(APPS_DIR.glob("*/manifest.json")):
        manifest = json.loads(path.read_text(encoding="utf-8"))
        app = path.parent.name
        shown = manifest["name"] if isinstance(manifest["name"], dict) else {"en": manifest["name"]}
        names[app] = [app.replace("_", " "), *shown.values()]
        keywords[app] = list(manifest.get("keywords") or [])
        aliases = {intents._key(n) for n in names[app]}  # noqa: SLF001 - the intents' own key
        infos.append(intents.AppInfo(app, shown, frozenset(aliases), tuple(keywords[app]), {}, {}))
    every = [w for ws in names.values() for w in ws]
    return infos, {app: [*every, *keywords[app]] for app in names}


class Rules:
    """The topic rules over one session (the system's, or the baseline's)."""

    def __init__(self, sid: str, app_words: dict[str, list[str]], baseline: bool) -> None:
        self.tree = Tree(sid, [])
        self.app_words = app_words
        self.baseline = baseline
        self.now = 0.0
        self.turn = 0

    def say(self, text: str, app: str) -> Topic:
        self.now += 10
        self.turn += 1
        if self.baseline:  # one topic per app, whatever is said
            found = self.tree.live_root(app)
            node = found or self.tree._new(app, app, self.now)  # noqa: SLF001
            node.turns.append(self.turn)
            self.tree.activate(node, self.now)
            return node
        terms = key_terms(text, self.app_words.get(app, ()))
        return self.tree.add_turn(self.turn, app, terms, text, self.now)

    def back(self, words: str, app: str | None) -> list[Topic]:
        if self.baseline:
            return self.tree.resolve({}, None)
        return self.tree.resolve(key_terms(words), app)

    def resume(self, topic: Topic) -> None:
        self.now += 10
        self.tree.activate(topic, self.now)


def run(
    sessions: list[dict[str, Any]], apps: list[intents.AppInfo], words: dict[str, list[str]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, baseline in (("rules", False), ("baseline", True)):
        agree = pairs = pure = turns = right = backs = 0
        misses: list[str] = []
        took: Counter[str] = Counter()
        for session in sessions:
            rules = Rules(session["session"], words, baseline)
            labels: dict[int, str] = {}
            nodes: dict[int, Topic] = {}
            for step in session["steps"]:
                if "say" in step:
                    started = time.perf_counter()
                    node = rules.say(step["say"], step["app"])
                    took["turn"] += round((time.perf_counter() - started) * 1e9)
                    labels[rules.turn], nodes[rules.turn] = step["topic"], node
                    continue
                started = time.perf_counter()
                said = resume_words(intents.normalise(step["back"]))
                app = intents.find_app(said, apps) if said else None
                found = rules.back(said or "", app.id if app else None) if said is not None else []
                took["back"] += round((time.perf_counter() - started) * 1e9)
                backs += 1

                def label_of(topic: Topic, labels: dict[int, str] = labels) -> str:
                    mine = [labels[t] for t in topic.turns if t in labels]
                    return Counter(mine).most_common(1)[0][0] if mine else "?"

                got: Any = (
                    None
                    if not found
                    else label_of(found[0])
                    if len(found) == 1
                    else sorted(label_of(t) for t in found)
                )
                want = step["expect"]
                want = sorted(want) if isinstance(want, list) else want
                if said is not None and got == want:
                    right += 1
                else:
                    misses.append(f"{session['session']}: {step['back']!r} → {got} (want {want})")
                if len(found) == 1:
                    rules.resume(found[0])
            for a, b in combinations(sorted(labels), 2):
                pairs += 1
                agree += (labels[a] == labels[b]) == (nodes[a].id == nodes[b].id)
            for t, node in nodes.items():
                turns += 1
                mine = [labels[x] for x in node.turns if x in labels]
                pure += Counter(mine).most_common(1)[0][0] == labels[t]
        out[name] = {
            "pairwise": agree / pairs if pairs else 0.0,
            "purity": pure / turns if turns else 0.0,
            "resolved": right / backs if backs else 0.0,
            "backs": backs,
            "right": right,
            "turns": turns,
            "misses": misses,
            "turn_us": took["turn"] / max(1, turns) / 1000,
            "back_us": took["back"] / max(1, backs) / 1000,
        }
    return out


def report(result: dict[str, Any], show: Callable[[str], None] = print) -> None:
    rules, base = result["rules"], result["baseline"]
    show(f'topics set: {rules["turns"]} turns, {rules["backs"]} "back to …" phrases')
    show(f"{'':24}{'rules':>10}{'baseline':>10}{'ratio':>8}")
    for key, what in (
        ("pairwise", "grouping (pairwise)"),
        ("purity", "grouping (node purity)"),
        ("resolved", "back to … resolved"),
    ):
        ratio = rules[key] / base[key] if base[key] else float("inf")
        show(f"{what:24}{rules[key]:>10.1%}{base[key]:>10.1%}{ratio:>7.2f}x")
    show(f"{'one turn (µs)':24}{rules['turn_us']:>10.1f}{base['turn_us']:>10.1f}")
    show(f"{'one back to … (µs)':24}{rules['back_us']:>10.1f}{base['back_us']:>10.1f}")
    if rules["misses"]:
        show("misses:")
        for miss in rules["misses"]:
            show(f"  {miss}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SET_PATH)
    args = parser.parse_args()
    sessions = [json.loads(line) for line in args.set.read_text("utf-8").splitlines() if line]
    apps, words = bundled_apps()
    report(run(sessions, apps, words))


if __name__ == "__main__":
    main()
