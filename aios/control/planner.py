"""Intent → task DAG: one planning request, validated and normalised, else offline.

With an LLM, ``plan_instruction`` sends ONE request at temperature 0, capped at
``llm.plan_max_tokens``: constrained by a JSON schema of the plan (the app an
enum of the running apps) where the endpoint takes one, else offering two
functions, ``dispatch_tasks`` and ``reply_directly`` (``LLMClient.structured``;
what each server takes is aios/llm/providers.py's business). The calls are
read by aios/llm/toolcalls.py wherever the model put them (native tool calls,
or JSON text in ``content``, as small local models write them). A nearly-right
plan is normalised, with notes (unknown or self references in depends_on,
duplicate ids, a task given as a bare app id); a plan that breaks a rule that
cannot be normalised (an unknown app, no instruction) is sent back once with
the error, and if it is still bad, cut at max_tokens, or the LLM cannot be
reached, the offline router plans instead.

A direct reply leaves the planner only as plain words in the user's language: one
that holds the planner's own words (its correction prompt, schema, tool names),
JSON, an echo of the user's text or another language than the user wrote in is
withheld (aios/llm/wording.py) and the offline router plans instead.

``llm.planner`` picks the mode: ``hybrid`` (default) keeps the model's plan
unless the offline router matched an app's name or keyword that the model's
plan lacks — then the router's plan runs, or the user is asked to choose when
the router also found the model's app plausible — or the model replied directly
where the router is confident of an app by its score alone; ``llm``; ``offline``.
``Plan.source`` and ``Plan.notes`` say which path made the plan and why.
Without an LLM the offline router plans directly.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aios.control.router import AppProfile, OfflineRouter, Task, refers_back, split_instruction
from aios.errors import LLMError
from aios.llm.client import ChatResult, LLMClient
from aios.llm.toolcalls import extract, looks_like_code, repair_json
from aios.llm.wording import planner_words, text_lang, withheld

__all__ = [
    "MAX_TASKS",
    "Plan",
    "PlanInvalid",
    "Task",
    "normalise_tasks",
    "plan_instruction",
    "plan_schema",
    "summarize_history",
    "validate_tasks",
]

logger = logging.getLogger(__name__)

MAX_TASKS = 8
"""More tasks than this from one instruction is a model running away, not a plan."""


PlanSource = Literal["llm", "llm-normalised", "hybrid", "offline", "none"]
PlannerMode = Literal["hybrid", "llm", "offline"]


class Plan(BaseModel):
    """What the controller dispatches: tasks, or a direct reply, and where it came from."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[Task] = Field(default_factory=list)
    reply: str | None = None
    """A direct answer when no app is needed."""
    source: PlanSource = "none"
    """Which path made it: the model's plan as given (``llm``) or repaired and normalised
    (``llm-normalised``), the router over the model (``hybrid``), ``offline``, ``none``."""
    notes: list[str] = Field(default_factory=list)
    """Why: what was normalised, why the model's plan was not used…"""


class PlanInvalid(ValueError):
    """The model's plan broke a rule; the message is fed back to it."""


# ------------------------------------------------------------ the request

DISPATCH_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "dispatch_tasks",
        "description": "Hand the user's instruction to one or more apps as tasks. Split a "
        "compound instruction into one task per step, in order.",
        "parameters": {
            "type": "object",
            "properties": {
                "tasks": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "t1, t2, …"},
                            "app": {"type": "string", "description": "an app id from the list"},
                            "instruction": {
                                "type": "string",
                                "description": "what this app should do, in the "
                                "user's language, self-contained",
                            },
                            "depends_on": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": "ids of tasks that must finish first",
                            },
                        },
                        "required": ["id", "app", "instruction", "depends_on"],
                    },
                },
            },
            "required": ["tasks"],
        },
    },
}

REPLY_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "reply_directly",
        "description": "Answer the user directly when no app is needed (greetings, small "
        "talk, questions you can answer in one or two sentences).",
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "the answer"}},
            "required": ["text"],
        },
    },
}

SYSTEM_PROMPT = """\
You are the controller of Triton AIOS, a desktop where every app is a small AI.
Decide what to do with the user's instruction and call exactly one function:
- dispatch_tasks: when apps should act. One task per step; use only the app ids \
listed below; give each task an id (t1, t2, …), the app id, a self-contained \
instruction in the user's language, and depends_on with the ids of tasks that \
must finish first: only when a task uses an earlier one's result ("然后用它…", \
"把结果…", "and use that to…"); "然后"/"then" alone is order, not dependency, so \
independent tasks have depends_on [].
- reply_directly: when no app is needed; answer briefly in the user's language.

Installed apps (id: name — description):
{apps}
"""


def _app_lines(apps: list[AppProfile]) -> str:
    lines = []
    for a in apps:
        about = a.description or a.role_prompt[:160]
        keys = f" [keywords: {', '.join(a.keywords[:12])}]" if a.keywords else ""
        lines.append(f"- {a.id}: {a.name} — {about}{keys}")
    return "\n".join(lines) or "(none)"


LANG_NAMES = {"zh-CN": "Chinese (简体中文)", "en": "English"}
LANG_HINT = "The user wrote in {lang}: any reply and instruction is in {lang}.\n"
"""Said outright when the user's language is clear: a small model follows the UI's otherwise."""


def build_messages(
    text: str, apps: list[AppProfile], history_summary: str = "", self_block: str = ""
) -> list[dict[str, Any]]:
    """``self_block``: the user's self files and memories, already quoted as data
    (aios/memory/selfdoc.py): facts to plan with, never instructions."""
    system = SYSTEM_PROMPT.format(apps=_app_lines(apps))
    if self_block.strip():
        system += f"\n{self_block.strip()}\n"
    lang = text_lang(text)
    if lang:
        system += LANG_HINT.format(lang=LANG_NAMES[lang])
    if history_summary.strip():
        system += f"\nConversation so far: {history_summary.strip()}\n"
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


# ------------------------------------------------------------- validation

NumberedRef = re.compile(r"^(?:t|task\s*)?#?(\d+)$", re.IGNORECASE)
"""A depends_on entry naming a task by number: "t2", "2", "task 2", "#2"."""


def _resolve_app(value: Any, apps: list[AppProfile]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlanInvalid(f"app must be an app id string (got {value!r})")
    v = value.strip()
    for a in apps:
        if v == a.id:
            return a.id
    for a in apps:  # models sometimes give the display name; that is unambiguous enough
        if v.lower() in (*(n.lower() for n in a.all_names), a.id.lower()):
            return a.id
    ids = ", ".join(a.id for a in apps)
    raise PlanInvalid(f"unknown app {v!r}; use one of: {ids}")


def _clause_for(n: int, count: int, text: str) -> str:
    """The user's words for the n-th (1-based) of ``count`` tasks: its clause of ``text``
    when the text has that many clauses, else the whole text."""
    clauses = split_instruction(text) if text else []
    if count > 1 and len(clauses) == count:
        return clauses[n - 1].strip()
    return text.strip()


def _raw_items(
    raw: list[Any], apps: list[AppProfile], text: str, notes: list[str]
) -> list[tuple[str, str, str, Any]]:
    """(id, app, instruction, depends_on as given) for each task; ids made unique."""
    items: list[tuple[str, str, str, Any]] = []
    seen: set[str] = set()
    for n, t in enumerate(raw, start=1):
        if isinstance(t, str) and text:  # a bare app id: "notes"
            notes.append(f"task #{n} was only an app id ({t!r}): given the user's words")
            t = {"app": t}
        if not isinstance(t, dict):
            raise PlanInvalid(f"task #{n} must be an object with id, app, instruction")
        tid = str(t.get("id") if t.get("id") not in (None, "") else f"t{n}").strip()
        if tid in seen:
            if not text:
                raise PlanInvalid(f"task id {tid!r} is used twice; ids must be unique")
            fresh = next(f"t{k}" for k in range(n, n + len(raw) + 2) if f"t{k}" not in seen)
            notes.append(f"task id {tid!r} was used twice: the second is {fresh}")
            tid = fresh
        seen.add(tid)
        app = _resolve_app(t.get("app"), apps)
        instruction = t.get("instruction")
        own = planner_words(instruction) if isinstance(instruction, str) else None
        if own and text:  # an app would show it: the planner's correction echoed
            notes.append(f"task {tid!r} held the planner's own words ({own!r}): given the user's")
            instruction = _clause_for(n, len(raw), text)
        if (not isinstance(instruction, str) or not instruction.strip()) and text:
            instruction = _clause_for(n, len(raw), text)
            if t.get("instruction") is not None or isinstance(raw[n - 1], dict):
                notes.append(f"task {tid!r} had no instruction: given the user's words")
        if not isinstance(instruction, str) or not instruction.strip():
            raise PlanInvalid(f"task {tid!r} has an empty instruction")
        items.append((tid, app, instruction.strip(), t.get("depends_on")))
    return items


def _deps(
    items: list[tuple[str, str, str, Any]], strict: bool, notes: list[str]
) -> list[tuple[str, str, str, list[str]]]:
    """Each task's depends_on as a list of known ids; what cannot be used is dropped (with a
    note) and the order taken from the text's own words (router.refers_back), or, when
    ``strict``, PlanInvalid."""
    ids = [it[0] for it in items]
    out: list[tuple[str, str, str, list[str]]] = []
    for pos, (tid, app, instruction, given) in enumerate(items):
        deps = given or []
        if isinstance(deps, str | int):
            deps = [deps]
        if not isinstance(deps, list):
            if strict:
                raise PlanInvalid(f"task {tid!r}: depends_on must be a list of task ids")
            deps = [deps]
        kept: list[str] = []
        dropped: list[str] = []
        for d in (str(x).strip() for x in deps):
            if d in ids and d != tid:
                kept.append(d)
                continue
            if strict:
                if d == tid:
                    raise PlanInvalid(f"task {tid!r} depends on itself")
                raise PlanInvalid(f"task {tid!r} depends on unknown task {d!r}")
            m = NumberedRef.match(d)
            if m and 1 <= int(m.group(1)) <= len(ids) and ids[int(m.group(1)) - 1] != tid:
                kept.append(ids[int(m.group(1)) - 1])
            else:
                dropped.append(d)
        if dropped:
            chained = pos > 0 and refers_back(instruction)
            kept = [ids[pos - 1]] if chained and not kept else kept
            order = f"depends on {kept[0]}" if kept else "independent"
            notes.append(
                f"task {tid!r}: dropped depends_on {dropped} (not other tasks' ids); "
                f"from the text's words it is {order}"
            )
        out.append((tid, app, instruction, list(dict.fromkeys(kept))))
    return out


def validate_tasks(raw: Any, apps: list[AppProfile], text: str = "") -> list[Task]:
    """Check a model's task list and return it in dependency order with ids t1…tn.

    With the user's ``text`` a nearly-right plan is normalised instead of refused
    (use :func:`normalise_tasks` to get the notes saying how). Raises PlanInvalid
    naming the first broken rule that cannot be normalised.
    """
    return normalise_tasks(raw, apps, text)[0]


def normalise_tasks(
    raw: Any, apps: list[AppProfile], text: str = ""
) -> tuple[list[Task], list[str]]:
    """:func:`validate_tasks` and the notes on what was normalised (none without ``text``):
    a task given as a bare app id, duplicate ids renumbered, depends_on entries that are
    not other tasks' ids (app ids, "然后", the task itself, "2" for "t2") dropped or
    mapped, a dependency cycle broken by keeping only dependencies on earlier tasks."""
    if isinstance(raw, dict) and isinstance(raw.get("app"), str):
        raw = [raw]  # one task, not in a list
    if not isinstance(raw, list) or not raw:
        raise PlanInvalid("tasks must be a non-empty list")
    if len(raw) > MAX_TASKS:
        raise PlanInvalid(f"too many tasks ({len(raw)}; at most {MAX_TASKS})")
    notes: list[str] = []
    items = _deps(_raw_items(raw, apps, text, notes), not text, notes)
    try:
        order = _topological(items)
    except PlanInvalid as e:
        if not text:
            raise
        notes.append(f"{e}: kept only dependencies on earlier tasks")
        earlier = {it[0]: {x[0] for x in items[:i]} for i, it in enumerate(items)}
        items = [(t, a, s, [d for d in ds if d in earlier[t]]) for t, a, s, ds in items]
        order = _topological(items)
    new_id = {tid: f"t{i}" for i, tid in enumerate(order, start=1)}
    by_id = {it[0]: it for it in items}
    tasks = [
        Task(
            id=new_id[tid],
            app=by_id[tid][1],
            instruction=by_id[tid][2],
            depends_on=[new_id[d] for d in by_id[tid][3]],
        )
        for tid in order
    ]
    return tasks, notes


def _topological(items: list[tuple[str, str, str, list[str]]]) -> list[str]:
    """Ids in an order where dependencies come first (stable); PlanInvalid on a cycle."""
    deps = {tid: set(d) for tid, _, _, d in items}
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(items):
        ready = [tid for tid, _, _, _ in items if tid not in done and deps[tid] <= done]
        if not ready:
            stuck = [tid for tid, _, _, _ in items if tid not in done]
            raise PlanInvalid(f"dependency cycle among tasks {', '.join(stuck)}")
        order.append(ready[0])
        done.add(ready[0])
    return order


def _plan_of(tasks_raw: Any, apps: list[AppProfile], text: str) -> Plan:
    tasks, notes = normalise_tasks(tasks_raw, apps, text)
    if notes:
        return Plan(tasks=tasks, source="llm-normalised", notes=[f"normalised: {n}" for n in notes])
    return Plan(tasks=tasks, source="llm")


def _reply_plan(reply: Any, notes: list[str]) -> Plan:
    if not isinstance(reply, str) or not reply.strip():
        raise PlanInvalid("reply_directly needs a non-empty text")
    if looks_like_code(reply):
        raise PlanInvalid("the reply must be plain words for the user, not JSON or code")
    return Plan(reply=reply.strip(), source="llm", notes=notes)


def _parse_schema_content(content: str) -> dict[str, Any] | None:
    """The ``{"tasks": [...], "reply": "..."}`` object a constrained answer holds, if any."""
    s = content.strip()
    if not s.startswith("{"):
        return None
    try:
        value = json.loads(s)
    except json.JSONDecodeError:
        repaired = repair_json(s)
        value = repaired[0] if repaired else None
    if isinstance(value, dict) and "tasks" in value and "name" not in value:
        return value
    return None


def _parse_reply(result_message: dict[str, Any], apps: list[AppProfile], text: str = "") -> Plan:
    """The model's answer as a Plan, or PlanInvalid saying what to fix."""
    schema_obj = _parse_schema_content(result_message.get("content") or "")
    if schema_obj is not None and not result_message.get("tool_calls"):
        tasks = schema_obj.get("tasks")
        if tasks:
            return _plan_of(tasks, apps, text)
        return _reply_plan(schema_obj.get("reply"), [])
    ex = extract(result_message, [DISPATCH_TOOL, REPLY_TOOL])
    if not ex.calls:
        if ex.text:  # a plain answer is a direct reply that skipped the function
            return Plan(reply=ex.text, source="llm")
        if ex.refused:
            raise PlanInvalid(
                f"unknown function {ex.refused[0]!r}; call dispatch_tasks or reply_directly"
            )
        detail = "; ".join(ex.notes[-1:]) or "no function was called"
        raise PlanInvalid(f"{detail}; call dispatch_tasks or reply_directly")
    name, args = ex.calls[0]  # glued calls: the first real one
    notes = [n for n in ex.notes if not n.startswith("refused")]
    if len(ex.calls) > 1:
        notes.append(f"the model made {len(ex.calls)} calls: the first ({name}) was used")
    if name == "reply_directly":
        return _reply_plan(args.get("text"), notes)
    plan = _plan_of(args.get("tasks"), apps, text)
    if not ex.native:
        plan.source = "llm-normalised"
    plan.notes = notes + plan.notes
    return plan


def _feedback(result_message: dict[str, Any], error: str) -> list[dict[str, Any]]:
    """Messages that show the model its answer and what was wrong with it."""
    hint = f"Invalid plan: {error}. Call dispatch_tasks or reply_directly again, corrected."
    calls = result_message.get("tool_calls") or []
    if calls:
        # Every tool call needs its tool answer, or compatible servers reject the request.
        return [
            {"role": "assistant", "content": result_message.get("content"), "tool_calls": calls}
        ] + [
            {"role": "tool", "tool_call_id": c.get("id") or f"call_{i}", "content": hint}
            for i, c in enumerate(calls)
        ]
    return [
        {"role": "assistant", "content": result_message.get("content") or ""},
        {"role": "user", "content": hint},
    ]


# ----------------------------------------------------- constrained decoding

SCHEMA_ID_CHARS = 8
SCHEMA_INSTRUCTION_CHARS = 300
SCHEMA_REPLY_CHARS = 400
"""Caps written into the plan's JSON schema: a constrained model cannot run away in a field."""


def plan_schema(apps: list[AppProfile]) -> dict[str, Any]:
    """The JSON schema of a plan: tasks first (the app an enum of the running apps' ids),
    then the direct reply; every length capped."""
    task = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "maxLength": SCHEMA_ID_CHARS},
            "app": {"type": "string", "enum": [a.id for a in apps]},
            "instruction": {"type": "string", "maxLength": SCHEMA_INSTRUCTION_CHARS},
            "depends_on": {
                "type": "array",
                "items": {"type": "string", "maxLength": SCHEMA_ID_CHARS},
                "maxItems": MAX_TASKS,
            },
        },
        "required": ["id", "app", "instruction", "depends_on"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "tasks": {"type": "array", "items": task, "maxItems": MAX_TASKS},
            "reply": {"type": "string", "maxLength": SCHEMA_REPLY_CHARS},
        },
        "required": ["tasks", "reply"],
        "additionalProperties": False,
    }


def _ask(
    llm: LLMClient,
    messages: list[dict[str, Any]],
    apps: list[AppProfile],
    max_tokens: int,
) -> ChatResult:
    """One planning request: constrained by the plan's schema where the endpoint takes it,
    else function calling (LLMClient.structured)."""
    return llm.structured(
        messages,
        plan_schema(apps) if apps else None,
        [DISPATCH_TOOL, REPLY_TOOL],
        name="plan",
        hint=SCHEMA_HINT,
        purpose="plan",
        temperature=0.0,
        max_tokens=max_tokens,
    )


SCHEMA_HINT = """
Answer with one JSON object and nothing else: {"tasks": [...], "reply": ""}. \
"tasks" holds what dispatch_tasks would take (empty when no app is needed); "reply" \
is what reply_directly would say (empty when there are tasks)."""


# ------------------------------------------------------------------ hybrid

HYBRID_PLAUSIBLE = 0.5
"""In hybrid mode, the model's app is worth asking about (a choice) when the router scored
it at least this share of its own best app for the same words."""
HYBRID_CONFIDENT = 0.6
"""In hybrid mode, a router's task scored at least this (and no rival at HYBRID_PLAUSIBLE of
it) is a confident route even without an app's name or keyword ("跟我打个招呼" → Hello, by
its examples): it wins over the model's direct reply."""


def _strong_words(router: OfflineRouter, task: Task) -> list[str]:
    """The app's names and keywords the router matched for ``task`` (none: a weak match)."""
    app = next((a for a in router.apps if a.id == task.app), None)
    if app is None:
        return []
    strong = {w.lower() for w in (*app.all_names, app.id, *app.keywords) if w.strip()}
    matched = (task.routed or {}).get("matched") or router.matched_words(task.app, task.instruction)
    return [w for w in matched if w.lower() in strong]


def _confident(router: OfflineRouter, task: Task) -> str:
    """ "score 0.88" when the router's ``task`` is a confident route by its score alone
    (:data:`HYBRID_CONFIDENT`, no close rival), else ""."""
    scores = router.score(task.instruction)
    best = dict(scores).get(task.app, 0.0)
    rivals = [s for a, s in scores if a != task.app]
    if task.alternatives or best < HYBRID_CONFIDENT:
        return ""
    if rivals and max(rivals) >= HYBRID_PLAUSIBLE * best:
        return ""
    return f"score {best:.2f}"


def _hybrid(model: Plan, router: OfflineRouter, offline: list[Task]) -> Plan:
    """The model's plan, unless the router matched an app by name or keyword for every one
    of its tasks and the model contradicts it (a direct reply, or a plan without one of
    those apps): then the router's tasks, with the model's app offered as a choice where
    the router also scored it well for the same words (Controller._clarify). A model's
    plan that has the router's apps and more (a finer split) is kept. Against a direct
    reply a confident score is enough (:func:`_confident`): the app was named by what the
    user asked it to do."""
    strong = [_strong_words(router, t) for t in offline]
    if offline and not model.tasks:
        strong = [
            w or ([c] if (c := _confident(router, t)) else [])
            for t, w in zip(offline, strong, strict=True)
        ]
    if not offline or not all(strong):
        return model
    if model.tasks and {t.app for t in offline} <= {t.app for t in model.tasks}:
        return model
    said = (
        f"the model's plan ({', '.join(t.app for t in model.tasks)})"
        if model.tasks
        else "the model's direct reply"
    )
    notes = list(model.notes)
    asked: list[str] = []
    for i, task in enumerate(offline):
        other = model.tasks[i].app if i < len(model.tasks) else None
        if other is None or other == task.app:
            continue
        if other in task.alternatives:  # the router's close call offers it already
            asked.append(f"{task.app} or {other}")
            continue
        scores = dict(router.score(task.instruction))
        if scores.get(other, 0.0) >= HYBRID_PLAUSIBLE * scores.get(task.app, 0.0) > 0:
            task.alternatives = [*task.alternatives, other]
            asked.append(f"{task.app} or {other}")
    words = "; ".join(f"{t.app}: {', '.join(w)}" for t, w in zip(offline, strong, strict=True))
    how = f"the user is asked ({'; '.join(asked)})" if asked else "router preferred"
    notes.append(f"hybrid: {how} — it matched {words} — over {said}")
    return Plan(tasks=offline, source="hybrid", notes=notes)


# ------------------------------------------------------------------ entry


def _offline(text: str, router: OfflineRouter, notes: list[str]) -> Plan:
    tasks = router.route(text)
    return Plan(tasks=tasks, source="offline" if tasks else "none", notes=notes)


def _llm_plan(
    text: str,
    apps: list[AppProfile],
    llm: LLMClient,
    history_summary: str,
    max_tokens: int,
    self_block: str = "",
) -> Plan | str:
    """The model's plan, or why there is none (a note)."""
    messages = build_messages(text, apps, history_summary, self_block)
    error = ""
    for attempt in range(2):
        try:
            result = _ask(llm, messages, apps, max_tokens)
        except LLMError as e:
            return f"LLM unavailable: {e}"
        try:
            if result.finish_reason == "length":
                raise PlanInvalid(
                    f"the answer was cut at llm.plan_max_tokens ({max_tokens} tokens): "
                    "the model ran away"
                )
            plan = _parse_reply(result.message, apps, text)
        except PlanInvalid as e:
            error = str(e)
            if result.finish_reason == "length":
                break  # at temperature 0 it would run away again
            messages = messages + _feedback(result.message, error)
            continue
        if attempt:
            plan.notes.append(f"LLM plan corrected after: {error}")
        return plan
    return f"LLM plan invalid: {error}"


def plan_instruction(
    text: str,
    apps: list[AppProfile],
    *,
    llm: LLMClient | None,
    router: OfflineRouter,
    history_summary: str = "",
    mode: PlannerMode | None = None,
    self_block: Callable[[], str] = lambda: "",
) -> Plan:
    """Plan what to do with ``text``; never raises for a bad model answer or a dead LLM.

    ``mode`` (default ``llm.planner`` of the LLM's config): ``offline``, ``llm``, or
    ``hybrid`` (see :func:`_hybrid`). Whatever the model returns, the plan is a
    validated task list, a direct reply in plain words, or the offline router's.
    What went wrong on the way, and which path produced the plan, is in
    ``Plan.notes`` (the caller logs them once and shows them); ``Plan.source``
    is ``llm``, ``llm-normalised``, ``hybrid``, ``offline`` or ``none``.
    ``self_block()`` (asked only when a model plans) is what the user keeps about
    themselves, quoted as data, for the model's prompt (DESIGN §15).
    """
    text = (text or "").strip()
    if not text:
        return Plan(source="none", notes=["empty instruction"])
    if llm is None or not llm.enabled:
        return _offline(text, router, [])
    cfg = llm.config.llm
    mode = mode or cfg.planner
    if mode == "offline":
        return _offline(text, router, [])
    got = _llm_plan(text, apps, llm, history_summary, cfg.plan_max_tokens, self_block())
    if isinstance(got, Plan) and not got.tasks and (why := withheld(got.reply, text)):
        # the one place a model's words leave the planner: never its own, JSON, an echo
        got = f"model's reply withheld: {why}"
    if isinstance(got, str):
        plan = _offline(text, router, [f"{got}; used offline router"])
    elif mode == "hybrid":
        offline = router.route(text)
        plan = _hybrid(got, router, offline)
    else:
        plan = got
    return plan


# ---------------------------------------------------------------- history


def _entry_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        for key in ("message", "text", "instruction", "reply"):
            value = content.get(key)
            if isinstance(value, str) and value:
                return value
        return json.dumps(content, ensure_ascii=False)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _clip(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: max(0, n - 1)] + "…"


ENTRY_CHARS = 200
"""Characters of one history entry a summary line keeps."""


def entry_said(content: Any) -> str:
    """What a summary line shows of one history entry's content (at most ENTRY_CHARS)."""
    return _clip(_entry_text(content), ENTRY_CHARS)


def history_extract(history: list[dict[str, Any]], max_chars: int) -> str:
    """The last exchanges as "用户: … → app: …" lines, newest kept, at most ``max_chars``."""
    lines: list[str] = []
    for h in history:
        role = h.get("role") or ""
        # "said": the entry already reduced to its line (aios/control/context.py keeps them)
        said = h["said"] if "said" in h else entry_said(h.get("content"))
        if not said:
            continue
        if role == "user" or not lines:
            lines.append(f"用户: {said}" if role == "user" else f"{h.get('app') or role}: {said}")
        else:
            lines[-1] += f" → {h.get('app') or role}: {said}"
    return _tail_lines(lines, max_chars)


def own_turns(history: list[dict[str, Any]], app: str) -> list[dict[str, Any]]:
    """The turns of ``history`` routed to ``app``: each user entry with ``app``'s entries
    after it, up to the next user entry (DESIGN §14.8). Other apps' exchanges, the user's
    text routed to them and the system's notes are left out."""
    out: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []  # the current turn's user entry and app's entries
    mine = False  # whether any entry of the current turn is app's
    for h in history:
        ours = h.get("app") == app
        if h.get("role") == "user":
            if mine:
                out.extend(kept)
            kept, mine = [h], ours
        else:
            if ours:
                kept.append(h)
                mine = True
    if mine:
        out.extend(kept)
    return out


def summarize_history(history: list[dict[str, Any]], llm: LLMClient | None, max_chars: int) -> str:
    """A short summary of the session for ``context.history_summary`` (≤ ``max_chars``).

    The LLM is asked only when the exchanges no longer fit verbatim: a short
    session is passed as it is, which is both exact and free.
    """
    if max_chars <= 0 or not history:
        return ""
    extract = history_extract(history, max_chars * 4)
    if llm is None or not llm.enabled or not extract or len(extract) <= max_chars:
        return _tail_lines(extract.splitlines(), max_chars)
    try:
        result = llm.chat(
            [
                {
                    "role": "system",
                    "content": "Summarise this conversation between a user and "
                    f"desktop apps in at most {max_chars} characters, in the user's language. Keep "
                    "names, titles, files and numbers the user may refer back to. Reply with the "
                    "summary only.",
                },
                {"role": "user", "content": extract},
            ],
            purpose="summary",
            temperature=0.0,
            max_tokens=max(32, max_chars),
        )
    except LLMError as e:
        logger.info("history summary by LLM failed, using an extract: %s", e)
        return _tail_lines(extract.splitlines(), max_chars)
    summary = result.content.strip()
    return _clip(summary, max_chars) if summary else _tail_lines(extract.splitlines(), max_chars)


def _tail_lines(lines: list[str], max_chars: int) -> str:
    """The newest lines that fit in ``max_chars``; the newest alone is clipped if it must."""
    out: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = len(line) + (1 if out else 0)
        if used + cost > max_chars:
            if not out:
                out.append(_clip(line, max_chars))
            break
        out.append(line)
        used += cost
    return "\n".join(reversed(out))
