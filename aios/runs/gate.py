"""The gate (DESIGN §12, §14): a plan or a single call through the approvals, and wait.

:func:`gate` reviews a plan before it runs and, when a step needs the user, shows one
card and waits (the run is ``waiting``); :func:`recheck` looks at a step again right
before it runs (DESIGN §14.2); :func:`ask_step` is a plan's question card;
:func:`confirm_call` a system action that always asks. A yes to a confirm that
covers calls (``covers``) approves exactly those calls once each (:func:`covered_key`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from aios.errors import BadRequest, ProtocolError, QuotaExceeded
from aios.protocol import Step, ToolResult, parse_steps
from aios.runs.approved import Approval, step_hash
from aios.runs.interactions import check_covers
from aios.runs.runs import Run, Runs
from aios.tools.executor import ASK_TOOL, stopped

if TYPE_CHECKING:
    from aios.runs.approvals import Approvals, Interaction, Review
    from aios.tools.sandbox import SandboxPolicy

__all__ = [
    "ONCE_DECISIONS",
    "RECHECK_ASKS",
    "STOP_CODES",
    "ask_step",
    "confirm_call",
    "covered_key",
    "gate",
    "over_quota",
    "recheck",
]


def gate(
    approvals: Approvals,
    runs: Runs,
    run: Run,
    app: str,
    steps: Sequence[Step] | Sequence[dict[str, Any]],
    policy: SandboxPolicy | None = None,
    *,
    chain: Sequence[str] = (),
    reviews: list[Review] | None = None,
    options: list[Any] | None = None,
    approved: dict[str, Approval] | None = None,
) -> tuple[dict[str, ToolResult], dict[str, str]]:
    """Review a plan before it runs; ask the user when a step needs it, and wait.

    Returns the results of the steps that must not run (denied, expired,
    refused by policy, cancelled) and, for the others, how each was allowed
    (``policy`` or ``user``) for the audit log. An invalid plan is left to
    the executor, which reports it. ``chain``: the apps that launched ``app``'s
    work (DESIGN §14.4); ``reviews``: the steps' reviews when the caller made them
    already (one decision per call); ``options``: the card's answers, when not all.
    ``approved`` receives, per step allowed, the hash it was allowed as (DESIGN
    §14.2): :func:`recheck` compares the step with it right before it runs. A step
    whose arguments use results not known yet is not decided here (``deferred``):
    :func:`recheck` reviews it.
    """
    plan = [x for x in steps if isinstance(x, Step)]
    if len(plan) != len(steps):
        try:
            plan = parse_steps(steps)
        except ProtocolError:
            return {}, {}
    if reviews is None:
        reviews = approvals.review(
            app, run.session_id, plan, policy, chain, reads=runs.reads_for(run, app)
        )
    runs.plan(run, [{**r.public(), "status": "pending"} for r in reviews])
    presets: dict[str, ToolResult] = {
        r.step_id: stopped(r.tool, "never") for r in reviews if r.rule == "never"
    }
    decisions = {
        r.step_id: "policy" for r in reviews if (r.rule == "allow" or r.blocked) and not r.deferred
    }
    keep = approved if approved is not None else {}
    keep.update((k, r.approval()) for r in reviews if (k := r.step_id) in decisions)
    asked = []
    for r in reviews:
        if r.asks and _take_covered(runs, run, r.hash):
            decisions[r.step_id] = "user"  # the user said yes to exactly this call
            keep[r.step_id] = r.approval()
            runs.step(run, {"step_id": r.step_id, "decision": "confirmed"})
        elif r.asks:
            asked.append(r)
    if not asked:
        return presets, decisions
    try:
        ia = approvals.ask(run.run_id, app, run.session_id, reviews, options=options)
    except QuotaExceeded as e:  # the app has too many cards up: these steps do not run
        for r in asked:
            presets[r.step_id] = over_quota(r.tool, e)
            runs.step(run, {"step_id": r.step_id, "decision": "denied", "error": str(e)})
        return presets, decisions
    got = _wait_on(approvals, runs, run, ia)
    decision = got if isinstance(got, str) else str(got.get("decision"))
    codes: dict[str, Literal["denied", "expired", "cancelled"]] = {
        "deny": "denied",
        "expired": "expired",
        "cancelled": "cancelled",
    }
    code = codes.get(decision)
    for r in asked:
        if code is not None:
            presets[r.step_id] = stopped(r.tool, code)
        else:
            decisions[r.step_id] = "user"
            keep[r.step_id] = r.approval()
        runs.step(run, {"step_id": r.step_id, "decision": code or decision})
    return presets, decisions


STOP_CODES: dict[str, Literal["denied", "expired", "cancelled"]] = {
    "deny": "denied",
    "expired": "expired",
    "cancelled": "cancelled",
}
RECHECK_ASKS = 5
"""Cards in a row for one step whose arguments or files keep changing under the user."""


def recheck(
    approvals: Approvals,
    runs: Runs,
    run: Run,
    app: str,
    policy: SandboxPolicy | None,
    approved: dict[str, Approval],
    decisions: dict[str, str],
    call: tuple[str, str, dict[str, Any]],
    *,
    chain: Sequence[str] = (),
    options: list[Any] | None = None,
) -> ToolResult | None:
    """Right before a step runs (DESIGN §14.2): None when it is what was approved —
    the same canonical arguments, templates resolved, and the same content of the
    files its interpreter runs. Otherwise it is a new decision: reviewed as it will
    run, and asked about on a card of its own when the rules say so (the run waits
    again); the result of a step that must not run, or None once allowed."""
    key, tool, args = call
    for _ in range(RECHECK_ASKS):
        had = approved.pop(key, None)
        if had is not None and had.holds(tool, args, policy):
            return None
        r = approvals.review_call(
            app,
            run.session_id,
            key,
            tool,
            args,
            policy,
            chain=chain,
            reads=runs.reads_for(run, app),  # what the run has read by now (§14.5)
        )
        runs.step(run, {**r.public(), "status": "pending"})
        if r.rule == "never" and not r.blocked:
            return stopped(tool, "never")
        if not r.asks:
            decisions[key] = "policy"
            runs.step(run, {"step_id": key, "status": "started"})
            return None  # allowed by the rules, or refused by the tool itself (blocked)
        if _take_covered(runs, run, r.hash):
            decisions[key] = "user"
            runs.step(run, {"step_id": key, "decision": "confirmed", "status": "started"})
            return None
        try:
            ia = approvals.ask(run.run_id, app, run.session_id, [r], options=options)
        except QuotaExceeded as e:  # the app has too many cards up: this step does not run
            return over_quota(tool, e)
        got = _wait_on(approvals, runs, run, ia)
        decision = got if isinstance(got, str) else str(got.get("decision"))
        code = STOP_CODES.get(decision)
        runs.step(run, {"step_id": key, "decision": code or decision})
        if code is not None:
            return stopped(tool, code)
        decisions[key] = "user"
        approved[key] = r.approval()  # checked again: a file may have changed meanwhile
        if approved[key].holds(tool, args, policy):
            runs.step(run, {"step_id": key, "status": "started"})
            return None
    return ToolResult(
        tool=tool,
        status="error",
        error=f"{key} was not run: its arguments or files kept changing after each approval",
        code="denied",
    )


def over_quota(tool: str, e: QuotaExceeded) -> ToolResult:
    """The result of a step refused by a quota (DESIGN §14.6): the error names it."""
    return ToolResult(tool=tool, status="error", error=str(e), meta={"quota": e.quota})


def covered_key(tool: str, args: dict[str, Any]) -> str:
    """One call, as a yes to a confirm that covers it is remembered: the same canonical
    hash a step is approved as (a step pinning files never matches a bare call)."""
    return step_hash(tool, args)


def _take_covered(runs: Runs, run: Run, key: str) -> bool:
    with runs.lock:
        if key not in run.covered:
            return False
        run.covered.remove(key)
        return True


def _wait_on(approvals: Approvals, runs: Runs, run: Run, ia: Interaction) -> dict[str, Any] | str:
    """The run waits (state ``waiting``) until ``ia`` is answered, expires or is cancelled."""
    with runs.lock:
        run.pending.append(ia.public())
        run.waits += 1
        if run.waits == 1:
            runs.set_state(run, "waiting")
    try:
        return approvals.wait_answer(ia, run.cancel)
    finally:
        with runs.lock:
            run.pending = [p for p in run.pending if p["id"] != ia.id]
            run.waits -= 1
            if run.waits == 0 and not run.cancel.is_set():
                runs.set_state(run, "running")


def ask_step(
    approvals: Approvals, runs: Runs, run: Run, app: str, step_id: str, args: dict[str, Any]
) -> ToolResult:
    """A plan's ``ask`` step (DESIGN §13): a question card, and the user's answer as its
    result ``{"value": ...}``; expired or cancelled like an approval."""
    try:
        ia = approvals.ask_user(run.run_id, app, run.session_id, step_id, args)
    except BadRequest as e:
        return ToolResult(tool=ASK_TOOL, status="error", error=str(e))
    except QuotaExceeded as e:
        return over_quota(ASK_TOOL, e)
    got = _wait_on(approvals, runs, run, ia)
    if got == "expired":
        return stopped(ASK_TOOL, "expired")
    if isinstance(got, str):
        return stopped(ASK_TOOL, "cancelled")
    if got.get("value") is True:
        # check_covers passed in ask_user already: a yes approves these calls, once each
        with runs.lock:
            run.covered += [covered_key(t, a) for t, a in check_covers(args)]
    return ToolResult(tool=ASK_TOOL, status="ok", result={"value": got.get("value")})


ONCE_DECISIONS = ("allow", "deny")
"""The answers of a card for a system action that always asks: no "always" rule for it."""


def confirm_call(
    approvals: Approvals,
    runs: Runs,
    run: Run,
    app: str,
    call: tuple[str, dict[str, Any]],
    text: str,
    *,
    chain: Sequence[str] = (),
) -> str | None:
    """Ask the user about one system action that always asks (DESIGN §11: ending a
    process the app did not start), whatever the approvals mode.

    None when the user said yes: to this card, or to a confirm of the same run that
    covered exactly this call (so the app's own "end this process?" is the one
    question). Otherwise why not: ``denied``, ``expired`` or ``cancelled``. ``chain``:
    the launchers then ``app`` when another app started the work (the card names them).
    """
    from aios.runs.approvals import Review
    from aios.tools import audit_args

    tool, args = call
    step_id = f"step_{tool}"
    if _take_covered(runs, run, covered_key(tool, args)):
        runs.step(run, {"step_id": step_id, "decision": "confirmed"})
        return None
    review = Review(
        step_id=step_id,
        tool=tool,
        risk="high",
        rule="ask",
        text=text,
        args=audit_args(args),
        chain=tuple(chain),
    )
    runs.plan(run, [{**review.public(), "status": "pending"}])
    ia = approvals.ask(run.run_id, app, run.session_id, [review], options=list(ONCE_DECISIONS))
    got = _wait_on(approvals, runs, run, ia)
    decision = got if isinstance(got, str) else str(got.get("decision"))
    runs.step(run, {"step_id": step_id, "decision": decision})
    if decision == "allow":
        return None
    return {"expired": "expired", "cancelled": "cancelled"}.get(decision, "denied")
