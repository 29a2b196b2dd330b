"""A small MCP server written with the official SDK, for the client's tests (DESIGN §17).

``python toy.py`` serves stdio; ``python toy.py http PORT [TOKEN]`` serves streamable
HTTP on 127.0.0.1:PORT at ``/mcp`` (with TOKEN: only requests bearing it are answered).
Its tools: a read-only ``lookup`` (structured output), a destructive ``wipe``, a
plain ``note`` (no hint), ``picture`` (an image), ``slow`` (progress, then waits
until cancelled), ``big`` (a long text), ``peek`` (reads a path: what confinement
allows), ``dial`` (opens a TCP connection: what its network allows), ``crash`` (the
process exits mid-call), ``freeze`` (the whole server stops answering), ``grow``
(adds a tool and says the list changed).
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("toy")


class Found(BaseModel):
    word: str
    length: int


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup(word: str) -> Found:
    """Looks a word up (read-only)."""
    return Found(word=word, length=len(word))


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe(what: str) -> str:
    """Deletes something (destructive)."""
    return f"wiped {what}"


@server.tool()
def note(text: str) -> str:
    """Keeps a note (no hint)."""
    return f"noted {text}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def picture() -> Image:
    """A one-pixel picture."""
    return Image(data=PNG, format="png")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def big(n: int) -> str:
    """A long text of n characters."""
    return "x" * n


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def peek(path: str) -> str:
    """What reading path gives (the error when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "read: " + f.read(200)
    except OSError as e:
        return f"cannot read: {type(e).__name__}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def slow(ctx: Context) -> str:
    """Reports progress, then waits (until cancelled); writes a mark when cancelled."""
    await ctx.report_progress(1, 10, "started")
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        with open("cancelled.mark", "w") as f:
            f.write("cancelled")
        raise
    return "done"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def dial(host: str, port: int) -> str:
    """Connects to host:port over TCP and reads the first line (the error when it cannot)."""
    import socket

    try:
        with socket.create_connection((host, port), timeout=3) as s:
            return "connected: " + s.recv(100).decode("utf-8", "replace").strip()
    except OSError as e:
        return f"cannot connect: {type(e).__name__}: {e}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def route() -> str:
    """The default route and the address traffic to it would leave from ("no default
    route" without a network: then nothing outside can be reached)."""
    import socket

    with open("/proc/net/route") as f:
        rows = [line.split() for line in f.read().splitlines()[1:]]
    for row in rows:
        if len(row) > 2 and row[1] == "00000000":  # destination 0.0.0.0: the default
            gateway = socket.inet_ntoa(int(row[2], 16).to_bytes(4, "little"))
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((gateway, 9))  # picks the route and source; sends nothing
                return f"default route via {gateway} from {s.getsockname()[0]}"
    return "no default route"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def crash() -> str:
    """The process exits in the middle of the call."""
    sys.stderr.write("toy: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def freeze() -> str:
    """The whole server stops answering (its event loop blocks: no ping is answered)."""
    time.sleep(3600)
    return "never"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def grow(ctx: Context) -> str:
    """Adds the tool ``extra`` and tells the client the list changed."""

    def extra() -> str:
        """Added later."""
        return "extra"

    server.add_tool(extra, annotations=ToolAnnotations(readOnlyHint=True))
    await ctx.session.send_tool_list_changed()
    return "grown"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        port = int(sys.argv[2])
        token = sys.argv[3] if len(sys.argv) > 3 else ""
        if token:
            _serve_with_token(port, token)
        else:
            server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()


def _serve_with_token(port: int, token: str) -> None:
    import uvicorn
    from starlette.responses import JSONResponse

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await JSONResponse({"error": "bad token"}, status_code=401)(scope, receive, send)
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
