"""Standalone mode: tools run in-process so an app can be developed and tested alone.

Without ``AIOS_SYSTEM_URL`` the agent builds the same :class:`ToolContext`
the system would: the workdir is ``AIOS_WORKDIR`` when set (as the launcher
sets it; a test points it at a temporary folder), else ``workspace/`` (or the
manifest's ``workdir``) next to the app's script; the sandbox policy is the
default global one narrowed by the ``manifest.json`` beside the script; the
audit log and cache live in ``AIOS_DEV_DB`` when set, else beside an
``AIOS_WORKDIR`` (``<its parent>/.aios/<its name>.dev.db``), else in
``<app folder>/.aios/dev.db`` (always outside the workdir, so a tool cannot
read or rewrite them); background processes are stopped at exit. Every call
goes through :func:`aios.tools.invoke`, so the sandbox rules are the system's
own. :mod:`aios_sdk.testing` builds one with an explicit workdir and database.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aios.config import Config
from aios.errors import (
    AIOSError,
    LLMUnavailable,
    ManifestError,
    ProtocolError,
    ToolFailed,
    ToolRefused,
)
from aios.names import ENV_DEV_DB, ENV_WORKDIR
from aios.protocol import ATOMIC_TOOLS, Manifest, ToolResult, parse_manifest
from aios.store import Store
from aios.tools.sandbox import SandboxPolicy

log = logging.getLogger(__name__)

DEV_DB = Path(".aios") / "dev.db"
"""The audit log and cache of an app run standalone, relative to its folder."""
WORKDIR_ENV = ENV_WORKDIR
"""The app's workdir; the launcher sets it, and standalone mode honours it too."""
DEV_DB_ENV = ENV_DEV_DB
"""Where standalone mode keeps its audit log and cache (a file path), when set."""
DEV_DB_SUFFIX = ".dev.db"


def standalone_paths(app_dir: Path, manifest: Manifest | None) -> tuple[Path, Path]:
    """``(workdir, database)`` of an app run standalone, from the environment or defaults."""
    given = os.environ.get(WORKDIR_ENV, "").strip()
    if given:
        workdir = Path(given).expanduser().resolve()
        db = workdir.parent / DEV_DB.parent / f"{workdir.name}{DEV_DB_SUFFIX}"
    else:
        workdir = app_dir / (manifest.workdir if manifest else "workspace")
        db = app_dir / DEV_DB
    db_given = os.environ.get(DEV_DB_ENV, "").strip()
    return workdir, Path(db_given).expanduser().resolve() if db_given else db


def read_manifest(app_dir: Path) -> Manifest | None:
    """The manifest beside the app's script, None when there is none.

    Raises ManifestError when it exists but is unusable: standalone mode
    applies its sandbox lists, so silently ignoring it would widen the rules.
    """
    path = app_dir / "manifest.json"
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return parse_manifest(raw)
    except (OSError, ValueError, ProtocolError) as e:
        raise ManifestError(
            f"{path} is unusable: {e}; fix it (standalone mode applies its sandbox rules)"
        ) from e


class StandaloneRuntime:
    """The in-process tool context of one app run outside the system."""

    def __init__(
        self,
        app_dir: Path,
        app_id: str,
        *,
        own_ports: Callable[[], set[int]] = lambda: set(),
        config: Config | None = None,
        workdir: Path | None = None,
        db_path: Path | None = None,
        emit: Callable[[str, dict[str, Any]], None] | None = None,
    ):
        """``workdir`` / ``db_path`` override the environment and the defaults
        (:func:`standalone_paths`); ``emit`` receives ``notify`` and other events
        (default: the log)."""
        self.app_dir = app_dir
        self.app_id = app_id
        self._own_ports = own_ports
        self._config = config or Config()
        self._workdir = workdir
        self._db_path = db_path
        self._emit = emit or _log_event
        self._lock = threading.Lock()
        self._ctx: Any = None
        self._error: str | None = None

    # ------------------------------------------------------------ context

    def context(self) -> Any:
        """The ToolContext, built on first use (imports the toolbox only when needed)."""
        if self._ctx is None:
            with self._lock:
                if self._error is not None:
                    raise ToolFailed(self._error)
                if self._ctx is None:
                    try:
                        self._ctx = self._build()
                    except ManifestError as e:
                        self._error = str(e)
                        raise ToolFailed(self._error) from e
        return self._ctx

    def _build(self) -> Any:
        from aios.tools import ToolContext
        from aios.tools.processes import ProcessTable

        manifest = read_manifest(self.app_dir)
        workdir, db_path = standalone_paths(self.app_dir, manifest)
        workdir = self._workdir or workdir
        db_path = self._db_path or db_path
        workdir.mkdir(parents=True, exist_ok=True)
        sandbox = self._config.tool_sandbox
        policy = SandboxPolicy.build(sandbox, workdir, manifest, self._config.approvals.block_list)
        store = Store(db_path)
        processes = ProcessTable(max_per_app=sandbox.max_background_processes)
        atexit.register(self.close)
        log.info(
            "standalone mode: tools run in-process in %s (audit in %s)",
            policy.workdir,
            db_path,
        )
        return ToolContext(
            app_id=self.app_id,
            workdir=policy.workdir,
            policy=policy,
            store=store,
            timeouts={t: self._config.timeout_for(t) for t in ATOMIC_TOOLS},
            permissions=frozenset(manifest.permissions if manifest else ()),
            forbidden_ports=self._own_ports,
            emit=self._emit,
            processes=processes,
        )

    def close(self) -> None:
        ctx, self._ctx = self._ctx, None
        if ctx is None:
            return
        try:
            ctx.processes.shutdown()
        finally:
            ctx.store.close()

    # -------------------------------------------------------------- calls

    def call_tool(self, name: str, args: dict[str, Any], session_id: str | None) -> Any:
        from aios.tools import invoke

        result = invoke(name, args, self.context().for_session(session_id))
        return _unwrap(result)

    def llm(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        session_id: str | None,
        **kw: Any,
    ) -> dict[str, Any]:
        raise LLMUnavailable(
            "no LLM configured: this app runs standalone (AIOS_SYSTEM_URL is "
            "not set) and self.llm needs the system, which keeps the LLM key; "
            "start the app from the AIOS desktop with an LLM key configured"
        )

    def push(self, payload: dict[str, Any], session_id: str | None) -> bool:
        log.info(
            "push (standalone, no desktop to show it): %s",
            json.dumps(payload, ensure_ascii=False, default=str)[:500],
        )
        return True

    def ui(self, ops: list[dict[str, Any]], session_id: str | None) -> dict[str, Any]:
        raise ToolFailed(
            "UI operations need the running desktop: this app runs standalone "
            "(AIOS_SYSTEM_URL is not set); start it from the AIOS desktop"
        )

    def processes(self) -> list[dict[str, Any]]:
        from aios.host.hostprocs import host_processes  # standalone: no system to ask

        return host_processes()

    def disks(self) -> list[dict[str, Any]]:
        from aios.host.hostprocs import host_disks

        return host_disks()

    def end_process(self, pid: int, session_id: str | None) -> dict[str, Any]:
        from aios.host.hostprocs import end_host_process

        try:
            return end_host_process(pid)
        except AIOSError as e:
            raise ToolRefused(f"end process {pid}: {e}") from e


def _unwrap(result: ToolResult) -> Any:
    if result.status == "ok":
        return result.result
    raise ToolFailed(
        result.error or f"{result.tool} failed", result=result.result, meta=result.meta
    )


def _log_event(kind: str, payload: dict[str, Any]) -> None:
    log.info("%s (standalone): %s", kind, json.dumps(payload, ensure_ascii=False, default=str))
