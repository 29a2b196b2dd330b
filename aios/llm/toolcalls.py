"""Tool calls out of a chat completion, whatever shape the model gave them (issue 15).

Cloud models answer function calling with native ``tool_calls``; small local
models (a 0.5 B instruct model behind llama.cpp, Ollama, vLLM) often write the
call as JSON text in ``content`` instead. :func:`extract` takes either and
returns the calls in order, each as ``(name, arguments dict)``, plus notes
saying what had to be repaired. Used by the planner (aios/control/planner.py) and the
generic assistant (aios_sdk/generic).

Shapes accepted in ``content``:

- a bare object: ``{"name": f, "arguments": {...}}`` (or ``"parameters"``),
  ``{"function": {"name": f, "arguments": ...}}``, ``{"tool": f, "args": {...}}``;
- the same inside a fenced block, or between ``<tool_call>`` tags (a missing
  closing tag is fine);
- ``"arguments"`` as a JSON string, or as a list where the tool takes one list
  parameter (``[...]`` → ``{"tasks": [...]}``);
- an object of arguments only (``{"tasks": [...]}``) when exactly one offered
  tool has exactly those required parameters;
- several objects glued together (``{...}{...}``): all of them, in order;
- truncated or mismatched brackets, repaired when unambiguous (closers
  appended at the end, one missing closer inserted), refused otherwise.

A name that is not among the offered tools is refused with a note and never
returned. Text with no call is a direct reply, unless it looks like JSON or
markup (:func:`looks_like_code`): then it is never shown nor spoken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Extraction",
    "extract",
    "extract_calls",
    "holds_call_markup",
    "looks_like_code",
    "repair_json",
]

Call = tuple[str, dict[str, Any]]

NAME_KEYS = ("name", "tool", "tool_name", "function_name")
ARG_KEYS = ("arguments", "parameters", "args", "input", "params")
MAX_OBJECTS = 16
"""More JSON objects than this in one answer is a runaway, not a sequence of calls."""
NOTE_CHARS = 80
"""How much of an offending value a note quotes."""

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|$)", re.DOTALL)
_TAGS = re.compile(r"</?\s*(?:tool_call|tool_calls|function_call|\|tool_call\|)\s*>", re.I)
_CLOSER = {"{": "}", "[": "]"}


@dataclass
class Extraction:
    """What a model's message holds."""

    calls: list[Call] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    text: str | None = None
    """Plain words for the user when the message holds no call (None when it holds a
    call, nothing, or only JSON-looking text that must not be shown)."""
    refused: list[str] = field(default_factory=list)
    """Names of calls refused because no such tool was offered."""
    native: bool = False
    """The calls came as native ``tool_calls``."""


def _clip(value: Any) -> str:
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    s = " ".join(s.split())
    return s if len(s) <= NOTE_CHARS else s[: NOTE_CHARS - 1] + "…"


def looks_like_code(text: str | None) -> bool:
    """True for text that is JSON, a fenced block or tool-call markup, not words for a person."""
    s = (text or "").strip()
    return bool(s) and (s[0] in "{[" or s.startswith("```") or bool(_TAGS.match(s)))


def holds_call_markup(text: str | None) -> bool:
    """True when ``text`` holds tool-call markup anywhere (``<tool_call>``…): words that go
    on into a call written as text (a streamed answer is taken back then)."""
    return bool(_TAGS.search(text or ""))


# ------------------------------------------------------------ repair


def _scan(text: str) -> tuple[str, list[str], list[str]] | None:
    """The first JSON value of ``text`` as far as it goes, the brackets left open and the
    fixes made; None when it ends inside a string or a closer cannot be matched."""
    stack: list[str] = []
    out: list[str] = []
    fixes: list[str] = []
    in_str = esc = False
    for ch in text:
        out.append(ch)
        if in_str:
            esc, in_str = (False, True) if esc else (ch == "\\", ch != '"')
            continue
        if ch == '"':
            in_str = True
        elif ch in _CLOSER:
            stack.append(ch)
        elif ch in "}]":
            if stack and _CLOSER[stack[-1]] == ch:
                stack.pop()
            elif len(stack) >= 2 and _CLOSER[stack[-2]] == ch:
                out.insert(len(out) - 1, _CLOSER[stack[-1]])  # one closer was forgotten
                fixes.append(f"inserted a missing {_CLOSER[stack[-1]]!r}")
                del stack[-2:]
            else:
                return None
        if not stack and out[0] in _CLOSER:
            break
    return None if in_str else ("".join(out).rstrip(), stack, fixes)


def repair_json(text: str) -> tuple[Any, str] | None:
    """Parse one JSON value at the start of ``text``, closing what was left open.

    Returns (value, what was repaired) or None when the repair would be a guess:
    the text ends inside a string or after a key, or a closer does not match and
    inserting one missing closer does not fix it.
    """
    scanned = _scan(text)
    if scanned is None:
        return None
    body, stack, fixes = scanned
    if stack:
        body = body.rstrip(",").rstrip()
        if body.endswith(":"):
            return None
        closers = "".join(_CLOSER[c] for c in reversed(stack))
        fixes.append(f"closed {closers!r}")
        body += closers
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    return value, "; ".join(fixes)


def _objects(text: str, notes: list[str]) -> list[Any]:
    """The JSON values (objects, or lists of them) found in ``text``, in order."""
    found: list[Any] = []
    decoder = json.JSONDecoder()
    i = 0
    while i < len(text) and len(found) < MAX_OBJECTS:
        start = min((p for p in (text.find("{", i), text.find("[", i)) if p >= 0), default=-1)
        if start < 0:
            break
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            repaired = repair_json(text[start:])
            if repaired is None:
                i = start + 1
                continue
            value, fix = repaired
            if fix:
                notes.append(f"repaired the model's JSON ({fix})")
            found.append(value)
            break  # a repaired value ran to the end of the text
        found.append(value)
        i = end
    return found


# ------------------------------------------------------------- tools


@dataclass(frozen=True)
class _Tool:
    name: str
    required: frozenset[str]
    list_param: str | None
    """The one array parameter, when the tool has exactly one."""


def _tools(tools: Iterable[str | dict[str, Any]]) -> dict[str, _Tool]:
    out: dict[str, _Tool] = {}
    for t in tools:
        if isinstance(t, str):
            out[t] = _Tool(t, frozenset(), None)
            continue
        fn = t.get("function", t) if isinstance(t, dict) else {}
        name = fn.get("name")
        if not isinstance(name, str):
            continue
        params = fn.get("parameters") or {}
        props = params.get("properties") or {}
        arrays = [k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "array"]
        out[name] = _Tool(
            name,
            frozenset(params.get("required") or []),
            arrays[0] if len(arrays) == 1 else None,
        )
    return out


def _arguments(raw: Any, tool: _Tool, notes: list[str]) -> dict[str, Any] | None:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            repaired = repair_json(raw.strip())
            if repaired is None:
                notes.append(f"the arguments of {tool.name} are not valid JSON: {_clip(raw)}")
                return None
            raw, fix = repaired
            notes.append(f"repaired the arguments of {tool.name} ({fix})")
    if isinstance(raw, list):
        if tool.list_param is None:
            notes.append(f"the arguments of {tool.name} are a list, not an object")
            return None
        notes.append(f"the arguments of {tool.name} were a list: taken as {tool.list_param!r}")
        return {tool.list_param: raw}
    if not isinstance(raw, dict):
        notes.append(f"the arguments of {tool.name} must be an object, not {_clip(raw)}")
        return None
    return raw


def _as_call(obj: Any, tools: dict[str, _Tool], ex: Extraction) -> Call | None:
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        obj = fn
    name = next((obj[k] for k in NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name is None:
        # arguments alone: the one tool whose required parameters are exactly these keys
        keys = set(obj)
        fits = [t for t in tools.values() if t.required and t.required <= keys]
        fits = [t for t in fits if t.required == keys] or fits
        if len(fits) == 1:
            ex.notes.append(f"the model gave {fits[0].name}'s arguments without its name")
            return fits[0].name, obj
        return None
    name = name.strip()
    tool = tools.get(name)
    if tool is None:
        ex.refused.append(name)
        ex.notes.append(
            f"refused a call to {name!r}: not an offered tool ({', '.join(tools) or 'none'})"
        )
        return None
    raw = next((obj[k] for k in ARG_KEYS if k in obj), None)
    args = _arguments(raw, tool, ex.notes)
    return None if args is None else (name, args)


# -------------------------------------------------------------- entry


def extract(message: dict[str, Any] | None, tools: Sequence[str | dict[str, Any]]) -> Extraction:
    """The calls in a chat completion ``message`` (``{content, tool_calls?}``).

    ``tools``: the offered tools, as names or as OpenAI tool schemas (a schema
    lets a list be wrapped as the tool's one list parameter).
    """
    offered = _tools(tools)
    ex = Extraction()
    message = message or {}
    native = message.get("tool_calls") or []
    if native:
        ex.native = True
        for c in native:
            fn = (c or {}).get("function") or {}
            call = _as_call(
                {"name": fn.get("name"), "arguments": fn.get("arguments")}
                if isinstance(fn.get("name"), str)
                else fn,
                offered,
                ex,
            )
            if call:
                ex.calls.append(call)
        return ex
    content = message.get("content")
    content = content.strip() if isinstance(content, str) else ""
    if not content:
        return ex
    body = _TAGS.sub("\n", content)
    fenced = [m.group(1) for m in _FENCE.finditer(body)]
    sources = fenced or [body]
    for src in sources:
        for value in _objects(src, ex.notes):
            for obj in value if isinstance(value, list) else [value]:
                call = _as_call(obj, offered, ex)
                if call:
                    ex.calls.append(call)
    if ex.calls:
        ex.notes.insert(0, "the model wrote its call as text, not as a tool call")
    elif looks_like_code(content) or fenced or ex.refused:
        ex.notes.append(f"the model's answer looked like code, not words: {_clip(content)}")
    else:
        ex.text = content
    return ex


def extract_calls(
    message: dict[str, Any] | None, tools: Sequence[str | dict[str, Any]]
) -> tuple[list[Call], list[str]]:
    """:func:`extract`'s calls and notes only."""
    ex = extract(message, tools)
    return ex.calls, ex.notes
