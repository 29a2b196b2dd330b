"""The System: builds and owns every long-lived part, starts them in order,
and stops them so that no process is left behind.

    config → store → event bus → LLM → process table → launcher → controller
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import requests

from aios.apphost.permissions import (
    DESKTOP_CONTROL,
    NETWORK,
    RESTART_NEEDED,
    SYSTEM_PROCESSES,
    Grants,
    domain_grants,
)
from aios.apphost.registry import AppRecord, AppStatus, Launcher
from aios.config import Config, apply_updates, save_settings, unbind_moved_keys
from aios.control.controller import Controller
from aios.desktop.instances import Instances
from aios.desktop.launch_token import launch_token
from aios.desktop.ui_log import UILog
from aios.desktop.voice import Recognizer
from aios.errors import (
    AIOSError,
    AppError,
    AppNotFound,
    BadRequest,
    PermissionDenied,
    ProtocolError,
)
from aios.events import EventBus
from aios.host import os_sandbox
from aios.host.hostprocs import end_host_process, host_disks, host_processes
from aios.llm.client import LLMClient
from aios.protocol import ATOMIC_TOOLS, LOCALES, ToolResult, app_secret, parse_ui_op
from aios.protocol.outbound import DOMAIN_PREFIX, whitelist_hosts
from aios.quotas import Quotas
from aios.runs.approvals import DECISIONS, Approvals, Call, Review
from aios.runs.approved import Approval
from aios.runs.gate import confirm_call, gate, recheck
from aios.runs.rights import describe_ui_op
from aios.runs.runs import Run, Runs
from aios.store import Store
from aios.store.pruner import Pruner
from aios.store.runs import RunStore
from aios.tools import audit_args, invoke, record as record_call
from aios.tools.base import ToolContext
from aios.tools.notify import NotifyLimiter
from aios.tools.processes import ProcessTable
from aios.tools.sandbox import SandboxPolicy

log = logging.getLogger(__name__)

CUSTOM_TOOLS_TIMEOUT = 2.0
"""Seconds an app gets to answer ``GET /tools`` (a list it serves from memory)."""


class System:
    def __init__(
        self,
        config: Config,
        *,
        port: int,
        token: str | None = None,
        port_map_path: Path | None = None,
        new_token: bool = False,
    ):
        self.config = config
        self.port = port
        self.data_dir = config.data_path
        self.apps_dir = config.apps_path
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.token = token or launch_token(self.data_dir, new=new_token)
        self.store = Store(
            self.data_dir / "aios.db",
            pool_size=config.store.pool_size,
            busy_timeout=config.store.busy_timeout,
        )
        interrupted = self.store.interrupt_unfinished_tasks()
        if interrupted:
            log.info(
                "%d task(s) left unfinished by the previous run marked interrupted", interrupted
            )
        self.runstore = RunStore(self.store)
        if stopped := self.runstore.interrupt_unfinished_runs():
            log.info("%d run(s) left running or waiting marked interrupted", len(stopped))
        self.pruner = Pruner(self.store, lambda: self.config.retention)
        self.bus = EventBus(config.events)
        self.ui_log = UILog(self.store, lambda: self.config.web.ui_ops_max)
        self.llm = LLMClient(config, self.store)
        self.processes = ProcessTable(max_per_app=config.tool_sandbox.max_background_processes)
        self.runs = Runs(self.runstore, self.bus)
        self.runs.language = lambda: self.config.language
        self.instances = Instances(self.bus)
        self.approvals = Approvals(self.runstore, self.bus, lambda: self.config.approvals)
        self.quotas = Quotas(lambda: self.config.quotas)
        self.approvals.quotas = self.instances.quotas = self.quotas
        self.notify_limiter = NotifyLimiter(lambda: self.config.apps)
        self.grants = Grants(self.store, lambda: self.config.apps.default_grants)
        self.grants.language = lambda: self.config.language
        self.approvals.name = self._app_name
        self.approvals.names = self._app_names
        self.approvals.granted = self._granted
        self.approvals.destinations = self.destinations
        self.approvals.remember_destination = self._grant_destination
        self.launcher = Launcher(
            self.apps_dir,
            self.data_dir,
            config,
            system_url=self.url,
            port_map_path=port_map_path or self.data_dir / "port_map.json",
            on_status=self._on_status,
            on_stop=self.processes.stop_app,
        )
        self._wire_quotas()
        self.launcher.network_granted = lambda rec: (
            NETWORK in self.grants.granted(rec.id, _requested(rec))
        )
        self.launcher.install_order = self.store.record_installs  # DESIGN §14.7
        self._http = requests.Session()
        self._http.trust_env = False
        self.launcher.mount(self._http)
        self._contexts: dict[str, tuple[tuple[str, int], ToolContext]] = {}
        """app id -> ((app token, config generation), its tool context)."""
        self._custom: dict[str, tuple[str, list[str]]] = {}
        """app id -> (app token, names of its ``@tool``s): one entry per app, per launch."""
        self._generation = 0
        """Bumped by every settings change: contexts built from an older config are stale."""
        self._lock = threading.Lock()
        self.controller = Controller(
            config=config,
            store=self.store,
            launcher=self.launcher,
            bus=self.bus,
            llm=self.llm,
            tool_context=self.tool_context,
            custom_tools=self.custom_tools,
            runs=self.runs,
            approvals=self.approvals,
            instances=self.instances,
        )
        self.recognizer = Recognizer(config)
        self._stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_wait: float | None = None, cancel: threading.Event | None = None) -> None:
        """Start the apps; wait for them at most ``ready_wait`` s (None: until all settled)."""
        if self.config.tool_sandbox.os_sandbox != "off":
            os_sandbox.detect()  # logs its one warning now, not at the first command
        self.pruner.start()
        self.launcher.start(ready_wait=ready_wait, cancel=cancel)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.runs.shutdown()
        self.bus.close()
        try:
            self.launcher.stop()
        finally:
            self.processes.shutdown()
            self.controller.close()
            self.recognizer.close()
            self.pruner.stop()
            self.store.close()

    def update_config(self, updates: dict[str, Any]) -> None:
        """Apply settings from the settings window; ConfigError names the bad key.

        Every part that holds the config gets the new one, and the next tool
        call of every app is made with a context built from it (sandbox
        policy, timeouts): a stricter setting is in force at once.
        """
        new = apply_updates(self.config, updates)
        save_settings(self.data_dir, unbind_moved_keys(self.config, updates))
        old, old_llm = self.config, self.llm
        with self._lock:
            self.config = new
            self._generation += 1
            self._contexts.clear()
        llm_changed = new.llm != old.llm or new.llm_api_key != old.llm_api_key
        # a new client only when the LLM settings changed: closing the old one
        # ends the requests it still has in flight (they fall back visibly)
        self.llm = LLMClient(new, self.store) if llm_changed else old_llm
        self.llm.config = new
        self.controller.reconfigure(new, llm=self.llm)
        self.launcher.reconfigure(new)
        self.recognizer.config = new
        self.processes.reconfigure(new.tool_sandbox.max_background_processes)
        if llm_changed:
            old_llm.close()

    # ------------------------------------------------------------- desktop

    def save_ui_snapshot(self, body: dict[str, Any]) -> int:
        """Keep what the desktop reports on screen (its snapshot) for system-control apps.

        Entries that are not objects with a text ``id`` are dropped; returns
        how many were kept. BadRequest when ``elements`` is not a list or is too long.
        """
        elements = body.get("elements")
        limit = self.config.web.snapshot_max_elements
        if not isinstance(elements, list) or len(elements) > limit:
            raise BadRequest(f"field 'elements' must be a list (at most {limit})")
        clean = [e for e in elements if isinstance(e, dict) and isinstance(e.get("id"), str)]
        self.store.cache_set(
            "desktop", "ui_snapshot", {"elements": clean, "viewport": body.get("viewport")}
        )
        return len(clean)

    def require_ui_permission(self, record: AppRecord) -> None:
        """PermissionDenied unless the user granted the app ``desktop.control``."""
        self.require_permission(record, DESKTOP_CONTROL)

    # ---------------------------------------------------------- permissions

    def require_permission(self, record: AppRecord, permission: str) -> None:
        """PermissionDenied naming ``permission`` unless it is granted (DESIGN §11.7);
        the first refusal of a launch also notifies the user once."""
        self.grants.require(
            record.id,
            _requested(record),
            permission,
            record.token,
            lambda event: self.bus.emit("notify", event),
        )

    def destinations(self, app_id: str) -> frozenset[str]:
        """The hosts ``app_id`` may send to without asking (DESIGN §14.5): its granted
        ``domains`` and the hosts of the global ``tool_sandbox.http_domain_whitelist``."""
        record = self.launcher.get(app_id)
        granted = self.grants.domains(app_id, _requested(record)) if record is not None else set()
        return frozenset(granted) | whitelist_hosts(
            tuple(self.config.tool_sandbox.http_domain_whitelist)
        )

    def _grant_destination(self, app_id: str, host: str) -> None:
        """The user answered "always allow" to a request to ``host``: a domain grant,
        audited, listed (and revocable) in Settings → App permissions."""
        record = self.launcher.get(app_id)
        if record is None or not self.grants.grant_domain(app_id, _requested(record), host):
            return
        with self._lock:
            self._generation += 1  # tool contexts carry the granted destinations
            self._contexts.clear()
        self.store.audit(
            app=app_id,
            tool="permissions",
            args=audit_args({"grant": [DOMAIN_PREFIX + host], "decision": "user"}),
            status="ok",
            duration_ms=0.0,
        )

    def app_permissions(self, record: AppRecord) -> dict[str, list[str]]:
        """``{requested, granted}`` of one app."""
        return self.grants.view(record.id, _requested(record))

    def public_apps(self) -> list[dict[str, Any]]:
        """Every app as the desktop sees it (``GET /api/apps``, the events ``hello``), with
        its permissions and its quotas (DESIGN §14.6)."""
        return [
            {
                **r.public(self.config.language),
                "permissions": self.app_permissions(r),
                "quotas": self.quotas.status(r.id),
            }
            for r in self.launcher.apps()
        ]

    def _wire_quotas(self) -> None:
        """Where :class:`Quotas` reads the counts other parts keep (for the status)."""

        def workdir(app_id: str) -> Path | None:
            rec = self.launcher.get(app_id)
            return rec.workdir if rec is not None else None

        self.quotas.workdirs = workdir
        self.quotas.sources = {
            "pending_cards": self.approvals.pending_count,
            "cache_keys": lambda app_id: self.store.cache_usage(app_id)[0],
            "cache_bytes": lambda app_id: self.store.cache_usage(app_id)[1],
            "instances": self.instances.count,
        }

    def forget_app(self, app_id: str) -> None:
        """An app's folder was removed (DESIGN §14.6): its runs stop, its pending cards
        are withdrawn, its cache, grants and tool policy go; its audit rows stay."""
        for run in self.runs.active():
            if app_id in run.app.split(","):
                run.cancel.set()
        removed = {**self.runstore.forget_app(app_id), **self.store.forget_app(app_id)}
        self.grants.forget(app_id)
        self.quotas.forget(app_id)
        with self._lock:
            self._contexts.pop(app_id, None)
            self._custom.pop(app_id, None)
        log.info(
            "app %s removed: %s",
            app_id,
            ", ".join(f"{n} {what} row(s)" for what, n in removed.items()) or "nothing kept",
        )

    def change_permissions(self, app_id: str, body: dict[str, Any]) -> dict[str, list[str]]:
        """Grant/revoke from the settings window: audited, in force at the next call.

        AppNotFound for an unknown app, BadRequest naming a bad permission.
        """
        record = self.launcher.get(app_id)
        if record is None:
            raise AppNotFound(f"no app {app_id!r}")
        changed = self.grants.change(app_id, _requested(record), body)
        if changed:
            with self._lock:
                self._generation += 1  # tool contexts carry the granted set
                self._contexts.clear()
            self.store.audit(
                app=app_id,
                tool="permissions",
                args=audit_args(
                    {
                        "grant": [p for p, g in changed.items() if g],
                        "revoke": [p for p, g in changed.items() if not g],
                        "decision": "user",
                    }
                ),
                status="ok",
                duration_ms=0.0,
            )
            needs_restart = RESTART_NEEDED & set(changed)
            if needs_restart and record.status in (AppStatus.RUNNING, AppStatus.STARTING):
                # The sandbox (its network namespace) is built at spawn: a new grant
                # takes effect in a new launch, which the system starts itself (§11.7).
                log.info("%s: %s changed; restarting the app", app_id, ", ".join(needs_restart))
                threading.Thread(
                    target=self._restart_quietly, args=(app_id,), name=f"regrant-{app_id}"
                ).start()
        return self.app_permissions(record)

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
        from aios.protocol import parse_steps

        frame = self.controller.acting.frame_for(record.id, session_id)
        sid = frame.session_id if frame is not None else ""
        launchers = frame.launchers if frame is not None else ()
        ctx = self.tool_context(record.id, sid or session_id)
        step_args: dict[str, Any] = args if isinstance(args, dict) else {}
        step = {"step_id": "call", "tool": name, "args": step_args}
        run = frame.run if frame is not None and frame.run is not None else None
        run = run if run is not None and self.runs.get(run.run_id) is not None else None
        reads = self.runs.reads_for(run, record.id)  # DESIGN §14.5: what it read so far
        try:
            (review,) = self.approvals.review(
                record.id, sid, parse_steps([step]), ctx.policy, launchers, reads=reads
            )
        except ProtocolError:
            return invoke(name, args, ctx)  # the tool names what is wrong with the call
        if reads and ctx.destinations is None:  # tainted (even in auto): redirects held
            ctx = replace(ctx, destinations=self.destinations(record.id))
        if review.rule == "allow" or review.blocked:
            result = invoke(name, args, ctx if run is None else ctx.for_run(run.run_id, run.cancel))
            self.runs.note_read(run, record.id, name, args, result)
            return result
        # it may wait for the user: within the app's quota, else refused now (no run, no card)
        with self.quotas.waiting_call(record.id):
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
            run = self.runs.start("tool", record.id, sid or session_id or "", text=name)
            for read in self.runs.reads_for(None, record.id):  # calls outside runs: one run
                run.taint.add(read)
        options = None if sid else [d for d in DECISIONS if d != "allow_session"]
        try:
            approved: dict[str, Approval] = {}
            presets, decisions = gate(
                self.approvals,
                self.runs,
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
                self.approvals,
                self.runs,
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
                self.runs.note_read(found, record.id, name, args, result)
        except BaseException:
            if own:
                self.runs.finish(run, None, failed=True)
            raise
        if own:
            self.runs.finish(run, None, failed=result.status != "ok")
        return result

    def _app_name(self, app_id: str) -> str:
        record = self.launcher.get(app_id)
        return record.name_in(self.config.language) if record is not None else app_id

    def _app_names(self, app_id: str) -> dict[str, str]:
        record = self.launcher.get(app_id)
        return {loc: record.name_in(loc) if record else app_id for loc in LOCALES}

    def _granted(self, app_id: str) -> frozenset[str]:
        record = self.launcher.get(app_id)
        if record is None:
            return frozenset()
        return self.grants.granted(app_id, _requested(record))

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
        frame = self.controller.acting.frame_for(record.id, session_id)
        if frame is None or not frame.launchers:
            return
        call = Call("ui_op" if permission == DESKTOP_CONTROL else permission, "high", permission)
        decision = self.approvals.decide(record.id, frame.session_id, call, frame.launchers)
        if decision.rule == "allow":
            return
        text = what()
        who = self.approvals.on_behalf(frame.chain, text)
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
            self.approvals,
            self.runs,
            frame.run,
            record.id,
            [step],
            chain=frame.launchers,
            reviews=[review],
        )
        stopped_by = next(iter(presets.values()), None)
        if stopped_by is not None:
            raise PermissionDenied(f"{who}: {stopped_by.error or 'not allowed'} ({decision.why})")

    def _restart_quietly(self, app_id: str) -> None:
        try:
            self.launcher.restart(app_id)
        except AppError as e:  # unloaded or shutting down meanwhile
            log.info("%s: not restarted after a permission change: %s", app_id, e)

    def process_list(self, record: AppRecord) -> list[dict[str, Any]]:
        """The host's processes, read-only, for an app granted ``system.processes``."""
        self.require_permission(record, SYSTEM_PROCESSES)
        self.require_for_chain(
            record, SYSTEM_PROCESSES, None, lambda: "read the host's process list"
        )
        return host_processes()

    def disk_list(self, record: AppRecord) -> list[dict[str, Any]]:
        """The host's disks, read-only, for an app granted ``system.processes``."""
        self.require_permission(record, SYSTEM_PROCESSES)
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
        self.require_permission(record, SYSTEM_PROCESSES)
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            raise BadRequest(f"pid must be a positive whole number, got {pid!r}")
        started = time.monotonic()
        frame = self.controller.acting.frame_for(record.id, session_id)
        sid = frame.session_id if frame is not None else (session_id or "")
        run = frame.run if frame is not None else None
        run = run if run is not None and self.runs.get(run.run_id) is not None else None
        own = run is None
        if run is None:
            run = self.runs.start("tool", record.id, sid, text="end_process")
        asked_in = run

        def confirm(name: str) -> None:
            why = confirm_call(
                self.approvals,
                self.runs,
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
                self.runs.finish(run, None, failed=True)
            self.store.audit(
                app=record.id,
                tool="end_process",
                args=audit_args({"pid": pid}),
                status="denied",
                session_id=session_id,
                duration_ms=(time.monotonic() - started) * 1000,
                error=str(e),
            )
            raise
        self.store.audit(
            app=record.id,
            tool="end_process",
            args=audit_args({"pid": pid, "name": ended["name"]}),
            status="ok",
            session_id=session_id,
            duration_ms=(time.monotonic() - started) * 1000,
        )
        if own:
            self.runs.finish(run, None)
        return ended

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
            self.store.audit(
                app=record.id,
                tool="ui_op",
                args=audit_args(ops),
                status="denied",
                duration_ms=0.0,
                error=str(e),
            )
            raise
        except ProtocolError as e:
            self.store.audit(
                app=record.id,
                tool="ui_op",
                args=audit_args(ops),
                status="denied",
                duration_ms=0.0,
                error=str(e),
            )
            raise BadRequest(str(e)) from e
        for op in self.ui_log.apply(checked):
            self.bus.emit("ui_op", {**op, "by": record.id})
            self.store.audit(
                app=record.id, tool="ui_op", args=audit_args(op), status="ok", duration_ms=0.0
            )
        return len(checked)

    # ------------------------------------------------------------- per app

    def tool_context(self, app_id: str, session_id: str | None = None) -> ToolContext:
        """The sandbox context of a running app, rebuilt when the app relaunches and
        when the settings change."""
        record = self.launcher.get(app_id)
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
            store=self.store,
            timeouts={t: config.timeout_for(t) for t in ATOMIC_TOOLS},
            permissions=self.grants.granted(record.id, _requested(record)),
            forbidden_ports=self.forbidden_ports,
            emit=self._emit,
            processes=self.processes,
            quotas=self.quotas,
            app_url=self.launcher.url(record.id),
            app_token=record.token,
            app_secret=record.launch_secret,
            app_name=record.shown_name,
            app_names={loc: record.name_in(loc) for loc in LOCALES},
            notify_allowed=self.notify_limiter.gate(record.id),
            destinations=None if config.approvals.mode == "auto" else self.destinations(record.id),
        )

    def forbidden_ports(self) -> set[int]:
        return {self.port, *self.launcher.ports()}

    def custom_tools(self, app_id: str) -> list[str]:
        """Names of the app's ``@tool``s (its ``GET /tools``); [] for apps without one.

        Only an answer is cached (per app, for this launch of it): a failed or
        garbled ``GET /tools`` is asked again next time, and entries of apps
        that relaunched or are gone are dropped.
        """
        record = self.launcher.get(app_id)
        if record is None or record.status != "running":
            return []
        with self._lock:
            cached = self._custom.get(app_id)
        if cached is not None and cached[0] == record.token:
            return cached[1]
        try:
            r = self._http.get(
                self.launcher.url(app_id) + "/tools",
                timeout=CUSTOM_TOOLS_TIMEOUT,
                headers={
                    "X-AIOS-App-Token": record.token,
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
            known = {a.id: a.token for a in self.launcher.apps()}
            self._custom = {k: v for k, v in self._custom.items() if known.get(k) == v[0]}
            self._contexts = {k: v for k, v in self._contexts.items() if known.get(k) == v[0][0]}
            self._custom[app_id] = (record.token, names)
        return names

    def _emit(self, type_: str, payload: dict[str, Any]) -> None:
        self.bus.emit(type_, payload)

    def _on_status(self, record: AppRecord) -> None:
        self.bus.emit(
            "app_status", {"app": record.id, "status": str(record.status), "error": record.error}
        )
        if record.status == AppStatus.STOPPED and self.launcher.get(record.id) is None:
            self.forget_app(record.id)  # its folder was removed (Launcher.rescan)
        if record.status in (AppStatus.FAILED, AppStatus.RESTARTING):
            # its open instances fail; a parent waiting on one of them learns why
            self.instances.fail(record.id, record.error or str(record.status))


def _requested(record: AppRecord) -> list[str]:
    """The permissions and destinations (``domain:<host>``) the app's manifest asks for."""
    if record.manifest is None:
        return []
    return [*record.manifest.permissions, *domain_grants(record.manifest.domains)]
