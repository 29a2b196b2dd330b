"""The desktop as an MCP client (DESIGN §17): the servers of ``mcp.servers``, kept up.

:class:`McpClients` owns one event loop in a thread of its own and one task
per enabled server. A task connects (a stdio server is started confined,
:mod:`aios.mcp.confine`; an HTTP one is reached over streamable HTTP with its
headers and token), initializes, lists the tools with their annotations, and
then watches the connection: a ``tools/list_changed`` notification lists them
again, a ping every ``mcp.ping_interval`` seconds must be answered within
``mcp.ping_timeout``. A server that fails to start (or to list its tools
within ``mcp.start_timeout``), crashes, hangs or writes garbage is ``failed``
with the reason and its stderr tail, one line in the log, and is started
again after a backoff (``mcp.backoff_initial`` doubling up to
``mcp.backoff_max``). Nothing here blocks the desktop: :meth:`start` only
schedules the tasks, and a server is only ever waited for by a call of one
of its own tools.

:meth:`call` is how the toolbox runs ``mcp.<server>.<tool>``
(:func:`aios.tools.invoke`): the app must be granted the tool
(:func:`aios.mcp.tools.granted`), the call is bounded by the server's
``timeout``, cancelled on the server (``notifications/cancelled``) when the
run is cancelled, and its progress notifications are the step's ``progress``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from aios.errors import ToolFailed, ToolRefused
from aios.mcp import confine, tools as mcptools
from aios.tools.base import Risk, ToolOutput

if TYPE_CHECKING:
    from mcp import ClientSession, types

    from aios.config import Config, McpServerConfig
    from aios.tools.base import ToolContext

log = logging.getLogger(__name__)

STDERR_TAIL = 4000
"""Bytes of a stdio server's stderr shown with its status."""
STABLE_AFTER = 30.0
"""Seconds a server must stay up before its backoff starts again from the beginning."""
CANCEL_POLL = 0.05
"""Seconds between two looks of a waiting call at its run's cancel flag."""
SHUTDOWN_WAIT = 5.0
PROBLEM_POLL = 0.05
"""Seconds between two looks of a request in flight at its connection's health."""


class _OneLine(logging.Filter):
    """The SDK logs a server's garbage or a broken pipe with a traceback; the desktop's log
    gets one line (the server's status says the rest, DESIGN §17)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            record.msg = f"{record.getMessage()}: {describe(record.exc_info[1])}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


for _name in (
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.session",
    "mcp.shared.jsonrpc_dispatcher",
    "mcp.shared.session",
):
    logging.getLogger(_name).addFilter(_OneLine())


class ServerFailed(Exception):
    """Why a connected server is given up (its reason, as the status shows it)."""


@dataclass
class ToolInfo:
    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    title: str | None = None
    output_schema: dict[str, Any] | None = None

    def public(self, server: str, risk: str) -> dict[str, Any]:
        return {
            "name": mcptools.tool_name(server, self.name),
            "tool": self.name,
            "title": self.title,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "annotations": self.annotations,
            "risk": risk,
        }


@dataclass
class Server:
    """One configured server's state (read by the API; written by its task)."""

    name: str
    config: McpServerConfig
    status: str = "stopped"
    """``stopped`` (disabled) | ``starting`` | ``ready`` | ``failed``."""
    error: str | None = None
    tools: dict[str, ToolInfo] = field(default_factory=dict)
    session: ClientSession | None = None
    restarts: int = 0
    since: float = 0.0
    retry_at: float | None = None
    stderr_path: Path | None = None
    task: asyncio.Task[None] | None = None
    wake: asyncio.Event | None = None
    """Set to look at the connection now (tools changed, a call saw it close)."""
    relist: bool = False
    last_failure: dict[str, Any] | None = None
    """The last failure's reason, stderr tail and time (kept while it starts again)."""
    problem: str | None = None
    """Set by a notification handler or a call: the connection is broken (garbage, closed)."""

    def stderr_tail(self) -> str:
        if self.stderr_path is None:
            return ""
        try:
            with self.stderr_path.open("rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - STDERR_TAIL))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


class McpClients:
    """Every configured MCP server, connected in the background (one per system)."""

    def __init__(
        self,
        data_dir: Path,
        config: Callable[[], Config],
        emit: Callable[[str, dict[str, Any]], object] | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._config = config
        self._emit = emit
        self._servers: dict[str, Server] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------- lifetime

    def start(self) -> None:
        """Start the loop and schedule every enabled server; returns at once."""
        if self._loop is not None:
            return
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="mcp-clients", daemon=True)
        self._thread.start()
        ready.wait()
        self._loop = loop
        self.reconfigure(self._config())

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return

        async def cancel_all() -> None:
            tasks = [s.task for s in self._servers.values() if s.task is not None]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(cancel_all(), loop).result(SHUTDOWN_WAIT)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(SHUTDOWN_WAIT)
            if not self._thread.is_alive():
                loop.close()

    def reconfigure(self, config: Config) -> None:
        """Servers added, changed, enabled or disabled take effect now; an unchanged one
        keeps its connection."""
        loop = self._loop
        if loop is None:
            return
        wanted = config.mcp.active()
        with self._lock:
            for name in list(self._servers):
                old = self._servers[name]
                new = wanted.get(name)
                if new is None or new != old.config:
                    self._stop(old)
                    if new is None:
                        del self._servers[name]
                        mcptools.set_risks(name, {})
            for name, server in wanted.items():
                state = self._servers.get(name)
                if state is None or state.config != server:
                    state = Server(name, server)
                    self._servers[name] = state
                    if server.enabled:
                        state.status = "starting"
                        loop.call_soon_threadsafe(self._launch, state)
                self._publish_risks(state)

    def _launch(self, state: Server) -> None:
        state.task = asyncio.get_running_loop().create_task(self._serve(state))

    def _stop(self, state: Server) -> None:
        loop, task = self._loop, state.task
        state.status = "stopped"
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)

    # ----------------------------------------------------------------- views

    def status(self) -> list[dict[str, Any]]:
        """Each server: its config (token masked), status, reason, stderr tail, tools."""
        with self._lock:
            servers = list(self._servers.values())
        out = []
        for s in servers:
            out.append(
                {
                    "name": s.name,
                    "transport": "stdio" if s.config.command else "http",
                    "enabled": s.config.enabled,
                    "status": s.status,
                    "error": s.error,
                    "restarts": s.restarts,
                    "retry_in": (
                        round(max(0.0, s.retry_at - time.time()), 1) if s.retry_at else None
                    ),
                    "stderr": s.stderr_tail(),
                    "last_failure": s.last_failure,
                    "apps": list(s.config.apps),
                    "tools": [
                        t.public(s.name, self._risk_of(s, t)) for t in list(s.tools.values())
                    ],
                }
            )
        return out

    def tools_for(self, app_id: str) -> dict[str, dict[str, Any]]:
        """The tools offered to ``app_id`` now: ``mcp.<server>.<tool>`` -> its description,
        input schema, annotations and risk (only servers that are ready)."""
        with self._lock:
            servers = [s for s in self._servers.values() if s.status == "ready"]
        out: dict[str, dict[str, Any]] = {}
        for s in servers:
            for t in list(s.tools.values()):
                if mcptools.granted(s.config, t.name, app_id):
                    info = t.public(s.name, self._risk_of(s, t))
                    out[info.pop("name")] = info
        return out

    def _risk_of(self, state: Server, tool: ToolInfo) -> Risk:
        own = state.config.tools.get(tool.name)
        return mcptools.risk_from(tool.annotations, own.risk if own is not None else None)

    def _publish_risks(self, state: Server) -> None:
        mcptools.set_risks(
            state.name, {t.name: self._risk_of(state, t) for t in state.tools.values()}
        )

    # ----------------------------------------------------------- a server

    async def _serve(self, state: Server) -> None:
        """Connect, watch, and after a failure start again with backoff (until cancelled)."""
        settings = self._config().mcp
        backoff = settings.backoff_initial
        while True:
            started = time.monotonic()
            state.status, state.error, state.retry_at = "starting", None, None
            self._changed(state)
            try:
                await self._connected(state)
                reason = "the connection ended"
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - any failure of a server is its status
                reason = describe(e)
            finally:
                state.session = None
            if time.monotonic() - started > STABLE_AFTER:
                backoff = settings.backoff_initial
            state.status, state.error, state.tools = "failed", reason, {}
            state.last_failure = {
                "reason": reason,
                "stderr": state.stderr_tail(),
                "at": time.time(),
            }
            self._publish_risks(state)
            state.restarts += 1
            state.retry_at = time.time() + backoff
            log.warning("MCP server %s failed: %s (again in %gs)", state.name, reason, backoff)
            self._changed(state)
            await asyncio.sleep(backoff)
            backoff = min(max(backoff * 2, 0.1), settings.backoff_max)

    async def _connected(self, state: Server) -> None:
        from mcp import ClientSession, types  # the SDK loads here, off the desktop's start

        settings = self._config().mcp
        state.wake, state.problem, state.relist = asyncio.Event(), None, False
        async with contextlib.AsyncExitStack() as stack:
            read, write = await self._transport(state, stack)

            async def on_message(message: Any) -> None:
                if isinstance(message, ValidationError):
                    state.problem = "answered garbage: a line that is not JSON-RPC"
                elif isinstance(message, Exception):
                    state.problem = f"answered garbage: {describe(message)}"
                elif isinstance(message, types.ToolListChangedNotification):
                    state.relist = True
                else:
                    return
                assert state.wake is not None
                state.wake.set()

            session = await stack.enter_async_context(
                ClientSession(read, write, message_handler=on_message)
            )
            await self._bounded(
                state,
                self._list(state, session, True),
                settings.start_timeout,
                f"no tool list within {settings.start_timeout:g}s (mcp.start_timeout)",
            )
            state.session, state.status, state.since = session, "ready", time.time()
            state.retry_at = None
            self._changed(state)
            await self._watch(state, session)

    async def _transport(self, state: Server, stack: contextlib.AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        cfg = state.config
        if cfg.command:
            params = confine.parameters(
                state.name, cfg, self._data_dir, self._config().apps.confinement
            )
            logs = self._data_dir / "mcp" / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            state.stderr_path = logs / f"{state.name}.stderr.log"
            errlog = stack.enter_context(state.stderr_path.open("w", encoding="utf-8"))
            return await stack.enter_async_context(stdio_client(params, errlog=errlog))
        headers = dict(cfg.headers)
        if cfg.token:
            headers["Authorization"] = f"Bearer {cfg.token}"
        http = await stack.enter_async_context(
            create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
        )
        return await stack.enter_async_context(streamable_http_client(cfg.url, http_client=http))

    async def _list(self, state: Server, session: ClientSession, first: bool) -> None:
        from mcp import types

        if first:
            await session.initialize()
        found: dict[str, ToolInfo] = {}
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            for tool in page.tools:
                found[tool.name] = _info(tool)
            cursor = page.next_cursor
            if not cursor:
                break
        state.tools = found
        self._publish_risks(state)

    async def _watch(self, state: Server, session: ClientSession) -> None:
        from mcp.shared.exceptions import MCPError

        assert state.wake is not None
        while True:
            settings = self._config().mcp
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.wake.wait(), settings.ping_interval)
            state.wake.clear()
            if state.problem is not None:
                raise ServerFailed(state.problem)
            hung = f"did not answer within {settings.ping_timeout:g}s (hung)"
            try:
                if state.relist:
                    state.relist = False
                    await self._bounded(
                        state, self._list(state, session, False), settings.ping_timeout, hung
                    )
                    self._changed(state)
                else:
                    await self._bounded(state, session.send_ping(), settings.ping_timeout, hung)
            except MCPError as e:
                raise ServerFailed(describe(e)) from None

    async def _bounded(
        self, state: Server, work: Coroutine[Any, Any, Any], timeout: float, late: str
    ) -> None:
        """Await ``work`` for at most ``timeout`` s (ServerFailed ``late`` after that), and
        no longer than the connection is sound (ServerFailed with the problem)."""
        task = asyncio.ensure_future(work)
        deadline = time.monotonic() + timeout
        try:
            while not task.done():
                left = deadline - time.monotonic()
                if state.problem is not None:
                    raise ServerFailed(state.problem)
                if left <= 0:
                    raise ServerFailed(late)
                await asyncio.wait({task}, timeout=min(left, PROBLEM_POLL))
        finally:
            task.cancel()
        if state.problem is not None:
            raise ServerFailed(state.problem)
        task.result()

    def _changed(self, state: Server) -> None:
        if self._emit is None:
            return
        try:
            self._emit(
                "mcp_status", {"server": state.name, "status": state.status, "error": state.error}
            )
        except Exception:  # noqa: BLE001 - telling the desktop must never stop a server
            log.exception("mcp_status event failed")

    # ------------------------------------------------------------- calling

    def call(
        self, ctx: ToolContext, name: str, args: dict[str, Any], timeout: float | None
    ) -> ToolOutput:
        """Run ``mcp.<server>.<tool>`` for ``ctx.app_id`` (blocking); ToolRefused when the
        app is not granted it or it is not offered now, ToolFailed when it fails."""
        parts = mcptools.split_name(name)
        if parts is None:
            raise ToolRefused(f"{name!r} is not an MCP tool (mcp.<server>.<tool>)")
        server, tool = parts
        with self._lock:
            state = self._servers.get(server)
        if state is None:
            raise ToolRefused(f"{name}: there is no MCP server {server!r} (Settings → MCP)")
        if not mcptools.granted(state.config, tool, ctx.app_id):
            raise ToolRefused(
                f"{name}: not granted to {ctx.app_id} "
                "(Settings → MCP: grant the server or the tool)"
            )
        session, loop = state.session, self._loop
        if state.status != "ready" or session is None or loop is None:
            why = f": {state.error}" if state.error else ""
            raise ToolFailed(f"{name}: MCP server {server} is {state.status}{why}")
        if tool not in state.tools:
            raise ToolRefused(f"{name}: server {server} lists no tool {tool!r}")
        limit = min(timeout, state.config.timeout) if timeout else state.config.timeout
        future = asyncio.run_coroutine_threadsafe(
            self._call(state, session, tool, args, limit, ctx.progress), loop
        )
        result = self._wait(future, ctx, name)
        meta: dict[str, Any] = {"server": server}
        return mcptools.output(ctx, name, result, self._config().mcp.result_max_chars, meta)

    def _wait(self, future: concurrent.futures.Future[Any], ctx: ToolContext, name: str) -> Any:
        while True:
            try:
                return future.result(CANCEL_POLL)
            except concurrent.futures.TimeoutError:
                if ctx.cancel is not None and ctx.cancel.is_set():
                    future.cancel()  # the task is cancelled: the SDK tells the server
                    raise ToolFailed(f"{name}: cancelled by the user") from None

    async def _call(
        self,
        state: Server,
        session: ClientSession,
        tool: str,
        args: dict[str, Any],
        limit: float,
        progress: Callable[[dict[str, Any]], None] | None,
    ) -> dict[str, Any]:
        from mcp import types
        from mcp.shared.exceptions import MCPError

        name = mcptools.tool_name(state.name, tool)

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            if progress is not None:
                progress({"progress": done, "total": total, "message": message})

        try:
            result = await asyncio.wait_for(
                session.call_tool(tool, args, progress_callback=_Progress(on_progress)), limit
            )
        except TimeoutError:
            raise ToolFailed(f"{name} timed out after {limit:g}s") from None
        except MCPError as e:
            if e.error.code == types.CONNECTION_CLOSED and state.wake is not None:
                state.problem = "the connection closed (the server exited)"
                state.wake.set()
            raise ToolFailed(f"{name}: {describe(e)}") from None
        except Exception as e:  # noqa: BLE001 - garbage from a server fails the call, not us
            raise ToolFailed(f"{name}: {describe(e)}") from None
        if not isinstance(result, types.CallToolResult):
            raise ToolFailed(f"{name}: the server answered something other than a tool result")
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)


class _Progress:
    """An async callback as the SDK's ``ProgressFnT`` protocol types it."""

    def __init__(self, fn: Callable[[float, float | None, str | None], Awaitable[None]]) -> None:
        self._fn = fn

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        await self._fn(progress, total, message)


def _info(tool: types.Tool) -> ToolInfo:
    notes = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    )
    return ToolInfo(
        name=tool.name,
        title=tool.title,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {}),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        annotations=notes,
    )


def describe(e: BaseException) -> str:
    """One line for an error (an exception group: its first leaf)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    if isinstance(e, ServerFailed):
        return str(e)
    from mcp.shared.exceptions import MCPError

    if isinstance(e, MCPError):
        return f"MCP error {e.error.code}: {e.error.message}"
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300]}" if text else type(e).__name__
