"""One app, all rounds (DESIGN §9, §12): call it, run its steps, call again with the results.

An app's reply may carry ``steps``. The loop runs them through the executor in
the app's sandbox — within a run, reviewed first and perhaps waiting for the
user — and calls the app again with ``context.tool_results`` until it answers
with a final view. Two steps are the system's own: ``ask`` (a question to the
user) and ``launch`` (another app opened as a child instance, DESIGN §13).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aios.errors import AppError, AppReplyInvalid, ProtocolError
from aios.protocol import ActionRequest, Step, ToolResult, error_response, parse_steps
from aios.protocol.outbound import read_of
from aios.runs.gate import ask_step, gate, recheck
from aios.runs.rights import Acting, LaunchLimits, check_launch
from aios.runs.runs import Run
from aios.tools.executor import LAUNCH_TOOL, Executor, stopped
from aios.traces.tracer import NO_TRACER, Tracer

if TYPE_CHECKING:
    from aios.apphost.registry import AppRecord, Launcher
    from aios.config import Config
    from aios.control.app_client import AppClient
    from aios.control.context import Contexts
    from aios.desktop.instances import Instances
    from aios.events import EventBus
    from aios.runs.approvals import Approvals
    from aios.runs.approved import Approval
    from aios.runs.runs import Runs
    from aios.tools.base import ToolContext

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """An app's final reply for one call, and what happened on the way."""

    app: str
    response: dict[str, Any]
    rounds: int = 1
    notes: list[str] | None = None


class StepsLoop:
    """Calls one app round after round and runs the steps it returns."""

    def __init__(
        self,
        *,
        settings: Callable[[], Config],
        launcher: Launcher,
        bus: EventBus,
        client: AppClient,
        contexts: Contexts,
        tool_context: Callable[[str, str | None], ToolContext],
        runs: Runs,
        approvals: Approvals,
        instances: Instances,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self._settings = settings
        self.tracer = tracer
        self.launcher = launcher
        self.bus = bus
        self.client = client
        self.contexts = contexts
        self._tool_context = tool_context
        self.runs = runs
        self.approvals = approvals
        self.instances = instances
        self.executor = Executor(mount=launcher.mount)
        self.acting: Acting[Run] = Acting()
        """Which app acts for whom, in which session, right now (DESIGN §14.4)."""

    def call_app(
        self,
        record: AppRecord,
        instruction: str | None,
        action: ActionRequest | None,
        sid: str,
        upstream: dict[str, Any] | None = None,
        run: Run | None = None,
        locale: str | None = None,
        routed: dict[str, Any] | None = None,
        launchers: tuple[str, ...] = (),
    ) -> Outcome:
        """Call an app, run its steps, call again with tool_results, until a final view.

        ``launchers``: the apps whose work this is (outermost first; DESIGN §14.4),
        empty when the app acts for the user. For the whole call the app is
        *acting* (:class:`~aios.runs.rights.Acting`): what it asks the system for
        meanwhile is tied to this session, this run and this chain.

        Within a ``run`` each plan is reviewed first and may wait for the
        user (DESIGN §12); once the run is cancelled, the app is called once
        more with the results so far (``code: "cancelled"``) for a final view,
        and steps it returns then are not run.

        Raises AppUnavailable / AppTimeout when the app cannot be reached;
        a reply that is reached but unusable becomes an error view.
        """
        with self.acting.frame(record.id, sid, run, launchers):
            return self._call_app(
                record, instruction, action, sid, upstream, run, locale, routed, launchers
            )

    def _call_app(
        self,
        record: AppRecord,
        instruction: str | None,
        action: ActionRequest | None,
        sid: str,
        upstream: dict[str, Any] | None,
        run: Run | None,
        locale: str | None,
        routed: dict[str, Any] | None,
        launchers: tuple[str, ...],
    ) -> Outcome:
        context = self.contexts.build(record, sid, upstream, locale=locale, routed=routed)
        if self.tracer.enabled:
            self.tracer.emit("context_built", app=record.id, **context_summary(context))
        tool_results: dict[str, Any] = {}
        previous_steps: list[dict[str, Any]] | None = None
        notes: list[str] = []
        reply: dict[str, Any] = {}
        max_rounds = self._settings().max_rounds
        round_no = 0
        for round_no in range(1, max_rounds + 1):
            body = {
                "instruction": instruction,
                "context": {**context, "tool_results": tool_results},
                "action_request": action.model_dump(exclude_none=True) if action else None,
                "session_id": sid,
            }
            try:
                reply = self.client.post(record, body, run.run_id if run is not None else None)
            except AppReplyInvalid as e:
                self.tracer.emit("error", app=record.id, where="reply", error=str(e))
                return Outcome(record.id, error_response(str(e), title=record.id), round_no)
            steps = reply.get("steps") or []
            self.tracer.emit("iteration_end", app=record.id, round=round_no, steps=len(steps))
            if not steps:
                self.tracer.emit("view", app=record.id, **view_summary(reply))
                return Outcome(record.id, reply, round_no, notes or None)
            if run is not None and run.cancel.is_set():
                notes.append("the run was cancelled; the app's last steps were not run")
                break
            if steps == previous_steps:
                notes.append(
                    "no progress: the app repeated its previous steps; they were not run again"
                )
                break
            if round_no == max_rounds:
                notes.append(f"stopped after max_rounds={max_rounds}; the last steps were not run")
                break
            self.bus.emit(
                "view", {"app": record.id, "session_id": sid, "response": reply, "interim": True}
            )
            # Asked for only now that the app answered: a context exists only for
            # an app that is running (it is rebuilt when the settings change).
            ctx = self._tool_context(record.id, sid)
            if run is None:
                tool_results = self.executor.run(steps, ctx, on_step=None)
            else:
                tool_results = self.run_steps(run, record.id, steps, ctx, launchers)
            previous_steps = steps
        final = {**reply, "steps": [], "notes": notes}
        self.tracer.emit("view", app=record.id, notes=notes, **view_summary(final))
        return Outcome(record.id, final, round_no, notes)

    def run_steps(
        self,
        run: Run,
        app: str,
        steps: list[dict[str, Any]],
        ctx: ToolContext,
        launchers: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """One plan within a run: reviewed (maybe waiting for the user), then run, announced.

        ``launchers``: work another app started runs with the chain's rights (§14.4)."""
        try:
            parsed: list[Step] | list[dict[str, Any]] = parse_steps(steps)  # once, for both
        except ProtocolError:
            parsed = steps  # the executor reports what is wrong with it
        approved: dict[str, Approval] = {}
        reviews = None
        if parsed and all(isinstance(s, Step) for s in parsed):
            reviews = self.approvals.review(
                app,
                run.session_id,
                [s for s in parsed if isinstance(s, Step)],
                ctx.policy,
                launchers,
                reads=self.runs.reads_for(run, app),
            )
        presets, decisions = gate(
            self.approvals,
            self.runs,
            run,
            app,
            parsed,
            ctx.policy,
            chain=launchers,
            reviews=reviews,
            approved=approved,
        )
        for r in reviews or []:
            self.tracer.emit(
                "step",
                app=app,
                step_id=r.step_id,
                tool=r.tool,
                args=r.args,
                risk=r.risk,
                rule=r.rule,
                why=r.why,
                decision=decisions.get(r.step_id) or _refused(presets.get(r.step_id)),
            )
        parsed_steps = [s for s in parsed if isinstance(s, Step)]
        current: dict[str, str] = {}
        args_of = {s.key: s.args for s in parsed_steps}
        if ctx.destinations is None and (
            self.runs.reads_for(run, app) or any(read_of(s.tool, s.args) for s in parsed_steps)
        ):
            # tainted (even in auto): its requests' redirects stay on granted destinations
            ctx = replace(ctx, destinations=self.approvals.destinations(app))

        def before(key: str, tool: str) -> None:
            current["key"] = key
            self.tracer.emit("tool_call", app=app, step_id=key, tool=tool)
            self.runs.step(run, {"step_id": key, "tool": tool, "status": "started"})

        def progress(report: dict[str, Any]) -> None:
            self.runs.progress(run, current.get("key", ""), report)

        def after(key: str, result: ToolResult) -> None:
            entry: dict[str, Any] = {
                "step_id": key,
                "tool": result.tool,
                "status": result.status,
                "duration_ms": result.duration_ms,
            }
            if result.code is not None:
                entry["code"] = result.code
            if result.error is not None:
                entry["error"] = result.error
            self.runs.step(run, entry)
            # the result too (redacted and capped by the trace writer): "why?" shows it
            self.tracer.emit("tool_result", app=app, result=result.result, **entry)
            self.runs.note_read(run, app, result.tool, args_of.get(key), result)  # §14.5

        in_run = ctx.for_run(
            run.run_id,
            run.cancel,
            decisions,
            progress,
            lambda key, args: ask_step(self.approvals, self.runs, run, app, key, args),
            lambda key, args: self.launch(run, (*launchers, app), args),
        )
        in_run = replace(
            in_run,
            recheck=lambda key, tool, args: recheck(
                self.approvals,
                self.runs,
                run,
                app,
                ctx.policy,
                approved,
                in_run.decisions,
                (key, tool, args),
                chain=launchers,
            ),
        )
        try:
            return self.executor.run(
                parsed,
                in_run,
                on_step=after,
                before_step=before,
                presets=presets,
            )
        finally:
            self.runs.flush(run)

    def launch(self, run: Run, chain: tuple[str, ...], args: dict[str, Any]) -> ToolResult:
        """A plan's ``launch`` step (DESIGN §13): open another app as a child instance.

        ``chain`` is the launching app (last) and the apps whose work it does. The
        child's window comes to the front with its reply to ``instruction``;
        with ``await_result`` the plan waits until the child's reply carries
        ``result``, the user closes its window, or it fails; then the focus
        returns to the parent. The wait expires like an approval. The child works
        with the chain's rights (DESIGN §14.4); a cycle, a chain deeper than
        ``apps.launch_max_depth`` or more than ``apps.launch_max_per_run`` launches
        in the run are step errors.
        """

        def error(message: str) -> ToolResult:
            return ToolResult(tool=LAUNCH_TOOL, status="error", error=message)

        parent_app = chain[-1]
        target = args.get("app")
        if not isinstance(target, str) or not target:
            return error("launch: give the app to open (its id)")
        apps = self._settings().apps
        limits = LaunchLimits(apps.launch_max_depth, apps.launch_max_per_run)
        with self.runs.lock:
            refused = check_launch(chain, target, run.launches, limits)
            if refused is None:
                run.launches += 1
        if refused is not None:
            log.info("run %s: %s", run.run_id, refused)
            return error(refused)
        record = self.launcher.ensure_running(target, self._settings().app_start_timeout)
        if record is None:
            return error(f"launch: no app {target!r}")
        if record.status != "running":
            return error(
                f"launch: app {target!r} is {record.status}"
                + (f": {record.error}" if record.error else "")
            )
        instruction = args.get("instruction", "")
        if not isinstance(instruction, str):
            return error("launch: instruction must be text")
        sid = run.session_id
        parent = self.instances.current(parent_app, sid) or self.instances.open(parent_app, sid)
        child = self.instances.open(target, sid, parent=parent)
        child.awaited = bool(args.get("await_result"))
        try:
            outcome = self.call_app(record, instruction, None, sid, run=run, launchers=chain)
        except AppError as e:
            self.instances.fail(target, str(e))
            return error(f"launch: {target} failed: {e}")
        self.bus.emit(
            "view",
            {
                "app": target,
                "session_id": sid,
                "run_id": run.run_id,
                "response": outcome.response,
                "launched_by": parent_app,
            },
        )
        if not child.awaited:
            return ToolResult(
                tool=LAUNCH_TOOL,
                status="ok",
                result={"instance_id": child.instance_id, "app": target},
            )
        self.instances.reply(target, sid, outcome.response)
        with self.runs.lock:
            run.waits += 1
            if run.waits == 1:
                self.runs.set_state(run, "waiting")
        try:
            got = self.instances.await_child(
                child, run.cancel, time.time() + self._settings().approvals.timeout
            )
        finally:
            with self.runs.lock:
                run.waits -= 1
                if run.waits == 0 and not run.cancel.is_set():
                    self.runs.set_state(run, "running")
        if got == "expired":
            return stopped(LAUNCH_TOOL, "expired")
        if isinstance(got, str):
            return stopped(LAUNCH_TOOL, "cancelled")
        if "error" in got:
            return error(f"launch: {target} failed: {got['error']}")
        return ToolResult(tool=LAUNCH_TOOL, status="ok", result=got)


def context_summary(context: dict[str, Any]) -> dict[str, Any]:
    """What a ``context_built`` trace event says of an app's context: the size of each
    part (characters of its JSON, roughly) and the ids of the memories it carries."""
    sizes = {key: len(str(value)) for key, value in context.items() if value}
    memories = context.get("memory") or []
    ids = (
        [m.get("id") for m in memories if isinstance(m, dict)] if isinstance(memories, list) else []
    )
    return {"sizes": sizes, "memories": ids, "tokens_est": sum(sizes.values()) // 4}


def view_summary(reply: dict[str, Any]) -> dict[str, Any]:
    """What a ``view`` trace event says of an app's reply."""
    return {
        "status": reply.get("status"),
        "title": reply.get("title"),
        "message": reply.get("message"),
        "error": reply.get("error"),
    }


def _refused(result: ToolResult | None) -> str | None:
    return None if result is None else (result.code or result.status)
