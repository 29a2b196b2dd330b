# Longer than ~500 lines on purpose: a bundled app is what third-party developers copy: its
# handlers, views and bilingual messages stay in one file they can read at once.
"""代码 (code): run a Python snippet in the sandbox and show the source and its output.

The snippet runs as ``python3 -c <code>`` through the ``shell_exec`` atomic
tool, as a step of the reply, so the system's executor runs it (with its own
timeout, not the app's handle timeout) inside the OS sandbox: confined to
the workdir, no secrets, limited CPU, memory and output. The argv is a list,
so no shell ever parses the code. The next round shows a dashboard with the
source and its output in a ``code`` view: the result line first (the exit
code once), then stdout and stderr in monospace blocks the desktop caps in
height and scrolls, then the source. The app caps what it sends
(``OUTPUT_HEAD_LINES`` + ``OUTPUT_TAIL_LINES`` lines, ``MAX_OUTPUT_CHARS``
characters per stream, "… N more lines" in between), so a program that prints
100,000 lines cannot make a page millions of pixels tall. A non-zero exit, a
timeout, a refusal or a stop (the window's stop button cancels the run and
kills the program) is shown as such.

"run" / "运行" / "执行" / "跑一下" means run: the code (what follows the verb, its filler —
"this python snippet:", "Python 代码", quotes — left out) is shown and run in one go, as a
step the system's approvals decide about; "write" / "写" without run shows it in the
editor. A bare expression prints its value as a REPL would ("run 1+2"), and a clear
calculation in words ("算一下 2 的 10 次方", "sum of 1 to 100") becomes a ``print(...)``
program offline, model or not (``code_parse.py``). With an LLM, other requests in words
become code: run when the user said run (shown with its output), else shown for review
with a run button; without one, the reply says so in the request's language.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from code_parse import looks_like_python, parse_instruction, print_last_expression, strip_fence

from aios_sdk import (
    AIOSAgent,
    Lang,
    LLMError,
    LLMUnavailable,
    error_view,
    locale_of,
    tr,
)

log = logging.getLogger(__name__)

MAX_CODE_CHARS = 20_000
DEFAULT_TIMEOUT = 10
MAX_TIMEOUT = 30
"""Seconds; the system's own shell_exec timeout and CPU limit still apply."""
OUTPUT_HEAD_LINES = 200
"""Lines of a stream shown from its start …"""
OUTPUT_TAIL_LINES = 40
"""… and from its end (where a traceback is), with "… N more lines" in between."""
MAX_OUTPUT_CHARS = 20_000
"""Characters of a stream the app sends at most (very long lines)."""
SAMPLE = 'for i in range(1, 4):\n    print(f"{i} × {i} = {i * i}")\n'
SAMPLES: list[tuple[str, str, str]] = [
    (
        "九九乘法表",
        "Times table",
        "for i in range(1, 10):\n    print(' '.join(f'{j}×{i}={i*j}' for j in range(1, i + 1)))\n",
    ),
    ("质数", "Primes", "print([n for n in range(2, 60) if all(n % d for d in range(2, n))])\n"),
    (
        "系统信息",
        "Platform",
        "import platform, sys\nprint(platform.python_version(), sys.platform)\n",
    ),
]
"""Sample programs with a button each: (Chinese label, English label, code)."""
REFUSAL_PREFIXES = (
    "command policy",
    "command whitelist",
    "path confinement",
    "OS sandbox",
    "resource limit",
)
ACTIONS = ("run", "run_form", "run_line", "run_bg", "bg_log", "edit", "home")

SHORT_OUTPUT_CHARS = 80
"""An output this short and on one line is also said in the reply's message."""
LLM_CACHE_SIZE = 32
"""Code the model wrote for a request, kept for the run's next round (it shows what ran)."""


_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]{2,}")


def language_of(text: str | None, default: Lang) -> Lang:
    """The language ``text`` is written in: Chinese when it has any Chinese, English when
    it has words in Latin letters only, else ``default``."""
    if _CJK.search(text or ""):
        return "zh"
    return "en" if _LATIN.search(text or "") else default


class Problem(Exception):
    def __init__(self, zh: str, en: str):
        super().__init__(zh)
        self.zh, self.en = zh, en


def cap_output(lang: Lang, text: str) -> str:
    """``text`` as the app sends it: the first OUTPUT_HEAD_LINES and last OUTPUT_TAIL_LINES
    lines with "… N more lines …" in between, at most about MAX_OUTPUT_CHARS characters."""
    lines = text.splitlines(keepends=True)
    if len(lines) > OUTPUT_HEAD_LINES + OUTPUT_TAIL_LINES:
        hidden = len(lines) - OUTPUT_HEAD_LINES - OUTPUT_TAIL_LINES
        note = tr(lang, f"… 省略了 {hidden} 行 …\n", f"… {hidden} more lines …\n")
        text = "".join(lines[:OUTPUT_HEAD_LINES]) + note + "".join(lines[-OUTPUT_TAIL_LINES:])
    if len(text) > MAX_OUTPUT_CHARS:
        half = MAX_OUTPUT_CHARS // 2
        hidden_chars = len(text) - 2 * half
        note = tr(
            lang, f"\n… 省略了 {hidden_chars} 个字符 …\n", f"\n… {hidden_chars} more characters …\n"
        )
        text = text[:half] + note + text[-half:]
    return text


def _short_output(lang: Lang, stdout: str) -> str:
    """A one-line output for the reply's words ("运行成功，退出码 0，输出 3"); else nothing."""
    line = stdout.strip()
    if not line or "\n" in line or len(line) > SHORT_OUTPUT_CHARS:
        return ""
    return tr(lang, f"，输出 {line}", f"; output: {line}")


def check_code(value: Any) -> str:
    if not isinstance(value, str):
        raise Problem(
            f"代码必须是文字（收到 {type(value).__name__}）",
            f"code must be text (got {type(value).__name__})",
        )
    code = strip_fence(value)
    if not code.strip():
        raise Problem("代码是空的", "the code is empty")
    if len(code) > MAX_CODE_CHARS:
        raise Problem(
            f"代码太长（{len(code)} 字符，最多 {MAX_CODE_CHARS}）",
            f"the code is too long ({len(code)} characters, at most {MAX_CODE_CHARS})",
        )
    if "\x00" in code:
        raise Problem("代码里有 NUL 字符", "the code contains a NUL character")
    return code


def check_timeout(value: Any) -> float:
    if value in (None, ""):
        return DEFAULT_TIMEOUT
    raw = value
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 1 <= value <= MAX_TIMEOUT
    ):
        raise Problem(
            f"超时必须是 1–{MAX_TIMEOUT} 秒（收到 {raw!r}）",
            f"timeout must be 1 to {MAX_TIMEOUT} seconds (got {raw!r})",
        )
    return float(value)


class CodeAgent(AIOSAgent):
    name = "代码"
    description = "运行 Python 代码片段"
    icon = "🐍"
    role_prompt = "你是代码小AI。"

    def handle(
        self,
        instruction: str | None,
        context: dict[str, Any],
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        context = context if isinstance(context, dict) else {}
        lang = locale_of(context)
        results = context.get("tool_results")
        results = results if isinstance(results, dict) else {}
        state = context.get("cwd_state") if isinstance(context.get("cwd_state"), dict) else {}
        last = state.get("code") if isinstance(state.get("code"), str) else SAMPLE
        try:
            if action_request is not None:
                return self._action(lang, action_request, results, last)
            intent, code = parse_instruction(instruction)
            if intent == "run":
                return self._run(lang, check_code(code), DEFAULT_TIMEOUT, results)
            if intent == "show":
                return self._editor(
                    lang, check_code(code), tr(lang, "检查后点运行", "Check it, then Run")
                )
            if intent in ("words", "write"):
                if intent == "words" and isinstance(results.get("step_1"), dict):
                    written = self._written.get((context.get("session_id"), code))
                    if written:  # the second round of "run" + words: show what ran
                        return self._run(lang, written, DEFAULT_TIMEOUT, results)
                return self._from_words(
                    lang, code, run=intent == "words", session=context.get("session_id")
                )
            return self._editor(lang, last)
        except Problem as p:
            if action_request is None:  # a request in words is answered in its own language
                lang = language_of(instruction, lang)
            return self._error(lang, tr(lang, p.zh, p.en), last)

    def _action(self, lang: Lang, req: Any, results: dict[str, Any], last: str) -> dict[str, Any]:
        if not isinstance(req, dict):
            raise Problem("操作请求必须是对象", "the action request must be an object")
        action_id = req.get("action_id")
        params = req.get("params") if isinstance(req.get("params"), dict) else {}
        if action_id == "run":
            return self._run(
                lang, check_code(params.get("code")), check_timeout(params.get("timeout")), results
            )
        if action_id == "run_form":
            values = req.get("form_values")
            if not isinstance(values, dict):
                raise Problem("运行需要表单内容 form_values", "run_form needs form_values")
            return self._run(
                lang, check_code(values.get("code")), check_timeout(values.get("timeout")), results
            )
        if action_id == "run_line":
            code = print_last_expression(check_code(req.get("value")))  # as a REPL shows it
            return self._run(lang, code, DEFAULT_TIMEOUT, results)
        if action_id == "run_bg":
            return self._run_background(lang, check_code(params.get("code", last)), results)
        if action_id == "bg_log":
            return self._background_log(lang, params.get("log"), results, last)
        if action_id == "edit":
            code = params.get("code", last)
            return self._editor(lang, check_code(code) if code != last else last)
        if action_id == "home":
            return self._editor(lang, last)
        raise Problem(
            f"未知的操作 {action_id!r}（可用：{', '.join(ACTIONS)}）",
            f"unknown action {action_id!r} (known: {', '.join(ACTIONS)})",
        )

    # ------------------------------------------------------------- views

    def _editor(self, lang: Lang, code: str, message: str | None = None) -> dict[str, Any]:
        samples = [
            {
                "type": "button",
                "label": f"▶ {tr(lang, zh, en)}",
                "action_id": "run",
                "params": {"code": sample},
            }
            for zh, en, sample in SAMPLES
        ]
        return {
            "status": "ok",
            "view_type": "form",
            "data": {
                "title": tr(lang, "Python 代码", "Python code"),
                "description": tr(
                    lang,
                    "在沙箱里运行：只有本应用的工作区可写。",
                    "Runs in the sandbox: only this app's workspace is writable.",
                ),
                "fields": [
                    {
                        "name": "code",
                        "label": tr(lang, "代码", "Code"),
                        "type": "textarea",
                        "value": code,
                        "required": True,
                        "monospace": True,  # a code editor: fixed width, Tab indents
                    },
                    {
                        "name": "timeout",
                        "label": tr(lang, "超时（秒）", "Timeout (s)"),
                        "type": "number",
                        "value": DEFAULT_TIMEOUT,
                        "min": 1,
                        "max": MAX_TIMEOUT,
                    },
                ],
            },
            "actions": [
                {
                    "type": "submit_form",
                    "label": tr(lang, "▶ 运行", "▶ Run"),
                    "action_id": "run_form",
                    "variant": "primary",
                },
                {
                    "type": "input",
                    "label": tr(lang, "一行代码", "One line"),
                    "action_id": "run_line",
                    "placeholder": "print(1 + 1)",
                },
                *samples,
            ],
            "message": message
            or tr(lang, "输入 Python 代码后点运行", "Enter Python code and press Run"),
            "state": {"code": code},
        }

    def _run(
        self, lang: Lang, code: str, timeout: float, results: dict[str, Any]
    ) -> dict[str, Any]:
        step = results.get("step_1")
        if not isinstance(step, dict):
            return {
                "status": "ok",
                "view_type": "loading",
                "data": {
                    "message": tr(lang, "正在运行…", "Running…"),
                    "language": "python",
                    "code": code,
                },
                "steps": self.plan_steps(
                    [
                        {
                            "tool": "shell_exec",
                            "args": {"cmd": ["python3", "-c", code], "timeout": timeout},
                        }
                    ]
                ),
                "message": tr(lang, "正在运行", "Running"),
            }
        return self._result(lang, code, timeout, step)

    def _run_background(self, lang: Lang, code: str, results: dict[str, Any]) -> dict[str, Any]:
        """Long jobs: process_start in the background; its output goes to a log file."""
        step = results.get("step_1")
        if not isinstance(step, dict):
            return {
                "status": "ok",
                "view_type": "loading",
                "data": {"message": tr(lang, "正在后台启动…", "Starting in the background…")},
                "steps": self.plan_steps(
                    [
                        {
                            "tool": "process_start",
                            "args": {"cmd": "python3", "args": ["-c", code], "background": True},
                        }
                    ]
                ),
                "message": tr(lang, "正在后台启动", "Starting in the background"),
            }
        if step.get("status") != "ok" or not isinstance(step.get("result"), dict):
            raise Problem(
                f"后台运行失败：{step.get('error')}",
                f"could not start in the background: {step.get('error')}",
            )
        info = step["result"]
        text = tr(
            lang,
            f"已在后台运行，进程 {info.get('pid')}，输出写入 {info.get('log')}",
            f"Running in the background as process {info.get('pid')}; output goes to "
            f"{info.get('log')}",
        )
        return {
            "status": "ok",
            "view_type": "text",
            "data": {"content": text, **info},
            "actions": [
                {
                    "type": "button",
                    "label": tr(lang, "查看输出", "Show output"),
                    "action_id": "bg_log",
                    "params": {"log": info.get("log")},
                },
                {
                    "type": "button",
                    "label": tr(lang, "✎ 编辑", "✎ Edit"),
                    "action_id": "edit",
                    "params": {"code": code},
                },
            ],
            "message": text,
            "state": {"code": code},
        }

    def _background_log(
        self, lang: Lang, log: Any, results: dict[str, Any], last: str
    ) -> dict[str, Any]:
        if not isinstance(log, str) or not log:
            raise Problem("查看输出需要日志路径 params.log", "bg_log needs params.log")
        step = results.get("step_1")
        if not isinstance(step, dict):
            return {
                "status": "ok",
                "view_type": "loading",
                "data": {},
                "steps": self.plan_steps([{"tool": "file_read", "args": {"path": log}}]),
            }
        if step.get("status") != "ok":
            raise Problem(
                f"读取输出失败：{step.get('error')}", f"cannot read the output: {step.get('error')}"
            )
        return {
            "status": "ok",
            "view_type": "code",
            "data": {"language": "plaintext", "code": str(step.get("result") or ""), "title": log},
            "actions": [
                {
                    "type": "button",
                    "label": tr(lang, "刷新", "Refresh"),
                    "action_id": "bg_log",
                    "params": {"log": log},
                },
                {
                    "type": "button",
                    "label": tr(lang, "返回编辑", "Back to the editor"),
                    "action_id": "home",
                },
            ],
            "message": tr(lang, "后台任务的输出", "Output of the background job"),
            "state": {"code": last},
        }

    def _result(
        self, lang: Lang, code: str, timeout: float, step: dict[str, Any]
    ) -> dict[str, Any]:
        out = step.get("result") if isinstance(step.get("result"), dict) else {}
        error = str(step.get("error") or "")
        stdout = cap_output(lang, str(out.get("stdout") or ""))
        stderr = cap_output(lang, str(out.get("stderr") or ""))
        exit_code = out.get("exit_code")
        if step.get("status") == "ok":
            outcome, summary = "ok", tr(lang, "运行成功，退出码 0", "Finished, exit code 0")
        elif step.get("code") == "cancelled" or error.startswith("cancelled"):
            outcome = "stopped"
            summary = tr(lang, "已停止：你停止了这个程序", "Stopped: you stopped the program")
        elif error.startswith("timed out"):
            outcome = "timeout"
            summary = tr(
                lang,
                f"超时：超过 {timeout:g} 秒，已终止",
                f"Timed out after {timeout:g} s; stopped",
            )
        elif not out:
            outcome = "refused" if error.startswith(REFUSAL_PREFIXES) else "failed"
            summary = tr(
                lang,
                f"没有运行，被沙箱拒绝：{error}" if outcome == "refused" else f"没有运行：{error}",
                f"Not run, refused by the sandbox: {error}"
                if outcome == "refused"
                else f"Not run: {error}",
            )
        elif isinstance(exit_code, int) and exit_code != 0:
            outcome = "exit"
            # the tool's error is "exit code N" plus, for a signal, what killed it
            detail = re.sub(rf"^exit code {exit_code}:?\s*", "", error)
            summary = tr(
                lang,
                f"运行出错，退出码 {exit_code}" + (f"（{detail}）" if detail else ""),
                f"Failed, exit code {exit_code}" + (f" ({detail})" if detail else ""),
            )
        else:
            outcome = "failed"
            summary = tr(lang, f"运行出错：{error}", f"Failed: {error}")
        if out.get("truncated"):
            summary += tr(lang, "（输出过长，已截断）", " (output truncated)")
        outputs = [
            {
                "title": tr(lang, "输出 stdout", "Output (stdout)"),
                "text": stdout or tr(lang, "（无输出）", "(no output)"),
                "stream": "stdout",
            }
        ]
        if stderr:
            outputs.append(
                {
                    "title": tr(lang, "错误 stderr", "Errors (stderr)"),
                    "text": stderr,
                    "stream": "stderr",
                }
            )
        return {
            "status": "ok" if outcome == "ok" else "error",
            "view_type": "code",
            "data": {
                "title": tr(lang, "源代码", "Source"),
                "summary": summary,
                "tone": "ok" if outcome == "ok" else "error",
                "outputs": outputs,
                "language": "python",
                "code": code,
                "outcome": outcome,
                "exit_code": exit_code,
                "stdout": stdout,
                "stderr": stderr,
                "error": error or None,
            },
            "actions": [
                {
                    "type": "button",
                    "label": tr(lang, "↻ 再运行一次", "↻ Run again"),
                    "action_id": "run",
                    "params": {"code": code, "timeout": timeout},
                    "variant": "primary",
                },
                {
                    "type": "button",
                    "label": tr(lang, "✎ 编辑", "✎ Edit"),
                    "action_id": "edit",
                    "params": {"code": code},
                },
                {
                    "type": "button",
                    "label": tr(lang, "在后台运行", "Run in background"),
                    "action_id": "run_bg",
                    "params": {"code": code},
                },
            ],
            "message": summary + _short_output(lang, stdout) if outcome == "ok" else summary,
            "state": {"code": code},
        }

    def __init__(self) -> None:
        super().__init__()
        self._written: dict[tuple[Any, str], str] = {}
        """Code the model wrote, by (session, request): the run's next round shows it."""

    def _from_words(
        self, lang: Lang, text: str, *, run: bool = False, session: Any = None
    ) -> dict[str, Any]:
        """A request in words: with an LLM, code to run (the user said run) or to review;
        without, say what is needed."""
        try:
            answer = self.llm(
                [
                    {
                        "role": "system",
                        "content": "Write a short self-contained Python 3 program "
                        "(standard library only, prints its result) for the user's request. Answer "
                        "with the code only, no explanation.",
                    },
                    {"role": "user", "content": text[:2000]},
                ]
            )
            code = strip_fence(str(answer.get("content") or "").strip())
            configured = True
        except LLMUnavailable:
            code, configured = "", False
        except LLMError:
            code, configured = "", True
        if code and looks_like_python(code) and run:
            self._written[(session, text)] = code
            while len(self._written) > LLM_CACHE_SIZE:
                self._written.pop(next(iter(self._written)))
            return self._run(lang, check_code(code), DEFAULT_TIMEOUT, {})
        if code and looks_like_python(code):
            reply = self._editor(
                lang,
                code,
                tr(
                    lang,
                    "AI 写好了代码，检查后点运行",
                    "The AI wrote this code; check it, then Run",
                ),
            )
            reply["actions"].insert(
                0,
                {
                    "type": "button",
                    "label": tr(lang, "▶ 运行", "▶ Run"),
                    "action_id": "run",
                    "params": {"code": code},
                },
            )
            return reply
        if configured:
            raise Problem(
                "AI 没能为这个请求写出 Python 代码。可以直接给出代码，例如：运行 print(1+1)",
                "The AI could not write Python code for this. Give the code itself, for "
                "example: run print(1+1)",
            )
        raise Problem(
            "没有配置 AI 模型，我只能运行你给的 Python 代码或算清楚的算式，"
            "例如：运行 print(1+1)，或者：算一下 12 乘以 12",
            "No AI model is set up, so I can only run Python code you give me or a plain "
            "calculation, for example: run print(1+1), or: calculate 12 * 12",
        )

    def _error(self, lang: Lang, message: str, last: str) -> dict[str, Any]:
        return error_view(
            message,
            title=tr(lang, "代码：出错了", "Code: error"),
            actions=[
                {
                    "type": "button",
                    "label": tr(lang, "返回编辑", "Back to the editor"),
                    "action_id": "home",
                }
            ],
        )


if __name__ == "__main__":
    CodeAgent().run()
