"""The planner never shows its own words, and answers in the language asked (issue 22 item 4).

Through the real system on real bundled apps (hello, monitor, notes, music, files),
offline and with the fake OpenAI server replaying what a 0.5 B local model did: it
echoed the planner's correction prompt as its reply, answered "你好小AI" where the
user asked the Hello app to greet, and replied in Chinese to an English question
(UI zh-CN). Thanks and goodbyes are answered by the system, no app called, no
"which app did you mean?"."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from aios.llm import providers
from tests.conftest import ROOT
from tests.fakes.fake_openai import FakeOpenAI, Reply, text, tool_call
from tests.integration.conftest import Running, copy_apps, start_system

KEY = "sk-test"
APPS = ["hello", "monitor", "notes", "music", "files"]
CORRECTION = (
    "Invalid plan: reply_directly needs a non-empty text. "
    "Call dispatch_tasks or reply_directly again, corrected."
)
"""The correction prompt a weak model echoed as its reply (issue 22)."""
PLANNER_WORDS = re.compile(r"dispatch_tasks|reply_directly|Invalid plan|depends_on|\{\"")
CJK = re.compile(r"[\u4e00-\u9fff]")
SMALL_TALK = [
    "thanks, that's all for now",
    "thank you",
    "bye",
    "谢谢",
    "没事了",
    "再见",
    "好的谢谢",
]


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("words_offline")
    system = start_system(copy_apps(root / "apps", APPS, source=ROOT / "apps"), root / "data")
    yield system
    system.stop()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key=KEY) as f:
        yield f


@pytest.fixture(scope="module")
def hybrid_system(fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("words_llm")
    system = start_system(
        copy_apps(root / "apps", APPS, source=ROOT / "apps"),
        root / "data",
        llm={"api_key": KEY, "base_url": fake.url, "model": "qwen2.5-0.5b", "max_retries": 0},
    )
    yield system
    system.stop()


@pytest.fixture
def with_llm(hybrid_system: Running, fake: FakeOpenAI) -> Running:
    fake.reset()
    fake.json_schema = True
    fake.default = text("")
    providers.remember_schema_support(fake.url, None)
    return hybrid_system


def plan_requests(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [
        r
        for r in fake.requests
        if "Decide what to do with the user's instruction" in r["messages"][0]["content"]
    ]


def app_results(out: dict[str, Any]) -> list[str]:
    return [r["app"] for r in out["results"]]


def assert_own_words(out: dict[str, Any]) -> None:
    """What the user sees is never the planner's prompt, schema, JSON or a tool name."""
    assert out["message"], out
    assert not PLANNER_WORDS.search(out["message"]), out["message"]


# ------------------------------------------------------------ small talk


@pytest.mark.parametrize("said", SMALL_TALK)
def test_thanks_and_goodbyes_are_small_talk_offline(offline: Running, said: str) -> None:
    out = offline.instruct(said)
    assert out["intent"] == "small_talk" and out["source"] == "system", out
    assert out["results"] == [] and out["plan"] == [] and out.get("state") != "waiting"
    assert "你是想用" not in out["message"] and "Did you mean" not in out["message"]


def test_an_english_goodbye_is_answered_in_english(offline: Running) -> None:
    out = offline.instruct("thanks, that's all for now")
    assert not CJK.search(out["message"]), out["message"]
    assert offline.instruct("好的谢谢")["message"].startswith("不客气")


@pytest.mark.parametrize(
    ("said", "locale", "english"),
    [
        ("goodbye", "zh-CN", True),
        ("hey!", "zh-CN", True),
        ("help", "zh-CN", True),
        ("再见", "en", False),
        ("帮助", "en", False),
    ],
)
def test_a_one_word_phrase_is_answered_in_its_own_language(
    offline: Running, said: str, locale: str, english: bool
) -> None:
    """A phrase of the system's own tables is in one language, whatever the UI's."""
    r = offline.post("/api/instruction", {"text": said, "locale": locale})
    assert r.status_code == 200, r.text
    message = r.json()["message"]
    assert bool(CJK.search(message)) is not english, message


@pytest.mark.parametrize(("said", "locale"), [("i'm hungry", "zh-CN"), ("肚子饿", "en")])
def test_what_no_app_understands_is_answered_in_the_language_it_was_said_in(
    offline: Running, said: str, locale: str
) -> None:
    r = offline.post("/api/instruction", {"text": said, "locale": locale})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["intent"] == "no_match" and out["results"] == [], out
    assert bool(CJK.search(out["message"].replace(said, ""))) is (locale == "en"), out["message"]


def test_a_word_in_no_language_keeps_the_uis(offline: Running) -> None:
    r = offline.post("/api/instruction", {"text": "ok", "locale": "zh-CN"})
    assert r.status_code == 200 and "ok" not in r.json().get("intent", "")
    hi = offline.post("/api/instruction", {"text": "hi", "locale": "zh-CN"}).json()
    assert CJK.search(hi["message"]), hi["message"]


def test_with_a_model_small_talk_never_asks_it(with_llm: Running, fake: FakeOpenAI) -> None:
    fake.script([])
    for said in SMALL_TALK:
        out = with_llm.instruct(said)
        assert out["intent"] == "small_talk" and app_results(out) == [], (said, out)
    assert fake.requests == []


# ------------------------------------------------------------ the app named


def test_greet_me_reaches_hello_offline(offline: Running) -> None:
    out = offline.instruct("跟我打个招呼")
    assert app_results(out) == ["hello"] and out["results"][0]["response"]["status"] == "ok"


def test_a_models_direct_reply_loses_to_the_app_asked_for(
    with_llm: Running, fake: FakeOpenAI
) -> None:
    fake.script([tool_call("reply_directly", {"text": "你好小AI"})])
    out = with_llm.instruct("跟我打个招呼")
    assert out["source"] == "hybrid" and app_results(out) == ["hello"], out
    assert out["message"] != "你好小AI"
    assert any("router preferred" in n and "direct reply" in n for n in out["notes"])


def test_the_models_reply_stays_when_no_app_fits(with_llm: Running, fake: FakeOpenAI) -> None:
    fake.script([tool_call("reply_directly", {"text": "为什么程序员分不清万圣节和圣诞节？"})])
    out = with_llm.instruct("讲个笑话")
    assert out["source"] == "llm" and out["message"] == "为什么程序员分不清万圣节和圣诞节？"


# ------------------------------------------------------------ the planner's own words


@pytest.mark.parametrize(
    "replies",
    [
        [text(""), text(CORRECTION)],  # the case: the correction echoed back
        [text(f"好的。{CORRECTION}")],
        [text("我会调用 reply_directly 来回答你。")],  # a tool named in prose
        [tool_call("reply_directly", {"text": 'tasks: [{"app": "hello"}] depends_on []'})],
        [Reply(content="", constrained='{"tasks": [], "reply": "Call dispatch_tasks again"}')],
    ],
    ids=["echoed-correction", "correction-in-words", "tool-in-prose", "json-in-reply", "schema"],
)
def test_the_planners_words_never_reach_the_user(
    with_llm: Running, fake: FakeOpenAI, replies: list[Reply]
) -> None:
    fake.script(replies)
    routed = with_llm.instruct("跟我打个招呼")
    assert app_results(routed) == ["hello"], routed
    assert_own_words(routed)
    assert any("withheld" in n for n in routed["notes"]), routed["notes"]
    fake.script(replies)
    unrouted = with_llm.instruct("讲个笑话")  # no app fits: the system's own words
    assert unrouted["results"] == [] and unrouted["intent"] == "no_match", unrouted
    assert_own_words(unrouted)


def test_a_task_given_the_planners_words_gets_the_users_instead(
    with_llm: Running, fake: FakeOpenAI
) -> None:
    task = {"id": "t1", "app": "notes", "instruction": CORRECTION, "depends_on": []}
    fake.script([tool_call("dispatch_tasks", {"tasks": [task]})])
    out = with_llm.instruct("记一下买牛奶")
    assert app_results(out) == ["notes"] and out["plan"][0]["instruction"] == "记一下买牛奶"
    assert_own_words(out)
    stored = json.dumps(out["results"], ensure_ascii=False)
    assert "Invalid plan" not in stored and "dispatch_tasks" not in stored
    assert any("planner's own words" in n for n in out["notes"]), out["notes"]


def test_a_reply_that_only_echoes_the_user_is_not_an_answer(
    with_llm: Running, fake: FakeOpenAI
) -> None:
    fake.script([text("跟我打个招呼")])
    out = with_llm.instruct("跟我打个招呼")
    assert app_results(out) == ["hello"] and out["message"] != "跟我打个招呼"
    assert any("echoes" in n for n in out["notes"]), out["notes"]


# ------------------------------------------------------------ the language asked in


def test_an_english_question_gets_an_english_answer_offline(offline: Running) -> None:
    out = offline.instruct("what is the CPU usage right now")  # UI language: zh-CN
    assert app_results(out) == ["monitor"], out
    assert out["results"][0]["response"]["status"] == "ok"
    assert not CJK.search(out["message"]), out["message"]
    hello = offline.instruct("say hello to my friend Anna")
    assert app_results(hello) == ["hello"] and hello["message"] == "Replied"
    chinese = offline.instruct("跟我打个招呼")
    assert chinese["message"] == "已回复"


def test_a_chinese_reply_to_an_english_question_is_withheld(
    with_llm: Running, fake: FakeOpenAI
) -> None:
    fake.script([tool_call("reply_directly", {"text": "天空是蓝色的，因为瑞利散射。"})])
    out = with_llm.instruct("tell me a fun fact about octopuses")
    assert_own_words(out)
    assert not CJK.search(out["message"]), out["message"]
    assert any("the user wrote in en" in n for n in out["notes"]), out["notes"]
    [sent] = plan_requests(fake)
    assert "The user wrote in English" in sent["messages"][0]["content"]


def test_an_english_reply_to_an_english_question_is_kept(
    with_llm: Running, fake: FakeOpenAI
) -> None:
    fake.script([tool_call("reply_directly", {"text": "An octopus has three hearts."})])
    out = with_llm.instruct("tell me a fun fact about octopuses")
    assert out["source"] == "llm" and out["message"] == "An octopus has three hearts."
