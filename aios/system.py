"""The System: builds and owns every long-lived part, starts them in order,
and stops them so that no process is left behind.

    config → store → event bus → LLM → process table → launcher → controller
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import requests

from aios import os_sandbox
from aios.config import Config, apply_updates, save_settings
from aios.controller import Controller
from aios.events import EventBus
from aios.launch_token import launch_token
from aios.launcher import AppRecord, Launcher
from aios.llm import LLMClient
from aios.protocol import ATOMIC_TOOLS
from aios.pruner import Pruner
from aios.sandbox import SandboxPolicy
from aios.store import Store
from aios.tools.base import ToolContext
from aios.tools.process import ProcessTable
from aios.voice import Recognizer

log = logging.getLogger(__name__)


class System:
    def __init__(self, config: Config, *, port: int, token: str | None = None,
                 port_map_path: Path | None = None, new_token: bool = False):
        self.config = config
        self.port = port
        self.data_dir = config.data_path
        self.apps_dir = config.apps_path
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.token = token or launch_token(self.data_dir, new=new_token)
        self.store = Store(self.data_dir / "aios.db", pool_size=config.store.pool_size,
                           busy_timeout=config.store.busy_timeout)
        interrupted = self.store.interrupt_unfinished_tasks()
        if interrupted:
            log.info("%d task(s) left unfinished by the previous run marked interrupted",
                     interrupted)
        self.pruner = Pruner(self.store, lambda: self.config.retention)
        self.bus = EventBus()
        self.llm = LLMClient(config, self.store)
        self.processes = ProcessTable(max_per_app=config.tool_sandbox.max_background_processes)
        self.launcher = Launcher(
            self.apps_dir, self.data_dir, config, system_url=self.url,
            port_map_path=port_map_path or self.data_dir / "port_map.json",
            on_status=self._on_status, on_stop=self.processes.stop_app)
        self._contexts: dict[tuple[str, str], ToolContext] = {}
        self._custom: dict[tuple[str, str], list[str]] = {}
        self._lock = threading.Lock()
        self.controller = Controller(config=config, store=self.store, launcher=self.launcher,
                                     bus=self.bus, llm=self.llm,
                                     tool_context=self.tool_context,
                                     custom_tools=self.custom_tools)
        self.recognizer = Recognizer(config)
        self._stopped = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        if self.config.tool_sandbox.os_sandbox != "off":
            os_sandbox.detect()  # logs its one warning now, not at the first command
        self.pruner.start()
        self.launcher.start()

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
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
        """Apply settings from the settings window; ConfigError names the bad key."""
        new = apply_updates(self.config, updates)
        save_settings(self.data_dir, updates)
        self.config = new
        self.llm = LLMClient(new, self.store)
        self.controller.config = new
        self.controller.llm = self.llm
        self.recognizer.config = new

    # ------------------------------------------------------------- per app

    def tool_context(self, app_id: str, session_id: str | None = None) -> ToolContext:
        """The sandbox context of a running app (rebuilt when the app relaunches)."""
        record = self.launcher.get(app_id)
        if record is None or record.manifest is None or record.workdir is None:
            raise KeyError(app_id)
        key = (app_id, record.token)
        with self._lock:
            ctx = self._contexts.get(key)
            if ctx is None:
                ctx = self._build_context(record)
                self._contexts = {k: v for k, v in self._contexts.items() if k[0] != app_id}
                self._contexts[key] = ctx
        return ctx if session_id is None else replace(ctx, session_id=session_id)

    def _build_context(self, record: AppRecord) -> ToolContext:
        assert record.manifest is not None and record.workdir is not None
        policy = SandboxPolicy.build(self.config.tool_sandbox, record.workdir, record.manifest)
        return ToolContext(
            app_id=record.id, workdir=record.workdir.resolve(), policy=policy, store=self.store,
            timeouts={t: self.config.timeout_for(t) for t in ATOMIC_TOOLS},
            permissions=frozenset(record.manifest.permissions),
            forbidden_ports=self.forbidden_ports, emit=self._emit, processes=self.processes,
            app_url=self.launcher.url(record.id), app_token=record.token)

    def forbidden_ports(self) -> set[int]:
        return {self.port, *self.launcher.ports()}

    def custom_tools(self, app_id: str) -> list[str]:
        """Names of the app's ``@tool``s (its ``GET /tools``); [] for apps without one."""
        record = self.launcher.get(app_id)
        if record is None or record.status != "running":
            return []
        key = (app_id, record.token)
        if key not in self._custom:
            names: list[str] = []
            try:
                r = requests.get(self.launcher.url(app_id) + "/tools", timeout=2,
                                 headers={"X-AIOS-App-Token": record.token})
                if r.ok and isinstance(r.json(), list):
                    names = [t["name"] for t in r.json() if isinstance(t, dict) and "name" in t]
            except (requests.RequestException, ValueError):
                pass
            self._custom[key] = names
        return self._custom[key]

    def _emit(self, type_: str, payload: dict[str, Any]) -> None:
        self.bus.emit(type_, payload)

    def _on_status(self, record: AppRecord) -> None:
        self.bus.emit("app_status", {"app": record.id, "status": str(record.status),
                                     "error": record.error})

