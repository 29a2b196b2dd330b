"""``aios_sdk.testing``: an app in-process against a temporary workdir, and the real system.

The harness must behave as the system does (the same executor and templates,
the same reply checks) while never writing into the app's folder; two apps
whose modules share names must load side by side; ``AIOS_WORKDIR`` is
honoured standalone; the ``aios_system`` fixture is the real system.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from aios.errors import ProtocolError
from aios_sdk.standalone import DEV_DB_ENV, WORKDIR_ENV, StandaloneRuntime
from aios_sdk.testing import AppHarness, RunningSystem, start_system
from tests.conftest import ROOT

TEMPLATED_APP = """
from aios_sdk import AIOSAgent, tool, text_view


class Agent(AIOSAgent):
    @tool(name="shout", desc="upper-case a text")
    def shout(self, text: str) -> str:
        return text.upper()

    def handle(self, instruction, context, action_request=None):
        results = context.get("tool_results") or {}
        if not results:
            return {
                "status": "ok", "view_type": "loading", "data": {}, "actions": [],
                "steps": self.plan_steps([
                    {"step_id": "read", "tool": "file_read", "args": {"path": "in.txt"}},
                    {"step_id": "loud", "tool": "shout",
                     "args": {"text": "{{step_read.result}}"}},
                    {"step_id": "save", "tool": "file_write",
                     "args": {"path": "out.txt", "content": "got {{step_loud.result}}!"}},
                    {"step_id": "bad", "tool": "file_read",
                     "args": {"path": "{{step_loud.result.nope}}"}, "on_error": "continue"},
                ]),
            }
        summary = {k: [v["status"], v.get("result"), v.get("error")] for k, v in results.items()}
        return text_view(__import__("json").dumps(summary, sort_keys=True))


if __name__ == "__main__":
    Agent().run()
"""

SAME_NAMES_APP = """
from lib import WORD
from aios_sdk import AIOSAgent, text_view


class MyAgent(AIOSAgent):
    def handle(self, instruction, context, action_request=None):
        return text_view(WORD)
"""


def make_app(root: Path, app_id: str, main: str, **files: str) -> Path:
    folder = root / app_id
    (folder / "workspace").mkdir(parents=True)
    manifest = {"name": app_id, "entry": "main.py", "description": app_id, "role_prompt": "test"}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "main.py").write_text(main, encoding="utf-8")
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    }


def test_the_harness_leaves_the_app_folder_untouched(tmp_path: Path) -> None:
    hello = tmp_path / "apps" / "hello"
    shutil.copytree(ROOT / "apps" / "hello", hello, ignore=shutil.ignore_patterns("tests"))
    before = snapshot(hello)
    with AppHarness(hello) as app:
        assert app.instruct("hello 世界")["data"]["content"] == "你好，世界"
        app.agent.call_tool("file_write", path="note.txt", content="x")
        assert (app.workdir / "note.txt").read_text(encoding="utf-8") == "x"
        assert not app.workdir.is_relative_to(hello)
        workdir = app.workdir
    assert snapshot(hello) == before  # no workspace file, no .aios/dev.db, no __pycache__
    assert not workdir.exists()  # the temporary workdir is gone with the harness
    assert not any(m.startswith("_aios_app_hello") for m in sys.modules)


def test_run_steps_resolves_templates_as_the_system_does(tmp_path: Path) -> None:
    folder = make_app(tmp_path / "src", "templated", TEMPLATED_APP)
    (folder / "workspace" / "in.txt").write_text("hi", encoding="utf-8")
    with AppHarness(folder) as app:
        first = app.instruct("go")
        assert [s["step_id"] for s in first["steps"]] == ["read", "loud", "save", "bad"]
        final = app.run_steps(first)
        written = (app.workdir / "out.txt").read_text(encoding="utf-8")
    assert written == "got HI!"
    system = start_system([folder], tmp_path / "sys")
    try:
        (system.apps_dir / "templated" / "workspace" / "in.txt").write_text("hi", encoding="utf-8")
        over_http = system.open("templated")["response"]
    finally:
        system.stop()
    # the same plan through the real controller: the same results, the same template error
    assert json.loads(final["data"]["content"]) == json.loads(over_http["data"]["content"])
    bad = json.loads(final["data"]["content"])["step_bad"]
    assert bad[0] == "error" and "step_loud.result is str" in bad[2]


def test_two_apps_with_the_same_class_and_module_names_load_side_by_side(tmp_path: Path) -> None:
    a = make_app(tmp_path, "app_a", SAME_NAMES_APP, **{"lib.py": "WORD = 'alpha'\n"})
    b = make_app(tmp_path, "app_b", SAME_NAMES_APP, **{"lib.py": "WORD = 'beta'\n"})
    with AppHarness(a) as first, AppHarness(b) as second:
        assert first.instruct("x")["data"]["content"] == "alpha"
        assert second.instruct("x")["data"]["content"] == "beta"
        assert type(first.agent) is not type(second.agent)
        assert first.agent.app_dir() == a.resolve() and second.agent.app_dir() == b.resolve()
    assert "lib" not in sys.modules and str(a) not in sys.path


def test_a_reply_the_system_would_refuse_is_an_error_naming_the_field(tmp_path: Path) -> None:
    bad = "from aios_sdk import AIOSAgent\nclass A(AIOSAgent):\n"
    bad += "    def handle(self, i, c, a=None):\n"
    bad += "        return {'status': 'ok', 'view_type': 'nope', 'data': {}, 'actions': []}\n"
    with AppHarness(make_app(tmp_path, "bad", bad)) as app, pytest.raises(ProtocolError) as err:
        app.instruct("x")
    assert str(err.value).startswith("invalid reply: view_type")


ECHO_APP = """
import json
from aios_sdk import AIOSAgent, text_view


class Echo(AIOSAgent):
    def handle(self, instruction, context, action_request=None):
        return text_view(json.dumps(context, sort_keys=True), state={"seen": instruction})
"""


def test_the_context_has_the_systems_fields_routed_and_the_saved_state(tmp_path: Path) -> None:
    folder = make_app(tmp_path, "echo", ECHO_APP)
    raw = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    (folder / "manifest.json").write_text(json.dumps({**raw, "keywords": ["echo"]}), "utf-8")
    with AppHarness(folder, locale="en") as app:
        first = json.loads(app.instruct("echo hi")["data"]["content"])
        again = json.loads(app.action("x", {"id": 1})["data"]["content"])
    assert first["routed"]["matched"] == ["echo"] and first["routed"]["source"] == "offline"
    assert first["locale"] == "en" and first["app"] == "echo" and first["role"] == "test"
    assert {"ask", "launch", "file_read"} <= set(first["available_tools"])
    assert again["routed"] is None and again["cwd_state"]["seen"] == "echo hi"


def test_standalone_honours_aios_workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_app(tmp_path / "src", "plain", SAME_NAMES_APP, **{"lib.py": "WORD = ''\n"})
    monkeypatch.setenv(WORKDIR_ENV, str(tmp_path / "work"))
    monkeypatch.delenv(DEV_DB_ENV, raising=False)
    runtime = StandaloneRuntime(folder, "plain")
    try:
        runtime.call_tool("file_write", {"path": "a.txt", "content": "x"}, None)
        ctx: Any = runtime.context()
        db = Path(ctx.store.path)
    finally:
        runtime.close()
    assert (tmp_path / "work" / "a.txt").read_text(encoding="utf-8") == "x"
    assert db == tmp_path / ".aios" / "work.dev.db" and db.is_file()
    assert os.listdir(folder / "workspace") == [] and not (folder / ".aios").exists()


@pytest.mark.aios_apps("../../apps/hello")
def test_the_aios_system_fixture_answers_an_instruction(aios_system: RunningSystem) -> None:
    reply = aios_system.instruction("hello Carol")  # English: the app answers in English
    response = reply["results"][0]["response"]
    assert response["data"]["content"] == "你好，Carol"  # the greeting file's words
    assert response["message"] == "Replied"
    again = aios_system.action("hello", "again", session_id=reply["session_id"])
    assert again["data"]["content"] == "你好，Carol"
    assert again["message"] == "已回复"  # a click: the UI language
    # a copy runs: the bundled folder is not the system's
    assert aios_system.apps_dir != ROOT / "apps"
