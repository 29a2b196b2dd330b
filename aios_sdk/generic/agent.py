# Longer than ~500 lines on purpose: the generic app's handle/loop in one class; prompts, memory
# and view checks are its sibling modules.
"""The generic LLM app's agent: one request, several rounds (see the package docstring)."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

from aios.errors import LLMError, LLMUnavailable, ManifestError, ProtocolError
from aios.llm.toolcalls import extract, looks_like_code
from aios.protocol import VIEW_TYPES, error_response, parse_response
from aios_sdk._session import current_session_id
from aios_sdk.agent import AIOSAgent
from aios_sdk.context import locale_of
from aios_sdk.generic.loop import (
    STATE_CHARS,
    Outcome,
    assistant_message,
    call_key,
    check_args,
    clean_args,
    dumps,
    parse_call,
    question_from,
    result_text,
    result_view,
)
from aios_sdk.generic.memory import ConversationMemory, conversation_key
from aios_sdk.generic.prompts import SHOW_VIEW, SHOW_VIEW_TOOL, system_prompt, with_context
from aios_sdk.generic.toolset import relevant_tools, short_schema
from aios_sdk.generic.views import view_data_problems
from aios_sdk.views import desktop_button, text_view

log = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 3
"""Rounds of tool calls per request; the system's max_rounds (default 5) must exceed it."""
ROLE_FILE = "role.md"
NO_LLM_EN = "No language model is set up yet, so I can't answer questions."
NO_LLM_DETAILS_ZH = (
    "在设置里填写 API key 即可（DeepSeek 等 OpenAI 兼容服务）。也可以设置环境变量 "
    "DEEPSEEK_API_KEY（或 AIOS_LLM_API_KEY）后重启。本地模型（Ollama、vLLM、llama.cpp）："
    "base_url 填它的地址，例如 http://127.0.0.1:11434/v1，model 填模型名，api_key 填任意非空值"
    "（或 AIOS_LLM_BASE_URL / AIOS_LLM_MODEL）。"
)
NO_LLM_DETAILS_EN = (
    "Type an API key in Settings (DeepSeek or any OpenAI-compatible service), or set "
    "DEEPSEEK_API_KEY (or AIOS_LLM_API_KEY) in the environment and restart. For a local model "
    "(Ollama, vLLM, llama.cpp) set base_url to its address, e.g. http://127.0.0.1:11434/v1, "
    "model to the model's name and any non-empty api_key (or AIOS_LLM_BASE_URL / "
    "AIOS_LLM_MODEL)."
)
"""The manual setup, shown folded under the one-line message (docs/app-guide.md has it too)."""
HOME_ACTIONS = ("home", "reset")
ASK_ACTIONS = ("ask", "retry")
_OPEN_WORDS = ("打开", "启动", "开启", "进入", "请", "open", "launch", "start", "show")
_SENTENCE_END = re.compile(r"[。！？]|[.!?](?=\s|$)")
_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


class GenericAgent(AIOSAgent):
    """An app that is only a role prompt: the LLM plans tool calls and picks the view."""

    max_tool_rounds: int = MAX_TOOL_ROUNDS
    stream_replies: bool = True
    """The model's answers in words stream into the conversation panel as they are written
    (``self.llm(..., stream_to_user=True)``); its tool calls never do."""

    def __init__(self, app_dir: str | Path | None = None) -> None:
        if app_dir is not None:
            self.__dict__["_generic_dir"] = Path(app_dir).resolve()
        self._memory = ConversationMemory(self.call_tool)
        self._keywords: list[str] = []
        self._names: dict[str, str] = {}
        self._descriptions: dict[str, str] = {}
        self._load_manifest()

    # ------------------------------------------------------------ identity

    def app_dir(self) -> Path:
        """The app folder: given, else (plain GenericAgent) the folder of the script run."""
        given: Path | None = self.__dict__.get("_generic_dir")
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
        # Per instance, from this folder's manifest: the class defaults stay as they are.
        vars(self).update(name=manifest.name, description=manifest.description, icon=manifest.icon)
        self._names, self._descriptions = manifest.names, manifest.descriptions
        role = (manifest.role_prompt or "").strip()
        if not role and (folder / ROLE_FILE).is_file():
            try:
                role = (folder / ROLE_FILE).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as e:
                log.warning("cannot read %s: %s", folder / ROLE_FILE, e)
        if role:
            vars(self)["role_prompt"] = role
        self._keywords = list(manifest.keywords)
        rounds = getattr(manifest, "max_tool_rounds", None)
        if isinstance(rounds, int) and not isinstance(rounds, bool) and 1 <= rounds <= 20:
            self.max_tool_rounds = rounds

    # -------------------------------------------------------------- handle

    def handle(
        self,
        instruction: str | None,
        context: dict[str, Any],
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        context = context if isinstance(context, dict) else {}
        action = action_request if isinstance(action_request, dict) else None
        en = locale_of(context) == "en"
        results = context.get("tool_results")
        key = self._conversation_key(instruction, action, context)
        question = ""
        try:
            if isinstance(results, dict) and results:
                conv = self._memory.load(key)
                steps = [c.get("step") for c in conv.get("pending", [])] if conv else []
                if conv is None or (steps and not any(s in results for s in steps)):
                    # None of our steps ran: these results belong to another exchange.
                    return self._lost_view(en)
                question = conv.get("question", "")
                self._feed_results(conv, results)
            else:
                request = self._user_request(instruction, action, context)
                if request is None:
                    return self.home_view(
                        en, hint=bool(action and action.get("action_id") in ASK_ACTIONS)
                    )
                question, user_text = request
                conv = {
                    "messages": [
                        {"role": "system", "content": self.system_prompt(context)},
                        {"role": "user", "content": with_context(context, user_text)},
                    ],
                    "offer": question or user_text,
                    "done": {},
                    "round": 0,
                    "next_step": 1,
                    "pending": [],
                    "question": question,
                }
            return self._ask(conv, key, context)
        except LLMUnavailable as e:
            self._memory.forget(key)
            return self._no_llm_view(en, str(e), question)
        except LLMError as e:
            self._memory.forget(key)
            return self._llm_error_view(en, str(e), question)

    # ----------------------------------------------------------- requests

    def _user_request(
        self, instruction: str | None, action: dict[str, Any] | None, context: dict[str, Any]
    ) -> tuple[str, str] | None:
        """(question for a retry, user message for the LLM), or None for the home view."""
        if action is not None:
            action_id = action.get("action_id")
            if action_id in HOME_ACTIONS:
                return None
            if action_id in ASK_ACTIONS:
                text = question_from(action)
                return (text, text) if text else None
            payload = {k: v for k, v in action.items() if k != "action_id"}
            last = (
                context.get("cwd_state", {}).get("last_view")
                if isinstance(context.get("cwd_state"), dict)
                else None
            )
            described = (
                f"[The user used the control action_id={action_id!r} of your "
                f"previous view. Payload: {dumps(payload, 2000)}]"
            )
            if last:
                described += f"\n[That view was: {dumps(last, STATE_CHARS)}]"
            return "", described
        text = (instruction or "").strip()
        if not text or self._only_opens(text):
            return None
        return text, text

    def _only_opens(self, text: str) -> bool:
        """ "打开智能助手" / "open assistant": the routing words and nothing else."""
        words = [*_OPEN_WORDS, self.name, *self._names.values(), *self._keywords]
        rest = text.lower()
        for w in sorted({w.lower() for w in words if w}, key=len, reverse=True):
            rest = rest.replace(w, " ")
        return not _PUNCT.sub("", rest)

    def _conversation_key(
        self, instruction: str | None, action: dict[str, Any] | None, context: dict[str, Any]
    ) -> str:
        sid = context.get("session_id") or current_session_id() or "nosession"
        return conversation_key(str(sid), instruction, action)

    # ------------------------------------------------------------- the LLM

    def tool_specs(self, context: dict[str, Any], request: str = "") -> list[dict[str, Any]]:
        """Function schemas offered to the LLM: atomic tools, this app's tools, show_view.

        With ``request``, only the atomic tools its words call for (all when it names
        none, toolset.relevant_tools), their schemas shortened.
        """
        from aios.tools import tool_schemas

        available = context.get("available_tools")
        allowed = set(available) if isinstance(available, list) and available else None
        wanted = relevant_tools(request) if request else None
        specs = [
            short_schema(s) if request else s
            for s in tool_schemas()
            if (allowed is None or s["function"]["name"] in allowed)
            and (wanted is None or s["function"]["name"] in wanted)
        ]
        for name, info in self.custom_tools().items():
            specs.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": info.description or name,
                        "parameters": info.parameters,
                    },
                }
            )
        for fn, (_, offered) in mcp_functions(context).items():
            params = offered.get("input_schema")
            specs.append(
                {
                    "type": "function",
                    "function": {
                        "name": fn,
                        "description": str(offered.get("description") or fn),
                        "parameters": params if isinstance(params, dict) else {"type": "object"},
                    },
                }
            )
        specs.append(SHOW_VIEW_TOOL)
        return specs

    def system_prompt(self, context: dict[str, Any]) -> str:
        return system_prompt(
            context,
            display_name=self.display_name,
            app_id=self.app_id(),
            role_prompt=self.role_prompt,
            max_tool_rounds=self.max_tool_rounds,
        )

    def _ask(self, conv: dict[str, Any], key: str, context: dict[str, Any]) -> dict[str, Any]:
        en = locale_of(context) == "en"
        messages: list[dict[str, Any]] = conv["messages"]
        if conv["round"] >= self.max_tool_rounds:
            tools = [SHOW_VIEW_TOOL]
            messages.append(
                {
                    "role": "system",
                    "content": (
                        "No more tool calls are possible for this request: call show_view now with "
                        "what you have (say what is missing, if anything)."
                    ),
                }
            )
        else:
            tools = self.tool_specs(context, str(conv.get("offer") or ""))
            conv["mcp"] = {fn: tool for fn, (tool, _) in mcp_functions(context).items()}
        names = {t["function"]["name"] for t in tools}
        problem = ""
        for attempt in range(2):
            reply = self.llm(messages, tools=tools, stream_to_user=self.stream_replies)
            outcome = self._interpret(reply, names, conv, context, tools)
            if outcome.kind == "problem":
                problem = outcome.problem
                if attempt == 0:
                    log.info("LLM answer rejected, asking again: %s", problem)
                    messages.extend([assistant_message(reply), *outcome.feedback])
                    continue
                break
            if outcome.kind == "steps":
                messages.append(assistant_message(reply))
                conv["pending"] = outcome.pending
                self._memory.save(key, conv)
                return outcome.reply
            self._memory.forget(key)
            return outcome.reply
        self._memory.forget(key)
        last = conv.get("done", {}).get(conv.get("last_done") or "")
        if last:
            # Tools ran but the model cannot finish: their last result is the answer.
            log.info("LLM answer still unusable (%s); showing the last tool result", problem)
            return self._finish(self._result_view(last, context), conv, en)
        title = "The assistant gave an unusable answer" if en else "智能助手的回答无法显示"
        message = (
            "The language model's answer could not be used, even after it was asked again. "
            "Try rephrasing the question, or another model in Settings."
            if en
            else "大语言模型的回答无法使用（重问一次后仍然如此）。"
            "换个说法再试，或在设置里换一个模型。"
        )
        # what was wrong goes to the folded details, never into the sentence the user reads
        return self._error(message, title, conv.get("question", ""), en, detail=problem)

    def _result_view(self, done: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        en = locale_of(context) == "en"
        view = result_view(str(done.get("tool")), done.get("entry"), en)
        checked, problem = self._validate_view(view, context)
        if problem:
            return _text_view(dumps(done.get("entry"), STATE_CHARS), en)
        return checked

    def _calls_from_text(
        self, reply: dict[str, Any], tools: list[dict[str, Any]], conv: dict[str, Any]
    ) -> tuple[list[Any], str | None, list[str]]:
        """Calls a model wrote as text in ``content`` (aios/llm/toolcalls.py), as native ones:
        the reply is rewritten so the conversation stays well formed. Returns the calls,
        the plain text when there is no call, and the names refused."""
        ex = extract(reply, tools)
        for note in ex.notes:
            log.info("LLM answer: %s", note)
        if not ex.calls:
            return [], ex.text, ex.refused
        calls = [
            {
                "id": f"call_{conv['next_step']}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
            }
            for i, (name, args) in enumerate(ex.calls)
        ]
        reply["tool_calls"], reply["content"] = calls, None
        return calls, None, ex.refused

    def _text_outcome(
        self,
        reply: dict[str, Any],
        names: set[str],
        conv: dict[str, Any],
        tools: list[dict[str, Any]],
        en: bool,
    ) -> tuple[list[Any], Outcome | None]:
        """An answer in ``content``: the calls written in it, or what to answer instead."""
        calls, plain, refused = self._calls_from_text(reply, tools, conv)
        if calls:
            return calls, None
        if plain is not None:
            return [], Outcome.done(self._finish(_text_view(plain, en), conv, en))
        if refused:
            offered = ", ".join(sorted(names))
            return [], Outcome.bad(
                f"unknown function(s) {', '.join(refused)}",
                [
                    {
                        "role": "user",
                        "content": f"There is no function {', '.join(refused)}. The "
                        f"functions are: {offered}. Call one of them, or answer in words.",
                    }
                ],
            )
        # JSON or markup that is no call: shown as it is, never spoken.
        text = str(reply.get("content") or "").strip()
        return [], Outcome.done(self._finish(_text_view(text, en), conv, en))

    def _interpret(
        self,
        reply: dict[str, Any],
        names: set[str],
        conv: dict[str, Any],
        context: dict[str, Any],
        tools: list[dict[str, Any]] | None = None,
    ) -> Outcome:
        en = locale_of(context) == "en"
        calls = reply.get("tool_calls") or []
        if (not isinstance(calls, list) or not calls) and str(reply.get("content") or "").strip():
            calls, answered = self._text_outcome(reply, names, conv, tools or [], en)
            if answered is not None:
                return answered
        if not isinstance(calls, list) or not calls:
            text = str(reply.get("content") or "").strip()
            if not text:
                return Outcome.bad(
                    "the answer was empty",
                    [
                        {
                            "role": "user",
                            "content": (
                                "Your answer was empty. Answer the request, or call show_view."
                            ),
                        }
                    ],
                )
            return Outcome.done(self._finish(_text_view(text, en), conv, en))
        words = _answer_in_words(calls, names, str(conv.get("question") or ""))
        if words:
            log.info("LLM answer: a call of an unknown function with only words, taken as words")
            return Outcome.done(self._finish(_text_view(words, en), conv, en))
        parsed = self._parse_calls(calls, names, tools or [])
        work = [p for p in parsed if p[1] != SHOW_VIEW]
        views = [p for p in parsed if p[1] == SHOW_VIEW]
        problems = {cid: problem for cid, _, _, problem in parsed if problem}
        if not work and not problems:
            cid, _, args, _ = views[0]
            view, problem = self._validate_view(args, context)
            if not problem:
                return Outcome.done(self._finish(view, conv, en))
            problems[cid] = f"show_view rejected: {problem}. Fix it and call show_view again."
        elif not problems:
            for cid, name, args, _ in work:
                problem = check_args(name, args)
                if problem:
                    problems[cid] = problem
        if problems:
            feedback = [
                {
                    "role": "tool",
                    "tool_call_id": cid,
                    "content": problems.get(
                        cid,
                        "not run: another call of this turn was invalid; send the whole turn "
                        "again, corrected",
                    ),
                }
                for cid, _, _, _ in parsed
            ]
            return Outcome.bad("; ".join(problems.values()), feedback)
        steps, pending, repeated = self._plan(parsed, conv)
        if repeated and not steps:
            log.info("the LLM repeated a call it already made; showing its result")
            view = self._result_view(conv["done"][repeated], context)
            return Outcome.done(self._finish(view, conv, en))
        try:
            steps = self.plan_steps(steps)
        except ProtocolError as e:
            return Outcome.bad(
                str(e),
                [
                    {"role": "tool", "tool_call_id": cid, "content": str(e)}
                    for cid, _, _, _ in parsed
                ],
            )
        used = ", ".join(s["tool"] for s in steps)
        said = str(reply.get("content") or "").strip()
        loading = {
            "status": "ok",
            "view_type": "loading",
            "data": {"message": said or (f"Working: {used}…" if en else f"正在执行：{used}…")},
            "actions": [],
            "steps": steps,
            "message": said or ("Working on it…" if en else "正在处理…"),
        }
        return Outcome("steps", reply=loading, pending=pending)

    def _parse_calls(
        self, calls: list[Any], names: set[str], tools: list[dict[str, Any]]
    ) -> list[tuple[str, str, Any, str]]:
        """(call id, name, args, problem) of each call, the arguments cleaned (loop.clean_args)."""
        params = {t["function"]["name"]: t["function"].get("parameters") for t in tools}
        parsed: list[tuple[str, str, Any, str]] = []
        for call in calls:
            cid, name, args, problem = parse_call(call, names)
            if not problem and name != SHOW_VIEW and isinstance(args, dict):
                args, notes = clean_args(name, args, self._full_params(name, params), self.app_id())
                for note in notes:
                    log.info("tool call repaired: %s", note)
            parsed.append((cid, name, args, problem))
        return parsed

    def _plan(
        self, parsed: list[tuple[str, str, Any, str]], conv: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
        """The steps of a turn, what answers each call, and the key of a repeated call."""
        steps: list[dict[str, Any]] = []
        pending: list[dict[str, Any]] = []
        done: dict[str, Any] = conv.setdefault("done", {})
        repeated = ""
        for cid, name, args, _ in parsed:
            if name == SHOW_VIEW:
                pending.append(
                    {
                        "id": cid,
                        "answer": "not shown: call show_view alone, after "
                        "the results of the other calls",
                    }
                )
                continue
            ckey = call_key(name, args)
            if ckey in done:
                # The loop guard: the same (tool, arguments) again is answered, not re-run.
                repeated = ckey
                pending.append(
                    {
                        "id": cid,
                        "answer": "already called with the same arguments; its result: "
                        + result_text(done[ckey]["entry"]),
                    }
                )
                continue
            step_id = conv["next_step"]
            conv["next_step"] = step_id + 1
            tool = (conv.get("mcp") or {}).get(name, name)  # an MCP tool's step name
            steps.append({"step_id": step_id, "tool": tool, "args": args})
            pending.append({"id": cid, "step": f"step_{step_id}", "key": ckey, "tool": tool})
        return steps, pending, repeated

    def _full_params(self, name: str, offered: dict[str, Any]) -> dict[str, Any] | None:
        """A tool's full parameter schema (the offered one may be shortened)."""
        from aios.tools import tool_schemas

        for spec in tool_schemas():
            if spec["function"]["name"] == name:
                full: dict[str, Any] = spec["function"]["parameters"]
                return full
        found = offered.get(name)
        return found if isinstance(found, dict) else None

    def _validate_view(self, args: Any, context: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The reply for a show_view call, and "" or the reason it is unusable."""
        if not isinstance(args, dict):
            return {}, "the arguments must be an object {view_type, data, actions, message}"
        extra = sorted(set(args) - {"view_type", "data", "actions", "message", "status"})
        if extra:
            return {}, (
                f"unknown field(s) {', '.join(extra)}; show_view takes view_type, data, "
                "actions, message"
            )
        view_type = args.get("view_type")
        if view_type not in VIEW_TYPES:
            return {}, f"view_type must be one of {', '.join(VIEW_TYPES)} (got {view_type!r})"
        view = {
            "status": args.get("status") if args.get("status") in ("ok", "error") else "ok",
            "view_type": view_type,
            "data": args.get("data", {}),
            "actions": args.get("actions") if args.get("actions") is not None else [],
            "message": args.get("message") if isinstance(args.get("message"), str) else "",
        }
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
        if looks_like_code(view.get("message")):
            view = {**view, "message": _pick(en, "这是模型的回答。", "Here is the model's answer.")}
        actions = list(view.get("actions") or [])
        if not any(isinstance(a, dict) and a.get("action_id") == "ask" for a in actions):
            actions.append(_ask_input(en, follow_up=True))
        summary = {
            "view_type": view["view_type"],
            "message": view.get("message") or "",
            "actions": [
                {
                    k: a.get(k)
                    for k in ("type", "action_id", "label", "params")
                    if a.get(k) is not None
                }
                for a in actions
                if isinstance(a, dict)
            ][:20],
        }
        if len(dumps(summary, STATE_CHARS + 1)) > STATE_CHARS:
            summary["actions"] = [a.get("action_id") for a in summary["actions"]]
        return {
            **view,
            "actions": actions,
            "state": {"last_question": conv.get("question", "")[:300], "last_view": summary},
        }

    def _feed_results(self, conv: dict[str, Any], results: dict[str, Any]) -> None:
        """Answer every pending tool call from ``tool_results`` (stopped steps say so)."""
        for call in conv.get("pending") or []:
            if "answer" in call:
                content = call["answer"]
            elif call.get("step") in results:
                entry = results[call["step"]]
                content = result_text(entry)
                if call.get("key"):
                    kept = entry if len(dumps(entry, STATE_CHARS + 1)) <= STATE_CHARS else content
                    conv.setdefault("done", {})[call["key"]] = {
                        "tool": call.get("tool"),
                        "entry": kept,
                    }
                    conv["last_done"] = call["key"]
            else:
                content = "not run: an earlier step of the same turn failed and stopped the plan"
            conv["messages"].append(
                {"role": "tool", "tool_call_id": call["id"], "content": content}
            )
        conv["pending"] = []
        conv["round"] = int(conv.get("round", 0)) + 1

    # ------------------------------------------------------------ views

    def name_in(self, en: bool) -> str:
        """This app's name in the request's language (the manifest's, per locale)."""
        return self._names.get("en" if en else "zh-CN") or self.display_name

    def description_in(self, en: bool) -> str:
        return self._descriptions.get("en" if en else "zh-CN") or self.description

    def home_view(self, en: bool, *, hint: bool = False) -> dict[str, Any]:
        """The view for an empty instruction: who I am, and a place to ask."""
        name, description = self.name_in(en), self.description_in(en)
        if en:
            # The icon is the title bar's (a set name or file): not repeated in the text.
            content = (
                f"{name}\n\n{description}\n\nAsk me anything: I answer, "
                "and when a task needs it I plan my own tool calls (files in my "
                "workspace, web requests, commands, a small database) and show the "
                "result."
            )
            message = "Please type a question." if hint else f"{name} is ready."
        else:
            content = (
                f"{name}\n\n{description}\n\n"
                "有什么问题都可以问我：我会回答，需要时自己规划工具（工作目录里的文件、"
                "网络请求、命令、小型数据库）来完成任务，再把结果展示出来。"
            )
            message = "请输入问题。" if hint else f"{name}已就绪。"
        return {
            "status": "ok",
            "view_type": "text",
            "data": {"title": name, "content": content},
            "actions": [_ask_input(en, follow_up=False)],
            "message": message,
        }

    def _error(
        self, message: str, title: str, question: str, en: bool, detail: Any = None
    ) -> dict[str, Any]:
        reply = error_response(message, title=title, detail=detail)
        actions: list[dict[str, Any]] = []
        if question:
            actions.append(
                {
                    "type": "button",
                    "label": "Try again" if en else "重试",
                    "action_id": "ask",
                    "params": {"question": question},
                }
            )
        actions.append(_ask_input(en, follow_up=False))
        reply["actions"] = actions
        return reply

    def _no_llm_view(self, en: bool, reason: str, question: str = "") -> dict[str, Any]:
        """No language model is set up: not an error of the app, a step the user has to take.

        The question asked, one short sentence, a button to Settings at its LLM fields, and
        the manual setup (environment variables, local models) once, folded away.
        """
        said = _pick(en, "还没有配置语言模型，所以我暂时回答不了问题。", NO_LLM_EN)
        asked = _pick(en, "你的问题：", "You asked: ")
        content = f"{asked}{question}\n\n{said}" if question else said
        actions: list[dict[str, Any]] = [
            desktop_button(
                _pick(en, "打开设置", "Open Settings"), "settings#llm", action_id="open_settings"
            )
        ]
        if question:
            actions.append(
                {
                    "type": "button",
                    "label": _pick(en, "再问一次", "Ask again"),
                    "action_id": "ask",
                    "params": {"question": question},
                }
            )
        actions.append(_ask_input(en, follow_up=False))
        return text_view(
            content,
            title=self.name_in(en),
            message=said,
            actions=actions,
            question=question,
            # The system's reason repeats the setup text; one that does not (standalone) is kept.
            details=_pick(en, NO_LLM_DETAILS_ZH, NO_LLM_DETAILS_EN)
            + ("" if "API_KEY" in reason else f"\n{reason}"),
            details_label=_pick(en, "手动配置", "Set it up by hand"),
        )

    def _llm_error_view(self, en: bool, reason: str, question: str) -> dict[str, Any]:
        from aios.llm.client import OUT_OF_TIME

        if OUT_OF_TIME in reason:
            # The system closed the call at this request's deadline (a slow local model).
            message = _pick(
                en,
                "时间不够了：大语言模型没能在时限内答完。本地模型读长提示词较慢，"
                "可以调大 llm.timeout 和 handle_timeout。",
                f"I ran {OUT_OF_TIME}: the language model did not finish within the time "
                "limit. A local model reads long prompts slowly; raise llm.timeout and "
                "handle_timeout.",
            )
            title = _pick(en, "大语言模型超时", "The LLM ran out of time")
            return self._error(message, title, question, en, detail=reason)
        title = "The LLM did not answer" if en else "大语言模型没有回答"
        message = (
            f"The language model could not answer: {reason}"
            if en
            else f"大语言模型没有回答：{reason}"
        )
        return self._error(message, title, question, en)

    def _lost_view(self, en: bool) -> dict[str, Any]:
        message = (
            "This request's conversation could not be found (the app may have "
            "restarted after its cache entry expired); please ask again."
            if en
            else "找不到这次请求的对话记录（可能是应用重启且缓存已过期），请重新提问。"
        )
        return self._error(message, "Please ask again" if en else "请重新提问", "", en)


MCP_FUNCTION_MAX = 64
"""Longest function name the OpenAI-compatible APIs take (letters, digits, ``_``, ``-``)."""


def mcp_functions(context: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """The MCP tools offered in ``context`` (``mcp_tools``, DESIGN §17) by the function name
    a model may call (``mcp__<server>__<tool>``, other characters as ``_``, a long one cut
    and told apart by a hash) -> (the step's tool ``mcp.<server>.<tool>``, its info)."""
    offered = context.get("mcp_tools")
    if not isinstance(offered, dict):
        return {}
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for tool, info in offered.items():
        if not isinstance(tool, str) or not isinstance(info, dict):
            continue
        bare = tool.removeprefix("mcp.").replace(".", "__", 1)
        fn = "mcp__" + re.sub(r"[^A-Za-z0-9_-]", "_", bare)
        if len(fn) > MCP_FUNCTION_MAX or fn in out:
            digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
            fn = f"{fn[: MCP_FUNCTION_MAX - 9]}_{digest}"
        out[fn] = (tool, info)
    return out


def _pick(en: bool, zh: str, english: str) -> str:
    return english if en else zh


def _ask_input(en: bool, *, follow_up: bool) -> dict[str, Any]:
    if en:
        label, placeholder = (
            ("Ask more", "A follow-up question…")
            if follow_up
            else ("Ask", "Type a question or a task…")
        )
    else:
        label, placeholder = ("继续提问", "接着问…") if follow_up else ("提问", "输入问题或任务…")
    return {"type": "input", "label": label, "action_id": "ask", "placeholder": placeholder}


_WORDS_ARGS = frozenset({"text", "content", "message", "answer", "reply", "response"})


def _answer_in_words(calls: list[Any], names: set[str], question: str) -> str:
    """The words of a lone call to a function that does not exist whose only argument is
    text (a small model's ``reply_directly {"text": "…"}``): the model answered in words,
    through the wrong door; "" otherwise, and for words that answer nothing (an echo of
    ``question``, a bare promise, JSON: aios/llm/wording.py) — then the call is fed
    back as unknown."""
    from aios.llm.wording import withheld

    if len(calls) != 1 or not isinstance(calls[0], dict):
        return ""
    fn = calls[0].get("function")
    if not isinstance(fn, dict) or str(fn.get("name") or "") in names:
        return ""
    try:
        raw = fn.get("arguments")
        args = raw if isinstance(raw, dict) else json.loads(str(raw or "{}"))
    except ValueError:
        return ""
    if not isinstance(args, dict) or not args or set(args) - _WORDS_ARGS:
        return ""
    said = [v.strip() for v in args.values() if isinstance(v, str) and v.strip()]
    if len(said) != 1 or withheld(said[0], question):
        return ""
    return said[0]


def _text_view(text: str, en: bool = False) -> dict[str, Any]:
    # The spoken message is the first sentence; "todo.txt" is not the end of one. Text that
    # is JSON, a fenced block or markup is shown, never spoken: a plain sentence is.
    line = text.strip().split("\n", 1)[0]
    end = _SENTENCE_END.search(line)
    first = line[: end.end()] if end else line
    if looks_like_code(text) or looks_like_code(first):
        first = _pick(en, "这是模型的回答。", "Here is the model's answer.")
    return {
        "status": "ok",
        "view_type": "text",
        "data": {"content": text},
        "actions": [],
        "message": first[:200],
    }
