"""The pieces of the generic app's LLM loop that need no agent: parsing tool calls,
checking their arguments, and turning results back into messages."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from aios.protocol import describe_validation_error

TOOL_RESULT_CHARS = 6000
"""A tool result is cut to this many characters before it goes back to the LLM."""
STATE_CHARS = 2000
"""Bound of the last-view summary kept in the session state."""


class Outcome:
    """What one LLM answer amounts to: a final view, steps to run, or a problem."""

    def __init__(
        self,
        kind: str,
        *,
        reply: dict[str, Any] | None = None,
        pending: list[dict[str, Any]] | None = None,
        problem: str = "",
        feedback: list[dict[str, Any]] | None = None,
    ) -> None:
        self.kind = kind
        self.reply = reply or {}
        self.pending = pending or []
        self.problem = problem
        self.feedback = feedback or []

    @classmethod
    def done(cls, reply: dict[str, Any]) -> Outcome:
        return cls("view", reply=reply)

    @classmethod
    def bad(cls, problem: str, feedback: list[dict[str, Any]]) -> Outcome:
        return cls("problem", problem=problem, feedback=feedback)


def parse_call(call: Any, names: set[str]) -> tuple[str, str, Any, str]:
    """(id, function name, parsed arguments, "" or the problem) of one tool call."""
    if not isinstance(call, dict):
        return "", "", None, "a tool call must be an object"
    cid = str(call.get("id") or "")
    raw_fn = call.get("function")
    fn: dict[str, Any] = raw_fn if isinstance(raw_fn, dict) else {}
    name = str(fn.get("name") or "")
    if name not in names:
        offered = ", ".join(sorted(names))
        return cid, name, None, f"unknown function {name!r}; the functions are: {offered}"
    raw = fn.get("arguments")
    if raw is None or raw == "":
        return cid, name, {}, ""
    if isinstance(raw, dict):
        return cid, name, raw, ""
    try:
        args = json.loads(raw)
    except (TypeError, ValueError) as e:
        return cid, name, None, f"{name}: the arguments are not valid JSON ({e})"
    if not isinstance(args, dict):
        return cid, name, None, f"{name}: the arguments must be a JSON object"
    return cid, name, args, ""


def check_args(name: str, args: dict[str, Any]) -> str:
    """Check an atomic tool's arguments against its schema now, not a round later."""
    from aios.tools import tools

    spec = tools().get(name)
    if spec is None:
        return ""  # one of the app's own tools: the app checks its own arguments
    try:
        spec.args_model.model_validate(args)
    except ValidationError as e:
        return f"{name}: bad arguments: {describe_validation_error(e)}"
    return ""


def assistant_message(reply: dict[str, Any]) -> dict[str, Any]:
    """The LLM's message as it goes back into the conversation."""
    out: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        out["tool_calls"] = reply["tool_calls"]
    elif out["content"] is None:
        out["content"] = ""  # an assistant message without tool calls needs text
    return out


def result_text(entry: Any) -> str:
    if not isinstance(entry, dict):
        return dumps(entry, TOOL_RESULT_CHARS)
    shown = {
        k: entry[k]
        for k in ("status", "result", "error", "meta")
        if k in entry and entry[k] is not None
    }
    return dumps(shown, TOOL_RESULT_CHARS)


def dumps(value: Any, limit: int) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"…(cut: {len(text)} characters in all)"
    return text


def question_from(action: dict[str, Any]) -> str:
    """The question in an ask/retry action, whatever control sent it."""
    candidates: list[Any] = [action.get("value"), action.get("selected")]
    for field in ("params", "form_values"):
        payload = action.get(field)
        if isinstance(payload, dict):
            candidates += [payload.get("question"), payload.get("q"), payload.get("text")]
    for value in candidates:
        if isinstance(value, str) and value.strip():
            return value.strip()[:4000]
    return ""


# ---------------------------------------------------- small models' habits (part 15-L)

SCHEMA_ECHO_KEYS = frozenset(
    {"required", "type", "properties", "additionalProperties", "$schema", "title", "parameters"}
)
"""Keys a small model copies from the schema into its arguments; dropped unless the tool
takes a parameter of that name."""
RESULT_ROWS = 50
"""Rows of a tool result shown in the fallback view."""


def workspace_path(app_id: str, value: str) -> str:
    """``/apps/<id>/files/x.txt`` (the URL a view shows a file with) as ``x.txt``, the same
    file in the workdir; any other value unchanged."""
    for prefix in (f"/apps/{app_id}/files/", f"apps/{app_id}/files/"):
        if value.startswith(prefix):
            return value[len(prefix) :] or "."
    return value


def clean_args(
    name: str, args: dict[str, Any], params: dict[str, Any] | None, app_id: str
) -> tuple[dict[str, Any], list[str]]:
    """The arguments without what only echoes the schema, paths as workdir paths; notes.

    Dropped: schema keys the tool does not take (``"required": [...]``, ``"type"``…),
    and an optional parameter given as null or as 0 where the schema asks for more than
    0 (``timeout: 0``: the default applies).
    """
    props: dict[str, Any] = (params or {}).get("properties") or {}
    required = set((params or {}).get("required") or [])
    out: dict[str, Any] = {}
    dropped: list[str] = []
    notes: list[str] = []
    for key, value in args.items():
        spec = props.get(key)
        if spec is None and key in SCHEMA_ECHO_KEYS:
            dropped.append(key)
            continue
        if isinstance(spec, dict) and key not in required and _unset(value, spec):
            dropped.append(key)
            continue
        if isinstance(value, str):
            fixed = workspace_path(app_id, value)
            if fixed != value:
                notes.append(f"{name}: {key} {value!r} read as {fixed!r} (the same file)")
                value = fixed
        out[key] = value
    if dropped:
        notes.append(f"{name}: dropped {', '.join(dropped)} (an echo of the schema, not a value)")
    return out, notes


def _unset(value: Any, spec: dict[str, Any]) -> bool:
    if value is None:
        return True
    bounds = [spec, *[o for o in spec.get("anyOf") or [] if isinstance(o, dict)]]
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and value <= 0
        and any("exclusiveMinimum" in b and b["exclusiveMinimum"] >= value for b in bounds)
    )


def call_key(name: str, args: Any) -> str:
    """(tool, canonical arguments) as one string: the same call gives the same key."""
    return json.dumps([name, args], sort_keys=True, ensure_ascii=False, default=str)


def result_view(tool: str, entry: Any, en: bool) -> dict[str, Any]:
    """A view of one tool result (the loop guard's answer): a table for rows, else text."""
    result = entry.get("result") if isinstance(entry, dict) else entry
    rows = result
    if isinstance(result, dict):
        lists = [v for v in result.values() if isinstance(v, list)]
        rows = lists[0] if len(lists) == 1 else result
    message = f"Here is what {tool} returned." if en else f"这是 {tool} 的结果。"
    if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
        columns = list(dict.fromkeys(k for r in rows[:RESULT_ROWS] for k in r))
        return {
            "status": "ok",
            "view_type": "table",
            "data": {
                "columns": columns,
                "rows": [[_cell(r.get(c)) for c in columns] for r in rows[:RESULT_ROWS]],
            },
            "actions": [],
            "message": message,
        }
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, indent=2)
    return {
        "status": "ok",
        "view_type": "text",
        "data": {"content": text[:TOOL_RESULT_CHARS]},
        "actions": [],
        "message": message,
    }


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
