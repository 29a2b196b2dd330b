"""Runs an app's ``steps`` plan (docs/protocol.md §4; DESIGN §5).

Steps run in order inside the app's sandbox. Before each step the
``{{step_N.…}}`` templates in its arguments are resolved against the results
of the steps that already ran; then the step runs either as one of the ten
atomic tools (through :func:`aios.tools.invoke`, which validates, sandboxes,
times and audits it) or as a custom ``@tool`` of the *same* app (``POST
{ctx.app_url}/tools/<name>``). There is deliberately no way to address
another app's tools: the only URL the executor ever calls is ``ctx.app_url``.

Every step, including one whose templates could not be resolved and one the
app refused, leaves an audit row. A failed step stops the plan unless it says
``"on_error": "continue"``; steps after a stop are not run and are absent
from the returned ``tool_results``. Tool failures never raise; an invalid
plan does (:class:`~aios.errors.ProtocolError`), because rejecting a plan is
the controller's decision, not a step result.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

import requests

from aios import tools as toolbox
from aios.errors import QuotaExceeded
from aios.names import APP_TOKEN_HEADER, MCP_TOOL_PREFIX, SESSION_HEADER, SYSTEM_PRIMITIVES
from aios.protocol import ATOMIC_TOOLS, Step, ToolResult, app_secret, parse_steps
from aios.tools import ToolContext

log = logging.getLogger(__name__)


# Only references to earlier steps are templates; any other ``{{…}}`` (an HTML
# or mustache template an app writes to a file) is left exactly as it is.
_TEMPLATE = re.compile(r"\{\{\s*(step_\w+)((?:\.[^\s{}.]+)*)\s*\}\}")
# Anything that looks like a step reference but does not parse is an error, not text.
_LOOSE = re.compile(r"\{\{\s*step_[^{}]*\}\}")
_RESULT_FIELDS = ("tool", "status", "result", "error", "meta", "duration_ms")
_ERROR_BODY_CHARS = 300

StepCallback = Callable[[str, ToolResult], None]


class TemplateError(Exception):
    """A ``{{step_N…}}`` reference that cannot be resolved (internal to this module)."""


class Executor:
    """Runs steps plans. Holds no per-plan state, so one instance serves every app."""

    def __init__(self, mount: Callable[[requests.Session], None] | None = None) -> None:
        # requests.Session is not documented as thread-safe; plans for
        # different apps run concurrently, so each thread keeps its own.
        self._local = threading.local()
        self._mount = mount
        """Prepares each session to reach confined apps (``Launcher.mount``)."""

    # ------------------------------------------------------------------ run

    def run(
        self,
        steps: list[Step] | list[dict[str, Any]],
        ctx: ToolContext,
        *,
        on_step: StepCallback | None = None,
        before_step: Callable[[str, str], None] | None = None,
        presets: dict[str, ToolResult] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Run ``steps`` in order for ``ctx.app_id``; return ``tool_results``.

        Raises ProtocolError when the plan itself is invalid (unknown fields,
        duplicate step ids…); every per-step failure is a result instead.
        ``on_step(key, result)`` is called after each step (progress pushes);
        an exception in it is logged and does not stop the plan.
        ``before_step(key, tool)`` is called as a step starts. ``presets`` are
        the results of steps that must not run (denied or expired by the user,
        DESIGN §12); once ``ctx.cancel`` is set, no further step runs and each
        gets ``code: "cancelled"``.
        """
        plan = parse_steps(steps)
        results: dict[str, dict[str, Any]] = {}
        pending = {step.key for step in plan}
        presets = presets or {}
        for step in plan:
            key = step.key
            pending.discard(key)
            cancelled = ctx.cancel is not None and ctx.cancel.is_set()
            if cancelled or key in presets:
                # never started: audited here (a step that ran audits itself)
                result = presets.get(key) or stopped(step.tool, "cancelled")
                toolbox.record(ctx, step.tool, step.args, result, step_id=key, denied=True)
            else:
                if before_step is not None:
                    before_step(key, step.tool)
                result = self._run_step(step, ctx, results, pending)
                if ctx.cancel is not None and ctx.cancel.is_set() and result.status != "ok":
                    result = result.model_copy(update={"code": "cancelled"})
            results[key] = as_entry(result)
            if on_step is not None:
                try:
                    on_step(key, result)
                except Exception:  # noqa: BLE001 - progress reporting must not break a plan
                    log.exception("on_step callback failed for %s/%s", ctx.app_id, key)
            if result.status != "ok" and step.on_error == "stop":
                break
        if ctx.cancel is not None and ctx.cancel.is_set():
            for step in plan:  # the app learns that the rest of its plan will not run
                if step.key not in results:
                    result = stopped(step.tool, "cancelled")
                    toolbox.record(ctx, step.tool, step.args, result, step_id=step.key, denied=True)
                    results[step.key] = as_entry(result)
        return results

    def _run_step(
        self, step: Step, ctx: ToolContext, done: dict[str, dict[str, Any]], pending: set[str]
    ) -> ToolResult:
        t0 = time.perf_counter()
        try:
            args = resolve_templates(step.args, done, pending)
        except TemplateError as e:
            result = ToolResult(tool=step.tool, status="error", error=str(e), duration_ms=_ms(t0))
            toolbox.record(ctx, step.tool, step.args, result, step_id=step.key)
            return result
        if step.tool in ATOMIC_TOOLS or step.tool.startswith(MCP_TOOL_PREFIX):
            if ctx.recheck is not None:
                # the card is the execution: run only what was approved (DESIGN §14.2)
                refused = ctx.recheck(step.key, step.tool, args)
                if refused is not None:
                    toolbox.record(ctx, step.tool, args, refused, step_id=step.key, denied=True)
                    return refused
            return toolbox.invoke(step.tool, args, ctx, step_id=step.key, timeout=step.timeout)
        if step.tool == ASK_TOOL:
            return self._ask(step, args, ctx)
        if step.tool == LAUNCH_TOOL:
            return self._launch(step, args, ctx)
        return self._custom_tool(step, args, ctx)

    def _launch(self, step: Step, args: Any, ctx: ToolContext) -> ToolResult:
        """The system primitive ``launch`` (DESIGN §13): another app, for a result."""
        if ctx.launch is None:
            result = ToolResult(
                tool=LAUNCH_TOOL, status="error", error="launch needs the desktop, in a run"
            )
        elif not isinstance(args, dict):
            result = ToolResult(
                tool=LAUNCH_TOOL, status="error", error="launch: args must be an object"
            )
        else:
            try:
                result = ctx.launch(step.key, args)
            except QuotaExceeded as e:  # an app over its instances quota (aios/quotas.py)
                result = ToolResult(
                    tool=LAUNCH_TOOL, status="error", error=f"launch: {e}", meta={"quota": e.quota}
                )
        toolbox.record(ctx, LAUNCH_TOOL, args, result, step_id=step.key)
        return result

    def _ask(self, step: Step, args: Any, ctx: ToolContext) -> ToolResult:
        """The system primitive ``ask`` (DESIGN §13): the user answers a question card."""
        if ctx.ask is None:
            result = ToolResult(
                tool=ASK_TOOL,
                status="error",
                error="ask needs the desktop: it is answered by the user, in a run",
            )
        elif not isinstance(args, dict):
            result = ToolResult(tool=ASK_TOOL, status="error", error="ask: args must be an object")
        else:
            result = ctx.ask(step.key, args)
        toolbox.record(ctx, ASK_TOOL, args, result, step_id=step.key)
        return result

    # -------------------------------------------------------- custom tools

    def _http(self) -> requests.Session:
        http = getattr(self._local, "http", None)
        if http is None:
            http = requests.Session()
            # Loopback only: a proxy from the environment must never see app traffic.
            http.trust_env = False
            if self._mount is not None:
                self._mount(http)  # confined apps are reached over their sockets
            self._local.http = http
        return http

    def _custom_tool(self, step: Step, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = step.tool
        t0 = time.perf_counter()
        denied = False
        result: Any = None
        meta: dict[str, Any] | None = None
        error: str | None = None
        if ctx.app_url is None:
            denied = True
            error = (
                f"unknown tool {name!r}: not an atomic tool, and app {ctx.app_id!r} has no "
                "address for custom tools here (atomic tools: "
                f"{', '.join(ATOMIC_TOOLS)})"
            )
        else:
            timeout = ctx.timeout(name, step.timeout)
            headers = {
                APP_TOKEN_HEADER: ctx.app_token or "",
                **app_secret.headers(ctx.app_secret or ""),
            }
            if ctx.session_id:
                headers[SESSION_HEADER] = ctx.session_id
            url = f"{ctx.app_url.rstrip('/')}/tools/{name}"
            try:
                resp = self._http().post(url, json=args, headers=headers, timeout=timeout)
                denied, result, meta, error = _read_tool_reply(resp, name, ctx.app_id)
            except requests.Timeout:
                error = f"custom tool {name!r} of app {ctx.app_id!r} timed out after {timeout:g}s"
            except requests.RequestException as e:
                error = (
                    f"custom tool {name!r}: app {ctx.app_id!r} is not reachable at "
                    f"{ctx.app_url}: {type(e).__name__}"
                )
        out = ToolResult(
            tool=name,
            status="error" if error else "ok",
            result=result,
            error=error,
            meta=meta,
            duration_ms=_ms(t0),
        )
        toolbox.record(ctx, name, args, out, denied=denied, step_id=step.key)
        return out


def _read_tool_reply(
    resp: requests.Response, name: str, app_id: str
) -> tuple[bool, Any, dict[str, Any] | None, str | None]:
    """An app's ``/tools/<name>`` answer as (denied, result, meta, error)."""
    if resp.status_code == 404:
        return (
            True,
            None,
            None,
            (f"unknown tool {name!r} (not an atomic tool and not a custom tool of app {app_id!r})"),
        )
    if resp.status_code in (401, 403):
        return (
            True,
            None,
            None,
            (
                f"custom tool {name!r}: app {app_id!r} refused the call "
                f"(HTTP {resp.status_code}: app token mismatch)"
            ),
        )
    try:
        body = resp.json()
    except ValueError:
        body = None
    if not isinstance(body, dict) or body.get("status") not in ("ok", "error"):
        snippet = resp.text[:_ERROR_BODY_CHARS]
        return (
            False,
            None,
            None,
            (
                f"custom tool {name!r} of app {app_id!r} gave an invalid "
                f"reply (HTTP {resp.status_code}): {snippet!r}; expected "
                '{"status": "ok"|"error", "result"|"error": ...}'
            ),
        )
    meta = body.get("meta") if isinstance(body.get("meta"), dict) else None
    if body["status"] == "ok":
        return False, body.get("result"), meta, None
    error = body.get("error") or f"custom tool {name!r} failed (HTTP {resp.status_code})"
    return False, body.get("result"), meta, str(error)


# ---------------------------------------------------------------- templates


ASK_TOOL, LAUNCH_TOOL = SYSTEM_PRIMITIVES
STOPPED_MESSAGES = {
    "denied": "denied by the user",
    "expired": "the request for approval expired",
    "cancelled": "cancelled by the user",
    "never": "refused: your policy for this app never allows this tool",
}


def stopped(tool: str, code: Literal["denied", "expired", "cancelled", "never"]) -> ToolResult:
    """The result of a step the user's decision kept from running (DESIGN §12)."""
    return ToolResult(
        tool=tool,
        status="error",
        error=STOPPED_MESSAGES[code],
        code="denied" if code == "never" else code,
    )


def as_entry(result: ToolResult) -> dict[str, Any]:
    """A ToolResult in the ``tool_results`` shape: ``result`` always, error/meta when set."""
    entry: dict[str, Any] = {"tool": result.tool, "status": result.status, "result": result.result}
    if result.error is not None:
        entry["error"] = result.error
    if result.code is not None:
        entry["code"] = result.code
    if result.meta is not None:
        entry["meta"] = result.meta
    entry["duration_ms"] = result.duration_ms
    return entry


def resolve_templates(
    value: Any, done: dict[str, dict[str, Any]], pending: set[str] | frozenset[str] = frozenset()
) -> Any:
    """Replace ``{{step_N.path}}`` references in strings, recursively through dicts/lists.

    A string that is exactly one template becomes the referenced value as is;
    a template inside a longer string is interpolated as text (strings as
    they are, anything else as JSON). Substituted values are not scanned
    again, so a tool's output can never inject further references.
    """
    if isinstance(value, str):
        if "{{" not in value:
            return value
        for m in _LOOSE.finditer(value):
            if not _TEMPLATE.fullmatch(m.group(0)):
                raise TemplateError(
                    f"malformed template {m.group(0)}: write {{{{step_N.result}}}} "
                    "or a dotted path such as {{step_N.result.items.0.url}}"
                )
        whole = _TEMPLATE.fullmatch(value)
        if whole:
            return _lookup(whole, done, pending)
        return _TEMPLATE.sub(lambda m: _as_text(_lookup(m, done, pending)), value)
    if isinstance(value, dict):
        return {k: resolve_templates(v, done, pending) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_templates(v, done, pending) for v in value]
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _lookup(
    match: re.Match[str], done: dict[str, dict[str, Any]], pending: set[str] | frozenset[str]
) -> Any:
    key, path = match.group(1), match.group(2)
    ref = "{{" + key + path + "}}"
    if key not in done:
        if key in pending:
            raise TemplateError(
                f"unresolved template {ref}: {key} has not run yet "
                "(a step can only use the results of earlier steps)"
            )
        raise TemplateError(
            f"unresolved template {ref}: there is no {key} in this plan "
            f"(steps run so far: {', '.join(done) or 'none'})"
        )
    parts = [p for p in path.split(".") if p]
    value: Any = done[key]
    where = key
    for i, part in enumerate(parts):
        if i == 0 and part in _RESULT_FIELDS:
            # error/meta are omitted from a result when empty; they still exist.
            value = value.get(part)
        elif isinstance(value, dict):
            if part not in value:
                raise TemplateError(
                    f"unresolved template {ref}: {where} has no key {part!r} (keys: {_keys(value)})"
                )
            value = value[part]
        elif isinstance(value, list):
            try:
                index = int(part)
                value = value[index]
            except ValueError:
                raise TemplateError(
                    f"unresolved template {ref}: {where} is a list; {part!r} is not an index"
                ) from None
            except IndexError:
                raise TemplateError(
                    f"unresolved template {ref}: {where} has no index {index} "
                    f"(list of length {len(value)})"
                ) from None
        else:
            raise TemplateError(
                f"unresolved template {ref}: {where} is "
                f"{type(value).__name__ if value is not None else 'null'}, "
                f"it has no field {part!r}"
            )
        where = f"{where}.{part}"
    return value


def _keys(d: dict[str, Any]) -> str:
    names = [str(k) for k in list(d)[:20]]
    return ", ".join(names) + (", …" if len(d) > 20 else "") if names else "none"


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)
