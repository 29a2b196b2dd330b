"""The bundled ``code`` app: Python snippets run through shell_exec in the OS sandbox."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.fakes.fake_openai import FakeOpenAI, text
from tests.integration.conftest import Running, copy_apps
from tests.util import wait_for

APP = "code"
SECRET = "sk-TOP-SECRET-KEY"


@pytest.fixture
def code(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    (tmp_path / "config.json").write_text(f'{{"deepseek_api_key": "{SECRET}"}}')
    (tmp_path / "apps").mkdir()
    (tmp_path / "apps" / "config.json").write_text(f'{{"deepseek_api_key": "{SECRET}"}}')
    return make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))


def act(system: Running, payload: dict[str, Any]) -> dict[str, Any]:
    return system.act(APP, payload)


def run(system: Running, snippet: str, **extra: Any) -> dict[str, Any]:
    return act(system, {"action_id": "run", "params": {"code": snippet, **extra}})


def outputs(resp: dict[str, Any]) -> dict[str, str]:
    """The result's output blocks, by stream."""
    return {o["stream"]: o["text"] for o in resp["data"]["outputs"]}


def test_home_is_an_editor_with_run_controls(code: Running) -> None:
    resp = code.open(APP)["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "form"
    assert [f["name"] for f in resp["data"]["fields"]] == ["code", "timeout"]
    kinds = {(a["type"], a["action_id"]) for a in resp["actions"]}
    assert {("submit_form", "run_form"), ("input", "run_line"), ("button", "run")} <= kinds
    assert resp["data"]["fields"][0]["monospace"] is True  # a code editor, Tab indents


def test_run_shows_the_result_first_then_output_and_source(code: Running) -> None:
    resp = act(
        code,
        {
            "action_id": "run_form",
            "form_values": {"code": "print(6 * 7)\nprint('你好')", "timeout": 5},
        },
    )
    assert resp["status"] == "ok" and resp["view_type"] == "code"
    data = resp["data"]
    assert data["language"] == "python" and data["code"] == "print(6 * 7)\nprint('你好')"
    assert data["summary"] == resp["message"] == "运行成功，退出码 0"
    assert outputs(resp) == {"stdout": "42\n你好\n"}  # no empty stderr block
    assert data["outcome"] == "ok" and data["exit_code"] == 0
    assert "⏵" not in str(resp["actions"])  # a glyph the desktop's fonts lack
    rows = code.get(f"/api/audit?app={APP}").json()
    assert rows[0]["tool"] == "shell_exec" and rows[0]["status"] == "ok"
    assert "print(6 * 7)" in rows[0]["args"] and rows[0]["step_id"]
    # "run again" and the one-line input run too; the editor remembers the last code
    again = next(a for a in resp["actions"] if a["action_id"] == "run")
    assert (
        act(code, {"action_id": "run", "params": again["params"]})["data"]["stdout"] == "42\n你好\n"
    )
    line = act(code, {"action_id": "run_line", "value": "print(sum(range(101)))"})
    assert line["data"]["stdout"] == "5050\n"


@pytest.mark.parametrize("text", ["运行 print(1+1)", "run print(1+1)", "代码 执行 print(1+1)"])
def test_instructions_run_code(code: Running, text: str) -> None:
    out = code.instruct(text)
    [res] = out["results"]
    assert res["app"] == APP
    assert res["response"]["view_type"] == "code"
    assert res["response"]["data"]["stdout"] == "2\n"
    home = code.open(APP, out["session_id"])["response"]
    assert home["data"]["fields"][0]["value"] == "print(1+1)"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("运行 帮我分析一下股票走势", "没有配置 AI 模型"),
        ("in the code app, please compute my taxes for this year", "No AI model is set up"),
    ],
)
def test_words_without_an_llm_are_explained_in_their_language_not_run(
    code: Running, text: str, needle: str
) -> None:
    # the second case under a Chinese UI: the answer follows the language of the request
    resp = code.instruct(text)["results"][0]["response"]
    assert resp["status"] == "error" and needle in resp["message"], resp["message"]
    assert "print(1+1)" in resp["message"] and text not in resp["message"]
    assert [r["tool"] for r in code.get(f"/api/audit?app={APP}").json()] == []


def test_errors_exit_codes_and_timeouts_are_shown_clearly(code: Running) -> None:
    resp = run(code, "import sys\nprint('partial')\nsys.exit(3)")
    assert resp["status"] == "error" and resp["view_type"] == "code"
    assert resp["data"]["outcome"] == "exit" and resp["data"]["exit_code"] == 3
    assert resp["data"]["stdout"] == "partial\n"
    assert resp["message"] == resp["data"]["summary"] == "运行出错，退出码 3"  # once
    resp = run(code, "1/0")
    assert "ZeroDivisionError" in resp["data"]["stderr"]
    assert "ZeroDivisionError" in outputs(resp)["stderr"]
    resp = run(code, "import time\ntime.sleep(30)", timeout=1)
    assert resp["data"]["outcome"] == "timeout" and "超时" in resp["message"]
    resp = run(code, "print(", timeout=2)
    assert resp["data"]["outcome"] == "exit" and "SyntaxError" in resp["data"]["stderr"]


def test_snippets_cannot_read_secrets_or_write_outside_the_workdir(
    code: Running, tmp_path: Path
) -> None:
    workdir = code.apps_dir / APP / "workspace"
    for snippet in (
        "print(open('../../config.json').read())",
        "print(open('../../../config.json').read())",
        f"print(open({str(tmp_path / 'config.json')!r}).read())",
        "import os\nprint(open(os.path.join('..', '..', 'config.json')).read())",
    ):
        resp = run(code, snippet)
        assert resp["status"] == "error", snippet
        assert resp["data"]["outcome"] in ("exit", "refused"), snippet
        assert SECRET not in str(resp), snippet
    for target in (
        "../../pwned.txt",
        "../pwned.txt",
        str(tmp_path / "pwned.txt"),
        str(code.data_dir / "pwned.txt"),
    ):
        snippet = f"open({target!r}, 'w').write('owned')"
        resp = run(code, snippet)
        assert resp["status"] == "error", snippet
        assert resp["data"]["outcome"] in ("exit", "refused"), snippet
    assert not list(tmp_path.rglob("pwned.txt"))
    # writing inside its own workdir is allowed
    resp = run(code, "open('inside.txt', 'w').write('ok')\nprint('written')")
    assert resp["status"] == "ok" and (workdir / "inside.txt").read_text() == "ok"


def test_refused_commands_are_reported_as_refusals(code: Running) -> None:
    # an argument the command policy reads as a path outside the workdir
    resp = run(code, "print(open('../../../../etc/hostname').read())")
    assert resp["status"] == "error"
    assert resp["data"]["outcome"] == "refused"
    assert "被沙箱拒绝" in resp["message"] and "path confinement" in resp["message"]
    rows = code.get(f"/api/audit?app={APP}").json()
    assert rows[0]["tool"] == "shell_exec" and rows[0]["status"] == "denied"


GARBAGE: list[tuple[dict[str, Any], str]] = [
    ({"action_id": "run"}, "代码必须是文字"),
    ({"action_id": "run", "params": {"code": ""}}, "空"),
    ({"action_id": "run", "params": {"code": 42}}, "int"),
    ({"action_id": "run", "params": {"code": "print(1)", "timeout": 999}}, "999"),
    ({"action_id": "run", "params": {"code": "print(1)", "timeout": "soon"}}, "'soon'"),
    ({"action_id": "run", "params": {"code": "print(1)", "timeout": True}}, "True"),
    ({"action_id": "run", "params": {"code": "x" * 30_000}}, "太长"),
    ({"action_id": "run_form"}, "form_values"),
    ({"action_id": "run_form", "form_values": {"code": ["print(1)"]}}, "list"),
    ({"action_id": "run_line", "value": {"code": 1}}, "dict"),
    ({"action_id": "edit", "params": {"code": 7}}, "int"),
    ({"action_id": "format_disk", "on": True}, "'format_disk'"),
]


def test_garbage_payloads_give_clear_errors(code: Running) -> None:
    for payload, needle in GARBAGE:
        resp = act(code, payload)
        assert resp["status"] == "error" and resp["view_type"] == "error", payload
        assert needle in resp["message"], (payload, resp["message"])
    assert [r["tool"] for r in code.get(f"/api/audit?app={APP}").json()] == []
    assert run(code, "print('still here')")["data"]["stdout"] == "still here\n"


def test_background_run_writes_its_output_to_a_log_the_app_can_show(code: Running) -> None:
    started = act(
        code,
        {
            "action_id": "run_bg",
            "params": {
                "code": "import time\nprint('后台', flush=True)\n"
                "time.sleep(0.2)\nprint('done', flush=True)"
            },
        },
    )
    assert started["status"] == "ok" and started["data"]["running"] is True
    log = started["data"]["log"]
    assert log.startswith("workspace/.aios/proc_") and log.endswith(".log")
    button = next(a for a in started["actions"] if a["action_id"] == "bg_log")

    def log_when_done() -> str:
        shown = act(code, {"action_id": "bg_log", "params": button["params"]})["data"]["code"]
        return shown if "done" in shown else ""

    shown = wait_for(log_when_done, "the background job's log to show 'done'", interval=0.1)
    assert "后台\ndone\n" in shown
    tools = [r["tool"] for r in code.get(f"/api/audit?app={APP}").json()]
    assert "process_start" in tools and "file_read" in tools
    bad = act(code, {"action_id": "bg_log", "params": {"log": "../../config.json"}})
    assert bad["status"] == "error" and SECRET not in str(bad)


PRINTED_LINES = 100_000


def test_long_output_is_capped_with_a_note_of_the_lines_left_out(code: Running) -> None:
    resp = run(code, f"for i in range({PRINTED_LINES}):\n    print(i)\nprint('the end')")
    assert resp["status"] == "ok" and resp["message"] == "运行成功，退出码 0"
    shown = outputs(resp)["stdout"].splitlines()
    assert shown[0] == "0" and shown[-1] == "the end"  # the start and the end stay
    [note] = [line for line in shown if line.startswith("…")]
    hidden = PRINTED_LINES + 1 - (len(shown) - 1)
    assert note == f"… 省略了 {hidden} 行 …" and len(shown) < 300
    assert resp["data"]["stdout"] == outputs(resp)["stdout"]  # nothing bigger is sent


def test_an_endless_loop_is_stopped_by_cancelling_its_run(code: Running) -> None:
    replies: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: replies.append(run(code, "while True:\n    pass", timeout=30))
    )
    started = time.monotonic()
    worker.start()

    def running_run() -> str | None:
        runs = code.get("/api/runs?active=1").json()
        return next(
            (
                r["run_id"]
                for r in runs
                if r["app"] == APP and any(s["tool"] == "shell_exec" for s in r["steps"])
            ),
            None,
        )

    run_id = wait_for(running_run, "the endless loop's run to start", interval=0.05)
    r = code.post(f"/api/runs/{run_id}/cancel")
    assert r.status_code == 200, r.text
    worker.join(timeout=20)
    assert not worker.is_alive() and time.monotonic() - started < 20  # not the 30 s timeout
    [resp] = replies
    assert resp["data"]["outcome"] == "stopped"
    assert resp["message"] == "已停止：你停止了这个程序"


@pytest.mark.parametrize(
    ("text", "output"),
    [
        ("运行 Python 代码 print(1+2)", "3"),
        ("run this python snippet: print(sum(range(10)))", "45"),
        ("请帮我执行这段代码：print(2 * 3)", "6"),
        ("could you run this for me?\nprint('hi')", "hi"),
    ],
)
# The reply is in the language the request was written in (issue 22), whatever the UI's.
def test_run_in_words_shows_and_runs_the_code_in_one_go(
    code: Running, text: str, output: str
) -> None:
    out = code.instruct(text)
    [res] = out["results"]
    resp = res["response"]
    assert res["app"] == APP and resp["view_type"] == "code", resp["message"]
    assert resp["data"]["stdout"] == output + "\n" and outputs(resp)["stdout"] == output + "\n"
    said = f"output: {output}" if text.isascii() else f"输出 {output}"
    assert resp["message"].endswith(said)  # the reply says it too
    assert resp["data"]["code"] in text
    assert [r["tool"] for r in code.get(f"/api/audit?app={APP}").json()] == ["shell_exec"]


def test_write_without_run_shows_the_code_and_runs_nothing(code: Running) -> None:
    resp = code.instruct("写一段 Python 代码 print(1)")["results"][0]["response"]
    assert resp["view_type"] == "form" and resp["data"]["fields"][0]["value"] == "print(1)"
    assert code.get(f"/api/audit?app={APP}").json() == []


def test_with_a_model_run_in_words_runs_the_code_it_writes(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    with FakeOpenAI(api_key="sk-test") as fake:
        fake.script([text("```python\nprint(sum(range(1, 11)))\n```")])
        fake.default = text("")  # asked again, the model would write nothing
        system = make_system(
            apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"),
            llm={
                "api_key": "sk-test",
                "base_url": fake.url,
                "model": "qwen2.5-0.5b",
                "planner": "offline",
                "max_retries": 0,
            },
        )
        # a request that is not a plain calculation (those run offline, model or not)
        out = system.instruct("运行一个程序，把 1 到 10 的数加起来")
        resp = out["results"][0]["response"]
        assert resp["view_type"] == "code" and resp["data"]["stdout"] == "55\n", resp
        assert resp["data"]["code"] == "print(sum(range(1, 11)))"
        assert len(fake.requests) == 1  # written once; the run's next round shows it
        assert [r["tool"] for r in system.get(f"/api/audit?app={APP}").json()] == ["shell_exec"]
        # "write" without "run": the model's code is shown for review, not run
        fake.script([text("print('draft')")])
        shown = system.instruct("写一段代码，打印 draft")["results"][0]["response"]
        assert shown["view_type"] == "form" and shown["data"]["fields"][0]["value"] == (
            "print('draft')"
        )
        assert len(system.get(f"/api/audit?app={APP}").json()) == 1


@pytest.mark.parametrize(
    ("text", "output"),
    [
        ("execute print(3**4)", "81"),
        ("can you execute print(3**4) for me", "81"),
        ("in the code app run print('done')", "done"),
        ("帮我运行一下 print('你好世界')", "你好世界"),
        ("please run the code \"print(len('abcd'))\"", "4"),
        ("跑一下 print(6 * 7)", "42"),
        ("run 1+2", "3"),
        ("运行 2**10", "1024"),
    ],
)
def test_more_ways_to_say_run(code: Running, text: str, output: str) -> None:
    resp = code.instruct(text)["results"][0]["response"]
    assert resp["view_type"] == "code", resp["message"]
    assert outputs(resp)["stdout"] == output + "\n"
    # the reply says it too, in the request's language (the UI's when the request is terse)
    assert resp["message"].endswith((f"输出 {output}", f"output: {output}"))
    assert [r["tool"] for r in code.get(f"/api/audit?app={APP}").json()] == ["shell_exec"]


@pytest.mark.parametrize(
    ("text", "program", "output"),
    [
        ("calculate 12 * 12 with python", "print(12 * 12)", "144"),
        ("use python to compute the sum of 1 to 100", "print(sum(range(1, 101)))", "5050"),
        ("用 Python 算一下 123 乘以 456", "print(123 * 456)", "56088"),
        ("用代码算 1 加到 10 的和", "print(sum(range(1, 11)))", "55"),
        ("算一下 2 的 10 次方", "print(2 ** 10)", "1024"),
    ],
)
def test_a_calculation_in_words_is_shown_as_a_program_and_run_offline(
    code: Running, text: str, program: str, output: str
) -> None:
    resp = code.instruct(text)["results"][0]["response"]
    assert resp["view_type"] == "code", resp["message"]
    assert resp["data"]["code"] == program  # what ran is shown
    assert outputs(resp)["stdout"] == output + "\n"
    # the reply says it too, in the request's language (the UI's when the request is terse)
    assert resp["message"].endswith((f"输出 {output}", f"output: {output}"))


@pytest.mark.parametrize("text", ["open the code editor", "打开代码编辑器"])
def test_open_the_editor(code: Running, text: str) -> None:
    resp = code.instruct(text)["results"][0]["response"]
    assert resp["status"] == "ok" and resp["view_type"] == "form", resp["message"]
    assert resp["data"]["fields"][0]["name"] == "code"


def test_the_one_line_input_prints_a_bare_expression(code: Running) -> None:
    resp = act(code, {"action_id": "run_line", "value": "sum(range(1, 101))"})
    assert resp["data"]["code"] == "print(sum(range(1, 101)))"
    assert outputs(resp)["stdout"] == "5050\n"


def test_with_a_model_a_plain_calculation_still_runs_without_asking_it(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    with FakeOpenAI(api_key="sk-test") as fake:
        fake.default = text("print('the model would be wrong')")
        system = make_system(
            apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"),
            llm={
                "api_key": "sk-test",
                "base_url": fake.url,
                "model": "qwen2.5-0.5b",
                "planner": "offline",
                "max_retries": 0,
            },
        )
        resp = system.instruct("calculate 12 * 12 with python")["results"][0]["response"]
        assert outputs(resp)["stdout"] == "144\n"
        assert fake.requests == []
