"""The steps executor: templates, stop/continue, timeouts, audit, custom tools of the app."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.errors import ProtocolError
from aios.protocol import Step, ToolResult
from aios.store import Store
from aios.tools import ToolContext
from aios.tools.executor import Executor
from tests.conftest import ROOT, make_ctx
from tests.util import wait_listening

TOKEN = "tok-executor-test"

TOOL_APP = """
from aios_sdk import AIOSAgent, ToolError, current_session_id, tool


class ToolApp(AIOSAgent):
    name = "Tools demo"

    def handle(self, instruction, context, action_request=None):
        return {"status": "ok", "view_type": "text", "data": {"content": "hi"}, "actions": []}

    @tool(name="double", desc="Double a number")
    def double(self, n: int) -> int:
        return n * 2

    @tool(desc="Fails on purpose")
    def explode(self):
        raise RuntimeError("boom")

    @tool()
    def refuse(self):
        raise ToolError("not today", meta={"why": "policy"})

    @tool()
    def whoami(self):
        return {"session": current_session_id()}


if __name__ == "__main__":
    ToolApp().run()
"""


@pytest.fixture
def ex() -> Executor:
    return Executor()


@pytest.fixture
def c(workdir: Path, store: Store) -> ToolContext:
    return make_ctx(workdir, store, session_id="sess_exec")


def audit(store: Store) -> list[dict[str, Any]]:
    return list(reversed(store.audit_rows(app="demo")))


# ------------------------------------------------------------------ shape


def test_tool_results_have_exactly_the_documented_shape(
    ex: Executor, c: ToolContext, workdir: Path
) -> None:
    out = ex.run(
        [
            {
                "step_id": 1,
                "tool": "file_write",
                "args": {"path": "workspace/a.txt", "content": "hello"},
            },
            {"step_id": 2, "tool": "file_read", "args": {"path": "a.txt"}},
            {"step_id": 3, "tool": "file_read", "args": {"path": "nope.txt"}},
        ],
        c,
    )
    assert list(out) == ["step_1", "step_2", "step_3"]
    assert set(out["step_2"]) == {"tool", "status", "result", "meta", "duration_ms"}
    assert (
        {"tool", "status", "result", "error", "duration_ms"}
        <= set(out["step_3"])
        <= {"tool", "status", "result", "error", "meta", "duration_ms"}
    )
    assert out["step_1"]["tool"] == "file_write"
    assert out["step_1"]["status"] == "ok"
    assert out["step_1"]["result"]["size"] == 5
    assert out["step_2"]["result"] == "hello"
    assert out["step_2"]["meta"]["path"] == "workspace/a.txt"
    assert "error" not in out["step_2"]
    assert out["step_3"]["status"] == "error"
    assert "result" in out["step_3"] and out["step_3"]["result"] is None
    assert "nope.txt" in out["step_3"]["error"]
    assert all(isinstance(e["duration_ms"], float) for e in out.values())
    json.dumps(out)  # it is sent to the app as JSON
    assert (workdir / "a.txt").read_text() == "hello"


def test_steps_may_be_step_models_and_string_ids(ex: Executor, c: ToolContext) -> None:
    out = ex.run(
        [
            Step(step_id="save", tool="cache_set", args={"key": "k", "value": [1, 2]}),
            Step(step_id="load", tool="cache_get", args={"key": "k"}),
        ],
        c,
    )
    assert list(out) == ["step_save", "step_load"]
    assert out["step_load"]["result"] == [1, 2]


def test_an_invalid_plan_raises_and_runs_nothing(
    ex: Executor, c: ToolContext, store: Store, workdir: Path
) -> None:
    with pytest.raises(ProtocolError, match="step_id 1 is used twice"):
        ex.run(
            [
                {"step_id": 1, "tool": "file_write", "args": {"path": "x", "content": "1"}},
                {"step_id": 1, "tool": "file_write", "args": {"path": "y", "content": "2"}},
            ],
            c,
        )
    with pytest.raises(ProtocolError, match=r"invalid steps: 0\.tool: "):
        ex.run([{"step_id": 1, "tool": "../evil", "args": {}}], c)
    assert audit(store) == []
    assert list(workdir.iterdir()) == []


# -------------------------------------------------------------- templates


def _seed(value: Any) -> list[dict[str, Any]]:
    return [
        {"step_id": 1, "tool": "cache_set", "args": {"key": "seed", "value": value}},
        {"step_id": 2, "tool": "cache_get", "args": {"key": "seed"}},
    ]


SEED = {"items": [{"url": "http://music.example/七里香.mp3", "n": 3}], "singer": "周杰伦"}


def test_whole_string_template_keeps_the_value_type(
    ex: Executor, c: ToolContext, workdir: Path
) -> None:
    out = ex.run(
        _seed(SEED)
        + [
            {
                "step_id": 3,
                "tool": "cache_set",
                "args": {"key": "n", "value": "{{step_2.result.items.0.n}}"},
            },
            {"step_id": 4, "tool": "cache_get", "args": {"key": "n"}},
            {
                "step_id": 5,
                "tool": "file_write",
                "args": {"path": "workspace/recent.json", "content": "{{step_2.result}}"},
            },
        ],
        c,
    )
    assert out["step_4"]["result"] == 3  # a number, not "3"
    assert json.loads((workdir / "recent.json").read_text()) == SEED


def test_template_inside_a_longer_string_is_interpolated_as_text(
    ex: Executor, c: ToolContext, workdir: Path
) -> None:
    out = ex.run(
        _seed(SEED)
        + [
            {
                "step_id": 3,
                "tool": "file_write",
                "args": {
                    "path": "out.txt",
                    "content": "url={{ step_2.result.items.0.url }} n={{step_2.result.items.0.n}}"
                    " all={{step_2.result}} ok={{step_2.status}}",
                },
            },
        ],
        c,
    )
    assert out["step_3"]["status"] == "ok", out["step_3"]
    text = (workdir / "out.txt").read_text()
    assert text == (
        "url=http://music.example/七里香.mp3 n=3 all="
        + json.dumps(SEED, ensure_ascii=False)
        + " ok=ok"
    )


def test_templates_resolve_inside_nested_lists_and_dicts(ex: Executor, c: ToolContext) -> None:
    out = ex.run(
        _seed(SEED)
        + [
            {
                "step_id": 3,
                "tool": "db_query",
                "args": {
                    "dsn": ":memory:",
                    "sql": "SELECT ? AS n, ? AS singer",
                    "params": ["{{step_2.result.items.0.n}}", "{{step_2.result.singer}}"],
                },
            },
            {
                "step_id": 4,
                "tool": "cache_set",
                "args": {
                    "key": "nested",
                    "value": {"a": ["{{step_3.result.rows.0}}"], "meta": "{{step_2.meta.hit}}"},
                },
            },
            {"step_id": 5, "tool": "cache_get", "args": {"key": "nested"}},
        ],
        c,
    )
    assert out["step_3"]["result"]["rows"] == [[3, "周杰伦"]]
    assert out["step_5"]["result"] == {"a": [[3, "周杰伦"]], "meta": True}


def test_other_braces_are_left_alone_and_results_are_not_re_expanded(
    ex: Executor, c: ToolContext, workdir: Path
) -> None:
    (workdir / "raw.txt").write_text("{{step_1.result}}")
    out = ex.run(
        [
            {"step_id": 1, "tool": "file_read", "args": {"path": "raw.txt"}},
            {
                "step_id": 2,
                "tool": "file_write",
                "args": {"path": "page.html", "content": "<p>{{ name }}</p>{{step_1.result}}"},
            },
            {
                "step_id": 3,
                "tool": "file_write",
                "args": {"path": "copy.txt", "content": "{{step_1.result}}"},
            },
        ],
        c,
    )
    assert [e["status"] for e in out.values()] == ["ok", "ok", "ok"]
    assert (workdir / "page.html").read_text() == "<p>{{ name }}</p>{{step_1.result}}"
    assert (workdir / "copy.txt").read_text() == "{{step_1.result}}"


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("{{step_9.result}}", "there is no step_9 in this plan"),
        ("{{step_2.result.items.5.url}}", "step_2.result.items has no index 5 (list of length 1)"),
        ("{{step_2.result.missing}}", "step_2.result has no key 'missing'"),
        ("{{step_2.result.singer.x}}", "step_2.result.singer is str, it has no field 'x'"),
        ("{{step_2.result.items.first}}", "step_2.result.items is a list; 'first' is not an index"),
        ("{{step_4.result}}", "step_4 has not run yet"),
        ("{{step_2.result..x}}", "malformed template"),
        ("see {{ step_2.result items }}", "malformed template"),
    ],
)
def test_unresolved_reference_fails_that_step_naming_it(
    ex: Executor, c: ToolContext, store: Store, workdir: Path, ref: str, message: str
) -> None:
    out = ex.run(
        _seed(SEED)
        + [
            {"step_id": 3, "tool": "file_write", "args": {"path": "bad.txt", "content": ref}},
            {"step_id": 4, "tool": "file_write", "args": {"path": "after.txt", "content": "x"}},
        ],
        c,
    )
    assert out["step_3"]["status"] == "error"
    assert ref.removeprefix("see ") in out["step_3"]["error"]
    assert message in out["step_3"]["error"]
    assert "step_4" not in out  # the plan stopped
    assert not (workdir / "bad.txt").exists() and not (workdir / "after.txt").exists()
    row = audit(store)[-1]
    assert (row["tool"], row["step_id"], row["status"]) == ("file_write", "step_3", "error")
    assert ref.removeprefix("see ") in row["error"]
    assert ref in row["args"]  # the unresolved args are what's audited


def test_error_and_meta_of_earlier_steps_can_be_referenced(
    ex: Executor, c: ToolContext, workdir: Path
) -> None:
    out = ex.run(
        [
            {
                "step_id": 1,
                "tool": "file_read",
                "args": {"path": "missing.txt"},
                "on_error": "continue",
            },
            {
                "step_id": 2,
                "tool": "file_write",
                "args": {
                    "path": "log.txt",
                    "content": "failed: {{step_1.error}}; meta={{step_1.meta}}",
                },
            },
        ],
        c,
    )
    assert out["step_1"]["status"] == "error"
    assert out["step_2"]["status"] == "ok"
    assert (workdir / "log.txt").read_text() == f"failed: {out['step_1']['error']}; meta=null"


# --------------------------------------------------------- stop / continue


def test_a_failed_step_stops_the_plan(
    ex: Executor, c: ToolContext, store: Store, workdir: Path
) -> None:
    out = ex.run(
        [
            {"step_id": 1, "tool": "file_read", "args": {"path": "missing.txt"}},
            {"step_id": 2, "tool": "file_write", "args": {"path": "never.txt", "content": "x"}},
        ],
        c,
    )
    assert list(out) == ["step_1"]
    assert not (workdir / "never.txt").exists()
    assert [r["step_id"] for r in audit(store)] == ["step_1"]


def test_on_error_continue_runs_the_rest(ex: Executor, c: ToolContext, workdir: Path) -> None:
    out = ex.run(
        [
            {
                "step_id": 1,
                "tool": "file_read",
                "args": {"path": "missing.txt"},
                "on_error": "continue",
            },
            {"step_id": 2, "tool": "file_write", "args": {"path": "ran.txt", "content": "x"}},
        ],
        c,
    )
    assert [e["status"] for e in out.values()] == ["error", "ok"]
    assert (workdir / "ran.txt").read_text() == "x"


def test_a_refused_step_is_audited_as_denied_and_touches_nothing(
    ex: Executor, c: ToolContext, store: Store, app_dir: Path
) -> None:
    out = ex.run(
        [
            {
                "step_id": 1,
                "tool": "file_write",
                "args": {"path": "../../other/workspace/private.txt", "content": "pwned"},
            },
            {"step_id": 2, "tool": "file_write", "args": {"path": "next.txt", "content": "x"}},
        ],
        c,
    )
    assert out["step_1"]["status"] == "error"
    assert "path confinement" in out["step_1"]["error"]
    assert "step_2" not in out
    private = app_dir.parent / "other" / "workspace" / "private.txt"
    assert private.read_text() == "other app's secret"
    rows = audit(store)
    assert [(r["step_id"], r["status"], r["session_id"]) for r in rows] == [
        ("step_1", "denied", "sess_exec")
    ]


def test_every_call_leaves_one_audit_row(ex: Executor, c: ToolContext, store: Store) -> None:
    ex.run(
        _seed({"a": 1})
        + [
            {
                "step_id": 3,
                "tool": "file_read",
                "args": {"path": "/etc/passwd"},
                "on_error": "continue",
            },
            {
                "step_id": 4,
                "tool": "file_read",
                "args": {"path": "{{step_2.result.b}}"},
                "on_error": "continue",
            },
            {"step_id": 5, "tool": "notify", "args": {"title": "done"}},
        ],
        c,
    )
    rows = audit(store)
    assert [(r["step_id"], r["tool"], r["status"]) for r in rows] == [
        ("step_1", "cache_set", "ok"),
        ("step_2", "cache_get", "ok"),
        ("step_3", "file_read", "denied"),
        ("step_4", "file_read", "error"),
        ("step_5", "notify", "ok"),
    ]
    assert all(r["app"] == "demo" and r["session_id"] == "sess_exec" for r in rows)


def test_step_timeout_is_passed_to_the_tool(ex: Executor, c: ToolContext) -> None:
    forever = (
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
    )
    out = ex.run(
        [
            {
                "step_id": 1,
                "tool": "db_query",
                "timeout": 0.3,
                "args": {"dsn": ":memory:", "sql": forever},
            }
        ],
        c,
    )
    assert out["step_1"]["status"] == "error"
    assert "timed out after 0.3s" in out["step_1"]["error"]


def test_step_timeout_caps_a_command(ex: Executor, c: ToolContext, workdir: Path) -> None:
    out = ex.run(
        [
            {
                "step_id": 1,
                "tool": "shell_exec",
                "timeout": 0.5,
                "args": {"cmd": ["python3", "-c", "import time; time.sleep(30)"]},
            },
            {"step_id": 2, "tool": "shell_exec", "args": {"cmd": "echo later"}},
        ],
        c,
    )
    assert out["step_1"]["status"] == "error"
    assert "timed out after 0.5s" in out["step_1"]["error"]
    assert "step_2" not in out


def test_on_step_is_called_after_each_step_and_cannot_break_the_plan(
    ex: Executor, c: ToolContext
) -> None:
    seen: list[tuple[str, str]] = []

    def on_step(key: str, result: ToolResult) -> None:
        seen.append((key, result.status))
        raise RuntimeError("progress push failed")

    out = ex.run(_seed(1), c, on_step=on_step)
    assert seen == [("step_1", "ok"), ("step_2", "ok")]
    assert list(out) == ["step_1", "step_2"]


# ------------------------------------------------------------ custom tools


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tool_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("toolapp")
    (folder / "main.py").write_text(TOOL_APP, encoding="utf-8")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIOS_")}
    env.update(PYTHONPATH=str(ROOT), APP_PORT=str(port), AIOS_APP_TOKEN=TOKEN)
    log = folder / "app.log"
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


@pytest.fixture
def app_ctx(workdir: Path, store: Store, tool_app: str) -> ToolContext:
    return make_ctx(workdir, store, session_id="sess_custom", app_url=tool_app, app_token=TOKEN)


def test_custom_tool_of_the_app_runs_with_templates(
    ex: Executor, app_ctx: ToolContext, store: Store
) -> None:
    out = ex.run(
        _seed({"n": 21})
        + [
            {"step_id": 3, "tool": "double", "args": {"n": "{{step_2.result.n}}"}},
            {"step_id": 4, "tool": "whoami"},
            {"step_id": 5, "tool": "cache_set", "args": {"key": "d", "value": "{{step_3.result}}"}},
        ],
        app_ctx,
    )
    assert out["step_3"] == {
        "tool": "double",
        "status": "ok",
        "result": 42,
        "duration_ms": out["step_3"]["duration_ms"],
    }
    assert out["step_4"]["result"] == {"session": "sess_custom"}
    assert out["step_5"]["status"] == "ok"
    row = [r for r in audit(store) if r["tool"] == "double"][0]
    assert (row["status"], row["step_id"], json.loads(row["args"])) == ("ok", "step_3", {"n": 21})


def test_custom_tool_failures_are_step_errors(
    ex: Executor, app_ctx: ToolContext, store: Store
) -> None:
    out = ex.run(
        [
            {"step_id": 1, "tool": "explode", "on_error": "continue"},
            {"step_id": 2, "tool": "refuse", "on_error": "continue"},
            {"step_id": 3, "tool": "double", "args": {"m": 1}, "on_error": "continue"},
            {"step_id": 4, "tool": "no_such_tool", "on_error": "continue"},
        ],
        app_ctx,
    )
    assert out["step_1"]["error"] == "explode: RuntimeError: boom"
    assert out["step_2"]["error"] == "not today"
    assert out["step_2"]["meta"] == {"why": "policy"}
    assert out["step_3"]["error"].startswith("bad arguments for double:")
    assert out["step_4"]["error"] == (
        "unknown tool 'no_such_tool' (not an atomic tool and not a custom tool of app 'demo')"
    )
    statuses = {r["tool"]: r["status"] for r in audit(store)}
    assert statuses == {
        "explode": "error",
        "refuse": "error",
        "double": "error",
        "no_such_tool": "denied",
    }


def test_custom_tool_with_a_wrong_token_is_refused(
    ex: Executor, workdir: Path, store: Store, tool_app: str
) -> None:
    ctx = make_ctx(workdir, store, app_url=tool_app, app_token="not-the-token")
    out = ex.run([{"step_id": 1, "tool": "double", "args": {"n": 1}}], ctx)
    assert out["step_1"]["status"] == "error"
    assert "refused the call (HTTP 403: app token mismatch)" in out["step_1"]["error"]
    assert audit(store)[-1]["status"] == "denied"


def test_custom_tools_need_the_app_address(ex: Executor, c: ToolContext, store: Store) -> None:
    out = ex.run([{"step_id": 1, "tool": "double", "args": {"n": 1}}], c)
    assert out["step_1"]["status"] == "error"
    assert "unknown tool 'double': not an atomic tool" in out["step_1"]["error"]
    assert audit(store)[-1]["status"] == "denied"


def test_unreachable_app_is_a_step_error(ex: Executor, workdir: Path, store: Store) -> None:
    ctx = make_ctx(workdir, store, app_url=f"http://127.0.0.1:{_free_port()}", app_token=TOKEN)
    out = ex.run([{"step_id": 1, "tool": "double", "args": {"n": 1}}], ctx)
    assert "is not reachable" in out["step_1"]["error"]
    assert audit(store)[-1]["status"] == "error"
