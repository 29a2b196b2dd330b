"""The atomic toolbox (docs/protocol.md §5): ten tools, one module per family, one entry point.

:func:`invoke` is the only way tools run — from the executor's steps, from
an app's ``call_tool`` through the system, and from the SDK's standalone
mode — so validation, the sandbox, timeouts and the audit log apply the
same way everywhere. It never raises for a tool's failure: every outcome is
a :class:`~aios.protocol.ToolResult`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

from pydantic import ValidationError

from aios.errors import QuotaExceeded, StoreFull, ToolError, ToolRefused
from aios.names import MCP_TOOL_PREFIX
from aios.protocol import ATOMIC_TOOLS, ToolResult, describe_validation_error
from aios.tools import (  # noqa: F401  (register)
    cache,
    db,
    files,
    http,
    memory,
    notify,
    process,
    shell,
)
from aios.tools.base import ToolContext, ToolOutput, ToolSpec, registered_tools

__all__ = [
    "ATOMIC_TOOLS",
    "ToolContext",
    "ToolOutput",
    "ToolSpec",
    "audit_args",
    "invoke",
    "redacted",
    "tool_schemas",
    "tools",
]

log = logging.getLogger(__name__)

_TOOLS: dict[str, ToolSpec] = registered_tools()

AUDIT_ARGS_MAX = 4000
_SECRET = re.compile(r"(pass(word)?|secret|token|api[_-]?key|authorization|cookie)", re.I)


def tools() -> dict[str, ToolSpec]:
    return dict(_TOOLS)


def tool_schemas() -> list[dict[str, Any]]:
    """Function-calling schemas of the ten tools (for LLM planners)."""
    return [_TOOLS[name].json_schema() for name in ATOMIC_TOOLS]


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: ("***" if isinstance(k, str) and _SECRET.search(k) else _redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def redacted(value: Any) -> Any:
    """``value`` with the values of secret-named keys masked, as the audit log stores them
    (the traces use it too, aios/traces)."""
    return _redact(value)


def audit_args(args: Any) -> str:
    """Arguments as stored in the audit log: secrets redacted, size capped."""
    try:
        text = json.dumps(_redact(args), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(args)
    if len(text) > AUDIT_ARGS_MAX:
        text = text[:AUDIT_ARGS_MAX] + f"…(+{len(text) - AUDIT_ARGS_MAX} chars)"
    return text


def record(
    ctx: ToolContext,
    tool: str,
    args: Any,
    result: ToolResult,
    *,
    denied: bool = False,
    step_id: str | None = None,
) -> None:
    """Write one audit row; an audit failure is logged, never raised into the app."""
    if ctx.store is None:
        return
    from aios.tools.risk import (
        classify,  # the risk module parses commands with the shell tool's rules
    )

    status = "denied" if denied else result.status
    try:
        ctx.store.audit(
            app=ctx.app_id,
            tool=tool,
            args=audit_args(args),
            status=status,
            duration_ms=result.duration_ms,
            error=result.error,
            session_id=ctx.session_id,
            step_id=step_id,
            run_id=ctx.run_id,
            risk=classify(tool, args if isinstance(args, dict) else {}),
            decision=ctx.decisions.get(step_id or "") if result.code is None else result.code,
        )
    except StoreFull as e:  # one line, not a traceback per call, while the disk is full
        log.warning("audit write failed for %s/%s: %s", ctx.app_id, tool, e)
    except Exception:  # noqa: BLE001 - the audit must never break a tool call
        log.exception("audit write failed for %s/%s", ctx.app_id, tool)


def invoke(
    name: str,
    args: Any,
    ctx: ToolContext,
    *,
    step_id: str | None = None,
    timeout: float | None = None,
) -> ToolResult:
    """Run one atomic tool for ``ctx.app_id``; validate, sandbox, time, audit."""
    t0 = time.perf_counter()
    spec = _TOOLS.get(name)
    denied = False
    try:
        if not isinstance(args, dict):
            raise ToolRefused(f"{name}: arguments must be an object, got {type(args).__name__}")
        if name.startswith(MCP_TOOL_PREFIX):  # a tool of an MCP server (DESIGN §17)
            if ctx.mcp is None:
                raise ToolRefused(f"{name}: MCP tools run only inside the desktop")
            out = ctx.mcp(ctx, name, args, timeout)
            result = ToolResult(
                tool=name, status="ok", result=out.result, meta=out.meta, duration_ms=_ms(t0)
            )
            record(ctx, name, args, result, step_id=step_id)
            return result
        if spec is None:
            raise ToolRefused(f"unknown tool {name!r}; atomic tools are: {', '.join(ATOMIC_TOOLS)}")
        try:
            parsed = spec.args_model.model_validate(args)
        except ValidationError as e:
            raise ToolRefused(f"{name}: bad arguments: {describe_validation_error(e)}") from e
        call_ctx = ctx
        if timeout is not None:
            from dataclasses import replace

            call_ctx = replace(ctx, timeouts={**ctx.timeouts, name: ctx.timeout(name, timeout)})
        out = spec.func(call_ctx, parsed)
        result = ToolResult(
            tool=name, status="ok", result=out.result, meta=out.meta, duration_ms=_ms(t0)
        )
    except ToolError as e:
        denied = e.status == "denied"
        result = ToolResult(
            tool=name,
            status="error",
            result=e.result,
            error=e.error,
            meta=e.meta or None,
            duration_ms=_ms(t0),
        )
    except QuotaExceeded as e:  # the app reached a quota (aios/quotas.py): refused
        denied = True
        result = ToolResult(
            tool=name,
            status="error",
            error=f"{name}: {e}",
            meta={"quota": e.quota},
            duration_ms=_ms(t0),
        )
    except Exception as e:  # noqa: BLE001 - a tool bug must not crash the caller
        log.exception("tool %s crashed for app %s", name, ctx.app_id)
        result = ToolResult(
            tool=name,
            status="error",
            error=f"{name}: internal error: {type(e).__name__}: {e}",
            duration_ms=_ms(t0),
        )
    record(ctx, name, args, result, denied=denied, step_id=step_id)
    return result


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)
