"""An MCP server's tools as the desktop's tools (DESIGN §17): names, risk, results.

A tool ``t`` of the server ``s`` is the plan step tool ``mcp.s.t``. Its risk
class comes from the annotations the server lists with it — ``readOnlyHint``
→ ``low``, ``destructiveHint`` → ``high``, anything else → ``medium`` — unless
the user set one for that tool (``mcp.servers.<s>.tools.<t>.risk``); a tool
nobody listed (its server is down) is ``high``. The approval decision, the
audit and the taint treat it like any tool from there on
(:func:`aios.tools.risk.classify` asks :func:`aios.tools.base.mcp_risk`).

A result is what the run gets: the tool's ``structuredContent`` when it has
one, else its text. Images and embedded resources are saved into the app's
workdir (under ``.mcp/``) and named in the result; a result longer than
``mcp.result_max_chars`` is cut there and the whole of it saved as a file the
app can read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aios.errors import ToolFailed
from aios.host import safe_open
from aios.names import MCP_TOOL_PREFIX
from aios.tools.base import Risk, ToolOutput, set_mcp_risks

if TYPE_CHECKING:
    from aios.config import McpServerConfig
    from aios.tools.base import ToolContext

OUT_DIR = ".mcp"
"""The folder of an app's workdir where MCP images, resources and long results go."""
_MIME_EXT = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/svg+xml": ".svg",
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/html": ".html",
    "application/json": ".json",
    "application/pdf": ".pdf",
    "audio/wav": ".wav",
    "audio/mpeg": ".mp3",
}
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def tool_name(server: str, tool: str) -> str:
    return f"{MCP_TOOL_PREFIX}{server}.{tool}"


def split_name(name: str) -> tuple[str, str] | None:
    """``mcp.<server>.<tool>`` -> (server, tool); None for any other tool."""
    if not name.startswith(MCP_TOOL_PREFIX):
        return None
    server, _, tool = name[len(MCP_TOOL_PREFIX) :].partition(".")
    return (server, tool) if server and tool else None


def is_mcp(name: str) -> bool:
    return name.startswith(MCP_TOOL_PREFIX)


def risk_from(annotations: dict[str, Any] | None, override: Risk | None = None) -> Risk:
    """THE rule (DESIGN §17): the user's class, else read-only → low, destructive → high,
    else medium. A destructive hint wins over a read-only one (a server that says both)."""
    if override is not None:
        return override
    notes = annotations or {}
    if notes.get("destructiveHint") is True:
        return "high"
    if notes.get("readOnlyHint") is True:
        return "low"
    return "medium"


def set_risks(server: str, risks: dict[str, Risk]) -> None:
    """The classes of ``server``'s tools as now listed (replacing what it listed before)."""
    set_mcp_risks(tool_name(server, ""), {tool_name(server, t): r for t, r in risks.items()})


def granted(server: McpServerConfig, tool: str, app_id: str) -> bool:
    """Whether ``app_id`` may use ``tool`` of ``server`` (per server, narrowed or widened
    per tool; a disabled server or tool is granted to nobody)."""
    if not server.enabled:
        return False
    own = server.tools.get(tool)
    if own is not None and not own.enabled:
        return False
    apps = own.apps if own is not None and own.apps is not None else server.apps
    return app_id in apps


# ------------------------------------------------------------------ results


def output(
    ctx: ToolContext, name: str, result: Any, max_chars: int, meta: dict[str, Any]
) -> ToolOutput:
    """A ``CallToolResult`` (as a dict) as the run's result; ToolFailed for ``isError``."""
    content = result.get("content") or []
    texts: list[str] = []
    saved: list[dict[str, Any]] = []
    for i, block in enumerate(content if isinstance(content, list) else []):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            saved.append(_save_blob(ctx, name, i, block.get("data"), block.get("mimeType")))
        elif kind == "resource":
            saved.append(_save_resource(ctx, name, i, block.get("resource") or {}))
        elif kind == "resource_link":
            saved.append({"link": block.get("uri"), "name": block.get("name")})
    if saved:
        meta["files"] = saved
    if result.get("isError"):
        raise ToolFailed(f"{name}: {' '.join(texts)[:2000] or 'the tool reported an error'}")
    structured = result.get("structuredContent")
    value: Any = structured if structured is not None else "\n".join(texts)
    value = _capped(ctx, name, value, max_chars, meta)
    if structured is None and saved:  # an image, a resource: the run learns where it is
        value = {"text": value, "files": saved}
    return ToolOutput(value, meta)


def _capped(ctx: ToolContext, name: str, value: Any, max_chars: int, meta: dict[str, Any]) -> Any:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= max_chars:
        return value
    path = _write(
        ctx, name, "result", text.encode("utf-8"), ".json" if value is not text else ".txt"
    )
    meta["truncated"] = {"chars": len(text), "kept": max_chars, "file": path}
    return text[:max_chars] + f"…(+{len(text) - max_chars} chars; the whole result is in {path})"


def _save_blob(ctx: ToolContext, name: str, i: int, data: Any, mime: Any) -> dict[str, Any]:
    try:
        raw = base64.b64decode(str(data or ""), validate=True)
    except (binascii.Error, ValueError):
        return {"error": f"content {i}: not base64 data", "mime": mime}
    ext = _MIME_EXT.get(str(mime), ".bin")
    return {"path": _write(ctx, name, f"content{i}", raw, ext), "mime": mime, "bytes": len(raw)}


def _save_resource(ctx: ToolContext, name: str, i: int, res: dict[str, Any]) -> dict[str, Any]:
    mime = res.get("mimeType")
    if "blob" in res:
        out = _save_blob(ctx, name, i, res.get("blob"), mime)
    else:
        raw = str(res.get("text", "")).encode("utf-8")
        ext = _MIME_EXT.get(str(mime), ".txt")
        out = {"path": _write(ctx, name, f"content{i}", raw, ext), "mime": mime, "bytes": len(raw)}
    out["uri"] = res.get("uri")
    return out


def _write(ctx: ToolContext, name: str, part: str, data: bytes, ext: str) -> str:
    """Save ``data`` under the workdir's ``.mcp/`` (within the app's quota); the path
    relative to the workdir, as the app's file tools take it."""
    ctx.check_workspace(len(data))
    digest = hashlib.sha256(data).hexdigest()[:12]
    rel = Path(OUT_DIR) / f"{_SAFE.sub('_', name)}-{part}-{digest}{ext}"
    # the workdir is the app's: its links are never followed out of it (DESIGN §14.1)
    root = safe_open.open_root(ctx.workdir)
    try:
        dfd, final = safe_open.open_parent(root, str(rel), create=True)
        try:
            fd, tmp = safe_open.create_temp(dfd, final, ".part")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                safe_open.replace(dfd, tmp, final)
            except OSError:
                safe_open.unlink_quiet(dfd, tmp)  # never a half-written file left
                raise
        finally:
            os.close(dfd)
    except OSError as e:
        raise ToolFailed(f"cannot save {rel} in the workdir: {e.strerror or e}") from None
    finally:
        os.close(root)
    ctx.wrote(len(data))
    return str(rel)
