"""The generic LLM app (apps/assistant): the real system, the real app process, a fake LLM.

The fake OpenAI server is scripted with what the model "decides"; every
other part is real: the controller runs the app's steps in its sandbox, the
app asks the LLM through the system's /api/sys/llm, and keeps its
conversation in the system's cache between rounds.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aios_sdk.generic import GenericAgent, view_data_problems
from tests.conftest import ROOT
from tests.fakes.fake_openai import FakeOpenAI, Reply, http_error, text, tool_call, tool_calls
from tests.integration.conftest import Running, copy_apps

APP = "assistant"


def _is_summary(body: Any) -> bool:
    messages = body.get("messages") if isinstance(body, dict) else None
    return bool(messages) and str(messages[0].get("content", "")).startswith("Summarise")


class RoutingFake(FakeOpenAI):
    """Answers the controller's history summaries itself, so the script only feeds the app."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._local = threading.local()

    def _record(self, body: Any, headers: dict[str, str], path: str) -> None:
        self._local.body = body
        super()._record(body, headers, path)

    def _next(self) -> Reply:
        if _is_summary(getattr(self._local, "body", None)):
            return text("用户在使用智能助手")
        return super()._next()

    def app_requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if not _is_summary(r)]


@pytest.fixture
def fake() -> Iterator[RoutingFake]:
    with RoutingFake(api_key="sk-test") as f:
        yield f


@pytest.fixture
def start(make_system: Callable[..., Running], tmp_path: Path) -> Callable[..., Running]:
    def go(fake: FakeOpenAI | None = None) -> Running:
        apps = copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps")
        llm = (
            {"api_key": "sk-test", "base_url": fake.url, "model": "fake", "max_retries": 0}
            if fake
            else {"api_key": ""}
        )
        running = make_system(apps_dir=apps, llm=llm)
        assert running.get("/api/health").json()["apps"][APP] == "running"
        return running

    return go


def ask(system: Running, question: str, sid: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"app": APP, "action_id": "ask", "value": question}
    if sid:
        body["session_id"] = sid
    r = system.post("/api/action", body)
    assert r.status_code == 200, r.text
    return r.json()


def audit(system: Running, tool: str | None = None) -> list[dict[str, Any]]:
    rows = system.get(f"/api/audit?app={APP}").json()
    return sorted((r for r in rows if tool is None or r["tool"] == tool), key=lambda r: r["id"])


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def functions(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


# ------------------------------------------------------------------ the plan


def test_multi_round_plan_runs_tools_feeds_results_back_and_shows_the_view(
    start: Callable[..., Running], fake: RoutingFake
) -> None:
    fake.script(
        [
            tool_calls(
                ("file_write", {"path": "workspace/todo.txt", "content": "买牛奶\n写周报"}),
                ("file_list", {"path": "workspace"}),
                content="我先写文件再看看目录",
            ),
            tool_call(
                "show_view",
                {
                    "view_type": "list",
                    "data": {
                        "title": "工作目录",
                        "items": [{"title": "todo.txt", "sub": "2 条待办"}],
                    },
                    "actions": [
                        {
                            "type": "button",
                            "label": "读取",
                            "action_id": "read_todo",
                            "params": {"path": "todo.txt"},
                        }
                    ],
                    "message": "已把待办写进 todo.txt",
                },
            ),
            text("todo.txt 里有两条待办：买牛奶、写周报。"),
        ]
    )
    system = start(fake)
    home = system.open(APP)
    assert home["response"]["view_type"] == "text"
    assert home["response"]["actions"][0]["action_id"] == "ask"
    assert fake.app_requests() == []  # the home view needs no LLM
    sid = home["session_id"]

    final = ask(system, "把买牛奶和写周报记到 todo.txt，然后列出文件", sid)["response"]
    assert final["status"] == "ok" and final["view_type"] == "list"
    assert final["data"]["items"] == [{"title": "todo.txt", "sub": "2 条待办"}]
    assert final["message"] == "已把待办写进 todo.txt"
    assert [a["action_id"] for a in final["actions"]] == ["read_todo", "ask"]
    workspace = system.apps_dir / APP / "workspace"
    assert (workspace / "todo.txt").read_text(encoding="utf-8") == "买牛奶\n写周报"

    rows = [r for r in audit(system) if r["tool"] in ("file_write", "file_list")]
    assert [(r["tool"], r["step_id"], r["status"], r["session_id"]) for r in rows] == [
        ("file_write", "step_1", "ok", sid),
        ("file_list", "step_2", "ok", sid),
    ]
    assert audit(system, "cache_set")  # the conversation was kept between the rounds

    first, second = fake.app_requests()[:2]
    # file words: the file tools are offered (and show_view), not the eleven
    assert functions(first) == ["file_read", "file_write", "file_list", "show_view"]
    system_prompt = first["messages"][0]["content"]
    # the system message is stable (role, how to work); what changes comes after it, in
    # the user's message: the session so far is short, so it is there verbatim
    assert system_prompt.startswith("你是智能助手") and "智能助手已就绪" not in system_prompt
    user = first["messages"][1]
    assert user["role"] == "user" and "智能助手已就绪" in user["content"]
    assert user["content"].startswith("[Context: Files in your workdir: ")
    assert user["content"].endswith("\n\n把买牛奶和写周报记到 todo.txt，然后列出文件")
    # round 2 carries round 1's calls and, for each call id, its result as a tool message
    calls = second["messages"][2]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["file_write", "file_list"]
    results = tool_messages(second)
    assert [m["tool_call_id"] for m in results] == [c["id"] for c in calls]
    written = json.loads(results[0]["content"])
    assert written["status"] == "ok"
    size = len("买牛奶\n写周报".encode())
    assert written["result"] == {"path": "workspace/todo.txt", "size": size}
    listed = json.loads(results[1]["content"])
    assert [e["name"] for e in listed["result"]["entries"]] == [".gitkeep", "todo.txt"]

    # a click on a control of that view goes to the LLM with the view it came from
    clicked = system.post(
        "/api/action",
        {"app": APP, "action_id": "read_todo", "params": {"path": "todo.txt"}, "session_id": sid},
    ).json()["response"]
    assert clicked["view_type"] == "text"
    assert clicked["data"]["content"] == "todo.txt 里有两条待办：买牛奶、写周报。"
    assert clicked["message"] == "todo.txt 里有两条待办：买牛奶、写周报。"
    said = fake.app_requests()[2]["messages"][1]["content"]
    assert "action_id='read_todo'" in said and '"path": "todo.txt"' in said
    assert "已把待办写进 todo.txt" in said  # the previous view, from the session state


def test_a_refused_step_is_reported_to_the_llm_and_nothing_escapes(
    start: Callable[..., Running], fake: RoutingFake, tmp_path: Path
) -> None:
    fake.script(
        [
            tool_call("file_write", {"path": "../../escaped.txt", "content": "pwned"}),
            tool_call(
                "show_view",
                {
                    "view_type": "text",
                    "data": {"content": "写不了工作目录外面"},
                    "message": "被沙箱拒绝了",
                },
            ),
        ]
    )
    system = start(fake)
    reply = ask(system, "在上级目录写个文件")["response"]
    assert reply["status"] == "ok" and reply["data"]["content"] == "写不了工作目录外面"
    [refusal] = tool_messages(fake.app_requests()[1])
    entry = json.loads(refusal["content"])
    assert entry["status"] == "error" and "path confinement" in entry["error"]
    assert [r["status"] for r in audit(system, "file_write")] == ["denied"]
    assert not (system.apps_dir / "escaped.txt").exists()
    assert not (tmp_path / "escaped.txt").exists()


def test_after_max_tool_rounds_only_show_view_is_offered(
    start: Callable[..., Running], fake: RoutingFake
) -> None:
    fake.script(
        [
            tool_call("cache_set", {"key": "n", "value": 1}),
            tool_call("cache_get", {"key": "n"}),
            tool_call("file_list", {}),
            tool_call(
                "show_view", {"view_type": "text", "data": {"content": "n = 1"}, "message": "完成"}
            ),
        ]
    )
    system = start(fake)
    reply = ask(system, "数一数")["response"]
    assert reply["status"] == "ok" and reply["data"]["content"] == "n = 1"
    requests = fake.app_requests()
    assert [functions(r)[-1] for r in requests] == ["show_view"] * 4
    assert functions(requests[3]) == ["show_view"]  # the budget of tool rounds is spent
    steps = [(r["tool"], r["step_id"]) for r in audit(system) if r["step_id"]]
    # step ids run on across the rounds, so a result never lands on the wrong call
    assert steps == [("cache_set", "step_1"), ("cache_get", "step_2"), ("file_list", "step_3")]


# ------------------------------------------------------------ bad answers


def test_an_invalid_view_is_fed_back_once_and_the_fix_is_shown(
    start: Callable[..., Running], fake: RoutingFake
) -> None:
    fake.script(
        [
            tool_call(
                "show_view", {"view_type": "list", "data": {"items": "牛奶"}, "message": "清单"}
            ),
            tool_call(
                "show_view",
                {"view_type": "list", "data": {"items": [{"title": "牛奶"}]}, "message": "清单"},
            ),
        ]
    )
    system = start(fake)
    reply = ask(system, "列个购物清单")["response"]
    assert reply["status"] == "ok" and reply["data"]["items"] == [{"title": "牛奶"}]
    first, second = fake.app_requests()
    bad_call = second["messages"][2]["tool_calls"][0]
    [feedback] = tool_messages(second)
    assert feedback["tool_call_id"] == bad_call["id"]
    assert (
        "show_view rejected" in feedback["content"]
        and "data.items must be a list" in feedback["content"]
    )


def test_bad_answers_twice_become_an_error_view_and_the_app_keeps_working(
    start: Callable[..., Running], fake: RoutingFake
) -> None:
    fake.script(
        [
            tool_call("file_write", {"path": "a.txt"}),  # no content: fails the tool's schema
            tool_call("launch_rockets", {"count": 3}),  # no such function
            text("好的，已经完成。"),
        ]
    )
    system = start(fake)
    reply = ask(system, "写个文件")["response"]
    assert reply["status"] == "error" and reply["view_type"] == "error"
    # what was wrong is in the folded details, not in the sentence the user reads
    assert "launch_rockets" in str(reply["data"]["detail"])
    assert "launch_rockets" not in reply["data"]["message"]
    assert [a["action_id"] for a in reply["actions"]] == ["ask", "ask"]  # retry, ask again
    assert reply["actions"][0]["params"] == {"question": "写个文件"}
    first, second = fake.app_requests()
    [feedback] = tool_messages(second)
    assert "file_write: bad arguments: content" in feedback["content"]
    assert audit(system, "file_write") == []  # nothing ran
    assert not (system.apps_dir / APP / "workspace" / "a.txt").exists()

    again = ask(system, "现在呢")["response"]
    assert again["status"] == "ok" and again["data"]["content"] == "好的，已经完成。"


def test_words_sent_through_a_function_that_does_not_exist_are_the_answer(
    start: Callable[..., Running], fake: RoutingFake
) -> None:
    """A small model answers with the planner's ``reply_directly {"text": …}``: the user
    reads its words, not an error — unless they answer nothing (a bare promise); a made-up
    function with other arguments is still fed back as unknown."""
    fake.script(
        [
            tool_call("reply_directly", {"text": "The Nile is about 6,650 km long."}),
        ]
    )
    system = start(fake)
    reply = ask(system, "how long is the Nile?")["response"]
    assert reply["status"] == "ok", reply
    assert reply["data"]["content"] == "The Nile is about 6,650 km long."
    assert len(fake.app_requests()) == 1  # taken at once, not asked again
    fake.script(
        [
            tool_call("reply_directly", {"text": "好的，我来帮你处理。"}),  # a bare promise
            text("长城全长约两万一千公里。"),
        ]
    )
    promised = ask(system, "长城有多长")["response"]
    assert promised["data"]["content"] == "长城全长约两万一千公里。", promised
    fake.script(
        [
            tool_call("launch_rockets", {"count": 3, "text": "go"}),
            text("It could not launch anything."),
        ]
    )
    other = ask(system, "launch three rockets")["response"]
    assert other["data"]["content"] == "It could not launch anything."
    [feedback] = tool_messages(fake.app_requests()[-1])
    assert "unknown function 'launch_rockets'" in feedback["content"]


@pytest.mark.parametrize(
    "payload",
    [
        {"action_id": "ask"},
        {"action_id": "ask", "value": 42},
        {"action_id": "ask", "params": {"question": ["not", "text"]}},
        {"action_id": "ask", "form_values": {"question": "   "}},
        {"action_id": "home", "checked": [1, 2]},
    ],
)
def test_ask_without_a_question_shows_the_home_view(
    start: Callable[..., Running], fake: RoutingFake, payload: dict[str, Any]
) -> None:
    system = start(fake)
    reply = system.post("/api/action", {"app": APP, **payload}).json()["response"]
    assert reply["status"] == "ok" and reply["view_type"] == "text"
    assert reply["actions"][0]["action_id"] == "ask"
    assert fake.app_requests() == []


# ------------------------------------------------------------- no LLM / errors


def no_llm_view_problems(reply: dict[str, Any], question: str, said: str) -> list[str]:
    """What is wrong with a no-LLM reply, as the user sees it (empty: nothing)."""
    data, content = reply["data"], reply["data"]["content"]
    shown = [content, reply["message"], data.get("title", "")]
    problems = [
        *(
            ["not a calm text view"]
            if (reply["status"], reply["view_type"]) != ("ok", "text")
            else []
        ),
        *([f"question {question!r} not shown"] if question not in content else []),
        *([f"no {said!r}"] if said not in content or reply["message"] != said else []),
        *(["setup text outside the folded details"] if any("API_KEY" in t for t in shown) else []),
        *(
            ["setup text not once"]
            if data.get("details", "").count("DEEPSEEK_API_KEY") != 1
            else []
        ),
    ]
    first = reply["actions"][0] if reply["actions"] else {}
    if (first.get("type"), first.get("desktop"), first.get("variant")) != (
        "button",
        "settings#llm",
        "primary",
    ):
        problems.append(f"the first control does not open Settings: {first}")
    return problems


def test_without_an_llm_the_app_shows_the_question_and_a_button_to_settings(
    start: Callable[..., Running],
) -> None:
    system = start()
    home = system.open(APP)["response"]
    assert home["status"] == "ok" and "智能助手" in home["data"]["content"]
    said = "还没有配置语言模型，所以我暂时回答不了问题。"
    reply = ask(system, "1+1 等于几")["response"]
    assert no_llm_view_problems(reply, "1+1 等于几", said) == []
    assert reply["actions"][0]["label"] == "打开设置"
    # routed by the offline router, the same answer
    result = system.instruct("问智能助手：1+1 等于几")
    assert [r["app"] for r in result["results"]] == [APP]
    assert no_llm_view_problems(result["results"][0]["response"], "1+1 等于几", said) == []
    # in English (config.language), all of it in English, the name too
    assert system.post("/api/config", {"updates": {"language": "en"}}).status_code == 200
    reply = ask(system, "what is 2+2")["response"]
    said = "No language model is set up yet, so I can't answer questions."
    assert no_llm_view_problems(reply, "what is 2+2", said) == []
    assert (reply["data"]["title"], reply["actions"][0]["label"]) == ("Assistant", "Open Settings")
    assert "Set it up by hand" == reply["data"]["details_label"]


def test_llm_server_errors_give_a_clear_error_view_with_retry(
    start: Callable[..., Running], fake: RoutingFake
) -> None:
    fake.script([http_error(500), text("2")])
    system = start(fake)
    reply = ask(system, "1+1 等于几")["response"]
    assert reply["status"] == "error" and reply["view_type"] == "error"
    assert reply["data"]["title"] == "大语言模型没有回答"
    assert "HTTP 500" in reply["data"]["message"]
    retry = reply["actions"][0]
    assert (retry["type"], retry["label"], retry["action_id"], retry["params"]) == (
        "button",
        "重试",
        "ask",
        {"question": "1+1 等于几"},
    )
    retried = system.post(
        "/api/action", {"app": APP, "action_id": "ask", "params": {"question": "1+1 等于几"}}
    ).json()
    assert retried["response"]["status"] == "ok"
    assert retried["response"]["data"]["content"] == "2"


def test_standalone_the_app_reads_its_manifest_and_explains_the_missing_llm(tmp_path: Path) -> None:
    folder = copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps") / APP
    agent = GenericAgent(folder)
    assert (agent.name, agent.icon) == ("智能助手", "bot")
    assert agent.role_prompt.startswith("你是智能助手")
    assert agent.handle("打开智能助手", {})["view_type"] == "text"  # routing words only: home
    reply = agent.handle("what is 2+2", {"locale": "en"})
    said = "No language model is set up yet, so I can't answer questions."
    assert no_llm_view_problems(reply, "what is 2+2", said) == []
    assert "standalone" in reply["data"]["details"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "main.py",
        "manifest.json",
        "requirements.txt",
        "workspace",
    ]  # nothing written


# ------------------------------------------------------------ view shapes


@pytest.mark.parametrize(
    ("view_type", "data", "problem"),
    [
        ("text", {"content": "hi"}, None),
        ("text", {"text": "hi"}, "text view: data.content must be a string"),
        ("list", {"items": ["a", {"title": "b", "sub": "c"}]}, None),
        ("list", {"items": [1]}, "list view: each item must be an object {title, sub} or a string"),
        ("card", {"cards": [{"title": "t", "desc": "d"}]}, None),
        ("card", {"items": []}, "card view: data.cards must be a list of {title, image?, desc}"),
        ("table", {"columns": ["a"], "rows": [["1"]]}, None),
        (
            "table",
            {"columns": ["a"], "rows": ["1"]},
            "table view: each row must be a list of cells",
        ),
        ("form", {"fields": [{"name": "q", "label": "Q", "type": "text"}]}, None),
        (
            "form",
            {"fields": [{"label": "Q"}]},
            "form view: each field must be an object with a name",
        ),
        ("media", {"url": "/apps/assistant/files/a.mp3", "type": "audio"}, None),
        (
            "media",
            {"url": "javascript:alert(1)", "type": "audio"},
            "media view: data.url must be http(s) or /apps/<app>/files/<path>",
        ),
        (
            "media",
            {"url": "https://x/a.mp4", "type": "movie"},
            "media view: data.type must be audio or video",
        ),
        ("image", {"url": "data:image/png;base64,AAAA"}, None),
        ("image", {"caption": "no url"}, "image view: data.url must be a non-empty string"),
        ("chart", {"type": "bar", "labels": ["a", "b"], "values": [1, 2]}, None),
        (
            "chart",
            {"type": "pie", "labels": ["a"], "datasets": [{"label": "x", "values": [1]}]},
            None,
        ),
        (
            "chart",
            {"type": "bar", "labels": ["a", "b"], "values": [1]},
            "chart: 2 labels but 1 values",
        ),
        (
            "chart",
            {"type": "radar", "labels": [], "values": []},
            "chart: data.type must be one of bar, line, pie, doughnut",
        ),
        ("code", {"language": "python", "code": "print(1)"}, None),
        ("code", {"language": "python"}, "code view: data.code must be a string"),
        (
            "dashboard",
            {
                "widgets": [
                    {"type": "text", "content": "hi"},
                    {"type": "chart", "chart_type": "line", "labels": ["a"], "values": [1]},
                ]
            },
            None,
        ),
        (
            "dashboard",
            {"widgets": [{"type": "gauge"}]},
            "dashboard: widget 0 needs a type among text, list, card, table, form, media, image, "
            "chart, code",
        ),
        (
            "dashboard",
            {"widgets": [{"type": "chart", "labels": ["a"], "values": [1]}]},
            "dashboard: widget 0 chart: data.chart_type must be one of bar, line, pie, doughnut",
        ),
        ("list", ["not", "an", "object"], "data must be an object for a list view"),
    ],
)
def test_view_shapes_are_checked_before_the_user_sees_them(
    view_type: str, data: Any, problem: str | None
) -> None:
    problems = view_data_problems(view_type, data)
    assert problems == ([] if problem is None else [problem])
