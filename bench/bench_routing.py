"""How well the offline router routes what users type: accuracy on a labelled set.

    python bench/bench_routing.py [--set bench/routing_set.jsonl] [--modes offline,baseline]
                                  [--misses N]

Every line of ``bench/routing_set.jsonl`` is ``{"text", "lang", "expect", "kind"}``
(and, for compound instructions, ``"dependent"``: whether a later step uses an
earlier one's result). ``expect`` is the app ids in order, or ``[]`` for small
talk and for system intents (aios/control/intents.py answers those before any routing).
The apps are the bundled ones (apps/*/manifest.json and role.md).

Each instruction goes through what the controller does without an LLM: the
system intents first (aios/control/intents.py: an "open X" / "switch to X" intent
counts as routing to X, an undo / reset to system_agent), then the offline
router, built afresh for each instruction as the controller builds it. A row
is a hit when:

- ``system``: an intent recognised it;
- ``smalltalk``: no app was picked;
- ``single``: exactly the expected app;
- ``compound``: the expected apps in order and, when the row says, the right
  dependency (a later task depends on an earlier one exactly when ``dependent``).

Modes are functions ``(text, Apps) -> Prediction`` in :data:`MODES`:
``offline`` is the router as the controller uses it; ``baseline`` is the
router before examples, weights and independent clauses (``mode="baseline"``
of aios/control/router.py) measured in the same run. The LLM modes (issue 15) run the
planner (aios/control/planner.py) in its ``hybrid`` and ``llm`` modes against the fake
OpenAI server (tests/fakes/fake_openai.py, real HTTP) replaying a ``good``
model (the right plan, constrained by the schema) or a ``bad`` one (the shapes
a 0.5 B local model produced, one per instruction in turn: :data:`BAD_SHAPES`),
and, when ``AIOS_BENCH_LLM_URL`` names a local OpenAI-compatible server
(``AIOS_BENCH_LLM_MODEL``, ``AIOS_BENCH_LLM_KEY``), against it (``-real``).
Printed per mode: accuracy overall, per kind and per language, p50 / p95
latency per instruction, and the misses.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aios.control import intents  # noqa: E402
from aios.control.router import AppProfile, OfflineRouter, RouterMode  # noqa: E402
from aios.protocol import parse_manifest  # noqa: E402

SET_PATH = ROOT / "bench" / "routing_set.jsonl"
APPS_DIR = ROOT / "apps"
KINDS = ("single", "compound", "smalltalk", "system")
MISSES_SHOWN = 40
"""Misses printed per mode unless --misses says otherwise."""


@dataclass(frozen=True)
class Case:
    text: str
    lang: str
    expect: list[str]
    kind: str
    dependent: bool | None = None


@dataclass
class Prediction:
    apps: list[str] = field(default_factory=list)
    intent: str | None = None
    dependent: bool | None = None
    """Whether any task depends on another (None: fewer than two tasks)."""


@dataclass(frozen=True)
class Apps:
    """The installed apps as the controller sees them: router profiles and intent infos."""

    profiles: list[AppProfile]
    infos: list[intents.AppInfo]


Mode = Callable[[str, Apps], Prediction]


def load_set(path: Path = SET_PATH) -> list[Case]:
    """The labelled instructions; ValueError naming the line of a bad one."""
    cases: list[Case] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            case = Case(
                text=row["text"],
                lang=row["lang"],
                expect=list(row["expect"]),
                kind=row["kind"],
                dependent=row.get("dependent"),
            )
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{path.name} line {n}: not a labelled instruction ({e})") from e
        if case.kind not in KINDS:
            raise ValueError(f"{path.name} line {n}: kind {case.kind!r} is not one of {KINDS}")
        cases.append(case)
    return cases


def load_apps(apps_dir: Path = APPS_DIR) -> Apps:
    """Profiles and intent infos of every app folder (in name order, as the launcher finds them)."""
    profiles: list[AppProfile] = []
    infos: list[intents.AppInfo] = []
    for order, folder in enumerate(sorted(p for p in apps_dir.iterdir() if p.is_dir())):
        mpath = folder / "manifest.json"
        if not mpath.is_file():
            continue
        manifest = parse_manifest(json.loads(mpath.read_text(encoding="utf-8")))
        role = manifest.role_prompt or ""
        if not role and (folder / "role.md").is_file():
            role = (folder / "role.md").read_text(encoding="utf-8")
        profile = AppProfile.from_manifest(folder.name, manifest, role)
        profile.installed = order
        profiles.append(profile)
        record = SimpleNamespace(id=folder.name, manifest=manifest, shown_name=manifest.name)
        infos.append(intents.app_info(record))
    return Apps(profiles, infos)


def _intent_prediction(text: str, apps: Apps) -> Prediction | None:
    intent = intents.recognise(text, apps.infos)
    if intent is None:
        return None
    if intent.app and intent.kind in ("open_app", "focus_app"):
        return Prediction(apps=[intent.app], intent=intent.kind)
    if intent.kind == "ui_reset":
        return Prediction(apps=[intents.SYSTEM_AGENT], intent=intent.kind)
    return Prediction(intent=intent.kind)


def _router_mode(mode: RouterMode) -> Mode:
    def run(text: str, apps: Apps) -> Prediction:
        said = _intent_prediction(text, apps)
        if said is not None:
            return said
        tasks = OfflineRouter(apps.profiles, mode=mode).route(text)
        dependent = any(t.depends_on for t in tasks) if len(tasks) > 1 else None
        return Prediction(apps=[t.app for t in tasks], dependent=dependent)

    return run


# ------------------------------------------------------------ with an LLM (issue 15)

ORACLE: dict[str, Case] = {}
"""The labelled cases by text: what the fake model's replies are made from (set by main)."""
BAD_SHAPES = (
    "bare",
    "fenced",
    "glued",
    "wrong-app",
    "runaway",
    "invented",
    "truncated",
    "then-deps",
    "chat",
    "garbage",
)
"""What a 0.5 B local model did, in turn (issue 15), one per instruction."""
BENCH_LLM_TIMEOUT = 120.0
"""Seconds a real endpoint (AIOS_BENCH_LLM_URL) may take per planning request."""


def _good_tasks(case: Case) -> list[dict[str, Any]]:
    return [
        {
            "id": f"t{i}",
            "app": app,
            "instruction": case.text,
            "depends_on": [f"t{i - 1}"] if case.dependent and i > 1 else [],
        }
        for i, app in enumerate(case.expect, start=1)
    ]


def _call_text(name: str, arguments: Any) -> str:
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def _good_replies(case: Case) -> list[Any]:
    """A model that plans right, constrained by the schema."""
    from tests.fakes.fake_openai import Reply

    plan = {"tasks": _good_tasks(case), "reply": "" if case.expect else "好的。"}
    return [Reply(content="", constrained=json.dumps(plan, ensure_ascii=False))]


def _bad_replies(case: Case, n: int) -> list[Any]:
    """One of :data:`BAD_SHAPES` (the n-th, cycling); repeated for the planner's one retry."""
    from tests.fakes.fake_openai import Reply, tool_call

    tasks = _good_tasks(case)
    call = _call_text("dispatch_tasks", {"tasks": tasks})
    if not tasks:
        call = _call_text("reply_directly", {"text": "你好！"})
    shape = BAD_SHAPES[n % len(BAD_SHAPES)]
    wrong = "code" if "files" in case.expect else "files"
    reply: Any = {
        "bare": Reply(content=call),
        "fenced": Reply(content=f"```json\n{call}\n```"),
        "glued": Reply(content=call + _call_text("reply_directly", {"text": "ok"})),
        "wrong-app": tool_call(
            "dispatch_tasks", {"tasks": [{**t, "app": wrong} for t in tasks] or None}
        ),
        "runaway": Reply(content='{"tasks": [' + '{"id": "t1", ' * 80, finish_reason="length"),
        "invented": Reply(content=_call_text("hello", {"text": case.text})),
        "truncated": Reply(content=call[:-3]),
        "then-deps": tool_call(
            "dispatch_tasks", {"tasks": [{**t, "depends_on": ["然后"]} for t in tasks]}
        ),
        "chat": Reply(content="好的，我来帮你处理。"),
        "garbage": Reply(content="```json"),
    }[shape]
    return [reply, reply]


class _PlannerMode:
    """``plan_instruction`` in a planner mode against an LLM: the fake server replaying a
    good or a bad model, or a real endpoint (``AIOS_BENCH_LLM_URL``)."""

    def __init__(self, planner: str, model: str):
        self.planner = planner
        self.model = model
        self.n = 0
        self._fake: Any = None
        self._llm: Any = None

    def _client(self) -> Any:
        if self._llm is not None:
            return self._llm
        import os

        from aios.config import Config
        from aios.llm.client import LLMClient

        if self.model == "real":
            llm = {
                "base_url": os.environ["AIOS_BENCH_LLM_URL"],
                "model": os.environ.get("AIOS_BENCH_LLM_MODEL", "local"),
                "api_key": os.environ.get("AIOS_BENCH_LLM_KEY", "no-key"),
                "timeout": BENCH_LLM_TIMEOUT,
            }
        else:
            from tests.fakes.fake_openai import FakeOpenAI

            self._fake = FakeOpenAI(api_key="sk-bench", json_schema=self.model == "good")
            self._fake.start()
            llm = {"base_url": self._fake.url, "model": "fake", "api_key": "sk-bench"}
        config = Config.model_validate(
            {"llm": {**llm, "max_retries": 0, "measure_local": False, "planner": self.planner}}
        )
        self._llm = LLMClient(config)
        return self._llm

    def __call__(self, text: str, apps: Apps) -> Prediction:
        from aios.control.planner import plan_instruction

        said = _intent_prediction(text, apps)
        if said is not None:
            return said
        llm = self._client()
        if self._fake is not None:
            case = ORACLE.get(text) or Case(text, "zh-CN", [], "smalltalk")
            self._fake.reset()
            self._fake.script(
                _good_replies(case) if self.model == "good" else _bad_replies(case, self.n)
            )
            self.n += 1
        plan = plan_instruction(text, apps.profiles, llm=llm, router=OfflineRouter(apps.profiles))
        tasks = plan.tasks
        dependent = any(t.depends_on for t in tasks) if len(tasks) > 1 else None
        return Prediction(apps=[t.app for t in tasks], dependent=dependent)


def _llm_modes() -> dict[str, Mode]:
    import os

    models = ["good", "bad"] + (["real"] if os.environ.get("AIOS_BENCH_LLM_URL") else [])
    return {
        f"{planner}-{model}": _PlannerMode(planner, model)
        for model in models
        for planner in ("hybrid", "llm")
    }


MODES: dict[str, Mode] = {
    "offline": _router_mode("default"),
    "baseline": _router_mode("baseline"),
    **_llm_modes(),
}
"""Benchmark modes by name; the first is the one the test holds to its floor."""


def hit(case: Case, pred: Prediction) -> bool:
    if case.kind == "system":
        return pred.intent is not None
    if case.kind == "smalltalk":
        return not pred.apps
    if pred.apps != case.expect:
        return False
    return case.kind != "compound" or case.dependent is None or pred.dependent == case.dependent


@dataclass
class Report:
    mode: str
    total: int
    hits: int
    by_kind: dict[str, tuple[int, int]]
    by_lang: dict[str, tuple[int, int]]
    latencies_ms: list[float]
    misses: list[tuple[Case, Prediction]]

    @property
    def accuracy(self) -> float:
        return self.hits / self.total if self.total else 0.0


def evaluate(mode: str, cases: list[Case], apps: Apps) -> Report:
    fn = MODES[mode]
    by_kind: dict[str, list[int]] = {}
    by_lang: dict[str, list[int]] = {}
    latencies: list[float] = []
    misses: list[tuple[Case, Prediction]] = []
    hits = 0
    for case in cases:
        t0 = time.perf_counter()
        pred = fn(case.text, apps)
        latencies.append((time.perf_counter() - t0) * 1000)
        ok = hit(case, pred)
        hits += ok
        for table, key in ((by_kind, case.kind), (by_lang, case.lang)):
            table.setdefault(key, [0, 0])
            table[key][0] += ok
            table[key][1] += 1
        if not ok:
            misses.append((case, pred))
    return Report(
        mode,
        len(cases),
        hits,
        {k: (v[0], v[1]) for k, v in by_kind.items()},
        {k: (v[0], v[1]) for k, v in by_lang.items()},
        latencies,
        misses,
    )


def _pct(h: int, n: int) -> str:
    return f"{100 * h / n:5.1f}% ({h}/{n})" if n else "  n/a"


def _quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def print_report(r: Report, misses_shown: int) -> None:
    print(f"== mode {r.mode}: accuracy {_pct(r.hits, r.total)}")
    for kind in KINDS:
        if kind in r.by_kind:
            print(f"   {kind:<10} {_pct(*r.by_kind[kind])}")
    for lang, counts in sorted(r.by_lang.items()):
        print(f"   {lang:<10} {_pct(*counts)}")
    print(
        f"   latency per instruction: p50 {_quantile(r.latencies_ms, 0.5):.2f} ms, "
        f"p95 {_quantile(r.latencies_ms, 0.95):.2f} ms"
    )
    if r.misses:
        print(f"   misses ({len(r.misses)}):")
    for case, pred in r.misses[:misses_shown]:
        got: Any = pred.apps or (f"intent {pred.intent}" if pred.intent else "nothing")
        dep = "" if pred.dependent is None else f" dependent={pred.dependent}"
        want = case.expect or ("an intent" if case.kind == "system" else "nothing")
        want_dep = "" if case.dependent is None else f" dependent={case.dependent}"
        print(
            f"     [{case.kind}/{case.lang}] {case.text!r}: want {want}{want_dep}, got {got}{dep}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=SET_PATH, help="the labelled set (JSONL)")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma separated: {list(MODES)}")
    ap.add_argument("--misses", type=int, default=MISSES_SHOWN, help="misses shown per mode")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(MODES)}")
    cases = load_set(args.set)
    ORACLE.update({c.text: c for c in cases})
    apps = load_apps()
    kinds = {k: sum(c.kind == k for c in cases) for k in KINDS}
    print(f"{len(cases)} instructions ({kinds}), {len(apps.profiles)} apps")
    reports = [evaluate(m, cases, apps) for m in modes]
    for r in reports:
        print_report(r, args.misses)
    if len(reports) > 1:
        print("summary: " + ", ".join(f"{r.mode} {100 * r.accuracy:.1f}%" for r in reports))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
