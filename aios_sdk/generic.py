"""The generic LLM app: an app that is only a role prompt (spec §1.1, §7.1).

An app folder whose ``main.py`` is::

    from aios_sdk.generic import GenericAgent

    if __name__ == "__main__":
        GenericAgent().run()

becomes a small AI that plans by itself. :class:`GenericAgent` reads the
manifest beside that script for its name and role, and on every request asks
the system's LLM with function calling. The functions offered are the ten
atomic tools (their schemas come from :func:`aios.tools.tool_schemas`), the
app's own ``@tool`` methods (subclass :class:`GenericAgent` to add some),
and ``show_view(view_type, data, actions, message)`` to finish.

One request, several rounds
---------------------------
* Round 1: the LLM's tool calls become the reply's ``steps`` (with a
  ``loading`` view). The system runs them in the app's sandbox, audits them,
  and calls ``handle`` again with the same instruction/action and
  ``context["tool_results"]``.
* Round N: each result goes back to the LLM as the ``tool`` message of the
  call that asked for it; the LLM calls more tools or ``show_view``.
* ``show_view`` is validated with :func:`aios.protocol.parse_response` and
  :func:`view_data_problems`. A bad view (or a bad tool call: unknown tool,
  arguments that are not JSON or fail the tool's schema) is fed back to the
  LLM once with the reason; a second bad answer becomes an error view.
* A plain text answer becomes a ``text`` view. After ``max_tool_rounds``
  rounds of tools the LLM is offered ``show_view`` alone. The system caps a
  request at ``max_rounds`` (config, default 5) as well, so
  ``max_tool_rounds`` must stay below it; it defaults to 3 and a manifest may
  set ``"max_tool_rounds"``.

Where the conversation lives between rounds
-------------------------------------------
The LLM needs the whole exchange of one request (its earlier tool calls and
every result), but each round is a new HTTP call, and neither channel the
system offers carries it:

* ``context["tool_results"]`` holds the results of the *last* round only;
* a reply's ``state`` is kept per session and app and comes back as
  ``context["cwd_state"]``, but the controller stores it from the *final*
  reply of a request and builds the context once per request, so it does
  not change between rounds.

So the running message list is kept in the app's cache (``cache_set`` /
``cache_get`` through :meth:`~aios_sdk.agent.AIOSAgent.call_tool`), keyed by
session and by a fingerprint of the instruction/action (which the system
repeats every round), and mirrored in process memory. The cache lives in the
system's SQLite store, namespaced to this app: it survives a restart of the
app process between rounds, works the same standalone, and its use is
audited like any other tool call. Step ids are numbered across the whole
request and mapped back to the LLM's ``tool_call`` ids, so a result can
never be attributed to the wrong call. The ``state`` of the final reply is
used for what it is good at: remembering the last view of the session, so a
later click on one of its controls can be explained to the LLM.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aios.errors import LLMError, LLMUnavailable, ManifestError, ProtocolError, ToolError
from aios.protocol import VIEW_TYPES, describe_validation_error, error_response, parse_response
from aios_sdk.agent import AIOSAgent, current_session_id

__all__ = ["SHOW_VIEW", "SHOW_VIEW_TOOL", "GenericAgent", "view_data_problems"]

log = logging.getLogger(__name__)

SHOW_VIEW = "show_view"
MAX_TOOL_ROUNDS = 3
"""Rounds of tool calls per request; the system's max_rounds (default 5) must exceed it."""
TOOL_RESULT_CHARS = 6000
"""A tool result is cut to this many characters before it goes back to the LLM."""
CONVERSATION_TTL = 3600.0
"""Seconds a request's conversation is kept in the cache."""
MEMORY_CONVERSATIONS = 64
"""Conversations mirrored in process memory (oldest dropped first)."""
STATE_CHARS = 2000
"""Bound of the last-view summary kept in the session state."""
ROLE_FILE = "role.md"
HOME_ACTIONS = ("home", "reset")
ASK_ACTIONS = ("ask", "retry")
_CHART_KINDS = ("bar", "line", "pie", "doughnut")
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_OPEN_WORDS = ("打开", "启动", "开启", "进入", "请", "open", "launch", "start", "show")
_SENTENCE_END = re.compile(r"[。！？]|[.!?](?=\s|$)")
_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)

SHOW_VIEW_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": SHOW_VIEW,
        "description": (
            "Finish: show the answer in the app's window. Call it alone, once the tool "
            "results you need are back. view_type picks the view, data fills it (shapes in "
            "the system message), actions are the controls under it, message is one short "
            "sentence that is spoken to the user."),
        "parameters": {
            "type": "object",
            "properties": {
                "view_type": {"type": "string", "enum": list(VIEW_TYPES)},
                "data": {"type": "object", "description": "The view's data, e.g. text "
                                                          "{content}, list {title, items}."},
                "actions": {"type": "array", "items": {"type": "object"},
                            "description": "Controls: {type, label, action_id, ...}."},
                "message": {"type": "string"},
            },
            "required": ["view_type", "data", "message"],
            "additionalProperties": False,
        },
    },
}

_VIEW_SHAPES = """\
text {content}; list {title?, items: [{title, sub?}]}; card {cards: [{title, image?, desc?}]};
table {columns: [..], rows: [[..]]}; form {fields: [{name, label, type, options?, value?}]};
media {url, type: audio|video, title?}; image {url, caption?};
chart {type: bar|line|pie|doughnut, labels: [..], values: [..] | datasets: [{label, values}],
title?};
code {language, code}; dashboard {widgets: [{type: <view type>, title?, ...that view's data}]}
(in a dashboard a chart widget names its kind chart_type, a media widget media_type)."""

_ACTION_SHAPES = """\
button {label, action_id, params}; submit_form {label, action_id, fields} (or put the fields in a
form view); select|radio {label, action_id, options}; checkbox {label, action_id, options};
input {label, action_id, placeholder?}; link {label, action_id, href}; toggle {label, action_id,
value: bool}; slider {label, action_id, min, max, step, value}; datetime {label, action_id, mode}.
Every control needs an action_id (letters, digits, _ . -); do not use ask, retry, home, reset."""


class GenericAgent(AIOSAgent):
    """An app that is only a role prompt: the LLM plans tool calls and picks the view."""

    max_tool_rounds: int = MAX_TOOL_ROUNDS

    def __init__(self, app_dir: str | Path | None = None) -> None:
        if app_dir is not None:
            self.__dict__["_generic_dir"] = Path(app_dir).resolve()
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._memory_lock = threading.Lock()
        self._keywords: list[str] = []
        self._load_manifest()

    # ------------------------------------------------------------ identity

    def app_dir(self) -> Path:
        """The app folder: given, else (plain GenericAgent) the folder of the script run."""
        given = self.__dict__.get("_generic_dir")
        if given is not None:
            return given
        if type(self).__module__ != __name__:
            return super().app_dir()  # a subclass lives in the app's own main.py
        main = sys.modules.get("__main__")
        file = getattr(main, "__file__", None)
        return Path(file).resolve().parent if file else Path.cwd().resolve()

    def _load_manifest(self) -> None:
        from aios_sdk.standalone import read_manifest

        folder = self.app_dir()
        try:
            manifest = read_manifest(folder)
        except ManifestError as e:
            # The launcher never starts an app with an unusable manifest; standalone, say why.
            log.warning("%s", e)
            manifest = None
        if manifest is None:
            return
        self.name = manifest.name
        self.description = manifest.description
        self.icon = manifest.icon
        role = (manifest.role_prompt or "").strip()
        if not role and (folder / ROLE_FILE).is_file():
            try:
                role = (folder / ROLE_FILE).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as e:
                log.warning("cannot read %s: %s", folder / ROLE_FILE, e)
        if role:
            self.role_prompt = role
        self._keywords = list(manifest.keywords)
        rounds = getattr(manifest, "max_tool_rounds", None)
        if isinstance(rounds, int) and not isinstance(rounds, bool) and 1 <= rounds <= 20:
            self.max_tool_rounds = rounds

    # -------------------------------------------------------------- handle

    def handle(self, instruction: str | None, context: dict[str, Any],
               action_request: dict[str, Any] | None = None) -> dict[str, Any]:
        context = context if isinstance(context, dict) else {}
        action = action_request if isinstance(action_request, dict) else None
        en = context.get("locale") == "en"
        results = context.get("tool_results")
        key = self._conversation_key(instruction, action, context)
        question = ""
        try:
            if isinstance(results, dict) and results:
                conv = self._load(key)
                steps = [c.get("step") for c in conv.get("pending", [])] if conv else []
                if conv is None or (steps and not any(s in results for s in steps)):
                    # None of our steps ran: these results belong to another exchange.
                    return self._lost_view(en)
                question = conv.get("question", "")
                self._feed_results(conv, results)
            else:
                request = self._user_request(instruction, action, context)
                if request is None:
                    return self.home_view(en, hint=bool(action and action.get("action_id")
                                                        in ASK_ACTIONS))
                question, user_text = request
                conv = {"messages": [{"role": "system", "content": self.system_prompt(context)},
                                     {"role": "user", "content": user_text}],
                        "round": 0, "next_step": 1, "pending": [], "question": question}
            return self._ask(conv, key, context)
        except LLMUnavailable as e:
            self._forget(key)
            return self._no_llm_view(en, str(e))
        except LLMError as e:
            self._forget(key)
            return self._llm_error_view(en, str(e), question)

    # ----------------------------------------------------------- requests

    def _user_request(self, instruction: str | None, action: dict[str, Any] | None,
                      context: dict[str, Any]) -> tuple[str, str] | None:
        """(question for a retry, user message for the LLM), or None for the home view."""
        if action is not None:
            action_id = action.get("action_id")
            if action_id in HOME_ACTIONS:
                return None
            if action_id in ASK_ACTIONS:
                text = _question_from(action)
                return (text, text) if text else None
            payload = {k: v for k, v in action.items() if k != "action_id"}
            last = context.get("cwd_state", {}).get("last_view") \
                if isinstance(context.get("cwd_state"), dict) else None
            described = (f"[The user used the control action_id={action_id!r} of your "
                         f"previous view. Payload: {_dumps(payload, 2000)}]")
            if last:
                described += f"\n[That view was: {_dumps(last, STATE_CHARS)}]"
            return "", described
        text = (instruction or "").strip()
        if not text or self._only_opens(text):
            return None
        return text, text

    def _only_opens(self, text: str) -> bool:
        """"打开智能助手" / "open assistant": the routing words and nothing else."""
        words = [*_OPEN_WORDS, self.name, *self._keywords]
        rest = text.lower()
        for w in sorted({w.lower() for w in words if w}, key=len, reverse=True):
            rest = rest.replace(w, " ")
        return not _PUNCT.sub("", rest)

    def _conversation_key(self, instruction: str | None, action: dict[str, Any] | None,
                          context: dict[str, Any]) -> str:
        sid = context.get("session_id") or current_session_id() or "nosession"
        raw = json.dumps({"i": instruction, "a": action}, sort_keys=True, ensure_ascii=False,
                         default=str)
        return f"generic:{sid}:{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:20]}"

    # ------------------------------------------------------------- the LLM

    def tool_specs(self, context: dict[str, Any]) -> list[dict[str, Any]]:
        """Function schemas offered to the LLM: atomic tools, this app's tools, show_view."""
        from aios.tools import tool_schemas

        available = context.get("available_tools")
        allowed = set(available) if isinstance(available, list) and available else None
        specs = [s for s in tool_schemas()
                 if allowed is None or s["function"]["name"] in allowed]
        for name, info in self.custom_tools().items():
            specs.append({"type": "function",
                          "function": {"name": name, "description": info.description or name,
                                       "parameters": info.parameters}})
        specs.append(SHOW_VIEW_TOOL)
        return specs

    def system_prompt(self, context: dict[str, Any]) -> str:
        role = str(context.get("role") or self.role_prompt or "You are a helpful assistant.")
        app = str(context.get("app") or self.app_id())
        language = "English" if context.get("locale") == "en" else \
            "Chinese (简体中文), unless the user writes in another language"
        state = context.get("cwd_state") if isinstance(context.get("cwd_state"), dict) else {}
        files = state.get("files") or []
        lines = [
            role, "",
            f"You are the app {self.display_name!r} (id {app}) on Triton AIOS, a desktop where "
            f"every app is a small AI. Answer in {language}.",
            "",
            "How to work:",
            "- To act, call tools. Paths are relative to your workdir, a sandbox folder "
            "(\"workspace/a.txt\" and \"a.txt\" name the same file); nothing outside it is "
            "reachable. The calls of one turn run in order; their results come back as tool "
            "messages, then you decide what comes next.",
            "- Never invent a tool result. When a tool fails, say so or try another way.",
            f"- You have at most {self.max_tool_rounds} turns of tool calls per request.",
            "- To finish, call show_view alone with the view that best shows the answer. "
            "A plain text answer is shown as a text view.",
            "",
            "Views (view_type: data):", _VIEW_SHAPES,
            f"Show a file of your workdir with the URL /apps/{app}/files/<path in the workdir>.",
            "",
            "Controls (actions):", _ACTION_SHAPES,
            "When the user uses a control you receive a message naming its action_id and what "
            "it sent (params, form_values, selected, checked, value, href or on).",
            "",
            f"Files in your workdir: {', '.join(map(str, files[:50])) or '(none)'}",
        ]
        summary = context.get("history_summary")
        if summary:
            lines.append(f"The session so far: {str(summary)[:2000]}")
        if state.get("last_view"):
            lines.append(f"Your previous view in this session: "
                         f"{_dumps(state['last_view'], STATE_CHARS)}")
        return "\n".join(lines)

    def _ask(self, conv: dict[str, Any], key: str, context: dict[str, Any]) -> dict[str, Any]:
        en = context.get("locale") == "en"
        messages: list[dict[str, Any]] = conv["messages"]
        if conv["round"] >= self.max_tool_rounds:
            tools = [SHOW_VIEW_TOOL]
            messages.append({"role": "system", "content": (
                "No more tool calls are possible for this request: call show_view now with "
                "what you have (say what is missing, if anything).")})
        else:
            tools = self.tool_specs(context)
        names = {t["function"]["name"] for t in tools}
        problem = ""
        for attempt in range(2):
            reply = self.llm(messages, tools=tools)
            outcome = self._interpret(reply, names, conv, context)
            if outcome.kind == "problem":
                problem = outcome.problem
                if attempt == 0:
                    log.info("LLM answer rejected, asking again: %s", problem)
                    messages.extend([_assistant(reply), *outcome.feedback])
                    continue
                break
            if outcome.kind == "steps":
                messages.append(_assistant(reply))
                conv["pending"] = outcome.pending
                self._save(key, conv)
                return outcome.reply
            self._forget(key)
            return outcome.reply
        self._forget(key)
        title = "The assistant gave an unusable answer" if en else "智能助手的回答无法显示"
        message = (f"The LLM's answer could not be used, even after it was told why: {problem}"
                   if en else f"大语言模型的回答无法使用（已告知原因后仍然如此）：{problem}")
        return self._error(message, title, conv.get("question", ""), en)

    def _interpret(self, reply: dict[str, Any], names: set[str], conv: dict[str, Any],
                   context: dict[str, Any]) -> _Outcome:
        en = context.get("locale") == "en"
        calls = reply.get("tool_calls") or []
        if not isinstance(calls, list) or not calls:
            text = str(reply.get("content") or "").strip()
            if not text:
                return _Outcome.bad("the answer was empty", [{"role": "user", "content": (
                    "Your answer was empty. Answer the request, or call show_view.")}])
            return _Outcome.done(self._finish(_text_view(text), conv, en))
        parsed: list[tuple[str, str, Any, str]] = []  # (call id, name, args, problem)
        for call in calls:
            cid, name, args, problem = _parse_call(call, names)
            parsed.append((cid, name, args, problem))
        work = [p for p in parsed if p[1] != SHOW_VIEW]
        views = [p for p in parsed if p[1] == SHOW_VIEW]
        problems = {cid: problem for cid, _, _, problem in parsed if problem}
        if not work and not problems:
            cid, _, args, _ = views[0]
            view, problem = self._validate_view(args, context)
            if not problem:
                return _Outcome.done(self._finish(view, conv, en))
            problems[cid] = f"show_view rejected: {problem}. Fix it and call show_view again."
        elif not problems:
            for cid, name, args, _ in work:
                problem = _check_args(name, args)
                if problem:
                    problems[cid] = problem
        if problems:
            feedback = [{"role": "tool", "tool_call_id": cid, "content": problems.get(
                cid, "not run: another call of this turn was invalid; send the whole turn "
                     "again, corrected")} for cid, _, _, _ in parsed]
            return _Outcome.bad("; ".join(problems.values()), feedback)
        steps: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []
        for cid, name, args, _ in parsed:
            if name == SHOW_VIEW:
                pending.append({"id": cid, "answer": "not shown: call show_view alone, after "
                                                     "the results of the other calls"})
                continue
            step_id = conv["next_step"]
            conv["next_step"] = step_id + 1
            steps.append({"step_id": step_id, "tool": name, "args": args})
            pending.append({"id": cid, "step": f"step_{step_id}"})
        try:
            steps = self.plan_steps(steps)
        except ProtocolError as e:
            return _Outcome.bad(str(e), [{"role": "tool", "tool_call_id": cid, "content": str(e)}
                                         for cid, _, _, _ in parsed])
        tools = ", ".join(s["tool"] for s in steps)
        said = str(reply.get("content") or "").strip()
        loading = {"status": "ok", "view_type": "loading",
                   "data": {"message": said or (f"Working: {tools}…" if en
                                                else f"正在执行：{tools}…")},
                   "actions": [], "steps": steps,
                   "message": said or ("Working on it…" if en else "正在处理…")}
        return _Outcome("steps", reply=loading, pending=pending)

    def _validate_view(self, args: Any, context: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The reply for a show_view call, and "" or the reason it is unusable."""
        if not isinstance(args, dict):
            return {}, "the arguments must be an object {view_type, data, actions, message}"
        extra = sorted(set(args) - {"view_type", "data", "actions", "message", "status"})
        if extra:
            return {}, (f"unknown field(s) {', '.join(extra)}; show_view takes view_type, data, "
                        "actions, message")
        view_type = args.get("view_type")
        if view_type not in VIEW_TYPES:
            return {}, f"view_type must be one of {', '.join(VIEW_TYPES)} (got {view_type!r})"
        view = {"status": args.get("status") if args.get("status") in ("ok", "error") else "ok",
                "view_type": view_type, "data": args.get("data", {}),
                "actions": args.get("actions") if args.get("actions") is not None else [],
                "message": args.get("message") if isinstance(args.get("message"), str) else ""}
        try:
            parse_response(view)
        except ProtocolError as e:
            return {}, str(e)
        problems = view_data_problems(view_type, view["data"])
        if problems:
            return {}, "; ".join(problems)
        return view, ""

    def _finish(self, view: dict[str, Any], conv: dict[str, Any], en: bool) -> dict[str, Any]:
        """The final reply: the view, a follow-up input, and the state for later clicks."""
        actions = list(view.get("actions") or [])
        if not any(isinstance(a, dict) and a.get("action_id") == "ask" for a in actions):
            actions.append(_ask_input(en, follow_up=True))
        summary = {"view_type": view["view_type"], "message": view.get("message") or "",
                   "actions": [{k: a.get(k) for k in ("type", "action_id", "label", "params")
                                if a.get(k) is not None} for a in actions
                               if isinstance(a, dict)][:20]}
        if len(_dumps(summary, STATE_CHARS + 1)) > STATE_CHARS:
            summary["actions"] = [a.get("action_id") for a in summary["actions"]]
        return {**view, "actions": actions,
                "state": {"last_question": conv.get("question", "")[:300],
                          "last_view": summary}}

    def _feed_results(self, conv: dict[str, Any], results: dict[str, Any]) -> None:
        """Answer every pending tool call from ``tool_results`` (stopped steps say so)."""
        for call in conv.get("pending") or []:
            if "answer" in call:
                content = call["answer"]
            elif call.get("step") in results:
                content = _result_text(results[call["step"]])
            else:
                content = ("not run: an earlier step of the same turn failed and stopped the "
                           "plan")
            conv["messages"].append({"role": "tool", "tool_call_id": call["id"],
                                     "content": content})
        conv["pending"] = []
        conv["round"] = int(conv.get("round", 0)) + 1

    # ----------------------------------------------------------- memory

    def _save(self, key: str, conv: dict[str, Any]) -> None:
        with self._memory_lock:
            self._memory[key] = conv
            self._memory.move_to_end(key)
            while len(self._memory) > MEMORY_CONVERSATIONS:
                self._memory.popitem(last=False)
        try:
            self.call_tool("cache_set", key=key, value=conv, ttl=CONVERSATION_TTL)
        except ToolError as e:
            # Memory still holds it; only a restart between rounds would lose it.
            log.warning("could not keep the conversation in the cache: %s", e.error)

    def _load(self, key: str) -> dict[str, Any] | None:
        with self._memory_lock:
            conv = self._memory.get(key)
        if conv is not None:
            return conv
        try:
            conv = self.call_tool("cache_get", key=key)
        except ToolError as e:
            log.warning("could not read the conversation from the cache: %s", e.error)
            return None
        valid = isinstance(conv, dict) and isinstance(conv.get("messages"), list) \
            and isinstance(conv.get("pending"), list)
        return conv if valid else None

    def _forget(self, key: str) -> None:
        with self._memory_lock:
            self._memory.pop(key, None)

    # ------------------------------------------------------------ views

    def home_view(self, en: bool, *, hint: bool = False) -> dict[str, Any]:
        """The view for an empty instruction (spec §12.1): who I am, and a place to ask."""
        name = self.display_name
        if en:
            # The icon is the title bar's (a set name or file): not repeated in the text.
            content = (f"{name}\n\n{self.description}\n\nAsk me anything: I answer, "
                       "and when a task needs it I plan my own tool calls (files in my "
                       "workspace, web requests, commands, a small database) and show the "
                       "result.")
            message = "Please type a question." if hint else f"{name} is ready."
        else:
            content = (f"{name}\n\n{self.description}\n\n"
                       "有什么问题都可以问我：我会回答，需要时自己规划工具（工作目录里的文件、"
                       "网络请求、命令、小型数据库）来完成任务，再把结果展示出来。")
            message = "请输入问题。" if hint else f"{name}已就绪。"
        return {"status": "ok", "view_type": "text", "data": {"title": name, "content": content},
                "actions": [_ask_input(en, follow_up=False)], "message": message}

    def _error(self, message: str, title: str, question: str, en: bool,
               detail: Any = None) -> dict[str, Any]:
        reply = error_response(message, title=title, detail=detail)
        actions: list[dict[str, Any]] = []
        if question:
            actions.append({"type": "button", "label": "Try again" if en else "重试",
                            "action_id": "ask", "params": {"question": question}})
        actions.append(_ask_input(en, follow_up=False))
        reply["actions"] = actions
        return reply

    def _no_llm_view(self, en: bool, reason: str) -> dict[str, Any]:
        if en:
            title = "An LLM is needed"
            message = (
                f"{self.display_name} thinks with a large language model, and none is "
                "configured. Set DEEPSEEK_API_KEY (or AIOS_LLM_API_KEY) in the environment "
                "and restart, or type a key in the settings window. For a local model "
                "(Ollama, vLLM, llama.cpp or any OpenAI-compatible server) set base_url to its "
                "address, e.g. http://127.0.0.1:11434/v1, model to the model's name, and any "
                "non-empty api_key (AIOS_LLM_BASE_URL / AIOS_LLM_MODEL work too).")
        else:
            title = "需要配置大语言模型"
            message = (
                f"{self.display_name}要靠大语言模型思考，但系统还没有配置。请设置环境变量 "
                "DEEPSEEK_API_KEY（或 AIOS_LLM_API_KEY）后重启，或在设置窗口填写 API key。"
                "使用本地模型（Ollama、vLLM、llama.cpp 等 OpenAI 兼容服务）时，把 base_url 设为"
                "它的地址（例如 http://127.0.0.1:11434/v1），model 设为模型名，api_key 填任意非空值"
                "（也可用环境变量 AIOS_LLM_BASE_URL / AIOS_LLM_MODEL）。")
        detail = {"reason": reason,
                  "settings": {"llm.api_key": "DEEPSEEK_API_KEY / AIOS_LLM_API_KEY",
                               "llm.base_url": "https://api.deepseek.com | "
                                               "http://127.0.0.1:11434/v1 (Ollama) | "
                                               "http://127.0.0.1:8000/v1 (vLLM) | "
                                               "http://127.0.0.1:8080/v1 (llama.cpp)",
                               "llm.model": "deepseek-chat | <local model name>"}}
        return self._error(message, title, "", en, detail)

    def _llm_error_view(self, en: bool, reason: str, question: str) -> dict[str, Any]:
        title = "The LLM did not answer" if en else "大语言模型没有回答"
        message = (f"The language model could not answer: {reason}" if en
                   else f"大语言模型没有回答：{reason}")
        return self._error(message, title, question, en)

    def _lost_view(self, en: bool) -> dict[str, Any]:
        message = ("This request's conversation could not be found (the app may have "
                   "restarted after its cache entry expired); please ask again." if en else
                   "找不到这次请求的对话记录（可能是应用重启且缓存已过期），请重新提问。")
        return self._error(message, "Please ask again" if en else "请重新提问", "", en)


# ------------------------------------------------------------------ helpers


class _Outcome:
    """What one LLM answer amounts to: a final view, steps to run, or a problem."""

    def __init__(self, kind: str, *, reply: dict[str, Any] | None = None,
                 pending: list[dict[str, Any]] | None = None, problem: str = "",
                 feedback: list[dict[str, Any]] | None = None) -> None:
        self.kind = kind
        self.reply = reply or {}
        self.pending = pending or []
        self.problem = problem
        self.feedback = feedback or []

    @classmethod
    def done(cls, reply: dict[str, Any]) -> _Outcome:
        return cls("view", reply=reply)

    @classmethod
    def bad(cls, problem: str, feedback: list[dict[str, Any]]) -> _Outcome:
        return cls("problem", problem=problem, feedback=feedback)


def _parse_call(call: Any, names: set[str]) -> tuple[str, str, Any, str]:
    """(id, function name, parsed arguments, "" or the problem) of one tool call."""
    if not isinstance(call, dict):
        return "", "", None, "a tool call must be an object"
    cid = str(call.get("id") or "")
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    name = str(fn.get("name") or "")
    if name not in names:
        offered = ", ".join(sorted(names))
        return cid, name, None, f"unknown function {name!r}; the functions are: {offered}"
    raw = fn.get("arguments")
    if raw is None or raw == "":
        return cid, name, {}, ""
    if isinstance(raw, dict):
        return cid, name, raw, ""
    try:
        args = json.loads(raw)
    except (TypeError, ValueError) as e:
        return cid, name, None, f"{name}: the arguments are not valid JSON ({e})"
    if not isinstance(args, dict):
        return cid, name, None, f"{name}: the arguments must be a JSON object"
    return cid, name, args, ""


def _check_args(name: str, args: dict[str, Any]) -> str:
    """Check an atomic tool's arguments against its schema now, not a round later."""
    from aios.tools import tools

    spec = tools().get(name)
    if spec is None:
        return ""  # one of the app's own tools: the app checks its own arguments
    try:
        spec.args_model.model_validate(args)
    except ValidationError as e:
        return f"{name}: bad arguments: {describe_validation_error(e)}"
    return ""


def _assistant(reply: dict[str, Any]) -> dict[str, Any]:
    """The LLM's message as it goes back into the conversation."""
    out: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        out["tool_calls"] = reply["tool_calls"]
    elif out["content"] is None:
        out["content"] = ""  # an assistant message without tool calls needs text
    return out


def _result_text(entry: Any) -> str:
    if not isinstance(entry, dict):
        return _dumps(entry, TOOL_RESULT_CHARS)
    shown = {k: entry[k] for k in ("status", "result", "error", "meta") if k in entry
             and entry[k] is not None}
    return _dumps(shown, TOOL_RESULT_CHARS)


def _dumps(value: Any, limit: int) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"…(cut: {len(text)} characters in all)"
    return text


def _question_from(action: dict[str, Any]) -> str:
    """The question in an ask/retry action, whatever control sent it."""
    candidates: list[Any] = [action.get("value"), action.get("selected")]
    for field in ("params", "form_values"):
        payload = action.get(field)
        if isinstance(payload, dict):
            candidates += [payload.get("question"), payload.get("q"), payload.get("text")]
    for value in candidates:
        if isinstance(value, str) and value.strip():
            return value.strip()[:4000]
    return ""


def _ask_input(en: bool, *, follow_up: bool) -> dict[str, Any]:
    if en:
        label, placeholder = ("Ask more", "A follow-up question…") if follow_up else \
            ("Ask", "Type a question or a task…")
    else:
        label, placeholder = ("继续提问", "接着问…") if follow_up else ("提问", "输入问题或任务…")
    return {"type": "input", "label": label, "action_id": "ask", "placeholder": placeholder}


def _text_view(text: str) -> dict[str, Any]:
    # The spoken message is the first sentence; "todo.txt" is not the end of one.
    line = text.strip().split("\n", 1)[0]
    end = _SENTENCE_END.search(line)
    first = line[:end.end()] if end else line
    return {"status": "ok", "view_type": "text", "data": {"content": text},
            "actions": [], "message": first[:200]}


# ------------------------------------------------------------- view shapes


def view_data_problems(view_type: str, data: Any) -> list[str]:
    """What is wrong with ``data`` for ``view_type`` (spec §6.2 shapes); [] when it is usable.

    The system never interprets ``data`` (spec §6.1); this check is the
    generic app's own, so that an LLM gets told why its view would render
    badly instead of the user seeing a broken window.
    """
    if not isinstance(data, dict):
        return [f"data must be an object for a {view_type} view"]
    check = _SHAPE_CHECKS.get(view_type)
    return check(data) if check else []


def _need_list(data: dict[str, Any], key: str, view: str, *, items: str = "") -> list[str]:
    value = data.get(key)
    if not isinstance(value, list):
        return [f"{view} view: data.{key} must be a list{items}"]
    return []


def _check_text(d: dict[str, Any]) -> list[str]:
    return [] if isinstance(d.get("content"), str) else \
        ["text view: data.content must be a string"]


def _check_list(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "items", "list", items=" of {title, sub}")
    if not problems and not all(isinstance(i, dict | str) for i in d["items"]):
        problems.append("list view: each item must be an object {title, sub} or a string")
    return problems


def _check_card(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "cards", "card", items=" of {title, image?, desc}")
    if not problems and not all(isinstance(c, dict) for c in d["cards"]):
        problems.append("card view: each card must be an object {title, image?, desc}")
    return problems


def _check_table(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "columns", "table") + _need_list(d, "rows", "table",
                                                              items=" of rows")
    if not problems and not all(isinstance(r, list | dict) for r in d["rows"]):
        problems.append("table view: each row must be a list of cells")
    return problems


def _check_form(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "fields", "form", items=" of {name, label, type}")
    if not problems and not all(isinstance(f, dict) and isinstance(f.get("name"), str)
                                and f["name"] for f in d["fields"]):
        problems.append("form view: each field must be an object with a name")
    return problems


def _check_url(d: dict[str, Any], view: str, *, images: bool) -> list[str]:
    url = d.get("url")
    if not isinstance(url, str) or not url.strip():
        return [f"{view} view: data.url must be a non-empty string"]
    scheme = _URL_SCHEME.match(url.strip())
    if scheme is None:
        return []  # /apps/<id>/files/… or a path in the workdir
    name = scheme.group(1).lower()
    if name in ("http", "https") or (images and url.strip().lower().startswith("data:image/")):
        return []
    return [f"{view} view: data.url must be http(s)"
            + (", data:image/…" if images else "") + " or /apps/<app>/files/<path>"]


def _check_media(d: dict[str, Any]) -> list[str]:
    problems = _check_url(d, "media", images=False)
    if d.get("type") not in ("audio", "video"):
        problems.append("media view: data.type must be audio or video")
    return problems


def _check_image(d: dict[str, Any]) -> list[str]:
    return _check_url(d, "image", images=True)


def _check_chart(d: dict[str, Any], kind_key: str = "type") -> list[str]:
    problems = []
    if d.get(kind_key) not in _CHART_KINDS:
        problems.append(f"chart: data.{kind_key} must be one of {', '.join(_CHART_KINDS)}")
    problems += _need_list(d, "labels", "chart")
    values, datasets = d.get("values"), d.get("datasets")
    if isinstance(datasets, list):
        if not all(isinstance(s, dict) and isinstance(s.get("values"), list) for s in datasets):
            problems.append("chart: each dataset must be {label, values: [numbers]}")
    elif not isinstance(values, list):
        problems.append("chart: data.values (a list of numbers) or data.datasets is needed")
    elif isinstance(d.get("labels"), list) and len(values) != len(d["labels"]):
        problems.append(f"chart: {len(d['labels'])} labels but {len(values)} values")
    return problems


def _check_code(d: dict[str, Any]) -> list[str]:
    return [] if isinstance(d.get("code"), str) else ["code view: data.code must be a string"]


def _check_dashboard(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "widgets", "dashboard", items=" of {type, title?, ...}")
    if problems:
        return problems
    for i, w in enumerate(d["widgets"]):
        if not isinstance(w, dict) or w.get("type") not in VIEW_TYPES \
                or w.get("type") == "dashboard":
            problems.append(f"dashboard: widget {i} needs a type among "
                            f"{', '.join(v for v in VIEW_TYPES if v != 'dashboard')}")
            continue
        inner = w["data"] if isinstance(w.get("data"), dict) else w
        if w["type"] == "chart":
            key = "kind" if "kind" in inner and "chart_type" not in inner else "chart_type"
            found = [f"widget {i} {p}" for p in _check_chart(inner, key)]
        elif w["type"] == "media":
            found = [f"widget {i}: {p}" for p in _check_url(inner, "media", images=False)]
        else:
            found = [f"widget {i}: {p}" for p in view_data_problems(w["type"], inner)]
        problems += [f"dashboard: {p}" for p in found]
    return problems


_SHAPE_CHECKS = {
    "text": _check_text, "list": _check_list, "card": _check_card, "table": _check_table,
    "form": _check_form, "media": _check_media, "image": _check_image, "chart": _check_chart,
    "code": _check_code, "dashboard": _check_dashboard,
}
