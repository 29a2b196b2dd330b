"""The desktop as an MCP server (DESIGN §17 "Server"): Claude Desktop, goose or an IDE
use the desktop through ``/mcp`` (streamable HTTP) or ``triton-aios mcp`` (stdio,
aios/mcp/server_stdio.py, which relays to ``/mcp``).

Tools, per token scope (aios/mcp/tokens.py):

- ``instruction``: the text goes to the controller as if the user typed it;
- ``app.<id>``: one per running app (or idle one: it starts on use), its manifest's
  description; the text goes to that app, not routed;
- ``memory_search``: the user's memories, only while ``mcp_server.memory_search`` is on.

Every ``instruction`` and ``app.<id>`` call is a run like any other: the same
approvals, the card on the desktop, the turn in the conversation panel marked "via
<client>" (the name the user gave the token), in one conversation per token. A call
whose run waits for a card waits too, sending a progress notification every
``mcp_server.progress_interval`` s; a denied card ends the call with a tool error
naming what was denied. Each call is one audit row, ``app`` = ``mcp:<client>``.

Why the SDK's own transport in a WSGI server: the desktop is Flask on Werkzeug
(flask-sock needs it), the SDK's streamable-HTTP transport is ASGI
(:class:`StreamableHTTPSessionManager`). Rather than re-implement the transport, the
session manager runs on one asyncio loop in its own thread and a2wsgi presents it to
Werkzeug as a WSGI app, which the ``/mcp`` route (aios/web/mcp_api.py) hands the
request to once the guards (aios/web/guards.py: host, origin, MCP token) let it
through. Responses stream (SSE), so progress notifications reach the client while a
run waits. No JSON-RPC is written here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from a2wsgi import ASGIMiddleware
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager

from aios.apphost.supervisor import AppStatus
from aios.errors import AIOSError, Conflict, NotFound
from aios.mcp.tokens import McpToken, McpTokens
from aios.names import MCP_SERVER_NAME
from aios.tools import audit_args

if TYPE_CHECKING:
    from aios.system import System

log = logging.getLogger(__name__)

START_WAIT = 10.0
"""Seconds the desktop waits for the MCP loop to start (it starts in milliseconds)."""
STOP_WAIT = 5.0
MEMORY_HITS = 5
MEMORY_HITS_MAX = 20
TEXT_MAX_CHARS = 4000
_BEARER = "bearer "

INSTRUCTION_TOOL = "instruction"
MEMORY_TOOL = "memory_search"
APP_PREFIX = "app."
_CALLABLE = (AppStatus.RUNNING, AppStatus.IDLE)
"""An idle app (apps on demand) starts on its first call like on any use."""

_TEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {
            "type": "string",
            "description": "What to do, in the user's words (Chinese or English).",
            "maxLength": TEXT_MAX_CHARS,
        }
    },
    "required": ["text"],
}
_MEMORY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to look for."},
        "k": {"type": "integer", "minimum": 1, "maximum": MEMORY_HITS_MAX},
    },
    "required": ["query"],
}


def _version() -> str:
    try:
        return metadata.version("triton-aios")
    except metadata.PackageNotFoundError:
        return "0"


class CallRefused(AIOSError):
    """A call this client may not make, or with arguments that cannot be used."""


@dataclass
class Caller:
    """Who makes a call: the token, and the client's own name if it sent one."""

    token: McpToken
    client_info: str | None

    @property
    def client(self) -> str:
        return self.token.name


def bearer_of(headers: Any) -> str | None:
    """The ``Authorization: Bearer`` value of a header mapping, or None."""
    auth = headers.get("authorization") if headers is not None else None
    if not isinstance(auth, str) or not auth.lower().startswith(_BEARER):
        return None
    return auth[len(_BEARER) :].strip()


class DesktopMcp:
    """The MCP server of one System: its tools, its tokens, its ``/mcp`` transport."""

    def __init__(self, system: System):
        self.system = system
        self.tokens: McpTokens = system.mcp_tokens
        self.server: Server[Any] = Server(
            MCP_SERVER_NAME,
            version=_version(),
            title="Triton AIOS",
            instructions=(
                "Triton AIOS is the user's desktop. `instruction` asks it as the user would; "
                "`app.<id>` asks one app. Risky steps wait for the user's approval on the "
                "desktop: a call may take a while, and a denied step is an error."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self._http: _HttpHost | None = None
        self._http_lock = threading.Lock()

    # ------------------------------------------------------------ transport

    def wsgi(self) -> Callable[..., Any]:
        """The streamable-HTTP transport as a WSGI app (its loop started on first use)."""
        with self._http_lock:
            if self._http is None:
                cfg = self.system.config.mcp_server
                self._http = _HttpHost(self.server, cfg.session_idle_timeout)
                self._http.start()
            return self._http.wsgi

    def close(self) -> None:
        with self._http_lock:
            http, self._http = self._http, None
        if http is not None:
            http.stop()

    # ------------------------------------------------------------ tools

    def tools_for(self, token: McpToken) -> list[types.Tool]:
        """The tools ``token`` may call now (apps running, or idle until used)."""
        out: list[types.Tool] = []
        if token.allows(INSTRUCTION_TOOL):
            out.append(
                types.Tool(
                    name=INSTRUCTION_TOOL,
                    title="Ask Triton AIOS",
                    description=(
                        "Give the desktop an instruction as if the user typed it; it is routed "
                        "to the right app(s). Returns the reply's message and views."
                    ),
                    input_schema=_TEXT_SCHEMA,
                )
            )
        lang = self.system.config.language
        for rec in self.system.launcher.apps():
            name = APP_PREFIX + rec.id
            if rec.status not in _CALLABLE or rec.manifest is None or not token.allows(name):
                continue
            out.append(
                types.Tool(
                    name=name,
                    title=rec.name_in(lang),
                    description=rec.manifest.description_in(lang) or rec.name_in(lang),
                    input_schema=_TEXT_SCHEMA,
                )
            )
        if self.system.config.mcp_server.memory_search and token.allows(MEMORY_TOOL):
            out.append(
                types.Tool(
                    name=MEMORY_TOOL,
                    title="Search the user's memories",
                    description="What the desktop remembers about the user, best matches first.",
                    input_schema=_MEMORY_SCHEMA,
                    annotations=types.ToolAnnotations(read_only_hint=True),
                )
            )
        return out

    def _caller(self, ctx: ServerRequestContext[Any]) -> Caller:
        # Every call is checked again (revocation takes effect on the next call), by
        # the token on the request that carries it.
        token = self.tokens.verify(bearer_of(getattr(ctx.request, "headers", None)))
        if token is None:
            raise CallRefused("this MCP token is missing, invalid or revoked")
        params = ctx.session.client_params
        info = params.client_info.name if params is not None and params.client_info else None
        return Caller(token, info)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            caller = self._caller(ctx)
        except CallRefused:
            return types.ListToolsResult(tools=[])
        return types.ListToolsResult(tools=self.tools_for(caller.token))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        started = time.monotonic()
        try:
            caller = self._caller(ctx)
        except CallRefused as e:
            return _error(str(e))
        args = params.arguments or {}
        outcome: dict[str, Any] = {}
        try:
            result = await self._dispatch(ctx, caller, params.name, args, outcome)
        except (CallRefused, AIOSError) as e:
            result = _error(str(e))
            outcome.setdefault("status", "denied" if isinstance(e, CallRefused) else "error")
        self._audit(caller, params.name, args, result, outcome, started)
        return result

    async def _dispatch(
        self,
        ctx: ServerRequestContext[Any],
        caller: Caller,
        name: str,
        args: dict[str, Any],
        outcome: dict[str, Any],
    ) -> types.CallToolResult:
        if name not in (INSTRUCTION_TOOL, MEMORY_TOOL) and not name.startswith(APP_PREFIX):
            raise CallRefused(f"no tool {name!r}: list the tools")
        if not caller.token.allows(name):
            raise CallRefused(
                f"the token {caller.client!r} may not call {name!r}: "
                "change its scopes in Settings → MCP server"
            )
        if name == MEMORY_TOOL:
            return await anyio.to_thread.run_sync(self._memory_search, args)
        text = _text(args)
        app = None if name == INSTRUCTION_TOOL else name[len(APP_PREFIX) :]
        if app is not None:
            rec = self.system.launcher.get(app)
            if rec is None or rec.status not in _CALLABLE:
                raise CallRefused(f"no running app {app!r}: list the tools again")
        return await self._run(ctx, caller, app, text, outcome)

    # ------------------------------------------------------------ a call as a run

    async def _run(
        self,
        ctx: ServerRequestContext[Any],
        caller: Caller,
        app: str | None,
        text: str,
        outcome: dict[str, Any],
    ) -> types.CallToolResult:
        sid = await anyio.to_thread.run_sync(self._session, caller.token)
        ctl = self.system.controller

        def start() -> dict[str, Any]:
            if app is None:
                return ctl.instruction(text, sid, via=caller.client)
            return ctl.instruction_to(app, text, sid, via=caller.client)

        reply = await anyio.to_thread.run_sync(start)
        run_id = reply.get("run_id")
        outcome.update(session_id=reply.get("session_id"), run_id=run_id)
        if reply.get("state") == "waiting" and isinstance(run_id, str):
            return await self._waited(ctx, run_id, reply, outcome)
        outcome["status"] = "ok"
        return _reply_result(reply)

    async def _waited(
        self,
        ctx: ServerRequestContext[Any],
        run_id: str,
        reply: dict[str, Any],
        outcome: dict[str, Any],
    ) -> types.CallToolResult:
        """Wait for a run that waits for the user, telling the client it waits."""
        cfg = self.system.config.mcp_server
        run = self.system.runs.get(run_id)
        deadline = time.monotonic() + cfg.call_wait
        beats = 0
        try:
            while run is not None and not run.wait_finished(0):
                if time.monotonic() > deadline:
                    raise AIOSError(
                        f"run {run_id} still waits after {cfg.call_wait:g} s: "
                        "answer its card on the desktop"
                    )
                beats += 1
                await ctx.session.report_progress(beats, None, _waiting_message(run.pending))
                await anyio.to_thread.run_sync(run.wait_finished, cfg.progress_interval)
        except anyio.get_cancelled_exc_class():
            # the client gave up (MCP cancellation): so does the run, and its card goes
            log.info("MCP call of run %s cancelled by the client", run_id)
            with contextlib.suppress(NotFound, Conflict):  # it ended meanwhile
                self.system.runs.cancel(run_id)
            raise
        return await anyio.to_thread.run_sync(self._final, run_id, reply, outcome)

    def _final(
        self, run_id: str, reply: dict[str, Any], outcome: dict[str, Any]
    ) -> types.CallToolResult:
        row = self.system.runstore.run(run_id) or {}
        denied = [
            ia
            for ia in self.system.runstore.interactions(run_id=run_id)
            if isinstance(ia.get("answer"), dict) and ia["answer"].get("decision") == "deny"
        ]
        state = str(row.get("state") or "done")
        if denied:
            outcome["status"] = "denied"
            what = "; ".join(_card(ia) for ia in denied)
            return _error(f"denied on the desktop by the user: {what}", run_id=run_id)
        if state in ("cancelled", "failed", "interrupted"):
            outcome["status"] = "error"
            return _error(f"run {run_id} ended {state}", run_id=run_id)
        response = row.get("response") if isinstance(row.get("response"), dict) else {}
        final = {
            **reply,
            "state": state,
            "results": [{"app": row.get("app"), "response": response}],
            "message": (response or {}).get("message") or reply.get("message"),
        }
        final.pop("pending", None)
        outcome["status"] = "ok"
        return _reply_result(final)

    def _session(self, token: McpToken) -> str:
        """The conversation of this token's calls (its own, made at its first call)."""
        store = self.system.store
        if token.session_id and store.session_exists(token.session_id):
            return token.session_id
        sid = store.ensure_session(None)
        self.tokens.set_session(token.id, sid)
        return sid

    def _memory_search(self, args: dict[str, Any]) -> types.CallToolResult:
        if not self.system.config.mcp_server.memory_search:
            raise CallRefused(
                "memory_search is off: the user can allow it in Settings → MCP server"
            )
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise CallRefused("argument 'query' (what to look for) is required")
        k = args.get("k", MEMORY_HITS)
        if not isinstance(k, int) or not 1 <= k <= MEMORY_HITS_MAX:
            raise CallRefused(f"argument 'k' must be a whole number from 1 to {MEMORY_HITS_MAX}")
        hits = self.system.memory.search("mcp", query.strip(), k, user=True)
        found = [
            {"text": h.get("text"), "tags": h.get("tags"), "score": h.get("score")} for h in hits
        ]
        lines = "\n".join(f"- {h['text']}" for h in found) or "(nothing found)"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=lines)],
            structured_content={"memories": found},
        )

    def _audit(
        self,
        caller: Caller,
        tool: str,
        args: dict[str, Any],
        result: types.CallToolResult,
        outcome: dict[str, Any],
        started: float,
    ) -> None:
        error = None
        if result.is_error:
            error = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
        try:
            self.system.store.audit(
                app=f"mcp:{caller.client}",
                tool=tool,
                args=audit_args(
                    {"client": caller.client, "client_info": caller.client_info, **args}
                ),
                status=_status(outcome, result),
                duration_ms=round((time.monotonic() - started) * 1000, 1),
                error=error,
                session_id=outcome.get("session_id"),
                run_id=outcome.get("run_id"),
            )
        except AIOSError as e:  # a full disk: the call's answer still goes back
            log.warning("MCP call %s by %r not audited: %s", tool, caller.client, e)


# ---------------------------------------------------------------- results


def _status(outcome: dict[str, Any], result: types.CallToolResult) -> str:
    """The audit's status of a call: ``denied`` (by the user or the scope), else ok / error."""
    status = str(outcome.get("status") or "ok")
    return "error" if status == "ok" and result.is_error else status


def _text(args: dict[str, Any]) -> str:
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise CallRefused("argument 'text' (the instruction) is required")
    if len(text) > TEXT_MAX_CHARS:
        raise CallRefused(f"argument 'text' is longer than {TEXT_MAX_CHARS} characters")
    return text.strip()


def _error(message: str, **structured: Any) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structured_content={"error": message, **structured} if structured else None,
        is_error=True,
    )


def _views(reply: dict[str, Any]) -> list[dict[str, Any]]:
    views = []
    for r in reply.get("results") or []:
        resp = r.get("response") if isinstance(r, dict) else None
        if isinstance(resp, dict):
            views.append(
                {
                    "app": r.get("app"),
                    "status": resp.get("status"),
                    "view_type": resp.get("view_type"),
                    "data": resp.get("data"),
                    "message": resp.get("message"),
                }
            )
    return views


def _reply_result(reply: dict[str, Any]) -> types.CallToolResult:
    views = _views(reply)
    message = str(reply.get("message") or "")
    structured = {
        "message": message,
        "views": views,
        "run_id": reply.get("run_id"),
        "session_id": reply.get("session_id"),
        "state": reply.get("state", "done"),
    }
    failed = bool(views) and all(v.get("status") == "error" for v in views)
    # a text view's content is the answer a person reads; the rest is in the structure
    shown = [
        v["data"]["content"]
        for v in views
        if isinstance(v.get("data"), dict) and isinstance(v["data"].get("content"), str)
    ]
    text = "\n\n".join([message, *shown]).strip() or json.dumps(views, ensure_ascii=False)
    text = text[:TEXT_MAX_CHARS]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=failed,
    )


def _card(ia: dict[str, Any]) -> str:
    """A card in a few words: its app and the tools of its steps (or its question)."""
    raw = ia.get("steps")
    steps: list[Any] = raw if isinstance(raw, list) else []
    tools = ", ".join(str(s.get("tool")) for s in steps if isinstance(s, dict) and s.get("tool"))
    what = tools or str(ia.get("prompt") or ia.get("kind") or "")
    return f"{ia.get('app') or '?'} ({what})" if what else str(ia.get("app") or "?")


def _waiting_message(pending: list[dict[str, Any]]) -> str:
    shown = "; ".join(_card(p) for p in pending)
    return "waiting for the user's approval on the desktop" + (f": {shown}" if shown else "")


# ---------------------------------------------------------------- the HTTP host


def _closed_quietly(app: Any) -> Callable[..., Any]:
    """``app`` as an ASGI callable whose coroutine, when it is closed outside the loop (a
    request a client gave up on, collected by the garbage collector in another thread),
    ends quietly: the transport's ``finally`` reads anyio's clock, which outside a loop
    raises ``NoEventLoopError`` ("Exception ignored in <coroutine …>"). There is nothing
    left to answer then; in the loop every error goes through as before."""

    async def call(scope: Any, receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except anyio.NoEventLoopError:
            log.debug("an MCP request was closed outside its loop (its client had gone)")

    return call


class _HttpHost:
    """The SDK's streamable-HTTP session manager on its own asyncio loop, as WSGI."""

    def __init__(self, server: Server[Any], idle_timeout: float):
        self.manager = StreamableHTTPSessionManager(app=server, session_idle_timeout=idle_timeout)
        self.loop = asyncio.new_event_loop()
        self.wsgi = ASGIMiddleware(
            _closed_quietly(StreamableHTTPASGIApp(self.manager)), loop=self.loop
        )
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="aios-mcp", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(START_WAIT):
            raise AIOSError("the MCP server did not start")

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._serve())
        finally:
            # what the transport left (sse-starlette's shutdown watcher, open streams)
            # ends here, not as "Task was destroyed but it is pending" at exit
            left = asyncio.all_tasks(self.loop)
            for task in left:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()

    def stop(self) -> None:
        stop = self._stop
        if stop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(stop.set)
        self._thread.join(STOP_WAIT)
