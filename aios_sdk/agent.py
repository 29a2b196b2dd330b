"""The base class of every app (docs/app-guide.md §4; DESIGN §7) and the ``@tool`` decorator.

An app subclasses :class:`AIOSAgent`, sets its metadata, overrides
:meth:`AIOSAgent.handle` and calls ``run()``. Inside ``handle`` it may call
atomic tools synchronously (:meth:`AIOSAgent.call_tool`), return a plan for
the system's executor (:meth:`AIOSAgent.plan_steps`), ask the system's LLM
(:meth:`AIOSAgent.llm`), push live updates (:meth:`AIOSAgent.push`), keep and find
facts in its memory (:meth:`AIOSAgent.remember`, :meth:`AIOSAgent.recall`) and, with the
``desktop.control`` permission, operate the desktop's UI (:meth:`AIOSAgent.ui`).

Where those calls go is decided once per agent, at first use: with
``AIOS_SYSTEM_URL`` and ``AIOS_APP_TOKEN`` in the environment (the launcher
sets both) they go to the system over loopback, so the system's sandbox and
audit apply; without them the agent runs standalone and the same tools run
in-process under the same sandbox rules, relative to ``./workspace``.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import signal
import sys
import threading
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from aios.errors import ProtocolError, ToolFailed
from aios.names import (
    ATOMIC_TOOLS,
    ENV_APP_ID,
    ENV_APP_TOKEN,
    ENV_SYSTEM_URL,
    MCP_TOOL_PREFIX,
    SYSTEM_PRIMITIVES,
    TOOL_NAME_PATTERN,
)
from aios_sdk import actions as _actions, boot
from aios_sdk._session import current_session_id
from aios_sdk.boot import APP_SOCKET_ENV
from aios_sdk.context import AppContext, StepResult
from aios_sdk.failures import AppFailure
from aios_sdk.messages import Messages

if TYPE_CHECKING:
    from aios.protocol import Step

log = logging.getLogger(__name__)

DEFAULT_PORT = 5001
"""The port an app serves on when ``APP_PORT`` is not set."""

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)
_MARK = "__aios_tool__"
_BACKEND_LOCK = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])


# ----------------------------------------------------------------- @tool


@dataclass(frozen=True)
class ToolInfo:
    """A custom tool as the app serves it on ``/tools/<name>``."""

    name: str
    description: str
    attr: str
    """The method's attribute name on the agent class."""
    parameters: dict[str, Any]
    """JSON-Schema-like description of the keyword arguments."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def tool(name: str | Callable[..., Any] | None = None, desc: str = "") -> Any:
    """Mark a method as a custom tool of this app; returns the method unchanged.

    ``@tool(name="my_custom_tool", desc="…")`` as in docs/app-guide.md §4; a bare
    ``@tool`` uses the method's name and the first line of its docstring.
    The class collects its tools when it is created, and refuses two tools
    with one name or a name of an atomic tool.
    """
    if callable(name):
        return _mark(name, None, desc)
    if name is not None:
        _check_name(name)

    def deco(func: F) -> F:
        return _mark(func, name, desc)

    return deco


def _mark(func: F, name: str | None, desc: str) -> F:
    if not inspect.isfunction(func):
        raise TypeError(
            f"@tool decorates a method (a def inside the class), got {type(func).__name__}"
        )
    tool_name = _check_name(name or func.__name__)
    doc = (inspect.getdoc(func) or "").strip().splitlines()
    setattr(func, _MARK, (tool_name, desc or (doc[0] if doc else "")))
    return func


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise ValueError(
            f"@tool name must be an identifier of at most 64 characters "
            f"(letters, digits, '_'), got {name!r}"
        )
    return name


def _collect_tools(cls: type) -> dict[str, ToolInfo]:
    resolved: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        resolved.update(vars(klass))
    found: dict[str, ToolInfo] = {}
    for attr, obj in resolved.items():
        if not inspect.isfunction(obj) or not hasattr(obj, _MARK):
            continue
        tool_name, desc = getattr(obj, _MARK)
        if tool_name in ATOMIC_TOOLS:
            raise TypeError(
                f"{cls.__name__}.{attr}: custom tool name {tool_name!r} is an atomic "
                "tool of the system; choose another name"
            )
        if tool_name in found:
            raise TypeError(
                f"{cls.__name__}: custom tool name {tool_name!r} is registered twice "
                f"({found[tool_name].attr}() and {attr}()); names must be unique"
            )
        found[tool_name] = ToolInfo(tool_name, desc, attr, _parameters(obj))
    return found


_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


def _json_type(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        return _json_type(members[0]) if len(members) == 1 else {}
    kind = _JSON_TYPES.get(origin or hint)
    return {"type": kind} if kind else {}


def _parameters(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # noqa: BLE001 - unresolvable annotations only lose the type hint
        hints = {}
    props: dict[str, Any] = {}
    required: list[str] = []
    extra = False
    params = list(inspect.signature(func).parameters.values())[1:]  # skip self
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            extra = True
            continue
        if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
            continue
        schema = _json_type(hints.get(p.name))
        if p.default is p.empty:
            required.append(p.name)
        elif p.default is None or isinstance(p.default, str | int | float | bool):
            schema["default"] = p.default
        props[p.name] = schema
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": extra,
    }


# ---------------------------------------------------------------- backends


class Backend(Protocol):
    """Where an agent's tool, LLM and push calls go (the system, or in-process)."""

    def call_tool(self, name: str, args: dict[str, Any], session_id: str | None) -> Any: ...

    def llm(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        session_id: str | None,
        **kw: Any,
    ) -> dict[str, Any]: ...

    def push(self, payload: dict[str, Any], session_id: str | None) -> bool: ...

    def ui(self, ops: list[dict[str, Any]], session_id: str | None) -> dict[str, Any]: ...

    def processes(self) -> list[dict[str, Any]]: ...

    def disks(self) -> list[dict[str, Any]]: ...

    def end_process(self, pid: int, session_id: str | None) -> dict[str, Any]: ...


def _make_backend(agent: AIOSAgent) -> Backend:
    url = os.environ.get(ENV_SYSTEM_URL, "").strip()
    token = os.environ.get(ENV_APP_TOKEN, "").strip()
    if url and token:
        from aios_sdk.client import SystemClient

        return SystemClient(url, token)
    if url or token:
        log.warning("only one of AIOS_SYSTEM_URL / AIOS_APP_TOKEN is set; running standalone")
    from aios_sdk.standalone import StandaloneRuntime

    return StandaloneRuntime(
        agent.app_dir(),
        agent.app_id(),
        own_ports=lambda: set(agent.__dict__.get("_aios_ports", ())),
    )


# ------------------------------------------------------------------ agent

# The launcher's names (aios.apphost.manifests, aios.protocol), not imported from there: an app's
# start does not load pydantic.
MANIFEST_FILE = "manifest.json"
ROLE_FILE = "role.md"
_DEFAULT_LOCALE = "zh-CN"


def manifest_metadata(folder: Path) -> dict[str, str]:
    """``name``, ``description``, ``icon``, ``role_prompt`` of the app in ``folder``.

    Read from its ``manifest.json`` (a per-locale name or description gives the
    default locale's) and, for the role, ``role.md`` when the manifest has none,
    as the launcher does (aios/apphost/manifests.py). A missing or unreadable file gives
    nothing: the launcher has already refused an unusable manifest.
    """
    try:
        raw = json.loads((folder / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    out: dict[str, str] = {}
    for key in ("name", "description", "icon", "role_prompt"):
        value = raw.get(key)
        if isinstance(value, dict):
            value = value.get(_DEFAULT_LOCALE) or next(
                (v for v in value.values() if isinstance(v, str) and v), ""
            )
        value = value or raw.get(f"{key}_en")
        if isinstance(value, str) and value.strip():
            out[key] = value.strip()
    if "role_prompt" not in out:
        try:
            role = (folder / ROLE_FILE).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            role = ""
        if role:
            out["role_prompt"] = role
    return out


class _FromManifest:
    """A metadata attribute of :class:`AIOSAgent`: the manifest's value unless the class
    (or the instance) sets its own. A non-data descriptor, so a plain ``name = "..."`` in a
    subclass, or ``vars(agent)["name"]``, simply shadows it."""

    def __init__(self, default: str) -> None:
        self.default = default
        self.key = ""

    def __set_name__(self, owner: type, key: str) -> None:
        self.key = key

    def __get__(self, agent: Any, owner: type | None = None) -> str:
        if agent is None:
            return self.default  # on the class: nothing is read
        meta = agent.__dict__.get("_aios_manifest")
        if meta is None:
            meta = manifest_metadata(agent.app_dir())
            agent.__dict__["_aios_manifest"] = meta
        return meta.get(self.key) or self.default


class AIOSAgent:
    """Base class of an app (a "small AI"). Override :meth:`handle`; call :meth:`run`.

    ``name``, ``description``, ``icon`` and ``role_prompt`` come from the app's
    ``manifest.json`` (the role from ``role.md`` when the manifest has none), read
    once per agent; a class that sets one of them (``name = "..."``) overrides the
    manifest's for this process (which the desktop never sees: it shows the manifest's).
    """

    if TYPE_CHECKING:
        name: ClassVar[str]
        description: ClassVar[str]
        icon: ClassVar[str]
        role_prompt: ClassVar[str]
    else:
        name = _FromManifest("")
        description = _FromManifest("")
        icon = _FromManifest("📦")
        role_prompt = _FromManifest("")

    messages: ClassVar[Messages | Mapping[str, tuple[str, str]] | None] = None
    """The app's ``key -> (zh, en)`` texts: where an :class:`AppFailure`'s message comes from."""

    _aios_tools: ClassVar[dict[str, ToolInfo]] = {}
    _aios_actions: ClassVar[dict[str, _actions.ActionInfo]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._aios_tools = _collect_tools(cls)
        cls._aios_actions = _actions.collect_actions(cls)

    # ------------------------------------------------------ to override

    def handle(
        self,
        instruction: str | None,
        context: AppContext,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Answer an instruction or an action with a reply (view, actions, optional steps).

        ``context`` is an :class:`AppContext` (a dict). Actions an ``@action`` method
        registers never reach ``handle``.
        """
        raise NotImplementedError(f"{type(self).__name__}.handle is not implemented")

    def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
        """The error view for an :class:`AppFailure` or an action the SDK cannot route.

        Override it to give the app's errors their own title, buttons or state.
        """
        from aios_sdk.views import error_view

        name = self.display_name
        return error_view(message, title=ctx.tr(f"{name}出错了", f"{name} ran into an error"))

    # ------------------------------------------------------ answering

    @classmethod
    def registered_actions(cls) -> dict[str, _actions.ActionInfo]:
        """This app's ``@action`` methods by ``action_id``."""
        return dict(cls._aios_actions)

    def respond(
        self,
        instruction: str | None,
        context: Mapping[str, Any] | None,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Answer one request as the system sends it: what serving and the test kit call.

        Gives ``handle`` (or the ``@action`` method the action names) an
        :class:`AppContext`, and turns an :class:`AppFailure`, an unknown action or
        malformed action parameters into :meth:`error_reply` in the user's language.
        """
        ctx = AppContext.of(context)
        try:
            if action_request is not None and self._aios_actions:
                info, request = _actions.find(self._aios_actions, action_request)
                method = getattr(self, info.attr)
                return method(ctx, **_actions.arguments(method, request))  # type: ignore[no-any-return]
            return self.handle(instruction, ctx, action_request)
        except _actions.BadAction as e:
            return self.error_reply(ctx, e.message(ctx.lang))
        except AppFailure as e:
            return self.error_reply(ctx, e.message(self.messages, ctx.lang))

    def after(
        self,
        ctx: AppContext,
        steps: Sequence[dict[str, Any]],
        then: Callable[[StepResult], dict[str, Any]],
        *,
        view: dict[str, Any] | None = None,
        step: int | str | None = None,
    ) -> dict[str, Any]:
        """``then(result)`` once ``steps`` have run, else a reply that runs them first.

        ``result`` is step ``step``'s (default: the last step's) :class:`StepResult`;
        until the system has run them, the reply is ``view`` (default: a ``loading``
        view) carrying the validated ``steps``::

            return self.after(ctx, [self.ask("confirm", "Delete?")], then=self._deleted)
        """
        planned = self.plan_steps(list(steps))
        wanted = planned[-1]["step_id"] if step is None else step
        got = ctx.result(wanted)
        if got is not None:
            return then(got)
        reply: dict[str, Any] = (
            dict(view)
            if view is not None
            else {
                "status": "ok",
                "view_type": "loading",
                "data": {},
                "actions": [],
                "message": "",
            }
        )
        reply["steps"] = planned
        return reply

    # ------------------------------------------------------ identity

    @property
    def display_name(self) -> str:
        return self.name or type(self).__name__

    @classmethod
    def custom_tools(cls) -> dict[str, ToolInfo]:
        """This app's ``@tool`` methods by tool name."""
        return dict(cls._aios_tools)

    def app_dir(self) -> Path:
        """The folder of the module that defines this agent class (fallback: cwd)."""
        module = sys.modules.get(type(self).__module__)
        file = getattr(module, "__file__", None)
        return Path(file).resolve().parent if file else Path.cwd().resolve()

    def app_id(self) -> str:
        return os.environ.get(ENV_APP_ID) or self.app_dir().name

    def _backend(self) -> Backend:
        # Kept in __dict__ and built lazily: subclasses may define __init__
        # without calling super(), and the spec's template does exactly that.
        backend = self.__dict__.get("_aios_backend")
        if backend is None:
            with _BACKEND_LOCK:
                backend = self.__dict__.get("_aios_backend")
                if backend is None:
                    backend = _make_backend(self)
                    self.__dict__["_aios_backend"] = backend
        return backend

    # ------------------------------------------------------ system calls

    def ask(
        self,
        kind: str,
        prompt: str,
        *,
        options: list[Any] | None = None,
        default: Any = None,
        placeholder: str | None = None,
        step_id: str = "ask",
        covers: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A plan step that asks the user (DESIGN §13): ``choice``, ``confirm`` or ``input``.

        Return it in ``steps``; the run waits for the answer, and the next round's
        ``tool_results["step_<step_id>"]["result"]`` is ``{"value": ...}`` (confirm:
        true/false; choice: the option's value; input: the text), or an error with
        ``code`` ``expired`` / ``cancelled``.

        ``covers`` (confirm only): the calls ``[{"tool", "args"}]`` the app makes after a
        yes, listed on the card; the yes approves exactly those, once each, in this run,
        so the system does not ask about them a second time (a delete asks once).
        """
        args: dict[str, Any] = {"kind": kind, "prompt": prompt}
        if covers is not None:
            args["covers"] = covers
        if options is not None:
            args["options"] = options
        if default is not None:
            args["default"] = default
        if placeholder is not None:
            args["placeholder"] = placeholder
        return {"step_id": step_id, "tool": "ask", "args": args}

    def call_tool(self, tool_name: str, /, **args: Any) -> Any:
        """Run one tool now and return its ``result``.

        Raises :class:`~aios.errors.ToolError` (carrying ``error``, ``result``
        and ``meta``) when the tool is refused or fails. One of this app's own
        ``@tool``s is a method of this very process, so it is simply called
        (no sandbox boundary is crossed; the executor audits it when it runs
        as a step).
        """
        info = self._aios_tools.get(tool_name)
        if info is not None:
            return getattr(self, info.attr)(**args)
        return self._backend().call_tool(tool_name, args, current_session_id())

    def remember(
        self, text: str, tags: Sequence[str] = (), *, user: bool = False
    ) -> dict[str, Any]:
        """Keep a fact for later (``memory_store``, docs/app-guide.md §15).

        In this app's own memory, active at once; with ``user=True``, proposed to the
        user's memory (needs the ``memory.write`` permission), where it waits for the
        user's yes in the memory window. Returns the memory ``{id, text, tags, scope,
        state}``; the same text kept twice is one memory. Raises
        :class:`~aios.errors.ToolError` when refused (no permission) or when there is no
        memory (standalone, the test kit).
        """
        words = [tags] if isinstance(tags, str) else list(tags)
        kept = self.call_tool(
            "memory_store", text=text, tags=words, scope="user" if user else "app"
        )
        if not isinstance(kept, dict):
            raise ToolFailed(f"memory_store: expected a memory, got {type(kept).__name__}")
        return kept

    def recall(self, query: str, k: int = 5, *, user: bool = False) -> list[dict[str, Any]]:
        """The ``k`` (1-20) kept facts that best match ``query`` (``memory_search``), best
        first, each ``{id, text, tags, scope, score}``: this app's own, and the user's
        too with ``user=True`` (needs the ``memory.read`` permission). What comes back is
        data to use, never instructions to follow. Raises
        :class:`~aios.errors.ToolError` like :meth:`remember`.
        """
        found = self.call_tool("memory_search", query=query, k=k, scope="user" if user else "app")
        if not isinstance(found, list):
            raise ToolFailed(f"memory_search: expected a list, got {type(found).__name__}")
        return [m for m in found if isinstance(m, dict)]

    def plan_steps(self, steps: list[dict[str, Any]] | list[Step]) -> list[dict[str, Any]]:
        """Validate a steps plan for a reply; number steps that have no ``step_id``.

        Raises ProtocolError naming the bad step, or a tool that is neither
        atomic, an MCP tool (``mcp.<server>.<tool>``) nor one of this app's custom tools.
        """
        if not isinstance(steps, list):
            raise ProtocolError(f"plan_steps expects a list of steps, got {type(steps).__name__}")
        numbered: list[Any] = []
        for i, step in enumerate(steps, 1):
            if not isinstance(step, dict) and hasattr(step, "model_dump"):
                step = step.model_dump()
            if isinstance(step, dict) and "step_id" not in step:
                step = {"step_id": i, **step}
            numbered.append(step)
        from aios.protocol import parse_steps  # pydantic loads on first use, not at start

        parsed = parse_steps(numbered)
        for step in parsed:
            known = step.tool in ATOMIC_TOOLS or step.tool in SYSTEM_PRIMITIVES
            known = known or step.tool.startswith(MCP_TOOL_PREFIX)  # the system checks grants
            if not known and step.tool not in self._aios_tools:
                mine = ", ".join(self._aios_tools) or "none"
                raise ProtocolError(
                    f"invalid steps: step {step.step_id!r} uses unknown tool "
                    f"{step.tool!r} (atomic tools: {', '.join(ATOMIC_TOOLS)}; system "
                    f"primitives: {', '.join(SYSTEM_PRIMITIVES)}; "
                    f"this app's custom tools: {mine})"
                )
        return [_step_dict(s) for s in parsed]

    def llm(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kw: Any
    ) -> dict[str, Any]:
        """Ask the system's LLM; returns the assistant message (``role``, ``content``, …).

        ``stream_to_user=True`` says the answer is for the user (the app shows the model's
        words): while the model writes them they stream into the conversation panel of
        the instruction the app works on, and the whole message is still returned. A tool
        call, JSON or markup never streams. Other keywords (``tool_choice``) go as they are.

        Raises :class:`~aios.errors.LLMUnavailable` when no LLM is configured
        (always, when running standalone: the key stays in the system).
        """
        return self._backend().llm(messages, tools, current_session_id(), **kw)

    def push(self, view_or_event: dict[str, Any]) -> bool:
        """Push a live update to this app's window (docs/app-guide.md §6).

        A dict with ``view_type`` replaces the window's view; anything else is
        an event payload such as ``{"progress": 0.3}``. Best effort: returns
        False (and logs) when it could not be delivered.
        """
        if not isinstance(view_or_event, dict):
            raise ProtocolError(
                f"push expects a dict (a view or an event), got {type(view_or_event).__name__}"
            )
        return self._backend().push(view_or_event, current_session_id())

    def ui(self, op: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
        """Send UI operations (docs/app-guide.md §9) to the desktop; needs ``desktop.control``.

        ``op`` is one operation or a list, e.g. ``{"op": "move", "id": "btn_play",
        "window": "music", "x": 20, "y": 20}`` (ops: move, resize, hide, show,
        change_color, change_text, rotate). The system validates them and relays
        them to the desktop as ``ui_op`` events; the reply is the system's
        ``{"ok", "applied", "listeners"}``. Raises :class:`~aios.errors.ToolRefused`
        when the system refuses them (no permission, an invalid op, naming the
        problem) and :class:`~aios.errors.ToolFailed` when there is no desktop
        to reach (standalone mode, system down).
        """
        ops = [op] if isinstance(op, dict) else op
        if not isinstance(ops, list) or not ops or not all(isinstance(o, dict) for o in ops):
            raise ProtocolError(
                f"ui expects an operation (a dict) or a non-empty list of "
                f"them, got {type(op).__name__}"
            )
        return self._backend().ui(ops, current_session_id())

    def processes(self) -> list[dict[str, Any]]:
        """The host's processes, read-only; needs the ``system.processes`` permission.

        Each is ``{pid, name, user, cpu_percent, memory_rss, memory_percent, started}``
        (``cpu_percent`` since the previous call; no command line, no environment).
        Raises :class:`~aios.errors.ToolRefused` naming the permission when it is not
        granted. Standalone, the app reads them itself (psutil).
        """
        return self._backend().processes()

    def disks(self) -> list[dict[str, Any]]:
        """The host's disks ``{mount, total, used, free, percent}``; needs ``system.processes``.

        A confined app sees only its sandbox's mounts, so the system answers it.
        """
        return self._backend().disks()

    def end_process(self, pid: int) -> dict[str, Any]:
        """End one host process ("end task"); needs ``system.processes``. Ask the user first
        (``self.ask("confirm", ...)``): this ends a program the app did not start.

        SIGTERM, then SIGKILL after a grace period; returns ``{pid, name, ended: True}``.
        Raises :class:`~aios.errors.ToolRefused` with the system's one-line reason for pid 1,
        kernel threads, the system's own processes and other users' processes.
        """
        return self._backend().end_process(pid, current_session_id())

    # ------------------------------------------------------ serving

    def make_app(self) -> Any:
        """The Flask application serving this agent (for a WSGI server of your choice)."""
        from aios_sdk.serving import create_app

        return create_app(self)

    def run(self, host: str = "127.0.0.1", port: int | None = None) -> None:
        """Serve ``/handle``, ``/tools/<name>``, ``/tools`` and ``/health`` on ``APP_PORT``."""
        if port is None:
            raw = os.environ.get("APP_PORT", str(DEFAULT_PORT))
            try:
                port = int(raw)
            except ValueError:
                raise SystemExit(f"APP_PORT must be a port number, got {raw!r}") from None
        if not logging.getLogger().handlers:
            logging.basicConfig(
                level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
            )
        self.__dict__["_aios_ports"] = {port}
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            # Leave through SystemExit so atexit runs: standalone mode then stops
            # the background processes its tools started.
            signal.signal(signal.SIGTERM, _exit_on_term)
        socket_path = os.environ.get(APP_SOCKET_ENV)
        if socket_path:
            # confined (DESIGN §11): the system reaches this app over its runtime
            # dir's socket only; no TCP port exists for anyone else to call
            host = f"unix://{socket_path}"
            boot.SDK_SERVES.set()  # the sandbox's relay need not bridge APP_PORT
        log.info("%s serving on %s", self.display_name, host if socket_path else f"{host}:{port}")
        from werkzeug.serving import make_server

        # HTTP/1.1 kept alive: a step's round trip costs no new connection and no new thread
        from aios_sdk._keepalive import KeepAliveHandler

        app = self.make_app()
        _load_dotenv()
        # Werkzeug's server as Flask.run starts it, without python-dotenv's import and
        # search up the tree for nothing: the app listens sooner, and the system learns
        # it from that listen (aios_sdk.boot).
        server = make_server(host, port, app, threaded=True, request_handler=KeepAliveHandler)
        server.log_startup()  # "Running on ...", once it listens
        server.serve_forever()


DOTENV_FILES = (".env", ".flaskenv")


def _load_dotenv() -> None:
    """An app folder's ``.env`` / ``.flaskenv``, as ``Flask.run`` would load it (only when
    there is one: python-dotenv is not imported for nothing)."""
    if os.environ.get("FLASK_SKIP_DOTENV") or not any(map(os.path.isfile, DOTENV_FILES)):
        return
    from flask.cli import load_dotenv

    load_dotenv()


def _exit_on_term(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def _step_dict(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"step_id": step.step_id, "tool": step.tool, "args": step.args}
    if step.on_error != "stop":
        out["on_error"] = step.on_error
    if step.timeout is not None:
        out["timeout"] = step.timeout
    return out
