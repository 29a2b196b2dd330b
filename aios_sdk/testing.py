"""Test an app alone (in-process) or inside the real system: ``aios_sdk.testing``.

Two ways, both importable from an installed ``triton-aios`` (nothing here
needs the project's ``tests/``):

* :class:`AppHarness` loads an app folder's entry module in this process and
  drives its agent as the system would: the same ``context`` fields
  (``docs/testing.md``), replies checked by the system's own validator
  (:func:`aios.protocol.forwardable_reply`), ``steps`` run by the system's own
  executor (:class:`aios.tools.executor.Executor`, templates included) against a
  temporary workdir and a temporary audit/cache database, never the app's
  ``workspace/`` or ``.aios/dev.db``. The entry module is imported under a
  name of its own (``_aios_app_<id>_<n>``), with the app folder first on
  ``sys.path`` only while it imports, and the app's helper modules leave
  ``sys.modules`` afterwards: two apps whose ``main.py`` both define
  ``class MyAgent`` (or both ship a ``lib.py``) load side by side.
* :func:`start_system` starts the real system (:class:`aios.system.System`
  and its HTTP server on a free port of 127.0.0.1) with copies of the given
  app folders and a temporary data dir; the apps run as real processes.

The pytest fixtures ``aios_app`` and ``aios_system`` (:mod:`aios_sdk.pytest_plugin`)
wrap both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import itertools
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any

import requests

from aios.config import Config, validate_config
from aios.errors import LLMUnavailable, ManifestError, ProtocolError
from aios.names import ATOMIC_TOOLS, ENV_APP_ID, SYSTEM_PRIMITIVES
from aios.protocol import ToolResult, forwardable_reply, parse_action_request
from aios_sdk._session import bind_session, unbind_session
from aios_sdk.agent import MANIFEST_FILE, AIOSAgent, manifest_metadata
from aios_sdk.standalone import DEV_DB_ENV, WORKDIR_ENV, StandaloneRuntime, read_manifest

if TYPE_CHECKING:
    from werkzeug.serving import BaseWSGIServer

    from aios.system import System
    from aios.web import ServerThread

__all__ = [
    "AppHarness",
    "RunningSystem",
    "find_app_dir",
    "load_app_module",
    "start_system",
]

DEFAULT_ENTRY = "main.py"
MODULE_PREFIX = "_aios_app_"
"""The entry module of a harnessed app is imported as ``_aios_app_<id>_<n>``."""
TEST_SESSION = "test-session"
"""The session id of a harness unless the test names one."""
HTTP_TIMEOUT = 60.0
"""Seconds a call to the test system may take (an app's rounds, a plan's steps)."""
COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".aios", "tests", ".pytest_cache", "*.pyc")
"""What :func:`start_system` leaves out when it copies an app folder."""

_IMPORT_LOCK = threading.RLock()
_ENV_LOCK = threading.RLock()
_counter = itertools.count(1)
_SAFE = re.compile(r"[^0-9A-Za-z_]")


# ------------------------------------------------------------------ loading


def find_app_dir(start: Path) -> Path:
    """The app folder at or above ``start``: the nearest one holding a ``manifest.json``."""
    here = start.resolve()
    for folder in (here, *here.parents) if here.is_dir() else here.parents:
        if (folder / MANIFEST_FILE).is_file():
            return folder
    raise FileNotFoundError(
        f"no app folder at or above {start}: none holds a {MANIFEST_FILE}; "
        "name the folder (AppHarness(path), or @pytest.mark.aios_app(path))"
    )


def _entry_of(app_dir: Path) -> Path:
    raw: Any = None
    with contextlib.suppress(OSError, ValueError):
        raw = json.loads((app_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    entry = raw.get("entry") if isinstance(raw, dict) else None
    path = app_dir / (entry if isinstance(entry, str) and entry else DEFAULT_ENTRY)
    if not path.is_file():
        raise FileNotFoundError(f"the app's entry file {path} does not exist")
    return path


def _inside(module: ModuleType, folder: Path) -> bool:
    file = getattr(module, "__file__", None)
    if not file:
        return False
    try:
        return Path(file).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def _own_module_names(folder: Path) -> set[str]:
    """Top-level module names the app's folder provides (``notes_lib``, ``lib``...)."""
    names = set()
    for entry in folder.iterdir():
        if entry.suffix == ".py":
            names.add(entry.stem)
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            names.add(entry.name)
    return names


def load_app_module(app_dir: Path | str, entry: str | None = None) -> ModuleType:
    """Import an app's entry module by path, under a name no other app shares.

    The module stays in ``sys.modules`` under that name (the SDK finds the app's
    folder through it; :meth:`AppHarness.close` removes it). Modules the app
    imports from its own folder (``import notes_lib``) are taken out of
    ``sys.modules`` again once the entry has run, and any module of the same
    name imported before is put back: each app sees its own. No bytecode is
    written into the app's folder.
    """
    folder = Path(app_dir).resolve()
    path = folder / entry if entry else _entry_of(folder)
    name = f"{MODULE_PREFIX}{_SAFE.sub('_', folder.name)}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} (not a Python file?)")
    module = importlib.util.module_from_spec(spec)
    with _IMPORT_LOCK:
        shadowed = {n: sys.modules.pop(n) for n in _own_module_names(folder) if n in sys.modules}
        before = set(sys.modules)
        sys.path.insert(0, str(folder))
        sys.modules[name] = module
        no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        finally:
            sys.dont_write_bytecode = no_bytecode
            with contextlib.suppress(ValueError):
                sys.path.remove(str(folder))
            for key in set(sys.modules) - before:
                if key != name and _inside(sys.modules[key], folder):
                    del sys.modules[key]
            sys.modules.update(shadowed)
    return module


def agent_class(module: ModuleType, name: str | None = None) -> type[AIOSAgent]:
    """The :class:`AIOSAgent` subclass the module defines (``name`` picks one of several)."""
    if name is not None:
        found = getattr(module, name, None)
        if not (isinstance(found, type) and issubclass(found, AIOSAgent)):
            raise LookupError(f"{module.__file__} has no AIOSAgent subclass named {name!r}")
        return found
    own = [
        v
        for v in vars(module).values()
        if isinstance(v, type)
        and issubclass(v, AIOSAgent)
        and v is not AIOSAgent
        and v.__module__ == module.__name__
    ]
    leaves = [c for c in own if not any(o is not c and issubclass(o, c) for o in own)]
    if len(leaves) != 1:
        listed = ", ".join(sorted(c.__name__ for c in leaves)) or "none"
        raise LookupError(
            f"{module.__file__} defines {len(leaves)} agent classes ({listed}); "
            "name the one to test (agent='ClassName')"
        )
    return leaves[0]


# ------------------------------------------------------------------ harness


class _HarnessRuntime(StandaloneRuntime):
    """Standalone tools, with pushes, notifications and the LLM under the test's control."""

    def __init__(self, harness: AppHarness, **kw: Any) -> None:
        super().__init__(emit=lambda kind, payload: harness.events.append((kind, payload)), **kw)
        self._harness = harness

    def push(self, payload: dict[str, Any], session_id: str | None) -> bool:
        self._harness.pushes.append(payload)
        return True

    def llm(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        session_id: str | None,
        **kw: Any,
    ) -> dict[str, Any]:
        fake = self._harness.llm
        if fake is None:
            raise LLMUnavailable(
                "no LLM in this test: AppHarness(llm=...) takes a function "
                "(messages, tools, **kw) -> assistant message"
            )
        message: dict[str, Any] = fake(messages, tools, **kw)
        return message


class AppHarness:
    """One app run in this process against a temporary workdir, driven like the system does.

    ``with AppHarness("apps/notes") as app: reply = app.instruct("记一下 买牛奶")``.

    ``workdir`` is where the app's tools read and write (default: a folder named as
    the app's workdir in ``tmp_dir``, or in a new temporary folder removed on
    close); it starts as a copy of the app's own workdir (``seed=False``: empty).
    The audit log and cache go to ``<its parent>/.aios/<its name>.dev.db``.
    ``llm`` answers ``self.llm`` (``(messages, tools, **kw) -> message``); without
    it ``self.llm`` raises ``LLMUnavailable`` as it does standalone.

    The saved state (a reply's ``state``) is kept as the system keeps it and
    merged into the next call's ``context.cwd_state``. An exception in
    ``handle`` propagates (the desktop would show an error view); a reply the
    system would refuse raises :class:`~aios.errors.ProtocolError` naming the field.
    """

    def __init__(
        self,
        app_dir: Path | str,
        workdir: Path | str | None = None,
        *,
        locale: str | None = None,
        session_id: str = TEST_SESSION,
        agent: str | None = None,
        llm: Any = None,
        seed: bool = True,
        config: Config | None = None,
        tmp_dir: Path | str | None = None,
    ) -> None:
        self.app_dir = Path(app_dir).resolve()
        self.app_id = self.app_dir.name
        self.config = config or Config()
        self.locale = locale or self.config.language
        self.session_id = session_id
        self.llm = llm
        self.pushes: list[dict[str, Any]] = []
        """What the app pushed (``self.push``), in order."""
        self.events: list[tuple[str, dict[str, Any]]] = []
        """Events the app's tools sent (``notify``): ``(kind, payload)``."""
        self.state: dict[str, Any] = {}
        """The app's saved state (the last final reply's ``state``)."""
        try:
            self.manifest = read_manifest(self.app_dir)
        except ManifestError as e:
            raise ManifestError(str(e)) from None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        own = self.app_dir / (self.manifest.workdir if self.manifest else "workspace")
        if workdir is None:
            if tmp_dir is None:
                self._tmp = tempfile.TemporaryDirectory(prefix=f"aios-{self.app_id}-")
                tmp_dir = self._tmp.name
            # named as the app's own: tools report paths relative to it ("workspace/a.txt")
            workdir = Path(tmp_dir) / own.resolve().name
        self.workdir = Path(workdir).resolve()
        self.db_path = self.workdir.parent / ".aios" / f"{self.workdir.name}.dev.db"
        if self.workdir == own.resolve() or self.workdir.is_relative_to(self.app_dir):
            raise ValueError(
                f"workdir {self.workdir} is inside the app folder; a test must not write "
                "there (leave workdir out for a temporary one)"
            )
        if seed and own.is_dir() and not self.workdir.exists():
            shutil.copytree(own, self.workdir, ignore=COPY_IGNORE)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._server: BaseWSGIServer | None = None
        self._last: tuple[str | None, dict[str, Any] | None, dict[str, Any]] | None = None
        with self._env():
            self.module = load_app_module(self.app_dir)
            try:
                self.agent: AIOSAgent = agent_class(self.module, agent)()
            except BaseException:
                sys.modules.pop(self.module.__name__, None)
                raise
        self.runtime = _HarnessRuntime(
            self,
            app_dir=self.app_dir,
            app_id=self.app_id,
            config=self.config,
            workdir=self.workdir,
            db_path=self.db_path,
        )
        self.agent.__dict__["_aios_backend"] = self.runtime

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> AppHarness:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the app's background processes, close its database, remove the temp folder."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.runtime.close()
        sys.modules.pop(self.module.__name__, None)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    @contextlib.contextmanager
    def _env(self) -> Iterator[None]:
        """``AIOS_WORKDIR`` / ``AIOS_APP_ID`` as the launcher sets them, for apps that read them."""
        values = {WORKDIR_ENV: str(self.workdir), ENV_APP_ID: self.app_id}
        values[DEV_DB_ENV] = str(self.db_path)
        with _ENV_LOCK:
            saved = {k: os.environ.get(k) for k in values}
            os.environ.update(values)
            try:
                yield
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v

    # ------------------------------------------------------------ context

    def context(
        self,
        *,
        locale: str | None = None,
        tool_results: Mapping[str, Any] | None = None,
        upstream: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """The ``context`` the system sends (aios/control/context.py ``Contexts.build``);
        ``routed`` is None unless given (an action, an opened window)."""
        from aios.control.context import (
            list_files as _list_files,  # the system's own listing of cwd_state.files
        )

        role = manifest_metadata(self.app_dir).get("role_prompt", "")
        return {
            "app": self.app_id,
            "role": role,
            "workdir": str(self.workdir),
            "cwd_state": {"files": _list_files(self.workdir), **self.state},
            "available_tools": [*ATOMIC_TOOLS, *SYSTEM_PRIMITIVES, *self.agent.custom_tools()],
            "session_id": self.session_id,
            "history_summary": "",
            "tool_results": dict(tool_results or {}),
            "upstream": dict(upstream or {}),
            "locale": locale or self.locale,
            "routed": None,
            **extra,
        }

    def routed(self, text: str) -> dict[str, Any]:
        """``context.routed`` for ``text`` given to this app: the system's offline router's
        ``{text, matched, score, source}`` (aios/control/router.py), with this app alone
        installed."""
        from aios.control.router import AppProfile, OfflineRouter

        if self.manifest is None:
            raise ManifestError(f"{self.app_dir} has no {MANIFEST_FILE}: nothing to route by")
        role = manifest_metadata(self.app_dir).get("role_prompt", "")
        profile = AppProfile.from_manifest(self.app_id, self.manifest, role)
        info: dict[str, Any] = OfflineRouter([profile]).routed_info(self.app_id, text, [text])
        return info

    # ------------------------------------------------------------ calls

    def instruct(
        self,
        text: str,
        *,
        locale: str | None = None,
        follow: bool = False,
        answers: Mapping[str, Any] | None = None,
        **context: Any,
    ) -> dict[str, Any]:
        """The app's reply to an instruction (``follow``: after running its steps to the end).

        Extra keyword arguments become ``context`` fields (``upstream=...``); ``routed``
        defaults to what the system's router makes of ``text`` (:meth:`routed`).
        """
        context.setdefault("routed", self.routed(text))
        ctx = self.context(locale=locale, **context)
        return self._call(text, None, ctx, follow, answers)

    def action(
        self,
        action_id: str,
        params: Mapping[str, Any] | None = None,
        *,
        locale: str | None = None,
        follow: bool = False,
        answers: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """The app's reply to a control (``value=``, ``form_values=``, ``on=``... as the desktop
        sends them); the request is checked as the system checks it."""
        body: dict[str, Any] = {"action_id": action_id, **fields}
        if params is not None:
            body["params"] = dict(params)
        request = parse_action_request(body).model_dump(exclude_none=True)
        return self._call(None, request, self.context(locale=locale), follow, answers)

    def run_steps(
        self, reply: Mapping[str, Any], *, answers: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run the reply's ``steps`` with the system's executor; the app's next reply.

        ``answers`` answers ``ask`` steps by step id (``{"confirm_delete": True}``);
        an unanswered question gets ``code: "expired"``, as when the user never answers.
        """
        steps = reply.get("steps") or []
        if not steps:
            raise ValueError("run_steps: the reply has no steps to run")
        if self._last is None:
            raise ValueError("run_steps: call instruct() or action() first")
        instruction, request, ctx = self._last
        results = self.execute(steps, answers=answers)
        return self._round(instruction, request, {**ctx, "tool_results": results})

    def execute(
        self, steps: Iterable[Mapping[str, Any]], *, answers: Mapping[str, Any] | None = None
    ) -> dict[str, dict[str, Any]]:
        """Run a steps plan as the system does; its ``tool_results``."""
        from aios.tools.executor import Executor

        plan = [dict(s) for s in steps]
        ctx = self.runtime.context().for_session(self.session_id)
        ctx = ctx.for_run(
            f"test-{uuid.uuid4().hex[:8]}",
            threading.Event(),
            ask=lambda key, args: _answer(key, args, answers or {}),
            launch=lambda key, args: ToolResult(
                tool="launch",
                status="error",
                error="launch needs the desktop: test it with the aios_system fixture",
            ),
        )
        if self.agent.custom_tools():
            ctx = dataclasses.replace(ctx, app_url=self._serve_tools())
        with self._env():
            return Executor().run(plan, ctx)

    def audit(self) -> list[dict[str, Any]]:
        """The audit rows of this app's tool calls and steps, newest first."""
        return self.runtime.context().store.audit_rows(app=self.app_id)  # type: ignore[no-any-return]

    # ------------------------------------------------------------ internals

    def _call(
        self,
        instruction: str | None,
        request: dict[str, Any] | None,
        ctx: dict[str, Any],
        follow: bool,
        answers: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        self._last = (instruction, request, ctx)
        reply = self._round(instruction, request, ctx)
        if not follow:
            return reply
        previous: Any = None
        for _ in range(self.config.max_rounds - 1):
            steps = reply.get("steps") or []
            if not steps or steps == previous:
                break
            previous = steps
            reply = self.run_steps(reply, answers=answers)
        return reply

    def _round(
        self, instruction: str | None, request: dict[str, Any] | None, ctx: dict[str, Any]
    ) -> dict[str, Any]:
        # through JSON, as over HTTP: the app sees (and answers) only what JSON carries
        body = json.loads(json.dumps({"context": ctx, "action_request": request}, default=str))
        token = bind_session(self.session_id)
        try:
            with self._env():
                raw = self.agent.respond(instruction, body["context"], body["action_request"])
        finally:
            unbind_session(token)
        if not isinstance(raw, dict):
            raise ProtocolError(
                f"{type(self.agent).__name__}.handle returned {type(raw).__name__}; "
                "it must return a dict with view_type, data, actions"
            )
        reply = forwardable_reply(json.loads(json.dumps(raw, ensure_ascii=False, default=str)))
        if not reply.get("steps") and isinstance(reply.get("state"), dict):
            self.state = dict(reply["state"])
        return reply

    def _serve_tools(self) -> str:
        """The app's own HTTP face on a free loopback port, for its ``@tool`` steps."""
        if self._server is None:
            from werkzeug.serving import make_server

            self._server = make_server("127.0.0.1", 0, self.agent.make_app(), threaded=True)
            threading.Thread(
                target=self._server.serve_forever, name=f"aios-test-{self.app_id}", daemon=True
            ).start()
        return f"http://127.0.0.1:{self._server.server_port}"


def _answer(key: str, args: dict[str, Any], answers: Mapping[str, Any]) -> ToolResult:
    step_id = key.removeprefix("step_")
    for name in (step_id, key):
        if name in answers:
            return ToolResult(tool="ask", status="ok", result={"value": answers[name]})
    return ToolResult(
        tool="ask",
        status="error",
        error=f"no answer for the question {step_id!r} in this test (answers={{{step_id!r}: ...}})",
        code="expired",
    )


# ------------------------------------------------------------------ system


@dataclasses.dataclass
class RunningSystem:
    """The real system on a free loopback port, with copies of the given apps."""

    system: System
    server: ServerThread
    apps_dir: Path
    data_dir: Path
    token: str
    http: requests.Session = dataclasses.field(default_factory=requests.Session)

    @property
    def url(self) -> str:
        return str(self.system.url)

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.http.get(self.url + path, timeout=kw.pop("timeout", HTTP_TIMEOUT), **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> requests.Response:
        return self.http.post(
            self.url + path, json=body, timeout=kw.pop("timeout", HTTP_TIMEOUT), **kw
        )

    def _ok(self, resp: requests.Response) -> dict[str, Any]:
        if resp.status_code != 200:
            raise AssertionError(
                f"{resp.request.method} {resp.request.path_url}: HTTP {resp.status_code}: "
                f"{resp.text[:500]}"
            )
        body: dict[str, Any] = resp.json()
        return body

    def instruction(
        self, text: str, *, session_id: str | None = None, locale: str | None = None
    ) -> dict[str, Any]:
        """``POST /api/instruction``: the controller's whole reply (``results`` per app)."""
        body: dict[str, Any] = {"text": text}
        if session_id:
            body["session_id"] = session_id
        if locale:
            body["locale"] = locale
        return self._ok(self.post("/api/instruction", body))

    def open(self, app: str, *, session_id: str | None = None) -> dict[str, Any]:
        """``POST /api/apps/<app>/open``: ``{app, session_id, response}``."""
        return self._ok(
            self.post(f"/api/apps/{app}/open", {"session_id": session_id} if session_id else {})
        )

    def action(
        self,
        app: str,
        action_id: str,
        params: Mapping[str, Any] | None = None,
        *,
        session_id: str | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """``POST /api/action`` as the desktop sends it; the app's (validated) reply."""
        body: dict[str, Any] = {"app": app, "action_id": action_id, **fields}
        if params is not None:
            body["params"] = dict(params)
        if session_id:
            body["session_id"] = session_id
        reply: dict[str, Any] = self._ok(self.post("/api/action", body))["response"]
        return reply

    def stop(self) -> None:
        self.server.shutdown()
        self.system.stop()
        self.http.close()

    def __enter__(self) -> RunningSystem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_system(
    app_dirs: Iterable[Path | str],
    data_dir: Path | str,
    **config: Any,
) -> RunningSystem:
    """Start the real system with copies of ``app_dirs`` (each an app folder) in ``data_dir``.

    The copies live in ``<data_dir>/apps`` (the originals are never written);
    the system's data in ``<data_dir>/data``. ``config`` overrides settings
    (``approvals={"mode": "smart"}``...); by default no LLM is used and plans run
    without asking (``approvals.mode = "auto"``). Stop it with :meth:`RunningSystem.stop`.
    """
    from aios.system import System
    from aios.web import ServerThread, create_app

    root = Path(data_dir)
    apps_dir = root / "apps"
    apps_dir.mkdir(parents=True, exist_ok=True)
    for src in app_dirs:
        folder = Path(src).resolve()
        if not (folder / MANIFEST_FILE).is_file():
            raise FileNotFoundError(f"{folder} is not an app folder: it has no {MANIFEST_FILE}")
        shutil.copytree(folder, apps_dir / folder.name, ignore=COPY_IGNORE)
    raw: dict[str, Any] = {
        "apps_dir": str(apps_dir),
        "data_dir": str(root / "data"),
        "llm": {"api_key": ""},
        "approvals": {"mode": "auto"},
        "apps": {"autostart": "all"},  # the apps under test run from the start
    }
    for k, v in config.items():
        merge = isinstance(v, dict) and isinstance(raw.get(k), dict)
        raw[k] = {**raw[k], **v} if merge else v
    cfg = validate_config(raw)
    token = secrets.token_urlsafe(16)
    server = ServerThread(0, request_timeout=cfg.web.request_timeout)
    system = System(cfg, port=server.port, token=token)
    server.attach(create_app(system))
    server.start()
    try:
        system.start()
    except BaseException:
        server.shutdown()
        system.stop()
        raise
    running = RunningSystem(system, server, apps_dir, root, token)
    running.http.headers["Authorization"] = f"Bearer {token}"
    running.http.trust_env = False
    return running
