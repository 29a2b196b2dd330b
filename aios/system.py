"""The System, the composition root: builds and owns every long-lived part,
starts them in order, hands them new settings, and stops them so that no
process is left behind. What an app may ask of the system is
:class:`~aios.control.app_api.AppApi` (``system.app_api``); the grants are
:class:`~aios.apphost.permissions.AppPermissions` (``system.permissions``).

    config → store → event bus → LLM → process table → launcher → permissions
    → app API → controller → draft listener → thinker → automations
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aios.apphost.permissions import NETWORK, AppPermissions, Grants
from aios.apphost.ports import write_json_atomic
from aios.apphost.registry import AppRecord, AppStatus, Launcher
from aios.config import Config, apply_updates, save_settings, unbind_moved_keys
from aios.control.app_api import AppApi
from aios.control.controller import Controller
from aios.control.intents import SYSTEM_AGENT
from aios.desktop.instances import Instances
from aios.desktop.launch_token import launch_token
from aios.desktop.ui_log import UILog
from aios.desktop.voice import Recognizer
from aios.duplex.automations import Runner, Scheduler
from aios.duplex.listener import Listener
from aios.duplex.thinker import Thinker
from aios.events import EventBus
from aios.host import os_sandbox
from aios.llm.client import LLMClient
from aios.mcp.client import McpClients
from aios.mcp.tokens import McpTokens
from aios.memory.service import Memory
from aios.protocol import LOCALES
from aios.quotas import Quotas
from aios.runs.approvals import Approvals
from aios.runs.runs import Runs
from aios.store import Store
from aios.store.automations import AutomationStore
from aios.store.pruner import Pruner
from aios.store.runs import RunStore
from aios.tools import audit_args, redacted
from aios.tools.base import ToolContext
from aios.tools.notify import NotifyLimiter
from aios.tools.processes import ProcessTable
from aios.traces import Tracer, TraceWriter
from aios.traces.otlp import otlp_exporter

log = logging.getLogger(__name__)

DESKTOP_FILE = "desktop.json"
"""``<data_dir>/desktop.json``: the running desktop's URL and pid, for ``triton-aios mcp``
(no secret in it: a client still needs its own MCP token)."""


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
        self.trace_writer = TraceWriter(
            self.data_dir / "traces",
            queue_max=config.traces.queue_max,
            secrets=self._secrets,
            redact=redacted,
        )
        self.tracer = Tracer(self.trace_writer if config.traces.enabled else None)
        self.tracer.on_event = otlp_exporter(config.traces.otlp_endpoint)
        self.pruner.also.append(self._prune_traces)
        self.ui_log = UILog(
            self.store,
            lambda: self.config.web.ui_ops_max,
            lambda: self.config.web.snapshot_max_elements,
        )
        self.llm = LLMClient(config, self.store, tracer=self.tracer)
        self.memory = Memory(
            self.store,
            self.data_dir,
            lambda: self.config,
            lambda: self.llm,
            lambda kind, event: self.bus.emit(kind, event),
        )
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
        self.launcher = Launcher(
            self.apps_dir,
            self.data_dir,
            config,
            system_url=self.url,
            port_map_path=port_map_path or self.data_dir / "port_map.json",
            on_status=self._on_status,
            on_stop=self.processes.stop_app,
        )
        self.permissions = AppPermissions(
            self.grants,
            self.launcher,
            self.store,
            lambda: self.config,
            lambda event: self.bus.emit("notify", event),
            audit_args,
        )
        self.approvals.tracer = self.tracer
        self.approvals.name = self._app_name
        self.approvals.names = self._app_names
        self.approvals.granted = self.permissions.granted
        self.approvals.destinations = self.permissions.destinations
        self.approvals.remember_destination = self.permissions.grant_destination
        self._wire_quotas()
        self.launcher.network_granted = lambda rec: NETWORK in self.permissions.granted_to(rec)
        self.launcher.public_extra = lambda rec: {
            "permissions": self.permissions.view(rec),
            "quotas": self.quotas.status(rec.id),
        }
        self.launcher.install_order = self.store.record_installs  # DESIGN §14.7
        self.launcher.autostart = self._autostart
        self.launcher.busy = self._app_busy
        self.app_api = AppApi(
            config,
            port=port,
            store=self.store,
            bus=self.bus,
            launcher=self.launcher,
            permissions=self.permissions,
            quotas=self.quotas,
            processes=self.processes,
            notify_limiter=self.notify_limiter,
            runs=self.runs,
            approvals=self.approvals,
            ui_log=self.ui_log,
            acting=lambda: self.controller.acting,
            memory=self.memory,
        )
        self.permissions.changed = self.app_api.grants_changed
        self.controller = Controller(
            config=config,
            store=self.store,
            launcher=self.launcher,
            bus=self.bus,
            llm=self.llm,
            tool_context=self.app_api.tool_context,
            custom_tools=self.app_api.custom_tools,
            runs=self.runs,
            approvals=self.approvals,
            instances=self.instances,
            memory=self.memory,
            tracer=self.tracer,
        )
        self.mcp = McpClients(
            self.data_dir, lambda: self.config, lambda kind, event: self.bus.emit(kind, event)
        )
        self.app_api.mcp = self.mcp.call
        self.controller.contexts.mcp_tools = self.mcp.tools_for
        self.duplex = Listener(
            config=lambda: self.config,
            controller=self.controller,
            launcher=self.launcher,
            store=self.store,
            memory=self.memory,
            llm=lambda: self.llm,
        )
        """Listens to the command bar's drafts (DESIGN §18, aios/duplex/)."""
        self.recognizer = Recognizer(config)
        self.mcp_tokens = McpTokens(self.data_dir)
        """The tokens MCP clients use (DESIGN §17); the server itself is aios.mcp.server,
        built by the web layer when the first client comes."""
        self.on_stop: list[Callable[[], None]] = []
        """Called first by :meth:`stop` (parts built on top of the system, e.g. /mcp)."""
        self.topics = self.controller.topics
        """Each session's topic tree (DESIGN §18, aios/control/topics.py)."""
        self.thinker = Thinker(
            self.bus,
            self.store,
            self.runstore,
            lambda: self.config,
            self._app_name,
            topic_of=self.topics.recent,
        )
        automations = AutomationStore(self.store)
        self.automation_runner = Runner(
            automations,
            self.thinker,
            lambda text, sid, locale: self.controller.instruction(text, sid, locale=locale),
            lambda: self.config.language,
        )
        self.automations = Scheduler(
            automations,
            lambda: self.config.automations,
            fire=self.automation_runner.fire,
            missed=self.automation_runner.missed,
        )
        self.controller.schedule = self.automations.from_words
        self._stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_wait: float | None = None, cancel: threading.Event | None = None) -> None:
        """Start the apps; wait for them at most ``ready_wait`` s (None: until all settled)."""
        if self.config.tool_sandbox.os_sandbox != "off":
            os_sandbox.detect()  # logs its one warning now, not at the first command
        self.trace_writer.start()
        self.pruner.start()
        self.memory.start()
        self._write_desktop_file()
        self.mcp.start()  # in the background: never waited for here (DESIGN §17)
        self.launcher.start(ready_wait=ready_wait, cancel=cancel)
        self.thinker.start()
        self.automations.start()  # what was missed while off is said first

    def _write_desktop_file(self) -> None:
        try:
            write_json_atomic(self.data_dir / DESKTOP_FILE, {"url": self.url, "pid": os.getpid()})
        except OSError as e:
            log.warning("cannot write %s (triton-aios mcp needs --url): %s", DESKTOP_FILE, e)

    def _remove_desktop_file(self) -> None:
        """Remove ``desktop.json`` if it is still this desktop's (another one may have
        started on the same data dir since and written its own)."""
        path = self.data_dir / DESKTOP_FILE
        try:
            if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError, AttributeError):
            pass  # gone, unreadable or not ours: nothing to take back

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._remove_desktop_file()
        for stop in self.on_stop:
            stop()
        self.automations.stop()
        self.runs.shutdown()
        self.bus.close()
        self.thinker.stop()
        try:
            self.mcp.stop()
            self.launcher.stop()
        finally:
            self.processes.shutdown()
            self.controller.close()
            self.memory.close()
            self.recognizer.close()
            self.pruner.stop()
            self.tracer.writer = None
            self.trace_writer.stop()
            if self.tracer.on_event is not None:
                shutdown = getattr(self.tracer.on_event, "shutdown", None)
                if callable(shutdown):
                    shutdown()
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
        self.config = new
        self.app_api.reconfigure(new)
        llm_changed = new.llm != old.llm or new.llm_api_key != old.llm_api_key
        # a new client only when the LLM settings changed: closing the old one
        # ends the requests it still has in flight (they fall back visibly)
        self.llm = LLMClient(new, self.store, tracer=self.tracer) if llm_changed else old_llm
        self.llm.config = new
        self.controller.reconfigure(new, llm=self.llm)
        self.memory.reconfigure(new)
        self.launcher.reconfigure(new)
        self.mcp.reconfigure(new)
        self.recognizer.config = new
        self.processes.reconfigure(new.tool_sandbox.max_background_processes)
        self.tracer.writer = self.trace_writer if new.traces.enabled else None
        if new.traces.otlp_endpoint != old.traces.otlp_endpoint:
            self.tracer.on_event = otlp_exporter(new.traces.otlp_endpoint)
        if llm_changed:
            old_llm.close()

    # ------------------------------------ shortcuts (SDK test harness, tests, benches)

    def tool_context(self, app_id: str, session_id: str | None = None) -> ToolContext:
        """:meth:`AppApi.tool_context` (the SDK's test harness, the benches and the
        ``/apps/<id>/files`` page, whose unit tests serve it from a fake system, ask here)."""
        return self.app_api.tool_context(app_id, session_id)

    def custom_tools(self, app_id: str) -> list[str]:
        """:meth:`AppApi.custom_tools`."""
        return self.app_api.custom_tools(app_id)

    def destinations(self, app_id: str) -> frozenset[str]:
        """:meth:`AppPermissions.destinations`."""
        return self.permissions.destinations(app_id)

    def apply_ui_ops(self, record: AppRecord, body: dict[str, Any]) -> int:
        """:meth:`AppApi.apply_ui_ops`."""
        return self.app_api.apply_ui_ops(record, body)

    def end_session(self, session_id: str) -> dict[str, Any]:
        """The user starts a new conversation: ``session_id``'s report, traced as
        ``session_report`` (turns, runs, tools, tokens, cost, memories added)."""
        usage = self.store.usage_totals("session", session_id=session_id)
        totals = usage[0] if usage else {}
        report: dict[str, Any] = {
            "turns": sum(
                1
                for h in self.store.history(session_id, limit=self.config.store.history_page_max)
                if h.get("role") == "user"
            ),
            "runs": len(self.runstore.runs(session=session_id, limit=10_000)),
            "tools": len(self.store.audit_rows(session_id=session_id, limit=5000)),
            "llm_calls": int(totals.get("calls") or 0),
            "prompt_tokens": int(totals.get("prompt_tokens") or 0),
            "completion_tokens": int(totals.get("completion_tokens") or 0),
            "cached_tokens": int(totals.get("cached_tokens") or 0),
            "cost": totals.get("cost"),
            "memories_added": self.memory.memories.added_in(session_id),
        }
        self.tracer.emit("session_report", session_id=session_id, **report)
        self.tracer.emit("session_end", session_id=session_id)
        return report

    # -------------------------------------------------------------- wiring

    def _secrets(self) -> list[str]:
        """What no trace line may hold: the LLM keys, MCP tokens and the launch token."""
        llm = self.config.llm
        tokens = [s.token for s in self.config.mcp.active().values() if s.token]
        return [self.token, self.config.llm_api_key, llm.api_key, llm.fallback.api_key, *tokens]

    def _prune_traces(self, now: float) -> None:
        t = self.config.traces
        if removed := self.trace_writer.prune(keep_days=t.keep_days, max_mb=t.max_mb, now=now):
            log.info("pruned %d trace file(s)", removed)

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
            "memories": self.memory.kept_by,
        }

    def _autostart(self, app_ids: list[str]) -> set[str] | None:
        """The apps that start with the system (``apps.autostart``); None: all of them."""
        apps = self.config.apps
        if apps.autostart == "all":
            return None
        if apps.autostart == "recent":
            return {*self.store.recent_apps(apps.autostart_sessions), SYSTEM_AGENT}
        return set(apps.autostart)

    def _app_busy(self, app_id: str) -> bool:
        """An open window, a run, a background process or a waiting card: not idle."""
        return (
            self.instances.count(app_id) > 0
            or any(app_id in run.app.split(",") for run in self.runs.active())
            or bool(self.processes.list(app_id))
            or self.approvals.pending_count(app_id) > 0
        )

    def _app_name(self, app_id: str) -> str:
        record = self.launcher.get(app_id)
        return record.name_in(self.config.language) if record is not None else app_id

    def _app_names(self, app_id: str) -> dict[str, str]:
        record = self.launcher.get(app_id)
        return {loc: record.name_in(loc) if record else app_id for loc in LOCALES}

    def forget_app(self, app_id: str) -> None:
        """An app's folder was removed (DESIGN §14.6): its runs stop, its pending cards
        are withdrawn, its cache, grants and tool policy go; its audit rows stay."""
        for run in self.runs.active():
            if app_id in run.app.split(","):
                run.cancel.set()
        removed = {
            **self.runstore.forget_app(app_id),
            **self.store.forget_app(app_id),
            "memories": self.memory.forget_app(app_id),
        }
        self.grants.forget(app_id)
        self.quotas.forget(app_id)
        self.app_api.forget(app_id)
        log.info(
            "app %s removed: %s",
            app_id,
            ", ".join(f"{n} {what} row(s)" for what, n in removed.items()) or "nothing kept",
        )

    def _on_status(self, record: AppRecord) -> None:
        self.bus.emit(
            "app_status", {"app": record.id, "status": str(record.status), "error": record.error}
        )
        if record.status == AppStatus.STOPPED and self.launcher.get(record.id) is None:
            self.forget_app(record.id)  # its folder was removed (Launcher.rescan)
        if record.status in (AppStatus.FAILED, AppStatus.RESTARTING):
            # its open instances fail; a parent waiting on one of them learns why
            self.instances.fail(record.id, record.error or str(record.status))
