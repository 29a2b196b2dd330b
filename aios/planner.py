"""Intent → task DAG: one function-calling request, validated, else offline.

With an LLM, ``plan_instruction`` sends ONE request offering two functions,
``dispatch_tasks`` and ``reply_directly``. The answer is validated (known
apps, unique ids, dependencies that exist and form no cycle, non-empty
instructions); a bad answer is sent back once with the validation error so
the model can correct it, and if it is still bad, or the LLM cannot be
reached, the offline router plans instead and the plan says why in
``notes``. Without an LLM the offline router plans directly.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from aios.errors import LLMError
from aios.llm import LLMClient
from aios.router import AppProfile, OfflineRouter, Task

__all__ = [
    "MAX_TASKS",
    "Plan",
    "PlanInvalid",
    "Task",
    "plan_instruction",
    "summarize_history",
    "validate_tasks",
]

logger = logging.getLogger(__name__)

MAX_TASKS = 8
"""More tasks than this from one instruction is a model running away, not a plan."""


class Plan(BaseModel):
    """What the controller dispatches: tasks, or a direct reply, and where it came from."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[Task] = Field(default_factory=list)
    reply: str | None = None
    """A direct answer when no app is needed."""
    source: Literal["llm", "offline", "none"] = "none"
    notes: list[str] = Field(default_factory=list)


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


def build_messages(
    text: str, apps: list[AppProfile], history_summary: str = ""
) -> list[dict[str, Any]]:
    system = SYSTEM_PROMPT.format(apps=_app_lines(apps))
    if history_summary.strip():
        system += f"\nConversation so far: {history_summary.strip()}\n"
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


# ------------------------------------------------------------- validation


def _resolve_app(value: Any, apps: list[AppProfile]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlanInvalid(f"app must be an app id string (got {value!r})")
    v = value.strip()
    for a in apps:
        if v == a.id:
            return a.id
    for a in apps:  # models sometimes give the display name; that is unambiguous enough
        if v.lower() in (a.name.lower(), a.id.lower()):
            return a.id
    ids = ", ".join(a.id for a in apps)
    raise PlanInvalid(f"unknown app {v!r}; use one of: {ids}")


def validate_tasks(raw: Any, apps: list[AppProfile]) -> list[Task]:
    """Check a model's task list and return it in dependency order with ids t1…tn.

    Raises PlanInvalid naming the first broken rule.
    """
    if not isinstance(raw, list) or not raw:
        raise PlanInvalid("tasks must be a non-empty list")
    if len(raw) > MAX_TASKS:
        raise PlanInvalid(f"too many tasks ({len(raw)}; at most {MAX_TASKS})")
    items: list[tuple[str, str, str, list[str]]] = []
    seen: set[str] = set()
    for n, t in enumerate(raw, start=1):
        if not isinstance(t, dict):
            raise PlanInvalid(f"task #{n} must be an object with id, app, instruction")
        tid = str(t.get("id") if t.get("id") not in (None, "") else f"t{n}").strip()
        if tid in seen:
            raise PlanInvalid(f"task id {tid!r} is used twice; ids must be unique")
        seen.add(tid)
        app = _resolve_app(t.get("app"), apps)
        instruction = t.get("instruction")
        if not isinstance(instruction, str) or not instruction.strip():
            raise PlanInvalid(f"task {tid!r} has an empty instruction")
        deps = t.get("depends_on") or []
        if isinstance(deps, str | int):
            deps = [deps]
        if not isinstance(deps, list):
            raise PlanInvalid(f"task {tid!r}: depends_on must be a list of task ids")
        items.append((tid, app, instruction.strip(), [str(d).strip() for d in deps]))
    for tid, _, _, deps in items:
        for d in deps:
            if d == tid:
                raise PlanInvalid(f"task {tid!r} depends on itself")
            if d not in seen:
                raise PlanInvalid(f"task {tid!r} depends on unknown task {d!r}")
    order = _topological(items)
    new_id = {tid: f"t{i}" for i, tid in enumerate(order, start=1)}
    by_id = {it[0]: it for it in items}
    return [
        Task(
            id=new_id[tid],
            app=by_id[tid][1],
            instruction=by_id[tid][2],
            depends_on=[new_id[d] for d in dict.fromkeys(by_id[tid][3])],
        )
        for tid in order
    ]


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


def _parse_reply(result_message: dict[str, Any], apps: list[AppProfile]) -> Plan:
    """The model's answer as a Plan, or PlanInvalid saying what to fix."""
    calls = result_message.get("tool_calls") or []
    if not calls:
        content = (result_message.get("content") or "").strip()
        if content:  # a plain answer is a direct reply that skipped the function
            return Plan(reply=content, source="llm")
        raise PlanInvalid("no function was called; call dispatch_tasks or reply_directly")
    fn = calls[0].get("function") or {}
    name = fn.get("name")
    if name not in ("dispatch_tasks", "reply_directly"):
        raise PlanInvalid(f"unknown function {name!r}; call dispatch_tasks or reply_directly")
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError as e:
        raise PlanInvalid(
            f"the arguments of {name} are not valid JSON ({e.msg} at character {e.pos})"
        ) from e
    if not isinstance(args, dict):
        raise PlanInvalid(f"the arguments of {name} must be a JSON object")
    if name == "reply_directly":
        reply = args.get("text")
        if not isinstance(reply, str) or not reply.strip():
            raise PlanInvalid("reply_directly needs a non-empty text")
        return Plan(reply=reply.strip(), source="llm")
    return Plan(tasks=validate_tasks(args.get("tasks"), apps), source="llm")


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


# ------------------------------------------------------------------ entry


def _offline(text: str, router: OfflineRouter, notes: list[str]) -> Plan:
    tasks = router.route(text)
    return Plan(tasks=tasks, source="offline" if tasks else "none", notes=notes)


def plan_instruction(
    text: str,
    apps: list[AppProfile],
    *,
    llm: LLMClient | None,
    router: OfflineRouter,
    history_summary: str = "",
) -> Plan:
    """Plan what to do with ``text``; never raises for a bad model answer or a dead LLM.

    What went wrong on the way is in ``Plan.notes``, not in the log: the caller
    (the controller) logs the notes once and shows them to the user.
    """
    text = (text or "").strip()
    if not text:
        return Plan(source="none", notes=["empty instruction"])
    if llm is None or not llm.enabled:
        return _offline(text, router, [])
    messages = build_messages(text, apps, history_summary)
    tools = [DISPATCH_TOOL, REPLY_TOOL]
    error = ""
    for attempt in range(2):
        try:
            result = llm.chat(messages, tools=tools, tool_choice="auto", purpose="plan")
        except LLMError as e:
            return _offline(text, router, [f"LLM unavailable: {e}; used offline router"])
        try:
            plan = _parse_reply(result.message, apps)
        except PlanInvalid as e:
            error = str(e)
            messages = messages + _feedback(result.message, error)
            continue
        if attempt:
            plan.notes.append(f"LLM plan corrected after: {error}")
        return plan
    return _offline(text, router, [f"LLM plan invalid: {error}; used offline router"])


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


def history_extract(history: list[dict[str, Any]], max_chars: int) -> str:
    """The last exchanges as "用户: … → app: …" lines, newest kept, at most ``max_chars``."""
    lines: list[str] = []
    for h in history:
        role = h.get("role") or ""
        said = _clip(_entry_text(h.get("content")), 200)
        if not said:
            continue
        if role == "user" or not lines:
            lines.append(f"用户: {said}" if role == "user" else f"{h.get('app') or role}: {said}")
        else:
            lines[-1] += f" → {h.get('app') or role}: {said}"
    return _tail_lines(lines, max_chars)


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
