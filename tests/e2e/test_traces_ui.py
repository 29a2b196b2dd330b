"""The trace viewer and the usage chart in Chromium (DESIGN §16): "why?" on a reply in the
conversation panel and on a window's title bar opens the system's trace window on that run —
the route (the candidate app, its score, the words that matched), the model call and its
tokens, each step with its tool, risk and decision; a filter by kind, a search, the JSONL
export; readable at 1024×700 in English and Chinese. Settings → Usage shows the app's tokens
as the fake model reported them. Markup in a prompt, an answer or a tool's result is shown as
text and never runs. The session report appears when the user starts a new conversation.

The real system with the ``e2e_runs`` app (a plan of a command and a write; a command that
prints markup; a call to the system's model) and the fake OpenAI server as the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from tests.e2e.conftest import Desk, start_e2e_system
from tests.e2e.test_language_ui import switch_language
from tests.fakes.fake_openai import FakeOpenAI, tool_call, tool_calls
from tests.integration.conftest import Running

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["e2e_runs"]
APP = "e2e_runs"
KEY = "sk-e2e-traces-0123456789"
SMALL = {"width": 1024, "height": 700}
HOSTILE_SAID = "<img src=x onerror=\"window.__pwned='instruction'\"> runs hostile"
HOSTILE_ANSWER = "<script>window.__pwned='answer'</script><b>bold?</b>"
HOSTILE_PRINTED = "<script>window.__pwned='script'</script>"
NO_OVERFLOW = """(sel) => {
  const root = document.querySelector(sel);
  const over = [...root.querySelectorAll('*')].filter((n) => n.scrollWidth > n.clientWidth + 1
    && getComputedStyle(n).overflowX === 'visible' && n.clientWidth > 0).map((n) => n.className);
  const box = root.getBoundingClientRect();
  return {over, right: box.right, page: document.documentElement.scrollWidth, view: innerWidth};
}"""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[Running]:
    llm = {
        "api_key": KEY,
        "base_url": fake.url,
        "model": "fake-model",
        "max_retries": 0,
        "prices": {"fake-model": {"input": 2.0, "output": 8.0, "cached": 0.5}},
    }
    system = start_e2e_system(tmp_path_factory.mktemp("e2e"), SYSTEM_APPS, llm=llm)
    yield system
    system.stop()


def dispatch(instruction: str) -> Any:
    """The planner's answer: one task for the runs app."""
    task = {"id": "t1", "app": APP, "instruction": instruction, "depends_on": []}
    return tool_call("dispatch_tasks", {"tasks": [task]})


def instruct(desk: Desk, text: str) -> None:
    box = desk.page.locator("#command_input")
    box.fill(text)
    box.press("Enter")


def why_on_last_reply(desk: Desk) -> Locator:
    """Open the conversation panel and press "why?" on its last app reply: the trace window."""
    page = desk.page
    if not page.locator("#conversation").is_visible():
        page.locator("#conversation_button").click()
    reply = page.locator("#conversation .conv-reply").filter(has=page.locator(".conv-app")).last
    expect(reply).to_be_visible()
    reply.locator(".conv-why").click()
    win = desk.win("trace")
    expect(win.locator("#trace_summary")).to_be_visible()
    return win


def test_why_on_a_reply_shows_the_route_the_model_and_the_steps(
    desk: Desk, fake: FakeOpenAI
) -> None:
    page = desk.page
    page.set_viewport_size(SMALL)  # all of it at 1024×700
    fake.script([dispatch("runs both")])
    calls = len(fake.usages)
    instruct(desk, "please run both through the runs app")
    expect(desk.body(APP)).to_contain_text("codes: step_say=ok, step_note=ok")
    win = why_on_last_reply(desk)
    # a system window: the system's mark, its own id space
    expect(win).to_have_class(re.compile(r"\bwindow-system\b"))
    expect(win.locator(".sys-mark")).to_have_count(1)

    # the route: the planner's source and the router's candidate, its score, its words
    route = win.locator("#trace_route")
    expect(route.locator(".trace-source")).to_have_text(re.compile(r"^(llm|hybrid)"))
    candidate = route.locator(f'.trace-candidates tr[data-app="{APP}"]')
    expect(candidate).to_contain_text("Runs")
    expect(candidate.locator("td").nth(1)).to_have_text(re.compile(r"^\d+\.\d{3}$"))
    expect(candidate.locator("td").nth(2)).to_contain_text("run")
    # the model call: its tokens as the fake reported them, the prompt folded
    usage = fake.usages[calls]
    model = win.locator("#trace_model")
    expect(model).to_contain_text(f"tokens {usage['prompt_tokens']} in")
    expect(model.locator(".trace-prompt")).not_to_have_attribute("open", "")
    expect(model.locator(".trace-answer pre")).to_contain_text("dispatch_tasks")
    # the steps: tool, risk, decision, result
    say = win.locator('#trace_steps tr[data-tool="shell_exec"]')
    expect(say).to_contain_text("say")
    expect(say.locator(".trace-pill")).to_have_text(re.compile(r"^(low|medium|high)$"))
    expect(say.locator(".trace-decision")).not_to_be_empty()
    expect(say).to_contain_text("hello from the command")
    expect(win.locator('#trace_steps tr[data-tool="file_write"]')).to_contain_text("ok")
    expect(win.locator("#trace_summary .trace-tokens")).to_contain_text(
        f"{usage['prompt_tokens']} in"
    )
    # the timeline has a span per model call and step
    expect(win.locator('.trace-span[data-kind="tool_result"]')).to_have_count(2)
    expect(win.locator('.trace-span[data-kind="llm_response"]')).to_have_count(1)

    # filter by kind: only the steps, then only the model's answers
    win.locator("#trace_kind").select_option("step")
    expect(win.locator("#trace_steps")).to_be_visible()
    expect(win.locator("#trace_model")).to_be_hidden()
    expect(win.locator("#trace_route")).to_be_hidden()
    win.locator("#trace_kind").select_option("llm_response")
    expect(win.locator("#trace_model")).to_be_visible()
    expect(win.locator("#trace_steps")).to_be_hidden()
    win.locator("#trace_kind").select_option("")
    # the search finds the printed line and unfolds where it is
    win.locator("#trace_search").fill("hello from the command")
    expect(win.locator("#trace_steps")).to_be_visible()
    expect(win.locator("#trace_route")).to_be_hidden()
    win.locator("#trace_search").fill("")
    expect(win.locator("#trace_route")).to_be_visible()

    # the export is the API's JSONL of this run's turn
    with page.expect_download() as download:
        win.locator("#trace_export").click()
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    assert {"instruction", "route", "llm_response", "step", "tool_result", "run_end"} <= {
        e["event"] for e in events
    }
    api = desk.running.get(f"/api/traces/{events[0]['session_id']}").text.splitlines()
    assert all(line in api for line in lines)

    # readable at 1024×700 beside the conversation panel, in English and in Chinese:
    # nothing wider than its box, nothing under the panel
    panel = page.locator("#conversation").bounding_box()
    assert panel is not None
    for lang, heading in (("en", "Steps"), ("zh-CN", "步骤")):
        if lang != "en":
            page.locator("#conversation .conv-close").click()
            switch_language(desk, lang)
        expect(win.locator("#trace_steps .trace-heading")).to_have_text(heading)
        fit = page.evaluate(NO_OVERFLOW, "#win_trace")
        assert fit["over"] == [], fit
        assert fit["right"] <= panel["x"] and fit["page"] <= SMALL["width"], fit
        desk.shot(f"trace_1024x700_{lang}")
    switch_language(desk, "en")


def test_why_on_a_window_opens_the_run_of_its_last_view(desk: Desk) -> None:
    desk.open_app(APP)
    why = desk.win(APP).locator(".win-why")
    desk.control(APP, "both").click()
    expect(desk.body(APP)).to_contain_text("codes: step_say=ok, step_note=ok")
    expect(why).to_be_visible()
    why.click()
    win = desk.win("trace")
    expect(win.locator("#trace_summary .trace-said")).to_have_text("both")
    expect(win.locator('#trace_steps tr[data-tool="shell_exec"]')).to_contain_text("say")
    assert win.get_attribute("data-win-id") == "sys:trace"


def test_usage_in_settings_shows_the_apps_tokens(desk: Desk, fake: FakeOpenAI) -> None:
    page = desk.page
    fake.script([dispatch("runs ask"), "the model says hi"])
    first = len(fake.requests)
    instruct(desk, "ask the model through the runs app")
    expect(desk.body(APP)).to_contain_text("the model says hi")
    asked = [
        i
        for i, r in enumerate(fake.requests[first:], first)
        if r["messages"][-1].get("content") == "runs ask"
    ]
    assert len(asked) == 1, fake.requests[first:]
    usage = fake.usages[asked[0]]
    expected = desk.api("GET", "/api/usage?by=app")
    (mine,) = [g for g in expected["groups"] if g["key"] == APP]
    assert mine["prompt_tokens"] == usage["prompt_tokens"]  # the app's one call

    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#settings_tab_usage").click()
    row = page.locator(f'#usage_by_app .usage-row[data-key="{APP}"]')
    tokens = usage["prompt_tokens"] + usage["completion_tokens"]
    expect(row).to_have_attribute("data-tokens", str(tokens))
    expect(row).to_contain_text(f"Runs{tokens} tokens · 1 calls")
    expect(page.locator("#usage_by_day .usage-row")).to_have_count(1)
    expect(page.locator("#usage_totals")).to_contain_text("tokens in all")
    expect(page.locator("#usage_totals")).to_contain_text("cost $")
    desk.shot("usage")


def test_markup_in_a_trace_is_text_and_never_runs(desk: Desk, fake: FakeOpenAI) -> None:
    page = desk.page
    fake.script(
        [
            tool_calls(
                (
                    "dispatch_tasks",
                    {
                        "tasks": [
                            {"id": "t1", "app": APP, "instruction": HOSTILE_SAID, "depends_on": []}
                        ]
                    },
                ),
                content=HOSTILE_ANSWER,
            )
        ]
    )
    instruct(desk, HOSTILE_SAID)
    expect(desk.body(APP)).to_contain_text("codes: step_markup=ok")
    win = why_on_last_reply(desk)
    expect(win.locator("#trace_summary .trace-said")).to_have_text(HOSTILE_SAID)
    expect(win.locator('#trace_steps tr[data-tool="shell_exec"]')).to_contain_text(HOSTILE_PRINTED)
    expect(win.locator("#trace_model .trace-answer pre")).to_contain_text(HOSTILE_ANSWER)
    win.locator("#trace_search").fill("pwned")  # unfolds every place it appears
    expect(win.locator("#trace_model .trace-answer pre")).to_be_visible()
    expect(desk.body("trace").locator("img, script, b, iframe")).to_have_count(0)
    assert page.evaluate("() => window.__pwned") is None


def test_a_new_conversation_shows_the_report_of_the_last(desk: Desk, fake: FakeOpenAI) -> None:
    page = desk.page
    fake.script([dispatch("runs both")])
    instruct(desk, "please run both through the runs app")
    expect(desk.body(APP)).to_contain_text("codes: step_say=ok, step_note=ok")
    # a reply of the system's own (no run): "why?" finds its instruction by the time
    instruct(desk, "what time is it")
    page.locator("#conversation_button").click()
    own = page.locator("#conversation .conv-reply").filter(has_not=page.locator(".conv-app"))
    expect(own).to_have_count(1)
    own.locator(".conv-why").click()
    trace = desk.win("trace")
    expect(trace.locator("#trace_summary .trace-said")).to_have_text("what time is it")
    expect(trace.locator("#trace_route")).to_contain_text("System intent: time")
    page.locator('#conversation [data-action="new-conversation"]').click()
    report = page.locator("#conv_report")
    expect(report).to_contain_text(
        re.compile(r"2 turns, 1 runs, 2 tool calls, 1 model calls, [1-9]\d* tokens")
    )
    report.locator(".conv-why").click()  # the ended session's whole trace
    expect(desk.win("trace").locator(".trace-event")).not_to_have_count(0)
    expect(desk.win("trace").locator('.trace-event[data-kind="session_report"]')).to_have_count(1)
