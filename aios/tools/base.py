"""What every atomic tool receives and returns.

A tool is a plain function ``(ctx: ToolContext, args: ArgsModel) -> ToolOutput``
registered with :func:`atomic_tool`. Its arguments are a pydantic model, so
they are declared once and checked on every call (unknown or mistyped
arguments are refused with the field named). A tool signals failure by
raising :class:`~aios.errors.ToolRefused` (a sandbox rule said no) or
:class:`~aios.errors.ToolFailed` (it ran and failed); anything else it
raises is a bug, which the registry still turns into an error result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from aios.protocol import ToolResult
    from aios.quotas import Quotas
    from aios.store import Store
    from aios.tools.processes import ProcessTable
    from aios.tools.sandbox import SandboxPolicy


class MemoryPort(Protocol):
    """What the memory tools reach of the memory (DESIGN §15), bound to one app by the
    system (aios/memory/service.py); the tools check the permissions before calling it."""

    def store(self, app_id: str, text: str, tags: list[str], *, user: bool) -> dict[str, Any]:
        """Keep ``text``: in the app's own scope (active), or proposed to the user's."""
        ...

    def search(self, app_id: str, query: str, k: int, *, user: bool) -> list[dict[str, Any]]:
        """The app's own memories matching ``query`` (and the user's with ``user``)."""
        ...

    def kept_by(self, app_id: str) -> int:
        """Memories the app keeps or proposed and that wait (its ``memories`` quota)."""
        ...


class ToolArgs(BaseModel):
    """Base for tool argument models: unknown arguments are an error."""

    model_config = ConfigDict(extra="forbid")


class ToolOutput(NamedTuple):
    result: Any
    meta: dict[str, Any] | None = None


@dataclass
class ToolContext:
    """Everything a tool may know about the app calling it. One per app (per launch)."""

    app_id: str
    workdir: Path
    policy: SandboxPolicy
    store: Store | None = None
    timeouts: dict[str, float] = field(default_factory=dict)
    session_id: str | None = None
    permissions: frozenset[str] = frozenset()
    forbidden_ports: Callable[[], set[int]] = field(default=lambda: set())
    """Loopback ports no app may call: the system's own and every app's."""
    emit: Callable[[str, dict[str, Any]], None] | None = None
    """Send an event to the desktop (``notify``); None outside the system."""
    app_name: str = ""
    """The app's name as the desktop shows it (a notification says who sent it)."""
    app_names: dict[str, str] = field(default_factory=dict)
    """:attr:`app_name` per UI language (the desktop titles a toast in its own)."""
    notify_allowed: Callable[[], bool] | None = None
    """False once the app exceeded its notification rate (``apps.notify_burst``)."""
    processes: ProcessTable | None = None
    quotas: Quotas | None = None
    """The app's quotas (DESIGN §14.6): workspace bytes, cache; None outside the system."""
    app_url: str | None = None
    """``http://127.0.0.1:PORT`` of the app itself, for its custom ``@tool``s."""
    app_token: str | None = None
    """The app's own token, sent as ``aios.names.APP_TOKEN_HEADER`` on calls to its
    custom tools."""
    app_secret: str | None = field(default=None, repr=False)
    """The app's launch secret, shown on calls to its custom tools
    (``aios.protocol.app_secret``)."""

    run_id: str | None = None
    """The run this call belongs to (audit rows and events carry it, DESIGN §12)."""
    cancel: threading.Event | None = field(default=None, compare=False)
    """Set when the user stops the run: a command in flight is killed."""
    ask: Callable[[str, dict[str, Any]], ToolResult] | None = field(default=None, compare=False)
    launch: Callable[[str, dict[str, Any]], ToolResult] | None = field(default=None, compare=False)
    """Runs a plan's ``launch`` step (step id, arguments): another app as a child."""
    """Answers a plan's ``ask`` step (step id, arguments) through the user, in a run."""
    progress: Callable[[dict[str, Any]], None] | None = field(default=None, compare=False)
    """Reports how far a long step got (a command's output tail, bytes saved)."""
    decisions: dict[str, str] = field(default_factory=dict, compare=False)
    """Step id -> how it was allowed (``policy`` | ``user``), for the audit (DESIGN §12)."""
    recheck: Callable[[str, str, dict[str, Any]], ToolResult | None] | None = field(
        default=None, compare=False
    )
    """Right before a plan's step runs (step id, tool, arguments as resolved): None when it
    is what was approved, else the result of a step that must not run (DESIGN §14.2)."""
    memory: MemoryPort | None = field(default=None, compare=False)
    """The memory the memory tools use; None outside the system."""
    mcp: Callable[[ToolContext, str, dict[str, Any], float | None], ToolOutput] | None = field(
        default=None, compare=False
    )
    """Runs ``mcp.<server>.<tool>`` (:meth:`aios.mcp.client.McpClients.call`); None outside
    the system."""
    destinations: frozenset[str] | None = None
    """The hosts granted to the app (DESIGN §14.5): a redirect may lead only to one of
    them or to the request's own destination. None (``auto`` mode): not checked."""

    def timeout(self, tool: str, requested: float | None = None) -> float:
        limit = self.timeouts.get(tool, 30.0)
        return min(limit, requested) if requested else limit

    def check_workspace(self, adding: int = 0) -> int | None:
        """QuotaExceeded when the workdir is (or with ``adding`` bytes would be) over the
        app's ``workspace_bytes``; else the bytes left (None: no quota here)."""
        if self.quotas is None:
            return None
        return self.quotas.check_workspace(self.app_id, self.workdir, adding)

    def workspace_room(self) -> int | None:
        """Bytes the workdir may still grow by under its quota (<= 0: none; None: no quota
        here), without refusing anything: a reader may still read."""
        if self.quotas is None:
            return None
        return self.quotas.limit("workspace_bytes") - self.quotas.workspace_used(
            self.app_id, self.workdir
        )

    def wrote(self, size: int) -> None:
        """The tool wrote ``size`` bytes into the workdir (the quota counts them at once)."""
        if self.quotas is not None:
            self.quotas.wrote(self.app_id, size)

    def for_session(self, session_id: str | None) -> ToolContext:
        """The same context, stamped with a session (for the audit log)."""
        from dataclasses import replace

        return replace(self, session_id=session_id)

    def for_run(
        self,
        run_id: str,
        cancel: threading.Event,
        decisions: dict[str, str] | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
        ask: Callable[[str, dict[str, Any]], ToolResult] | None = None,
        launch: Callable[[str, dict[str, Any]], ToolResult] | None = None,
    ) -> ToolContext:
        """The same context, for one run: its id and decisions in the audit, its cancel
        flag, where its steps report progress."""
        from dataclasses import replace

        return replace(
            self,
            run_id=run_id,
            cancel=cancel,
            decisions=decisions or {},
            progress=progress,
            ask=ask,
            launch=launch,
        )


ToolFunc = Callable[[ToolContext, Any], ToolOutput]


Risk = Literal["safe", "low", "medium", "high"]
"""How much a tool call can do (DESIGN §12 "Risk"); the approval policy asks from a class."""
RISK_ORDER: Final[tuple[Risk, ...]] = ("safe", "low", "medium", "high")
"""Least to most; ``RISK_ORDER.index(r)`` compares two classes."""

RiskRule = Callable[[dict[str, Any]], Risk]
"""A call's risk from its (unchecked) arguments; never raises."""
DescribeRule = Callable[[dict[str, Any]], str]
"""A call in plain words from its (unchecked) arguments (:func:`aios.tools.risk.describe`)."""


@dataclass(frozen=True)
class ToolSpec:
    """Everything about one atomic tool, declared once beside its code (issue 21, rule 1)."""

    name: str
    func: ToolFunc
    args_model: type[ToolArgs]
    description: str
    timeout: float = 30.0
    """Default seconds per call; config.json ``tool_timeout`` overrides it."""
    risk: Risk | RiskRule = "high"
    """A fixed class, or one computed from the arguments."""
    risks: tuple[Risk, ...] = ()
    """Every class :attr:`risk` can give (the approvals catalog shows them); a fixed
    class when empty."""
    describe: DescribeRule | None = None
    """The call in plain words for the preview card; None: the name and the arguments."""
    offer_words: tuple[str, ...] = ()
    """Words of a request (lower case) for which the generic app offers this tool."""

    def classify(self, args: dict[str, Any]) -> Risk:
        return self.risk(args) if callable(self.risk) else self.risk

    def risk_classes(self) -> tuple[Risk, ...]:
        if self.risks:
            return self.risks
        return (self.risk,) if isinstance(self.risk, str) else RISK_ORDER

    def json_schema(self) -> dict[str, Any]:
        """OpenAI function-calling shape, for LLM planners."""
        params = self.args_model.model_json_schema()
        params.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }


_REGISTRY: dict[str, ToolSpec] = {}
_MCP_RISKS: dict[str, Risk] = {}
_MCP_RISKS_LOCK = threading.Lock()


def set_mcp_risks(prefix: str, risks: dict[str, Risk]) -> None:
    """The classes of the MCP tools named ``prefix…`` as their server lists them now
    (replacing the ones before; :mod:`aios.mcp.tools` computes them)."""
    with _MCP_RISKS_LOCK:
        for name in [n for n in _MCP_RISKS if n.startswith(prefix)]:
            del _MCP_RISKS[name]
        _MCP_RISKS.update(risks)


def mcp_risk(name: str) -> Risk:
    """The class of the MCP tool ``mcp.<server>.<tool>``; ``high`` when no server lists it."""
    with _MCP_RISKS_LOCK:
        return _MCP_RISKS.get(name, "high")


def atomic_tool(
    name: str,
    args_model: type[ToolArgs],
    description: str,
    *,
    timeout: float = 30.0,
    risk: Risk | RiskRule = "high",
    risks: tuple[Risk, ...] = (),
    describe: DescribeRule | None = None,
    offer_words: tuple[str, ...] = (),
) -> Callable[[ToolFunc], ToolFunc]:
    """Register an atomic tool with its facts; returns the function unchanged."""

    def deco(func: ToolFunc) -> ToolFunc:
        if name in _REGISTRY:
            raise RuntimeError(f"tool {name!r} is registered twice")
        _REGISTRY[name] = ToolSpec(
            name, func, args_model, description, timeout, risk, risks, describe, offer_words
        )
        return func

    return deco


def registered_tools() -> dict[str, ToolSpec]:
    return dict(_REGISTRY)
