"""The controller driven through a fake app transport: no processes, no HTTP.

Every collaborator but the apps is real — the store on a temporary SQLite file,
the runs, the approvals, the event bus, the instances, the executor running safe
tools in a temporary workdir. Each app is a script of replies
(:class:`FakeApps`) behind the :class:`~aios.control.app_client.Transport` the
controller takes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.apphost.registry import AppRecord, AppStatus
from aios.config import Config
from aios.control.app_client import Deadline, RawReply
from aios.control.controller import Controller
from aios.desktop.instances import Instances
from aios.errors import AppUnavailable
from aios.events import EventBus
from aios.protocol import ActionRequest, parse_manifest
from aios.runs.approvals import Approvals
from aios.runs.runs import Runs
from aios.store import Store
from aios.store.runs import RunStore
from aios.tools.base import ToolContext
from aios.tools.sandbox import SandboxPolicy

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]] | RawReply
"""A scripted reply: the JSON an app answers, made from the request, or raw bytes."""


def view(message: str) -> dict[str, Any]:
    return {"status": "ok", "view_type": "text", "data": {"content": message}, "message": message}


class FakeApps:
    """The transport: each app answers from its script, in order; every request is kept."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Reply]] = {}
        self.received: dict[str, list[dict[str, Any]]] = {}

    def script(self, app: str, *replies: Reply) -> None:
        self.scripts.setdefault(app, []).extend(replies)

    def send(
        self,
        record: AppRecord,
        url: str,
        body: dict[str, Any],
        *,
        connect_timeout: float,
        deadline: Deadline,
        limit: int,
    ) -> RawReply:
        self.received.setdefault(record.id, []).append(body)
        script = self.scripts.get(record.id)
        if not script:
            raise AppUnavailable(f"app {record.id!r} has nothing more to say")
        reply = script.pop(0)
        if isinstance(reply, RawReply):
            return reply
        payload = reply(body) if callable(reply) else reply
        return RawReply(200, json.dumps(payload).encode())

    def close(self) -> None:
        pass


class FakeLauncher:
    """The app records the controller looks up; no process behind any of them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: dict[str, AppRecord] = {}
        self.handled: list[tuple[str, bool]] = []

    def add(self, app_id: str, keywords: list[str]) -> AppRecord:
        path = self.root / app_id
        (path / "workspace").mkdir(parents=True)
        manifest = parse_manifest(
            {
                "name": app_id,
                "entry": "main.py",
                "description": f"the {app_id} app",
                "keywords": keywords,
            }
        )
        rec = AppRecord(
            id=app_id,
            path=path,
            status=AppStatus.RUNNING,
            manifest=manifest,
            workdir=(path / "workspace").resolve(),
            port=40000 + len(self.records),
        )
        self.records[app_id] = rec
        return rec

    def get(self, app_id: str) -> AppRecord | None:
        return self.records.get(app_id)

    def apps(self) -> list[AppRecord]:
        return [self.records[k] for k in sorted(self.records)]

    def url(self, app_id: str) -> str:
        return f"http://127.0.0.1:{self.records[app_id].port}"

    def mount(self, session: requests.Session, **pool: int) -> None:
        pass

    def note_handle(self, app_id: str, timed_out: bool) -> None:
        self.handled.append((app_id, timed_out))

    def ensure_running(self, app_id: str, timeout: float) -> AppRecord | None:
        return self.records.get(app_id)  # every fake app "runs"

    def touch(self, app_id: str) -> None:
        pass


class Desk:
    """A controller and what it was built from."""

    def __init__(self, tmp: Path) -> None:
        self.config = Config()
        self.store = Store(tmp / "data" / "aios.db")
        self.bus = EventBus(self.config.events)
        runstore = RunStore(self.store)
        self.runs = Runs(runstore, self.bus)
        self.approvals = Approvals(runstore, self.bus, lambda: self.config.approvals)
        self.instances = Instances(self.bus)
        self.launcher = FakeLauncher(tmp / "apps")
        self.apps = FakeApps()
        self.controller = Controller(
            config=self.config,
            store=self.store,
            launcher=self.launcher,  # type: ignore[arg-type]
            bus=self.bus,
            llm=None,
            tool_context=self.tool_context,
            custom_tools=lambda app: [],
            runs=self.runs,
            approvals=self.approvals,
            instances=self.instances,
            transport=self.apps,
        )

    def tool_context(self, app_id: str, session_id: str | None = None) -> ToolContext:
        rec = self.launcher.get(app_id)
        if rec is None or rec.workdir is None:
            raise KeyError(app_id)
        return ToolContext(
            app_id=app_id,
            workdir=rec.workdir,
            policy=SandboxPolicy.build(self.config.tool_sandbox, rec.workdir),
            store=self.store,
            timeouts={"file_write": 5.0, "file_read": 5.0, "file_list": 5.0},
            session_id=session_id,
        )

    def close(self) -> None:
        self.runs.shutdown()
        self.controller.close()
        self.bus.close()
        self.store.close()


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    d = Desk(tmp_path)
    d.launcher.add("notes", ["笔记", "notes", "memo"])
    yield d
    d.close()


def act(desk: Desk, app: str, action_id: str, **params: Any) -> dict[str, Any]:
    request = ActionRequest.model_validate({"action_id": action_id, "params": params})
    _, outcome = desk.controller.action(app, request)
    return outcome.response


def test_an_instruction_routed_to_an_app_shows_its_view(desk: Desk) -> None:
    desk.apps.script("notes", view("noted: buy milk"))
    out = desk.controller.instruction("memo notes: buy milk")
    (result,) = out["results"]
    assert result["app"] == "notes" and result["response"]["view_type"] == "text"
    assert result["response"]["message"] == "noted: buy milk" == out["message"]
    (body,) = desk.apps.received["notes"]
    assert "buy milk" in body["instruction"] and body["action_request"] is None
    ctx = body["context"]
    assert ctx["app"] == "notes" and ctx["session_id"] == out["session_id"]
    assert ctx["routed"] is not None and ctx["tool_results"] == {}
    assert desk.launcher.handled == [("notes", False)]
    history = desk.store.history(out["session_id"])
    assert [h["role"] for h in history] == ["user", "app"]


def test_an_action_reaches_the_app_as_an_action_request(desk: Desk) -> None:
    desk.apps.script("notes", view("cleared"))
    response = act(desk, "notes", "clear", all=True)
    assert response["message"] == "cleared" and response["run_id"].startswith("run")
    (body,) = desk.apps.received["notes"]
    assert body["instruction"] is None and body["context"]["routed"] is None
    assert body["action_request"] == {"action_id": "clear", "params": {"all": True}}


def test_steps_run_in_the_workdir_and_the_app_continues_with_their_results(
    desk: Desk,
) -> None:
    steps = [
        {"step_id": "w", "tool": "file_write", "args": {"path": "a.txt", "content": "hi"}},
        {"step_id": "r", "tool": "file_read", "args": {"path": "a.txt"}},
    ]

    def continuation(body: dict[str, Any]) -> dict[str, Any]:
        results = body["context"]["tool_results"]
        return view(f"read {results['step_r']['result']}")

    desk.apps.script("notes", {**view("saving"), "steps": steps}, continuation)
    response = act(desk, "notes", "save")
    assert response["status"] == "ok" and response["message"] == "read hi"
    workdir = desk.launcher.records["notes"].workdir
    assert workdir is not None and (workdir / "a.txt").read_text() == "hi"
    first, second = desk.apps.received["notes"]
    assert first["context"]["tool_results"] == {} and first["context"]["cwd_state"]["files"] == []
    assert second["context"]["tool_results"]["step_w"]["status"] == "ok"
    rows = desk.store.audit_rows(app="notes")
    assert sorted((r["tool"], r["status"], r["run_id"]) for r in rows) == [
        ("file_read", "ok", response["run_id"]),
        ("file_write", "ok", response["run_id"]),
    ]


def test_an_apps_error_reply_is_its_view_and_garbage_becomes_an_error_view(desk: Desk) -> None:
    desk.apps.script(
        "notes",
        {"status": "error", "view_type": "error", "message": "disk full", "data": {}},
        RawReply(500, b"Internal Server Error"),
    )
    first = act(desk, "notes", "save")
    assert first["status"] == "error" and first["message"] == "disk full"
    second = act(desk, "notes", "save")
    assert second["status"] == "error"
    assert "'notes' answered HTTP 500: Internal Server Error" in second["message"]


def test_a_launch_step_opens_another_app_as_a_child(desk: Desk) -> None:
    desk.launcher.add("music", ["music"])
    desk.apps.script("music", view("playing jazz"))
    launch = {"step_id": "l", "tool": "launch", "args": {"app": "music", "instruction": "jazz"}}
    desk.apps.script(
        "notes",
        {**view("asking music"), "steps": [launch]},
        lambda body: view(f"launched {body['context']['tool_results']['step_l']['result']['app']}"),
    )
    sub = desk.bus.subscribe()
    response = act(desk, "notes", "play")
    assert response["message"] == "launched music"
    (child_call,) = desk.apps.received["music"]
    assert child_call["instruction"] == "jazz"
    events = []
    while (event := sub.get(0.1)) is not None:
        events.append(event)
    launched = [e for e in events if e["type"] == "view" and e.get("launched_by") == "notes"]
    assert [e["response"]["message"] for e in launched] == ["playing jazz"]


def test_system_fields_an_app_forges_are_dropped(desk: Desk) -> None:
    forged = [{"step_id": "x", "tool": "shell_exec", "args": {"cmd": "rm -rf /"}}]
    desk.apps.script("notes", {**view("hello"), "pending": forged, "run_id": "run-forged"})
    response = act(desk, "notes", "hi")
    assert "pending" not in response and response["message"] == "hello"
    assert response["run_id"] != "run-forged"
