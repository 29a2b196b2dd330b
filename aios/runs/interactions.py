"""The checks of what an app asks the user (DESIGN §13) and of what the user answers.

An ``ask`` step is a ``choice``, a ``confirm`` or an ``input`` card: :func:`check_ask`
checks its kind, prompt and options, :func:`check_covers` the calls a confirm covers,
:func:`check_value` the user's answer. Pure: no state, no I/O.
"""

from __future__ import annotations

from typing import Any

from aios.errors import BadRequest

__all__ = [
    "ASK_COVERS_MAX",
    "ASK_KINDS",
    "ASK_OPTIONS_MAX",
    "ASK_PROMPT_MAX",
    "INPUT_MAX",
    "SYSTEM_ACTIONS",
    "check_ask",
    "check_covers",
    "check_value",
]

SYSTEM_ACTIONS = ("end_process",)
"""System actions an app asks for that always ask the user (a confirm may cover them)."""
ASK_KINDS = ("choice", "confirm", "input")
ASK_PROMPT_MAX = 500
ASK_OPTIONS_MAX = 20
INPUT_MAX = 2000
"""Characters of an ``input`` answer."""
ASK_COVERS_MAX = 10
"""Steps one ``confirm`` may cover (see :func:`check_covers`)."""


def _option_value(option: Any) -> Any:
    return option.get("value") if isinstance(option, dict) else option


def check_ask(args: dict[str, Any]) -> tuple[str, list[Any]]:
    """The kind and options of an ``ask`` step; BadRequest naming the first problem."""
    kind = args.get("kind")
    if kind not in ASK_KINDS:
        raise BadRequest(f"ask: kind must be one of {', '.join(ASK_KINDS)}, got {kind!r}")
    prompt = args.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise BadRequest("ask: a prompt (the question, a non-empty string) is required")
    if len(prompt) > ASK_PROMPT_MAX:
        raise BadRequest(f"ask: the prompt is longer than {ASK_PROMPT_MAX} characters")
    options = args.get("options")
    if kind == "choice":
        if not isinstance(options, list) or not options:
            raise BadRequest("ask: a choice needs options (a non-empty list)")
        if len(options) > ASK_OPTIONS_MAX:
            raise BadRequest(f"ask: at most {ASK_OPTIONS_MAX} options")
        for o in options:
            if isinstance(o, dict) and "value" not in o:
                raise BadRequest(f"ask: an option object needs a value, got {o!r}")
        return kind, list(options)
    return str(kind), [True, False] if kind == "confirm" else []


def check_covers(args: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The steps a ``confirm`` covers (``covers: [{tool, args}]``); BadRequest naming why not.

    A yes to such a confirm is the user's approval of exactly those calls, once each,
    later in the same run (:func:`aios.runs.gate.gate`): an app that asks "delete a.txt?"
    itself is not asked about its delete command a second time. The card lists them.
    """
    from aios.protocol import ATOMIC_TOOLS

    covers = args.get("covers")
    if covers is None:
        return []
    if args.get("kind") != "confirm":
        raise BadRequest("ask: only a confirm may cover steps (covers)")
    if not isinstance(covers, list) or not covers or len(covers) > ASK_COVERS_MAX:
        raise BadRequest(f"ask: covers must be a list of 1 to {ASK_COVERS_MAX} steps")
    out = []
    for c in covers:
        tool = c.get("tool") if isinstance(c, dict) else None
        if tool not in (*ATOMIC_TOOLS, *SYSTEM_ACTIONS) or not isinstance(c.get("args"), dict):
            raise BadRequest(
                "ask: a covered step is {tool: <atomic tool or "
                f"{' / '.join(SYSTEM_ACTIONS)}>, args: {{...}}}}, got {c!r}"
            )
        out.append((str(tool), dict(c["args"])))
    return out


def check_value(kind: str, options: list[Any], body: dict[str, Any]) -> Any:
    """The user's answer to an ask card; BadRequest naming what is allowed."""
    if "value" not in body:
        raise BadRequest('give {"value": ...}: the answer to this question')
    value = body["value"]
    if kind == "confirm":
        if not isinstance(value, bool):
            raise BadRequest(f"a confirm is answered with true or false, got {value!r}")
        return value
    if kind == "choice":
        allowed = [_option_value(o) for o in options]
        if value not in allowed:
            raise BadRequest(f"value must be one of {allowed!r}, got {value!r}")
        return value
    if not isinstance(value, str) or len(value) > INPUT_MAX:
        raise BadRequest(f"an input is answered with text of at most {INPUT_MAX} characters")
    return value
