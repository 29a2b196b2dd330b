"""What an app may ask of the system (``/api/sys/*``, DESIGN §5, §9.4, §11, §14).

A synchronous tool call (``self.call_tool``) under the user's policy, a push to
the desktop, UI operations, the host's processes and disks and "end task". Each
is checked against the app's grants and, for work another app launched, against
the chain's (DESIGN §14.4); a call that needs a decision shows the same approval
card as a plan. Here too: the tool context of each running app (its sandbox
policy, timeouts, granted destinations), rebuilt when it relaunches or the
settings or its grants change, and the names of its own ``@tool``s.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import requests

from aios.apphost.permissions import DESKTOP_CONTROL, SYSTEM_PROCESSES, AppPermissions
from aios.apphost.registry import AppRecord, Launcher
from aios.config import Config
from aios.desktop.ui_log import UILog
from aios.errors import AIOSError, BadRequest, PermissionDenied, ProtocolError
from aios.events import EventBus
from aios.host.hostprocs import end_host_process, host_disks, host_processes
from aios.names import APP_TOKEN_HEADER
from aios.protocol import (
    ATOMIC_TOOLS,
    LOCALES,
    ToolResult,
    app_secret,
    forwardable_reply,
    parse_steps,
    parse_ui_op,
    without_system_fields,
)
from aios.quotas import Quotas
from aios.runs.approvals import DECISIONS, Approvals, Call, Review
from aios.runs.approved import Approval
from aios.runs.gate import confirm_call, gate, recheck
from aios.runs.rights import Acting, describe_ui_op
from aios.runs.runs import Run, Runs
from aios.store import Store
from aios.tools import audit_args, invoke, record as record_call
from aios.tools.base import MemoryPort, ToolContext, ToolOutput
from aios.tools.notify import NotifyLimiter
from aios.tools.processes import ProcessTable
from aios.tools.sandbox import SandboxPolicy

log = logging.getLogger(__name__)

CUSTOM_TOOLS_TIMEOUT = 2.0
"""Seconds an app gets to answer ``GET /tools`` (a list it serves from memory)."""

PROGRESS_MAX = 100
"""A push's ``progress`` is a fraction 0..1, or a percentage up to this."""


class AppApi:
    """The system as the apps see it; built and reconfigured by :class:`aios.system.System`."""

    def __init__(
        self,
        config: Config,
        *,
        port: int,
        store: Store,
        bus: EventBus,
        launcher: Launcher,
        permissions: AppPermissions,
        quotas: Quotas,
        processes: ProcessTable,
        notify_limiter: NotifyLimiter,
        runs: Runs,
        approvals: Approvals,
        ui_log: UILog,
        acting: Callable[[], Acting[Run]],
        memory: MemoryPort | None = None,
    ):
        self.config = config
        self._port = port
        self._store = store
        self._bus = bus
        self._launcher = launcher
        self._permissions = permissions
        self._quotas = quotas
        self._processes = processes
        self._notify_limiter = notify_limiter
        self._runs = runs
        self._approvals = approvals
        self._ui_log = ui_log
        self._acting = acting
        self._memory = memory
        self.mcp: Callable[[ToolContext, str, dict[str, Any], float | None], ToolOutput] | None = (
            None
        )
        """Runs an MCP server's tool (:meth:`aios.mcp.client.McpClients.call`); set by the
        system."""
        """Which app acts for whom right now (the controller's frames)."""
        self._http = requests.Session()
        self._http.trust_env = False
        launcher.mount(self._http)
        self._contexts: dict[str, tuple[tuple[str, int], ToolContext]] = {}
        """app id -> ((app token, config generation), its tool context)."""
        self._custom: dict[str, tuple[str, list[str]]] = {}
        """app id -> (app token, names of its ``@tool``s): one entry per app, per launch."""
        self._generation = 0
        """Bumped by every settings or grant change: contexts built before are stale."""
        self._lock = threading.Lock()

    def reconfigure(self, config: Config) -> None:
        """New settings: the next tool call of every app gets a context built from them."""
        with self._lock:
            self.config = config
            self._generation += 1
            self._contexts.clear()

    def grants_changed(self) -> None:
        """The tool contexts carry the granted set and destinations: build them anew."""
        with self._lock:
            self._generation += 1
            self._contexts.clear()

    def forget(self, app_id: str) -> None:
        """A removed app: its tool context and its custom tools go."""
        with self._lock:
            self._contexts.pop(app_id, None)
            self._custom.pop(app_id, None)

    # ------------------------------------------------------------ tool calls

    def call_tool(
        self, record: AppRecord, name: str, args: Any, session_id: str | None
    ) -> ToolResult:
        """An app's synchronous tool call (``self.call_tool``), under the user's policy.

        It belongs to what the app is doing now (:meth:`acting`): that session,
        that run, and, for work another app launched, that chain's rights
        (DESIGN §14.4); ``session_id`` only picks among the app's own calls in
        flight. It is decided once (:meth:`~aios.runs.approvals.Approvals.decide`, via
        the review); one that needs a decision shows the same approval card as a
        plan (one step) and waits for it; the app's own ``/handle`` is not timed
        out meanwhile. A call outside any request of the system belongs to no
        session: no "allow for this session" covers it, and its card offers none.
        """
        frame = self._acting().frame_for(record.id, session_id)
        sid = frame.session_id if frame is not None else ""
        launchers = frame.launchers if frame is not None else ()
        ctx = self.tool_context(record.id, sid or session_id)
        step_args: dict[str, Any] = args if isinstance(args, dict) else {}
        step = {"step_id": "call", "tool": name, "args": step_args}
        run = frame.run if frame is not None and frame.run is not None else None
        run = run if run is not None and self._runs.get(run.run_id) is not None else None
        reads = self._runs.reads_for(run, record.id)  # DESIGN §14.5: what it read so far
        try:
            (review,) = self._approvals.review(
                record.id, sid, parse_steps([step]), ctx.policy, launchers, reads=reads
            )
        except ProtocolError:
            return invoke(name, args, ctx)  # the tool names what is wrong with the call
        if reads and ctx.destinations is None:  # tainted (even in auto): redirects held
            ctx = replace(ctx, destinations=self._permissions.destinations(record.id))
        if review.rule == "allow" or review.blocked:
            result = invoke(name, args, ctx if run is None else ctx.for_run(run.run_id, run.cancel))
            self._runs.note_read(run, record.id, name, args, result)
            return result
        # it may wait for the user: within the app's quota, else refused now (no run, no card)
        with self._quotas.waiting_call(record.id):
            return self._call_asking(
                record, name, args, (sid, session_id, launchers), run, ctx, step, review
            )

    def _call_asking(
        self,
        record: AppRecord,
        name: str,
        args: Any,
        acting: tuple[str, str | None, tuple[str, ...]],
        run: Run | None,
        ctx: ToolContext,
        step: dict[str, Any],
        review: Review,
    ) -> ToolResult:
        """The rest of :meth:`call_tool` for a call that asks the user (``acting``: the
        session it belongs to, the one the app named, the chain's launchers)."""
        sid, session_id, launchers = acting
        found = run
        own = run is None
        if run is None:
            run = self._runs.start("tool", record.id, sid or session_id or "", text=name)
            for read in self._runs.reads_for(None, record.id):  # calls outside runs: one run
                run.taint.add(read)
        options = None if sid else [d for d in DECISIONS if d != "allow_session"]
        try:
            approved: dict[str, Approval] = {}
            presets, decisions = gate(
                self._approvals,
                self._runs,
                run,
                record.id,
                [step],
                ctx.policy,
                chain=launchers,
                reviews=[review],
                options=options,
                approved=approved,
            )
            ctx = ctx.for_run(run.run_id, run.cancel, decisions)
            preset = next(iter(presets.values()), None) or recheck(
                self._approvals,
                self._runs,
                run,
                record.id,
                ctx.policy,
                approved,
                ctx.decisions,
                ("step_call", name, step["args"]),
                chain=launchers,
                options=options,
            )
            if preset is not None:
                record_call(ctx, name, args, preset, step_id="step_call", denied=True)
                result = preset
            else:
                result = invoke(name, args, ctx, step_id="step_call")
                self._runs.note_read(found, record.id, name, args, result)
        except BaseException:
            if own:
                self._runs.finish(run, None, failed=True)
            raise
        if own:
            self._runs.finish(run, None, failed=result.status != "ok")
        return result

    # ------------------------------------------------------------ the desktop

    @property
    def listeners(self) -> int:
        """How many desktops receive the events now (an app learns nobody saw its push)."""
        return self._bus.subscribers

    def push(self, record: AppRecord, body: dict[str, Any], size: int) -> int:
        """A view or data the app pushes to the desktop (``size``: the request's bytes),
        within its push quota; BadRequest for a view or a ``progress`` that is wrong.
        Returns :attr:`listeners`."""
        self._quotas.admit_push(record.id, size)
        if "view_type" in body:
            try:
                view = forwardable_reply(body)
            except AIOSError as e:
                raise BadRequest(str(e)) from e
            self._bus.emit("view", {"app": record.id, "response": view, "pushed": True})
        else:
            check_progress(body)
            self._bus.emit("push", {"app": record.id, "data": without_system_fields(body)})
        return self.listeners

    def require_ui_permission(self, record: AppRecord) -> None:
        """PermissionDenied unless the user granted the app ``desktop.control``."""
        self._permissions.require(record, DESKTOP_CONTROL)

    def apply_ui_ops(self, record: AppRecord, body: dict[str, Any]) -> int:
        """Check an app's UI operations (``UIOp``), audit them, log them and send them to
        the desktop.

        ``body`` is one operation or ``{"ops": [...]}``. All are checked first:
        one bad operation sends none, leaves the log as it was and is audited as
        ``denied`` (BadRequest naming it). The log (:class:`~aios.desktop.ui_log.UILog`)
        keeps the changes for a reload and takes them back on ``undo``/``reset``.
        Returns how many were sent.
        """
        self.require_ui_permission(record)
        listed = body.get("ops")
        ops: list[Any] = listed if isinstance(listed, list) else [body]
        try:
            checked = [parse_ui_op(op) for op in ops]
            claimed = body.get("session_id")
            self.require_for_chain(
                record,
                DESKTOP_CONTROL,
                claimed if isinstance(claimed, str) else None,
                lambda: "; ".join(describe_ui_op(op) for op in checked),
            )
        except PermissionDenied as e:
            self._audit_denied(record, "ui_op", ops, e)
            raise
        except ProtocolError as e:
            self._audit_denied(record, "ui_op", ops, e)
            raise BadRequest(str(e)) from e
        for op in self._ui_log.apply(checked):
            self._bus.emit("ui_op", {**op, "by": record.id})
            self._store.audit(
                app=record.id, tool="ui_op", args=audit_args(op), status="ok", duration_ms=0.0
            )
        return len(checked)

    def _audit_denied(self, record: AppRecord, tool: str, args: Any, e: Exception) -> None:
        self._store.audit(
            app=record.id,
            tool=tool,
            args=audit_args(args),
            status="denied",
            duration_ms=0.0,
            error=str(e),
        )

    def require_for_chain(
        self,
        record: AppRecord,
        permission: str,
        session_id: str | None,
        what: Callable[[], str],
    ) -> None:
        """A call that needs ``permission`` made by an app working for another app
        (DESIGN §14.4): allowed when every app of the chain is granted it, else the
        user is asked on a card naming both apps ("System Control, asked by Evil,
        wants to run: …"); PermissionDenied when denied, expired or cancelled.
        An app acting for the user needs only its own grant (checked before)."""
        frame = self._acting().frame_for(record.id, session_id)
        if frame is None or not frame.launchers:
            return
        call = Call("ui_op" if permission == DESKTOP_CONTROL else permission, "high", permission)
        decision = self._approvals.decide(record.id, frame.session_id, call, frame.launchers)
        if decision.rule == "allow":
            return
        text = what()
        who = self._approvals.on_behalf(frame.chain, text)
        if decision.rule == "never" or frame.run is None:
            raise PermissionDenied(f"{who}: refused: {decision.why}")
        review = Review(  # the card names the apps from the chain, in the UI's language
            step_id=f"step_{call.tool}",
            tool=call.tool,
            risk="high",
            rule="ask",
            text=text,
            args=audit_args({"permission": permission, "what": text}),
            chain=frame.chain,
            why=decision.why,
        )
        step = {"step_id": call.tool, "tool": call.tool, "args": {}}
        presets, _ = gate(
            self._approvals,
            self._runs,
            frame.run,
            record.id,
            [step],
            chain=frame.launchers,
            reviews=[review],
        )
        stopped_by = next(iter(presets.values()), None)
        if stopped_by is not None:
            raise PermissionDenied(f"{who}: {stopped_by.error or 'not allowed'} ({decision.why})")

    # ------------------------------------------------------- host processes

    def process_list(self, record: AppRecord) -> list[dict[str, Any]]:
        """The host's processes, read-only, for an app granted ``system.processes``."""
        self._permissions.require(record, SYSTEM_PROCESSES)
        self.require_for_chain(
            record, SYSTEM_PROCESSES, None, lambda: "read the host's process list"
        )
        return host_processes()

    def disk_list(self, record: AppRecord) -> list[dict[str, Any]]:
        """The host's disks, read-only, for an app granted ``system.processes``."""
        self._permissions.require(record, SYSTEM_PROCESSES)
        self.require_for_chain(record, SYSTEM_PROCESSES, None, lambda: "read the host's disks")
        return host_disks()

    def end_process(
        self, record: AppRecord, pid: Any, session_id: str | None = None
    ) -> dict[str, Any]:
        """End one host process for an app granted ``system.processes`` ("end task"),
        audited whether it ended or was refused.

        It always asks the user (DESIGN §11), whatever the approvals mode: an
        approval card of its own, unless the app's confirm in the same run covered
        exactly this call (``covers=[{"tool": "end_process", "args": {"pid": pid}}]``),
        which is then the one question. The system's checks come first: nobody is
        asked about a process that cannot be ended.
        """
        self._permissions.require(record, SYSTEM_PROCESSES)
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            raise BadRequest(f"pid must be a positive whole number, got {pid!r}")
        started = time.monotonic()
        frame = self._acting().frame_for(record.id, session_id)
        sid = frame.session_id if frame is not None else (session_id or "")
        run = frame.run if frame is not None else None
        run = run if run is not None and self._runs.get(run.run_id) is not None else None
        own = run is None
        if run is None:
            run = self._runs.start("tool", record.id, sid, text="end_process")
        asked_in = run

        def confirm(name: str) -> None:
            why = confirm_call(
                self._approvals,
                self._runs,
                asked_in,
                record.id,
                ("end_process", {"pid": pid}),
                f"end process {pid} ({name})",
                chain=frame.chain if frame is not None and frame.launchers else (),
            )
            if why is not None:
                raise PermissionDenied(f"process {pid} ({name}) was not ended: {why} by the user")

        try:
            ended = end_host_process(pid, confirm=confirm)
        except AIOSError as e:
            if own:
                self._runs.finish(run, None, failed=True)
            self._store.audit(
                app=record.id,
                tool="end_process",
                args=audit_args({"pid": pid}),
                status="denied",
                session_id=session_id,
                duration_ms=(time.monotonic() - started) * 1000,
                error=str(e),
            )
            raise
        self._store.audit(
            app=record.id,
            tool="end_process",
            args=audit_args({"pid": pid, "name": ended["name"]}),
            status="ok",
            session_id=session_id,
            duration_ms=(time.monotonic() - started) * 1000,
        )
        if own:
            self._runs.finish(run, None)
        return ended

    # ---------------------------------------------------------------- per app

    def tool_context(self, app_id: str, session_id: str | None = None) -> ToolContext:
        """The sandbox context of a running app, rebuilt when the app relaunches and
        when the settings change."""
        record = self._launcher.get(app_id)
        if record is None or record.manifest is None or record.workdir is None:
            raise KeyError(app_id)
        with self._lock:
            key = (record.token, self._generation)
            cached = self._contexts.get(app_id)
            if cached is not None and cached[0] == key:
                ctx = cached[1]
            else:
                ctx = self._build_context(record, self.config)
                self._contexts[app_id] = (key, ctx)
        return ctx if session_id is None else replace(ctx, session_id=session_id)

    def _build_context(self, record: AppRecord, config: Config) -> ToolContext:
        assert record.manifest is not None and record.workdir is not None
        policy = SandboxPolicy.build(
            config.tool_sandbox, record.workdir, record.manifest, config.approvals.block_list
        )
        return ToolContext(
            app_id=record.id,
            workdir=record.workdir.resolve(),
            policy=policy,
            store=self._store,
            timeouts={t: config.timeout_for(t) for t in ATOMIC_TOOLS},
            permissions=self._permissions.granted_to(record),
            forbidden_ports=self.forbidden_ports,
            emit=self._emit,
            processes=self._processes,
            quotas=self._quotas,
            app_url=self._launcher.url(record.id),
            app_token=record.token,
            app_secret=record.launch_secret,
            app_name=record.shown_name,
            app_names={loc: record.name_in(loc) for loc in LOCALES},
            notify_allowed=self._notify_limiter.gate(record.id),
            memory=self._memory,
            mcp=self.mcp,
            destinations=(
                None
                if config.approvals.mode == "auto"
                else self._permissions.destinations(record.id)
            ),
        )

    def forbidden_ports(self) -> set[int]:
        return {self._port, *self._launcher.ports()}

    def custom_tools(self, app_id: str) -> list[str]:
        """Names of the app's ``@tool``s (its ``GET /tools``); [] for apps without one.

        Only an answer is cached (per app, for this launch of it): a failed or
        garbled ``GET /tools`` is asked again next time, and entries of apps
        that relaunched or are gone are dropped.
        """
        record = self._launcher.get(app_id)
        if record is None or record.status != "running":
            return []
        with self._lock:
            cached = self._custom.get(app_id)
        if cached is not None and cached[0] == record.token:
            return cached[1]
        try:
            r = self._http.get(
                self._launcher.url(app_id) + "/tools",
                timeout=CUSTOM_TOOLS_TIMEOUT,
                headers={
                    APP_TOKEN_HEADER: record.token,
                    **app_secret.headers(record.launch_secret),
                },
            )
            listed = r.json() if r.ok else None
        except (requests.RequestException, ValueError) as e:
            log.info("could not list the custom tools of %s (asked again next call): %s", app_id, e)
            return []
        if r.status_code == 404:
            listed = []  # an app without GET /tools (a raw Flask app) has no custom tools
        if not isinstance(listed, list):
            log.info(
                "custom tools of %s: GET /tools answered HTTP %d without a list "
                "(asked again next call)",
                app_id,
                r.status_code,
            )
            return []
        names = [
            t["name"] for t in listed if isinstance(t, dict) and isinstance(t.get("name"), str)
        ]
        with self._lock:
            known = {a.id: a.token for a in self._launcher.apps()}
            self._custom = {k: v for k, v in self._custom.items() if known.get(k) == v[0]}
            self._contexts = {k: v for k, v in self._contexts.items() if known.get(k) == v[0][0]}
            self._custom[app_id] = (record.token, names)
        return names

    def _emit(self, type_: str, payload: dict[str, Any]) -> None:
        self._bus.emit(type_, payload)


def check_progress(body: dict[str, Any]) -> None:
    """A push's ``progress``: a number from 0 to 1 (or a percentage up to 100), or null."""
    if "progress" not in body or body["progress"] is None:
        return
    value = body["progress"]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= PROGRESS_MAX
    ):
        raise BadRequest(
            f"field 'progress' must be a number from 0 to 1 (or a percentage up to "
            f"{PROGRESS_MAX}), or null to clear the bar; got {value!r}"
        )
