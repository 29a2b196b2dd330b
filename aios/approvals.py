"""The user's say over a plan (DESIGN §12): policy, the plan preview, decisions, expiry.

Before a plan runs, every step is *reviewed*: its risk (:mod:`aios.risk`),
the rule that applies to it, and its text in plain words. The rule for an
app's tool is, first found: the user's persisted choice for that app and
tool (``never`` / ``ask`` / ``allow``, "always allow" included), an "allow
for this session" given earlier in the same session, and the mode's
default (``approvals.mode``: ``auto`` asks nothing, ``smart`` asks for
``high`` steps, ``manual`` for ``medium`` and ``high``). Custom ``@tool``s
run inside the app with its own rights and are never asked about.

When any step needs a decision, one **interaction** for the whole plan is
created (persisted, sent as an ``interaction`` event) and the run waits for
one answer: allow once, allow for this session, always allow (persisted),
or deny; or it expires after ``approvals.timeout`` seconds, or the run is
cancelled. The store decides who answered first (two tabs, one card), so a
decision is taken once and survives a restart.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aios.errors import BadRequest, Conflict, NotFound
from aios.risk import Risk, blocked, classify, describe

if TYPE_CHECKING:
    from aios.config import ApprovalsConfig
    from aios.events import EventBus
    from aios.protocol import Step
    from aios.runstore import RunStore
    from aios.sandbox import SandboxPolicy

Rule = Literal["allow", "ask", "never"]
RULES: tuple[Rule, ...] = ("allow", "ask", "never")
DECISIONS = ("allow", "allow_session", "allow_always", "deny")
SYSTEM_ACTIONS = ("end_process",)
"""System actions an app asks for that always ask the user (a confirm may cover them)."""
ASKED_AT: dict[str, frozenset[str]] = {
    "auto": frozenset(),
    "smart": frozenset({"high"}),
    "manual": frozenset({"medium", "high"}),
}
"""The risks each mode asks about by default."""
WAIT_SLICE = 0.25
"""Seconds between two looks at a waiting decision's expiry and its run's cancel flag."""


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Review:
    """One step of a plan as the user sees it before it runs."""

    step_id: str
    tool: str
    risk: Risk | None
    rule: Rule
    text: str
    args: str = "{}"
    """The arguments as the audit log shows them (secrets redacted, size capped)."""
    blocked: str | None = None
    """The block list's refusal: such a step is never asked about, the tool refuses it."""

    @property
    def asks(self) -> bool:
        return self.rule == "ask" and self.blocked is None

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step_id": self.step_id,
            "tool": self.tool,
            "risk": self.risk,
            "rule": "ask" if self.asks else ("never" if self.blocked else self.rule),
            "text": self.text,
            "args": self.args,
        }
        if self.blocked is not None:
            out["blocked"] = self.blocked
        return out


@dataclass
class Interaction:
    """A question to the user that a run waits on (kind ``approval``: a plan preview)."""

    id: str
    run_id: str
    app: str
    session_id: str
    steps: list[Review]
    created: float
    expires: float
    kind: str = "approval"
    prompt: str = ""
    options: list[Any] = field(default_factory=lambda: list(DECISIONS))
    default: Any = None
    placeholder: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    """An ask's step: ``{step_id, tool: "ask", default, placeholder}`` (stored with it)."""
    state: str = "pending"
    answer: dict[str, Any] | None = None
    answered: threading.Event = field(default_factory=threading.Event)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "run_id": self.run_id,
            "app": self.app,
            "session_id": self.session_id,
            "kind": self.kind,
            "prompt": self.prompt,
            "options": list(self.options),
            "steps": [r.public() for r in self.steps] if self.kind == "approval" else [self.detail],
            "created": self.created,
            "expires": self.expires,
            "state": self.state,
        }
        if self.kind != "approval":
            out["default"] = self.default
            out["placeholder"] = self.placeholder
        if self.answer is not None:
            out["answer"] = self.answer
        return out


class Approvals:
    """Reviews plans, asks the user, and applies the answers (one per system)."""

    def __init__(
        self,
        runstore: RunStore,
        bus: EventBus,
        config: Callable[[], ApprovalsConfig],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = runstore
        self._bus = bus
        self._config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting: dict[str, Interaction] = {}
        self._session_allows: set[tuple[str, str, str]] = set()
        """(session id, app id, tool) allowed "for this session"."""

    # ------------------------------------------------------------ the policy

    def rule(
        self,
        app: str,
        session_id: str,
        tool: str,
        risk: Risk | None,
        policy: dict[str, str] | None = None,
    ) -> Rule:
        """The rule for one call; ``policy`` is the app's, when the caller read it already."""
        if risk is None:
            return "allow"  # a custom @tool: the app's own code, its own rights
        chosen = (self._store.policy(app) if policy is None else policy).get(tool)
        for known in RULES:
            if chosen == known:
                return known
        with self._lock:
            if (session_id, app, tool) in self._session_allows:
                return "allow"
        return "ask" if risk in ASKED_AT[self._config().mode] else "allow"

    def review(
        self,
        app: str,
        session_id: str,
        steps: Sequence[Step],
        policy: SandboxPolicy | None = None,
    ) -> list[Review]:
        """Each step's risk, rule and plain words; with the app's sandbox ``policy``, also
        whether the block list will refuse it (then nobody is asked about it)."""
        from aios.tools import audit_args

        out = []
        chosen = self._store.policy(app)  # once per plan
        for step in steps:
            risk = classify(step.tool, step.args)
            out.append(
                Review(
                    step_id=step.key,
                    tool=step.tool,
                    risk=risk,
                    rule=self.rule(app, session_id, step.tool, risk, chosen),
                    text=describe(step.tool, step.args),
                    args=audit_args(step.args),
                    blocked=blocked(policy, step.tool, step.args) if policy is not None else None,
                )
            )
        return out

    def policy(self, app: str) -> dict[str, str]:
        return self._store.policy(app)

    def set_policy(self, app: str, body: dict[str, Any]) -> dict[str, str]:
        """``{tool: "allow"|"ask"|"never"|null}``; BadRequest names the first bad entry."""
        from aios.protocol import ATOMIC_TOOLS

        if not body:
            raise BadRequest('give {"<tool>": "allow"|"ask"|"never"|null, ...}')
        for tool, value in body.items():
            if tool not in ATOMIC_TOOLS:
                raise BadRequest(
                    f"unknown tool {tool!r}: a policy names one of {', '.join(ATOMIC_TOOLS)}"
                )
            if value is not None and value not in RULES:
                raise BadRequest(
                    f"policy for {tool} must be one of {', '.join(RULES)} or null, got {value!r}"
                )
        for tool, value in body.items():
            self._store.set_policy(app, tool, value)
        return self._store.policy(app)

    # --------------------------------------------------------------- asking

    def ask(
        self,
        run_id: str,
        app: str,
        session_id: str,
        reviews: list[Review],
        *,
        options: list[Any] | None = None,
    ) -> Interaction:
        now = self._clock()
        asked = [r for r in reviews if r.asks]
        ia = Interaction(
            id=new_id("ia"),
            run_id=run_id,
            app=app,
            session_id=session_id,
            steps=reviews,
            created=now,
            expires=now + self._config().timeout,
            prompt=(
                f"{app} wants to run {len(reviews)} step(s); "
                f"{len(asked)} need(s) your approval: {', '.join(r.tool for r in asked)}"
            ),
        )
        if options is not None:
            ia.options = options
        self._store.create_interaction(ia.public())
        with self._lock:
            self._waiting[ia.id] = ia
        self._bus.emit("interaction", ia.public())
        return ia

    def ask_user(
        self, run_id: str, app: str, session_id: str, step_id: str, args: dict[str, Any]
    ) -> Interaction:
        """A ``choice`` / ``confirm`` / ``input`` question from a plan's ``ask`` step
        (DESIGN §13); BadRequest names what is wrong with its arguments."""
        kind, options = check_ask(args)
        covers = check_covers(args)
        now = self._clock()
        ia = Interaction(
            id=new_id("ia"),
            run_id=run_id,
            app=app,
            session_id=session_id,
            steps=[],
            created=now,
            expires=now + self._config().timeout,
            kind=kind,
            prompt=str(args["prompt"]),
            options=options,
            default=args.get("default"),
            placeholder=str(args.get("placeholder") or ""),
        )
        ia.detail = {
            "step_id": step_id,
            "tool": "ask",
            "default": ia.default,
            "placeholder": ia.placeholder,
        }
        if covers:
            from aios.tools import audit_args

            ia.detail["covers"] = [
                {"tool": t, "risk": classify(t, a), "text": describe(t, a), "args": audit_args(a)}
                for t, a in covers
            ]
        self._store.create_interaction(ia.public())
        with self._lock:
            self._waiting[ia.id] = ia
        self._bus.emit("interaction", ia.public())
        return ia

    def wait(self, ia: Interaction, cancel: threading.Event) -> str:
        """Block until the user decides: a decision, ``expired`` or ``cancelled``."""
        got = self.wait_answer(ia, cancel)
        return got if isinstance(got, str) else str(got.get("decision"))

    def wait_answer(self, ia: Interaction, cancel: threading.Event) -> dict[str, Any] | str:
        """Block until the user answers: the answer, or ``expired`` / ``cancelled``."""
        try:
            while True:
                if ia.answered.wait(WAIT_SLICE):
                    assert ia.answer is not None
                    return ia.answer
                if cancel.is_set():
                    return self._close(ia, "withdrawn", "cancelled")
                if self._clock() >= ia.expires:
                    return self._close(ia, "expired", "expired")
        finally:
            with self._lock:
                self._waiting.pop(ia.id, None)

    def _close(self, ia: Interaction, state: str, outcome: str) -> dict[str, Any] | str:
        """End a pending interaction without an answer, unless the user answered just now."""
        if not self._store.set_interaction_state(ia.id, state):
            row = self._store.interaction(ia.id) or {}
            answer = row.get("answer")
            if isinstance(answer, dict):
                return answer
        ia.state = state
        self._bus.emit(
            "interaction_done", {"id": ia.id, "run_id": ia.run_id, "app": ia.app, "answer": outcome}
        )
        return outcome

    def answer(self, ia_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """Apply a user's answer: the first one wins; the same one again is a no-op.

        BadRequest for a decision that does not exist, AppNotFound for an
        unknown interaction, Conflict (409) carrying the current state when it
        was answered otherwise or is no longer pending.
        """
        current = self._store.interaction(ia_id)
        if current is None:
            raise NotFound(f"no interaction {ia_id!r}")
        kind = str(current.get("kind") or "approval")
        if kind == "approval":
            decision = body.get("decision")
            allowed = [d for d in current.get("options") or DECISIONS if d in DECISIONS]
            if decision not in allowed:
                raise BadRequest(f"decision must be one of {', '.join(allowed)}, got {decision!r}")
            given: dict[str, Any] = {"decision": decision}
        else:
            given = {"value": check_value(kind, current.get("options") or [], body)}
        outcome, row = self._store.answer_interaction(ia_id, given)
        if outcome == "missing":
            raise NotFound(f"no interaction {ia_id!r}")
        if outcome == "conflict":
            first = row.get("answer") or {}
            shown = first.get("decision", first.get("value")) if isinstance(first, dict) else first
            raise Conflict(
                f"interaction {ia_id} is {row.get('state')}"
                + (f" (answered: {shown!r})" if row.get("answer") else ""),
                current=row,
            )
        if outcome == "answered":
            if kind == "approval":
                self._apply(row, str(given["decision"]))
            else:
                self._answered(row, given)
        return row

    def _answered(self, row: dict[str, Any], given: dict[str, Any]) -> None:
        with self._lock:
            ia = self._waiting.get(str(row["id"]))
        if ia is not None:
            ia.state, ia.answer = "answered", given
            ia.answered.set()
        self._bus.emit(
            "interaction_done",
            {"id": row["id"], "run_id": row.get("run_id"), "app": row.get("app"), "answer": given},
        )

    def _apply(self, row: dict[str, Any], decision: str) -> None:
        app, sid = str(row.get("app")), str(row.get("session_id"))
        asked = [s for s in row.get("steps") or [] if s.get("rule") == "ask"]
        if decision == "allow_session":
            with self._lock:
                self._session_allows.update((sid, app, str(s["tool"])) for s in asked)
        elif decision == "allow_always":
            for s in asked:
                self._store.set_policy(app, str(s["tool"]), "allow")
        with self._lock:
            ia = self._waiting.get(str(row["id"]))
        if ia is not None:
            ia.state, ia.answer = "answered", {"decision": decision}
            ia.answered.set()
        self._bus.emit(
            "interaction_done",
            {"id": row["id"], "run_id": row.get("run_id"), "app": app, "answer": decision},
        )

    def waits_for(self, app: str) -> bool:
        """Whether a decision the app waits on is pending now (its calls are not timed out)."""
        with self._lock:
            return any(ia.app == app for ia in self._waiting.values())

    def pending(self, session: str | None = None) -> list[dict[str, Any]]:
        return self._store.interactions(pending=True, session=session)

    def forget_session(self, session_id: str) -> None:
        with self._lock:
            self._session_allows = {k for k in self._session_allows if k[0] != session_id}


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
    later in the same run (:func:`aios.runs.gate`): an app that asks "delete a.txt?"
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
