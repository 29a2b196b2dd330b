"""``triton-aios mcp``: the running desktop's MCP server over stdio (DESIGN §17).

MCP hosts such as Claude Desktop and goose start a server as a command and talk
to it on stdin/stdout. This command is that server, and a relay: it connects to
the running desktop's ``/mcp`` (streamable HTTP) with an MCP token
(``AIOS_MCP_TOKEN``, made in Settings → MCP server; never the launch token) and answers
each tools request with the desktop's answer, its progress notifications passed on.
So the desktop stays the one place that checks the token's scope, runs the call
under its approvals and audits it; this process holds no state of its own. Both
sides are the official SDK (a low-level ``Server`` on ``stdio_server``, a
``ClientSession`` on ``streamable_http_client``).

The desktop is found in ``<data_dir>/desktop.json`` (written at its start), or
given with ``--url``. It must be running when the host starts the command: if it
is not, or the token is refused, the command says so in one line on stderr and
exits 2 (a host shows the server as failed, with that line).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from aios.config import load_config
from aios.errors import AIOSError
from aios.names import ENV_MCP_TOKEN, MCP_PATH, MCP_SERVER_NAME

ENV_MCP_URL = "AIOS_MCP_URL"
DESKTOP_FILE = "desktop.json"
"""Where the running desktop writes its URL (``aios.system.DESKTOP_FILE``; not imported
from there: this command starts without loading the system)."""


class Unreachable(AIOSError):
    """The desktop cannot be found or reached, or it refused the token."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="triton-aios mcp",
        description="Serve the running desktop's MCP tools on stdin/stdout",
    )
    p.add_argument("--url", default=os.environ.get(ENV_MCP_URL), help="the desktop's /mcp URL")
    p.add_argument("--data-dir", type=Path, default=None, help="the desktop's data dir")
    p.add_argument("--config", type=Path, default=None, help="config file (default: config.json)")
    return p.parse_args(argv)


def desktop_url(args: argparse.Namespace) -> str:
    """``--url``, else the URL the running desktop wrote into its data dir."""
    if args.url:
        return str(args.url)
    overrides = {"data_dir": str(args.data_dir.resolve())} if args.data_dir else {}
    data_dir = load_config(args.config, overrides=overrides).data_path
    path = data_dir / DESKTOP_FILE
    try:
        url = json.loads(path.read_text(encoding="utf-8")).get("url")
    except (OSError, ValueError, AttributeError) as e:
        raise Unreachable(
            f"no running desktop found ({path}: {getattr(e, 'strerror', None) or e}); "
            "start triton-aios first, or pass --url"
        ) from e
    if not isinstance(url, str):
        raise Unreachable(f"{path} names no URL; start triton-aios again, or pass --url")
    return url.rstrip("/") + MCP_PATH


async def _check(http: httpx2.AsyncClient, url: str) -> None:
    """One plain request first, so a refused token is one clear line, not a stack."""
    try:
        r = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
            headers={"Accept": "application/json, text/event-stream"},
        )
    except httpx2.HTTPError as e:
        raise Unreachable(f"the desktop at {url} does not answer ({e}); is it running?") from e
    if r.status_code in (401, 403):
        try:
            why = r.json().get("error")
        except ValueError:
            why = r.text[:200]
        raise Unreachable(f"the desktop refused the token: {why}")


def relay_server(desktop: ClientSession) -> Server[Any]:
    """A stdio server whose every tools request is the desktop's."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await desktop.list_tools()

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        async def relay(progress: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(progress, total, message)

        try:
            return await desktop.call_tool(params.name, params.arguments, progress_callback=relay)
        except (MCPError, httpx2.HTTPError) as e:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"the desktop refused the call: {e}")],
                is_error=True,
            )

    return Server(
        MCP_SERVER_NAME,
        title="Triton AIOS",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(url: str, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with create_mcp_http_client(headers=headers) as http:
        await _check(http, url)
        async with (
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(
                read,
                write,
                client_info=types.Implementation(name="triton-aios mcp", version="1"),
            ) as desktop,
        ):
            await desktop.initialize()
            server = relay_server(desktop)
            async with stdio_server() as (stdin, stdout):
                await server.run(stdin, stdout, server.create_initialization_options())


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    token = os.environ.get(ENV_MCP_TOKEN, "").strip()
    if not token:
        print(
            f"triton-aios mcp: set {ENV_MCP_TOKEN} to a token made in Settings → MCP server",
            file=sys.stderr,
        )
        return 2
    try:
        url = desktop_url(args)
        anyio.run(serve, url, token)
    except AIOSError as e:
        print(f"triton-aios mcp: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    except Exception as e:  # noqa: BLE001 - the connection to the desktop ended: one line
        print(f"triton-aios mcp: the connection to the desktop ended: {e!r}", file=sys.stderr)
        return 1
    return 0
