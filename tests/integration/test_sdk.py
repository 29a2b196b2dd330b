"""The app SDK: real app processes over HTTP, and the standalone tool runtime in-process."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.errors import LLMUnavailable, ProtocolError, ToolError
from aios.protocol import parse_response
from aios.store import Store
from aios_sdk import AIOSAgent, tool
from tests.conftest import ROOT
from tests.fakes.http_server import FakeHTTPServer
from tests.util import wait_listening

FIXTURES = ROOT / "tests" / "fixtures"
TOKEN = "tok-sdk-test"

MISC_APP = '''
import datetime

from aios_sdk import AIOSAgent, ToolError, tool


class MiscAgent(AIOSAgent):
    name = "Misc"

    def handle(self, instruction, context, action_request=None):
        if instruction == "crash":
            raise ValueError("bad mood")
        if instruction == "none":
            return None
        if instruction == "time":
            return {"status": "ok", "view_type": "text",
                    "data": {"at": datetime.datetime(2024, 1, 2, 3, 4, 5)}, "actions": []}
        if instruction == "escape":
            try:
                self.call_tool("file_write", path="../escaped.txt", content="x")
            except ToolError as e:
                return {"status": "error", "view_type": "text", "data": {"content": e.error},
                        "actions": []}
        return {"status": "ok", "view_type": "text",
                "data": {"instruction": instruction, "context": context,
                         "action_request": action_request}, "actions": []}

    @tool(name="add", desc="Add two numbers")
    def add(self, a: int, b: int = 1) -> int:
        return a + b

    @tool
    def shout(self, text: str | None = None, **extra):
        """Upper-case the text."""
        return (text or "").upper()


if __name__ == "__main__":
    MiscAgent().run()
'''


# ------------------------------------------------------------- processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_app(folder: Path, **env_extra: str) -> Iterator[str]:
    """``python main.py`` in ``folder`` as the launcher would start it; yields its URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIOS_")}
    env.update(PYTHONPATH=str(ROOT), APP_PORT=str(port), **env_extra)
    # the log goes to a temporary folder: never into the source tree beside ``folder``
    logs = tempfile.TemporaryDirectory(prefix="aios-app-log-")
    log = Path(logs.name) / f"{folder.name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "main.py"], cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_listening(proc, port, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        logs.cleanup()


def post(url: str, body: Any, **kw: Any) -> requests.Response:
    return requests.post(url, json=body, timeout=10, **kw)


@pytest.fixture
def hello(tmp_path: Path) -> Path:
    folder = tmp_path / "hello"
    shutil.copytree(FIXTURES / "spec_hello", folder)
    return folder


@pytest.fixture(scope="module")
def misc_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("apps") / "misc"
    folder.mkdir()
    (folder / "main.py").write_text(MISC_APP, encoding="utf-8")
    with running_app(folder, AIOS_APP_TOKEN=TOKEN) as url:
        yield url, folder


# ------------------------------------------------------------ spec apps


def test_spec_hello_app_answers_through_call_tool_standalone(hello: Path) -> None:
    with running_app(hello) as url:
        assert requests.get(f"{url}/health", timeout=5).json() == {
            "status": "ok",
            "app": "Hello小AI",
        }
        r = post(f"{url}/handle", {"instruction": "world", "context": {}, "session_id": "s1"})
        assert r.status_code == 200
        reply = parse_response(r.json())
        assert reply.data == {"content": "你好，world"}
        assert [a.action_id for a in reply.actions] == ["again"]
    db = Store(hello / ".aios" / "dev.db")
    try:
        rows = db.audit_rows()
    finally:
        db.close()
    assert [(r["app"], r["tool"], r["status"], r["session_id"]) for r in rows] == [
        ("hello", "file_read", "ok", "s1")
    ]
    assert not (hello / "workspace" / ".aios").exists()  # the audit is outside the sandbox


def test_exception_in_handle_is_an_error_view_and_the_app_keeps_serving(hello: Path) -> None:
    greeting = hello / "workspace" / "greeting.txt"
    greeting.unlink()
    manifest = json.loads((hello / "manifest.json").read_text(encoding="utf-8"))
    manifest["name"] = {"zh-CN": "Hello小AI", "en": "Hello"}
    (hello / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with running_app(hello) as url:
        r = post(f"{url}/handle", {"instruction": "world", "context": {}})
        assert r.status_code == 200
        body = r.json()
        assert (body["status"], body["view_type"], body["actions"]) == ("error", "error", [])
        assert body["data"]["message"].startswith("ToolFailed: ")
        assert "greeting.txt" in body["data"]["message"]
        assert body["message"] == body["data"]["message"]
        assert body["data"]["title"] == "Hello小AI出错了"  # the request's locale (zh-CN)
        parse_response(body)  # the system accepts it as a reply
        english = post(f"{url}/handle", {"instruction": "world", "context": {"locale": "en"}})
        assert english.json()["data"]["title"] == "Hello ran into an error"
        greeting.write_text("嗨", encoding="utf-8")
        r = post(f"{url}/handle", {"instruction": "again", "context": {}})
        assert r.json()["data"] == {"content": "嗨，again"}


def test_spec_template_runs_unchanged() -> None:
    folder = FIXTURES / "spec_template"
    before = sorted(p.name for p in folder.iterdir())
    beside = sorted(p.name for p in FIXTURES.iterdir())
    with running_app(folder) as url:
        r = post(
            f"{url}/handle",
            {
                "instruction": None,
                "context": {"role": "...", "workdir": "/w", "available_tools": []},
                "action_request": {"action_id": "refresh", "params": {}},
            },
        )
        reply = parse_response(r.json())
    assert reply.view_type == "list"
    assert [(s.step_id, s.tool) for s in reply.steps] == [(1, "http_request")]
    assert sorted(p.name for p in folder.iterdir()) == before
    # nothing is written into the source tree beside it either (no spec_template.log)
    assert sorted(p.name for p in FIXTURES.iterdir()) == beside
    assert not list(FIXTURES.glob("*.log"))


# ------------------------------------------------------------ serving


def test_handle_receives_plain_dicts(misc_app: tuple[str, Path]) -> None:
    url, _ = misc_app
    body = {
        "instruction": "hi",
        "context": {"app": "misc", "tool_results": {}},
        "action_request": {"action_id": "go", "params": {"x": 1}},
        "session_id": "s",
    }
    data = post(f"{url}/handle", body).json()["data"]
    assert data == {
        "instruction": "hi",
        "context": body["context"],
        "action_request": body["action_request"],
    }
    data = post(f"{url}/handle", {"instruction": "hi"}).json()["data"]
    assert data["context"] == {} and data["action_request"] is None


@pytest.mark.parametrize(
    ("instruction", "problem"),
    [
        ("crash", "ValueError: bad mood"),
        ("none", "MiscAgent.handle returned None (no return statement?)"),
    ],
)
def test_bad_handle_outcomes_become_error_replies(
    misc_app: tuple[str, Path], instruction: str, problem: str
) -> None:
    url, _ = misc_app
    r = post(f"{url}/handle", {"instruction": instruction, "context": {}})
    assert r.status_code == 200
    assert r.json()["status"] == "error"
    assert problem in r.json()["data"]["message"]
    assert post(f"{url}/handle", {"instruction": "ok"}).json()["status"] == "ok"


def test_reply_with_a_datetime_is_still_json(misc_app: tuple[str, Path]) -> None:
    url, _ = misc_app
    r = post(f"{url}/handle", {"instruction": "time"})
    assert r.status_code == 200
    assert r.json()["data"] == {"at": "2024-01-02 03:04:05"}


def test_handle_needs_a_json_object(misc_app: tuple[str, Path]) -> None:
    url, _ = misc_app
    r = requests.post(
        f"{url}/handle", data="not json", timeout=5, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400
    assert "must be a JSON object" in r.json()["message"]


def test_app_refuses_a_path_outside_its_workspace(misc_app: tuple[str, Path]) -> None:
    url, folder = misc_app
    r = post(f"{url}/handle", {"instruction": "escape"})
    assert "path confinement" in r.json()["data"]["content"]
    assert not (folder / "escaped.txt").exists()
    assert (folder / "workspace").is_dir()  # created on first use


def test_tools_listing_describes_parameters(misc_app: tuple[str, Path]) -> None:
    url, _ = misc_app
    listing = requests.get(f"{url}/tools", timeout=5).json()
    assert listing == [
        {
            "name": "add",
            "description": "Add two numbers",
            "parameters": {
                "type": "object",
                "required": ["a"],
                "additionalProperties": False,
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 1}},
            },
        },
        {
            "name": "shout",
            "description": "Upper-case the text.",
            "parameters": {
                "type": "object",
                "required": [],
                "additionalProperties": True,
                "properties": {"text": {"type": "string", "default": None}},
            },
        },
    ]


def test_custom_tools_need_the_app_token(misc_app: tuple[str, Path]) -> None:
    url, _ = misc_app
    for headers in ({}, {"X-AIOS-App-Token": "wrong"}):
        r = post(f"{url}/tools/add", {"a": 1}, headers=headers)
        assert r.status_code == 403
        assert "X-AIOS-App-Token" in r.json()["error"]
    ok = {"X-AIOS-App-Token": TOKEN}
    assert post(f"{url}/tools/add", {"a": 2, "b": 5}, headers=ok).json() == {
        "status": "ok",
        "result": 7,
    }
    r = post(f"{url}/tools/add", {"c": 2}, headers=ok)
    assert r.json()["status"] == "error"
    assert r.json()["error"].startswith("bad arguments for add: ")
    r = post(f"{url}/tools/nope", {}, headers=ok)
    assert r.status_code == 404
    assert r.json()["error"] == "unknown tool 'nope'; this app's custom tools: add, shout"


# ------------------------------------------------------- in-process agent


AGENT_MODULE = """
from aios_sdk import AIOSAgent, tool


class Dev(AIOSAgent):
    name = "Dev"

    @tool(desc="Say hello")
    def hello(self, who: str) -> str:
        return "hello " + who
"""


@pytest.fixture
def dev_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An agent class defined in a module under tmp_path, so its app folder is tmp_path/dev."""
    monkeypatch.delenv("AIOS_SYSTEM_URL", raising=False)
    monkeypatch.delenv("AIOS_APP_TOKEN", raising=False)
    monkeypatch.delenv("AIOS_APP_ID", raising=False)
    folder = tmp_path / "dev"
    folder.mkdir()
    (folder / "agent_mod.py").write_text(AGENT_MODULE, encoding="utf-8")
    name = f"aios_sdk_test_{abs(hash(str(folder)))}"
    spec = importlib.util.spec_from_file_location(name, folder / "agent_mod.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    agent = module.Dev()
    yield agent
    backend = agent.__dict__.get("_aios_backend")
    if backend is not None:
        backend.close()
    del sys.modules[name]


def test_standalone_tools_run_in_the_app_workspace(dev_agent: Any, tmp_path: Path) -> None:
    folder = tmp_path / "dev"
    assert dev_agent.call_tool("file_write", path="workspace/n.txt", content="1") == {
        "path": "workspace/n.txt",
        "size": 1,
    }
    assert dev_agent.call_tool("file_read", path="n.txt") == "1"
    assert dev_agent.call_tool("cache_set", key="k", value={"a": 1})["stored"] is True
    assert dev_agent.call_tool("cache_get", key="k") == {"a": 1}
    assert dev_agent.call_tool("hello", who="you") == "hello you"  # its own @tool, in-process
    assert (folder / "workspace" / "n.txt").read_text() == "1"
    db = Store(folder / ".aios" / "dev.db")
    try:
        tools = [(r["tool"], r["status"]) for r in reversed(db.audit_rows())]
    finally:
        db.close()
    assert tools == [
        ("file_write", "ok"),
        ("file_read", "ok"),
        ("cache_set", "ok"),
        ("cache_get", "ok"),
    ]


def test_standalone_refuses_paths_outside_the_workspace(dev_agent: Any, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="path confinement") as info:
        dev_agent.call_tool("file_write", path="../main_copy.py", content="pwned")
    assert "resolves outside" in info.value.error
    assert not (tmp_path / "dev" / "main_copy.py").exists()
    with pytest.raises(ToolError, match="path confinement"):
        dev_agent.call_tool("file_read", path="../agent_mod.py")


def test_tool_error_carries_error_result_and_meta(dev_agent: Any) -> None:
    with FakeHTTPServer() as server:
        with pytest.raises(ToolError) as info:
            dev_agent.call_tool("http_request", method="GET", url=server.url("/status/404"))
    assert info.value.error == "HTTP 404"
    assert info.value.meta["status_code"] == 404
    assert info.value.result is not None  # the body is kept


def test_manifest_beside_the_app_narrows_the_sandbox(dev_agent: Any, tmp_path: Path) -> None:
    (tmp_path / "dev" / "manifest.json").write_text(
        json.dumps(
            {
                "name": "Dev",
                "entry": "agent_mod.py",
                "role_prompt": "r",
                "http_domain_whitelist": ["example.com"],
            }
        ),
        encoding="utf-8",
    )
    with FakeHTTPServer() as server:
        with pytest.raises(ToolError, match="not in the whitelist"):
            dev_agent.call_tool("http_request", method="GET", url=server.url("/json"))
        assert server.paths() == []


def test_an_unusable_manifest_is_named(dev_agent: Any, tmp_path: Path) -> None:
    (tmp_path / "dev" / "manifest.json").write_text('{"name": "Dev"', encoding="utf-8")
    with pytest.raises(ToolError, match=r"manifest\.json is unusable"):
        dev_agent.call_tool("file_list", path=".")
    assert not (tmp_path / "dev" / "workspace").exists()


def test_standalone_llm_is_unavailable_and_push_only_logs(dev_agent: Any) -> None:
    with pytest.raises(LLMUnavailable, match="no LLM configured"):
        dev_agent.llm([{"role": "user", "content": "hi"}])
    assert dev_agent.push({"progress": 0.3}) is True
    with pytest.raises(ProtocolError, match="push expects a dict"):
        dev_agent.push("progress")


# -------------------------------------------------------------- @tool


def test_tool_names_must_be_unique_and_not_atomic() -> None:
    with pytest.raises(TypeError, match="'file_read' is an atomic tool"):

        class Shadow(AIOSAgent):
            @tool(name="file_read")
            def mine(self) -> None: ...

    with pytest.raises(TypeError, match="'x' is registered twice"):

        class Twice(AIOSAgent):
            @tool(name="x")
            def one(self) -> None: ...

            @tool(name="x")
            def two(self) -> None: ...

    with pytest.raises(ValueError, match="must be an identifier"):
        tool(name="no spaces")


def test_tools_are_inherited_and_the_decorator_returns_the_function() -> None:
    def raw(self: Any, q: str) -> str:
        return q

    marked = tool(name="search", desc="find")(raw)
    assert marked is raw

    class Base(AIOSAgent):
        search = marked

    class Child(Base):
        @tool()
        def more(self) -> None: ...

    assert sorted(Child.custom_tools()) == ["more", "search"]
    assert Child.custom_tools()["search"].description == "find"
    assert Base.custom_tools().keys() == {"search"}
    assert AIOSAgent.custom_tools() == {}


# ---------------------------------------------------------- plan_steps


class Planner(AIOSAgent):
    @tool()
    def mine(self) -> None: ...


def test_plan_steps_numbers_and_validates() -> None:
    agent = Planner()
    steps = agent.plan_steps(
        [
            {"tool": "http_request", "args": {"url": "https://x.example"}},
            {
                "tool": "file_write",
                "args": {"path": "a", "content": "{{step_1.result}}"},
                "on_error": "continue",
                "timeout": 2,
            },
            {"tool": "mine"},
        ]
    )
    assert steps == [
        {"step_id": 1, "tool": "http_request", "args": {"url": "https://x.example"}},
        {
            "step_id": 2,
            "tool": "file_write",
            "args": {"path": "a", "content": "{{step_1.result}}"},
            "on_error": "continue",
            "timeout": 2,
        },
        {"step_id": 3, "tool": "mine", "args": {}},
    ]
    reply = parse_response({"status": "ok", "view_type": "loading", "steps": steps})
    assert reply.steps[2].tool == "mine"


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        ("file_read", "expects a list of steps, got str"),
        ([{"tool": "file_read", "argz": {}}], "argz: Extra inputs are not permitted"),
        (
            [{"step_id": 1, "tool": "file_read"}, {"step_id": 1, "tool": "file_list"}],
            "step_id 1 is used twice",
        ),
        ([{"tool": "rm -rf"}], "invalid steps: 0.tool: "),
        ([{"tool": "teleport"}], "step 1 uses unknown tool 'teleport'"),
        ([{"tool": "file_read", "on_error": "ignore"}], "on_error"),
    ],
)
def test_plan_steps_rejects_bad_plans(steps: Any, problem: str) -> None:
    with pytest.raises(ProtocolError) as info:
        Planner().plan_steps(steps)
    assert problem in str(info.value)


# ------------------------------------------------------------ system mode

SYS_APP = """
from aios_sdk import AIOSAgent, LLMUnavailable, ToolError


class SysDemo(AIOSAgent):
    name = "SysDemo"

    def handle(self, instruction, context, action_request=None):
        out = {"write": self.call_tool("file_write", path="note.txt", content="via system"),
               "read": self.call_tool("file_read", path="workspace/note.txt")}
        for key, args in (("escape", {"path": "../../escaped.txt", "content": "x"}),
                          ("missing", {"path": "missing.txt"})):
            tool = "file_write" if "content" in args else "file_read"
            try:
                self.call_tool(tool, **args)
            except ToolError as e:
                out[key] = [type(e).__name__, e.error]
        try:
            self.llm([{"role": "user", "content": "hi"}])
        except LLMUnavailable as e:
            out["llm"] = str(e)
        out["push"] = self.push({"progress": 0.5})
        return {"status": "ok", "view_type": "text", "data": out, "actions": []}


if __name__ == "__main__":
    SysDemo().run()
"""


def test_system_mode_call_tool_goes_through_the_system(make_system: Any, tmp_path: Path) -> None:
    from aios.errors import ToolRefused
    from aios_sdk.client import SystemClient

    apps = tmp_path / "apps"
    (apps / "sysdemo" / "workspace").mkdir(parents=True)
    (apps / "sysdemo" / "main.py").write_text(SYS_APP, encoding="utf-8")
    (apps / "sysdemo" / "manifest.json").write_text(
        json.dumps({"name": "SysDemo", "entry": "main.py", "role_prompt": "demo"}), encoding="utf-8"
    )
    shutil.copytree(FIXTURES / "spec_hello", apps / "hello")
    running = make_system(apps_dir=apps)

    opened = running.open("sysdemo")
    data = opened["response"]["data"]
    assert data["write"] == {"path": "workspace/note.txt", "size": 10}
    assert data["read"] == "via system"
    assert data["escape"][0] == "ToolFailed" and "path confinement" in data["escape"][1]
    assert data["missing"] == ["ToolFailed", "file not found: workspace/missing.txt"]
    assert "no LLM configured" in data["llm"]
    assert data["push"] is True
    assert (apps / "sysdemo" / "workspace" / "note.txt").read_text() == "via system"
    assert not (tmp_path / "escaped.txt").exists() and not (apps / "escaped.txt").exists()
    assert not (apps / "sysdemo" / ".aios").exists()  # not standalone: the system audits
    rows = list(reversed(running.system.store.audit_rows(app="sysdemo")))
    assert [(r["tool"], r["status"]) for r in rows] == [
        ("file_write", "ok"),
        ("file_read", "ok"),
        ("file_write", "denied"),
        ("file_read", "error"),
    ]
    assert {r["session_id"] for r in rows} == {opened["session_id"]}

    hello_reply = running.open("hello")["response"]
    assert hello_reply["data"]["content"].startswith("你好，")
    assert [r["tool"] for r in running.system.store.audit_rows(app="hello")][:1] == ["file_read"]

    with pytest.raises(ToolRefused, match="app token missing or invalid"):
        SystemClient(running.url, "not-a-token").call_tool("file_read", {"path": "x"}, None)
