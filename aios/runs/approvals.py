"""The user's say over a plan (DESIGN §12): policy, the plan preview, decisions, expiry.

Before a plan runs, every step is *reviewed*: its risk (:mod:`aios.tools.risk`),
the rule that applies to it, and its text in plain words. The rule for an
app's tool is, first found: the user's persisted choice for that app and
tool (``never`` / ``ask`` / ``allow``, "always allow" included), an "allow
for this session" given earlier in the same session, and the mode's
default (``approvals.mode``: ``auto`` asks nothing, ``smart`` asks for
``high`` steps, ``manual`` for ``medium`` and ``high``). Custom ``@tool``s
run inside the app with its own rights and are never asked about.

Where data goes is a rule of the same decision (DESIGN §14.5, :meth:`Approvals.decide`):
a request to a destination the app was not granted asks in ``smart`` and
``manual`` (and ``manual`` asks every request), and once a run has read content
the user did not type every request and command of it asks, whatever the mode
or the rules; the card then says what was read.

When any step needs a decision, one **interaction** for the whole plan is
created (persisted, sent as an ``interaction`` event) and the run waits for
one answer: allow once, allow for this session, always allow (persisted),
or deny; or it expires after ``approvals.timeout`` seconds, or the run is
cancelled. The store decides who answered first (two tabs, one card), so a
decision is taken once and survives a restart.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aios.errors import BadRequest, Conflict, NotFound
from aios.names import (
    APPROVAL_DECISIONS,
    APPROVAL_RULES,
    MCP_TOOL_PREFIX,
    STEP_TOOL_PATTERN,
    ApprovalMode,
    ApprovalRule,
    new_id,
)
from aios.protocol import LOCALES
from aios.protocol.outbound import (
    COMMAND_TOOLS,
    OUTBOUND_TOOLS,
    BadDestination,
    covers,
    destination,
    read_of,
    why,
)
from aios.runs.approved import Approval, Pin, pins_of, runs_written, step_hash, template_refs
from aios.runs.interactions import check_ask, check_covers, check_value
from aios.tools.risk import Risk, blocked, classify, describe, describe_raw, visible
from aios.traces.tracer import NO_TRACER, Tracer

if TYPE_CHECKING:
    from aios.config import ApprovalsConfig
    from aios.events import EventBus
    from aios.protocol import Step
    from aios.quotas import Quotas
    from aios.store.runs import RunStore
    from aios.tools.sandbox import SandboxPolicy

Rule = ApprovalRule
RULES = APPROVAL_RULES
DECISIONS = APPROVAL_DECISIONS
ASKED_AT: dict[ApprovalMode, frozenset[str]] = {
    "auto": frozenset(),
    "smart": frozenset({"high"}),
    "manual": frozenset({"medium", "high"}),
}
"""The risks each mode asks about by default."""
WAIT_SLICE = 0.25
"""Seconds between two looks at a waiting decision's expiry and its run's cancel flag."""


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
    chain: tuple[str, ...] = ()
    """Work another app started: the launchers, outermost first, then the app (§14.4)."""
    chain_names: tuple[dict[str, str], ...] = ()
    """Each app of ``chain``: its display name per locale (set by :meth:`Approvals.ask`),
    so a card names both apps in the UI's language; ``text`` stays the step's own."""
    why: str = ""
    """The rule that decided (:class:`Decision`)."""
    hash: str = ""
    """Of the step as it will run (:func:`aios.runs.approved.step_hash`): what a yes approves."""
    chars: int = 0
    """Length of the step's text before invisible characters were made visible."""
    files: tuple[Pin, ...] = ()
    """Workdir files the step's interpreter may run: shown, and covered by the hash."""
    deferred: tuple[str, ...] = ()
    """The steps whose results its arguments use: it is reviewed once they are known."""

    interpreter: bool = False
    """A command running an interpreter (its files are looked up again before it runs)."""
    destination: str | None = None
    """A request's destination when it was not granted (why it asks, §14.5)."""
    tainted: str | None = None
    """Set when the run has read content the user did not type ("after reading …")."""
    reads: tuple[str, ...] = ()
    """What it read, for a card in the user's language (with :attr:`tainted`)."""
    asked_by: tuple[str, ...] = ()
    """What makes it ask: ``rule`` (policy or mode), ``destination``, ``taint``; an
    "always allow" remembers the rule and the destination, never the taint."""

    @property
    def asks(self) -> bool:
        return self.rule == "ask" and self.blocked is None and not self.deferred

    def approval(self) -> Approval:
        """What running this step requires: the same hash (files read again)."""
        return Approval(self.hash, reads_files=self.interpreter)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step_id": self.step_id,
            "tool": self.tool,
            "risk": self.risk,
            "rule": (
                "ask"
                if self.asks
                else ("never" if self.blocked else "later" if self.deferred else self.rule)
            ),
            "text": self.text,
            "chars": self.chars,
            "args": self.args,
            "hash": self.hash,
        }
        if self.blocked is not None:
            out["blocked"] = self.blocked
        if self.chain:
            out["chain"] = list(self.chain)
            if self.chain_names:
                out["chain_names"] = [dict(n) for n in self.chain_names]
        if self.files:
            out["files"] = [p.public() for p in self.files]
        if self.deferred:
            out["deferred"] = list(self.deferred)
        if self.destination is not None:
            out["destination"] = self.destination
        if self.tainted is not None:
            out["tainted"] = self.tainted
            out["reads"] = list(self.reads)
        if self.asked_by:
            out["asked_by"] = list(self.asked_by)
        return out


@dataclass(frozen=True)
class Call:
    """What :meth:`Approvals.decide` decides about: one tool call or system action."""

    tool: str
    risk: Risk | None
    """None: a custom ``@tool`` (the app's own code, with its own rights)."""
    needs: str | None = None
    """A permission the call needs (``desktop.control`` for UI operations)."""
    args: dict[str, Any] | None = field(default=None, compare=False)
    """The call's arguments: where a request goes (§14.5)."""
    reads: tuple[str, ...] = ()
    """What the run read before this call that the user did not type (its taint)."""


@dataclass(frozen=True)
class Decision:
    rule: Rule
    why: str
    """The rule that decided, in words (for the audit log and tests)."""
    default: bool = False
    """The mode's default decided (no persisted choice, no allow for this session)."""
    destination: str | None = None
    """A request's destination that is not granted (§14.5)."""
    asked_by: tuple[str, ...] = ()
    """What makes it ask (``rule``, ``destination``, ``taint``; see :class:`Review`)."""


_STRICTNESS: dict[Rule, int] = {"allow": 0, "ask": 1, "never": 2}


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
    chain: tuple[str, ...] = ()
    """Launchers then the app, when another app started the work (§14.4)."""
    chain_names: tuple[dict[str, str], ...] = ()
    """Each app of ``chain``: its display name per locale."""

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
        if self.chain:
            out["chain"] = list(self.chain)
            out["on_behalf_of"] = list(self.chain[:-1])
            out["chain_names"] = [dict(n) for n in self.chain_names]
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
        self.tracer: Tracer = NO_TRACER
        """Where a card asked and its answer are traced (``approval``, DESIGN §16)."""
        self._session_allows: set[tuple[str, tuple[str, ...], str]] = set()
        """(session id, chain, tool) allowed "for this session": the chain is the app
        alone, or the launchers then the app for work another app started."""
        self.name: Callable[[str], str] = lambda app: app
        """An app's name as the user sees it (set by the system)."""
        self.names: Callable[[str], dict[str, str]] = lambda app: {
            loc: self.name(app) for loc in LOCALES
        }
        """An app's display name in every locale (set by the system)."""
        self.granted: Callable[[str], frozenset[str]] = lambda app: frozenset()
        """The permissions the user granted an app (set by the system)."""
        self.quotas: Quotas | None = None
        """Bounds each app's pending cards (DESIGN §14.6); set by the system."""
        self._session_destinations: set[tuple[str, tuple[str, ...], str]] = set()
        """(session id, chain, host) a request was allowed to "for this session"."""
        self.destinations: Callable[[str], frozenset[str]] = lambda app: frozenset()
        """The hosts an app may send to without asking: its granted ``domains`` and the
        global whitelist's (set by the system)."""
        self.remember_destination: Callable[[str, str], None] = lambda app, host: None
        """Keeps the user's "always allow" of a request to a host (a domain grant)."""

    # ------------------------------------------------------------ the policy

    def decide(
        self,
        app: str,
        session_id: str,
        call: Call,
        chain: Sequence[str] = (),
        policy: dict[str, str] | None = None,
    ) -> Decision:
        """THE decision whether a call may run (DESIGN §12, §14.4): ``allow``, ``ask`` or
        ``never``, and the rule that decided. Plans (:meth:`review`), synchronous
        ``call_tool``, UI operations and launched work all come here.

        ``session_id`` is the session the system vouches for (never one an app
        wrote into its call; "" for none). ``chain`` is the launchers of the work,
        outermost first (empty: the app acts for the user). Work another app started
        runs with the intersection of every app's rights in the chain: the strictest
        rule of them all; an "allow for this session" the user gave to exactly this
        chain in this session lifts an ``ask`` (never a ``never``, never a persisted
        ``ask``). ``policy`` is ``app``'s persisted policy when the caller read it.
        """
        apps = (*chain, app)
        if call.needs is not None:
            if call.needs not in self.granted(app):
                return Decision("never", f"{call.needs} is not granted to {app}")
            lacking = [a for a in chain if call.needs not in self.granted(a)]
            if not lacking:
                return Decision("allow", f"{call.needs} granted to {' and '.join(apps)}")
            if self._allowed_for_session(session_id, apps, call.tool):
                return Decision("allow", "allowed for this session (this launch chain)")
            return Decision("ask", f"{call.needs} is not granted to {', '.join(lacking)}")
        if call.risk is None:
            return Decision("allow", "a custom tool: the app's own code, its own rights")
        worst: Decision | None = None
        persisted = by_mode = False
        for a in apps:
            chosen = self._store.policy(a) if policy is None or a != app else policy
            own = self._own_rule(a, session_id, call.tool, call.risk, chosen)
            persisted = persisted or (own.rule != "allow" and call.tool in chosen)
            by_mode = by_mode or own.default
            if worst is None or _STRICTNESS[own.rule] > _STRICTNESS[worst.rule]:
                worst = own
        assert worst is not None
        if (
            worst.rule == "ask"
            and chain
            and not persisted
            and self._allowed_for_session(session_id, apps, call.tool)
        ):
            worst = Decision("allow", "allowed for this session (this launch chain)")
        return self._data_rule(session_id, call, apps, worst, by_mode)

    def _data_rule(
        self,
        session_id: str,
        call: Call,
        apps: tuple[str, ...],
        decided: Decision,
        by_mode: bool,
    ) -> Decision:
        """Where data may go (DESIGN §14.5), on top of the rule that decided.

        ``never`` stays never. After ``call.reads`` (a tainted run) every request and
        command (and MCP tool that is not read-only) asks, whatever the mode, the policy or
        an "always allow". A request to
        a destination not granted to every app of the chain (nor allowed for this
        session) asks in ``smart`` and ``manual``, whatever the method; in ``manual``
        every request asks unless the user allowed the tool (always, or for this
        session).
        """
        outbound = call.tool in OUTBOUND_TOOLS
        # an MCP tool that is not read-only acts outside the desktop like a command (§17)
        acts = call.tool in COMMAND_TOOLS or (
            call.tool.startswith(MCP_TOOL_PREFIX) and call.risk in ("medium", "high")
        )
        if decided.rule == "never" or not (outbound or acts):
            return decided
        asked_by: list[str] = ["rule"] if decided.rule == "ask" else []
        dest: str | None = None
        mode = self._config().mode
        if outbound and mode != "auto":
            args = call.args or {}
            try:
                host: str | None = destination(str(args.get("url", "")), args.get("params"))
            except BadDestination:
                host = None  # the tool refuses it, with the reason
            if host is not None:
                ok = all(covers(self.destinations(a), host) for a in apps)
                with self._lock:
                    ok = ok or (session_id, apps, host) in self._session_destinations
                if not ok:
                    dest = host
                    asked_by.append("destination")
            if mode == "manual" and decided.rule == "allow" and by_mode:
                asked_by.append("rule")
        if call.reads:
            asked_by.append("taint")
        if not asked_by:
            return decided
        reasons = {
            "rule": decided.why,
            "destination": f"{dest} is not a destination granted to {' and '.join(apps)}",
            "taint": why(list(call.reads)),
        }
        return Decision(
            "ask",
            "; ".join(reasons[a] for a in asked_by),
            destination=dest,
            asked_by=tuple(asked_by),
        )

    def _allowed_for_session(self, session_id: str, chain: tuple[str, ...], tool: str) -> bool:
        if not session_id:
            return False  # no session vouches for the call: nothing given "for this session"
        with self._lock:
            return (session_id, chain, tool) in self._session_allows

    def _own_rule(
        self, app: str, session_id: str, tool: str, risk: Risk, chosen: dict[str, str]
    ) -> Decision:
        """One app's own rule for a call: its persisted choice, an allow for this
        session, else the mode's default."""
        rule = chosen.get(tool)
        for known in RULES:
            if rule == known:
                return Decision(known, f"{app}: {tool} {known} (persisted)")
        if self._allowed_for_session(session_id, (app,), tool):
            return Decision("allow", f"{app}: allowed for this session")
        mode = self._config().mode
        if risk in ASKED_AT[mode]:
            return Decision("ask", f"{app}: {mode} mode asks for {risk} steps", default=True)
        return Decision("allow", f"{app}: {mode} mode allows {risk} steps", default=True)

    def rule(
        self,
        app: str,
        session_id: str,
        tool: str,
        risk: Risk | None,
        policy: dict[str, str] | None = None,
    ) -> Rule:
        """The rule for one call of an app acting for the user (:meth:`decide`)."""
        return self.decide(app, session_id, Call(tool, risk), (), policy).rule

    def review(
        self,
        app: str,
        session_id: str,
        steps: Sequence[Step],
        policy: SandboxPolicy | None = None,
        chain: Sequence[str] = (),
        reads: Sequence[str] = (),
    ) -> list[Review]:
        """Each step's risk, rule and plain words; with the app's sandbox ``policy``, also
        whether the block list will refuse it (then nobody is asked about it). With a
        ``chain`` (launchers of the work), the words name both apps (§14.4).

        ``reads``: what the run has read so far that the user did not type (its taint,
        §14.5); a step that reads counts for the steps after it in the same plan.
        """
        chosen = self._store.policy(app)  # once per plan
        out = []
        written: dict[str, str] = {}  # files earlier steps write -> step: code not known yet
        so_far = list(reads)
        for step in steps:
            r = self.review_call(
                app, session_id, step.key, step.tool, step.args, policy, chosen, chain, so_far
            )
            read = read_of(step.tool, step.args)
            if read and read not in so_far:
                so_far.append(read)
            if written and r.interpreter and not r.deferred:
                later = runs_written(step.tool, step.args, written)
                if later:
                    r = dataclasses.replace(r, deferred=later, files=())
            out.append(r)
            target = step.args.get("save_to" if step.tool == "http_request" else "path")
            if step.tool in ("file_write", "http_request") and isinstance(target, str):
                written[os.path.normpath(target)] = step.key
        return out

    def review_call(
        self,
        app: str,
        session_id: str,
        key: str,
        tool: str,
        args: dict[str, Any],
        policy: SandboxPolicy | None = None,
        chosen: dict[str, str] | None = None,
        chain: Sequence[str] = (),
        reads: Sequence[str] = (),
    ) -> Review:
        """One step as it will run (DESIGN §14.2): whole text, hash, pinned files; a step
        whose arguments use other steps' results is ``deferred`` (reviewed once known).
        ``reads``: what the run read before it (§14.5)."""
        from aios.runs.approved import command_argvs, is_interpreter
        from aios.tools import audit_args

        risk = classify(tool, args)
        call = Call(tool, risk, args=args, reads=tuple(reads))
        decision = self.decide(app, session_id, call, chain, chosen)
        tainted = "taint" in decision.asked_by
        full = (*chain, app) if chain else ()
        refs = template_refs(args)
        raw = describe_raw(tool, args)
        argvs = command_argvs(tool, args)
        interp = any(a and is_interpreter(a[0]) for a in argvs)
        pins = pins_of(policy, tool, args, argvs) if interp and not refs else ()
        return Review(
            step_id=key,
            tool=tool,
            risk=risk,
            rule=decision.rule,
            text=visible(raw),
            args=audit_args(args),
            blocked=blocked(policy, tool, args) if policy is not None else None,
            chain=full,
            why=decision.why,
            hash=step_hash(tool, args, pins),
            chars=len(raw),
            files=pins,
            deferred=tuple(refs),
            interpreter=interp,
            destination=decision.destination,
            tainted=why(list(reads)) if tainted else None,
            reads=tuple(reads) if tainted else (),
            asked_by=decision.asked_by,
        )

    def on_behalf(self, chain: Sequence[str], text: str) -> str:
        """A step's words in an error of work another app started: "Code, asked by Evil,
        wants to run: <text>" (``text`` alone for an app acting for the user). A card
        says this from the reviews' ``chain`` / ``chain_names``, in the UI's language."""
        from aios.runs.rights import asked_by

        if len(chain) < 2:
            return text
        return f"{asked_by(chain, self.name)}, wants to run: {text}"

    def policy(self, app: str) -> dict[str, str]:
        return self._store.policy(app)

    def set_policy(self, app: str, body: dict[str, Any]) -> dict[str, str]:
        """``{tool: "allow"|"ask"|"never"|null}``; BadRequest names the first bad entry."""
        from aios.protocol import ATOMIC_TOOLS

        if not body:
            raise BadRequest('give {"<tool>": "allow"|"ask"|"never"|null, ...}')
        for tool, value in body.items():
            mcp = tool.startswith(MCP_TOOL_PREFIX) and re.fullmatch(STEP_TOOL_PATTERN, tool)
            if tool not in ATOMIC_TOOLS and not mcp:
                raise BadRequest(
                    f"unknown tool {tool!r}: a policy names one of {', '.join(ATOMIC_TOOLS)} "
                    "or an MCP tool mcp.<server>.<tool>"
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
        """A plan preview card. Work another app started (its reviews carry the chain)
        offers no "always allow": that would be a rule for one app, and the chain's
        rights are the intersection of its apps' (§14.4)."""
        from aios.runs.rights import asked_by

        now = self._clock()
        reviews = [self._named(r) for r in reviews]
        asked = [r for r in reviews if r.asks]
        chain = next((r.chain for r in reviews if r.chain), ())
        who = asked_by(chain, self.name) if chain else app
        ia = Interaction(
            id=new_id("ia"),
            run_id=run_id,
            app=app,
            session_id=session_id,
            steps=reviews,
            created=now,
            expires=now + self._config().timeout,
            prompt=(
                f"{who} wants to run {len(reviews)} step(s); "
                f"{len(asked)} need(s) your approval: {', '.join(r.tool for r in asked)}"
            ),
            chain=chain,
            chain_names=next((r.chain_names for r in reviews if r.chain), ()),
        )
        if options is not None:
            ia.options = options
        if chain:
            ia.options = [o for o in ia.options if o != "allow_always"]
        self.tracer.emit(
            "approval", state="asked", interaction=ia.id, tools=[r.tool for r in asked]
        )
        return self._show(ia)

    def _named(self, review: Review) -> Review:
        """The review with its chain's display names, for a card (§14.4)."""
        if not review.chain or review.chain_names:
            return review
        names = tuple(self.names(a) for a in review.chain)
        return dataclasses.replace(review, chain_names=names)

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
        return self._show(ia)

    def _show(self, ia: Interaction) -> Interaction:
        """Put a card or question in front of the user, within its app's ``pending_cards``
        quota (QuotaExceeded otherwise; a question of the system itself has no app)."""
        with self._lock:
            if self.quotas is not None and ia.app:
                self.quotas.check("pending_cards", ia.app, self._count(ia.app))
            self._waiting[ia.id] = ia
        try:
            self._store.create_interaction(ia.public())
        except BaseException:
            with self._lock:
                self._waiting.pop(ia.id, None)
            raise
        self._bus.emit("interaction", ia.public())
        return ia

    def _count(self, app: str) -> int:
        return sum(1 for w in self._waiting.values() if w.app == app)

    def pending_count(self, app: str) -> int:
        """Cards and questions of ``app`` waiting for the user now."""
        with self._lock:
            return self._count(app)

    def wait(self, ia: Interaction, cancel: threading.Event) -> str:
        """Block until the user decides: a decision, ``expired`` or ``cancelled``."""
        got = self.wait_answer(ia, cancel)
        return got if isinstance(got, str) else str(got.get("decision"))

    def wait_answer(self, ia: Interaction, cancel: threading.Event) -> dict[str, Any] | str:
        """Block until the user answers: the answer, or ``expired`` / ``cancelled``."""
        got = self._wait_answer(ia, cancel)
        decision = got if isinstance(got, str) else got.get("decision")
        self.tracer.emit("approval", state="answered", interaction=ia.id, decision=decision)
        return got

    def _wait_answer(self, ia: Interaction, cancel: threading.Event) -> dict[str, Any] | str:
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
        # the session is the interaction's: the one the user answered in, which the
        # system chose (a run's), never one an app wrote into its call
        app, sid = str(row.get("app")), str(row.get("session_id") or "")
        asked = [s for s in row.get("steps") or [] if s.get("rule") == "ask"]
        # What the answer remembers: the tool for a step the rules asked about, the
        # destination for one that asked for it; never the taint (it asks every time).
        by_rule = [s for s in asked if "rule" in (s.get("asked_by") or ["rule"])]
        hosts = [
            (tuple(s.get("chain") or (app,)), str(s["destination"]))
            for s in asked
            if s.get("destination")
        ]
        if decision == "allow_session" and sid:
            with self._lock:
                self._session_allows.update(
                    (sid, tuple(s.get("chain") or (app,)), str(s["tool"])) for s in by_rule
                )
                self._session_destinations.update((sid, c, h) for c, h in hosts)
        elif decision == "allow_always":
            for s in by_rule:
                if not s.get("chain"):  # a chain's card never offers it (see ask)
                    self._store.set_policy(app, str(s["tool"]), "allow")
            for c, h in hosts:
                if len(c) == 1:
                    self.remember_destination(app, h)
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
            self._session_destinations = {
                k for k in self._session_destinations if k[0] != session_id
            }
