"""Which language a text is in, which reply is withheld, what small talk is (issue 22)."""

from __future__ import annotations

import pytest

from aios.control.intents import normalise, recognise, talk_topic
from aios.control.planner import SCHEMA_HINT, SYSTEM_PROMPT, _feedback
from aios.llm.wording import phrase_lang, planner_words, reply_lang, text_lang, withheld


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("what is the CPU usage", "en"),
        ("thanks, that's all for now", "en"),
        ("create a new file called todo.txt", "en"),
        ("create a file called 你好.txt", "en"),  # a Chinese name in an English request
        ('write "你好世界" into a note', "en"),  # quoted content is data
        ("run this python snippet: print(sum(range(10)))", "en"),
        ("看看系统CPU占用", "zh-CN"),
        ("写一个文件 hello.txt 内容是你好", "zh-CN"),
        ("跟我打个招呼", "zh-CN"),
        ("把 'hello world' 记下来", "zh-CN"),
    ],
)
def test_a_clear_language_is_told(text: str, lang: str) -> None:
    assert text_lang(text) == lang


@pytest.mark.parametrize(
    "text",
    ["", "   ", "123", "bye", "CPU", "打开 notes", "用 Memo 记录 buy milk", "play 七里香", "？"],
)
def test_mixed_or_short_text_has_no_clear_language(text: str) -> None:
    assert text_lang(text) is None


def test_the_reply_language_is_the_ui_one_unless_the_text_is_clear() -> None:
    assert reply_lang("what time is it", "zh-CN") == "en"
    assert reply_lang("现在几点", "en") == "zh-CN"
    assert reply_lang("bye", "zh-CN") == "zh-CN"
    assert reply_lang("bye", "en-US") == "en"
    assert reply_lang("打开 music", None) == "zh-CN"


@pytest.mark.parametrize(
    "reply",
    [
        "Invalid plan: reply_directly needs a non-empty text. Call dispatch_tasks or "
        "reply_directly again, corrected.",
        "我会调用 dispatch_tasks。",
        "reply directly: 你好",
        '{"tasks": [], "reply": "你好"}',
        '[{"app": "notes"}]',
        "```json\n{}\n```",
        "<tool_call>{}</tool_call>",
        'tasks "instruction": 记一下',
        "Installed apps (id: name — description): notes",
        "",
        "   ",
    ],
)
def test_the_planners_own_words_are_withheld(reply: str) -> None:
    assert withheld(reply, "讲个笑话")


def test_every_text_the_planner_sends_the_model_would_be_withheld() -> None:
    """Whatever of its prompts a model echoes, the filter knows it."""
    hint = _feedback({"content": "x"}, "reply_directly needs a non-empty text")[-1]["content"]
    for said in (hint, SCHEMA_HINT, SYSTEM_PROMPT.format(apps="- notes: 记事本")):
        assert withheld(said, "你好"), said


def test_an_echo_and_another_language_are_withheld() -> None:
    assert "echoes" in str(withheld("跟我打个招呼！", "跟我打个招呼"))
    assert "echoes" in str(withheld("Tell me a joke", "tell me a joke."))
    assert "zh-CN" in str(withheld("天空是蓝色的，因为瑞利散射。", "why is the sky blue"))
    assert "en" in str(withheld("Because of Rayleigh scattering.", "天空为什么是蓝色的"))


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("好的，我来帮你处理。", "删除 keep.txt"),
        ("我这就帮你办", "跑一下 print(1)"),
        ("Sure, I'll handle that for you.", "delete keep_or_not.txt please"),
        ("Let me take care of it.", "play the next song"),
    ],
)
def test_a_reply_that_only_promises_to_act_is_withheld(reply: str, said: str) -> None:
    """A small model's "OK, I'll handle it" does nothing: the app the user meant answers."""
    assert "promises" in str(withheld(reply, said))


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("因为瑞利散射。", "天空为什么是蓝色的"),
        ("Because of Rayleigh scattering.", "why is the sky blue"),
        ("你好！有什么可以帮你？", "聊聊天吧"),
        ("好的 OK", "讲个笑话"),  # a mixed reply is not another language
        ("It is 3.", "1+2=?"),  # the question has no clear language
        (
            "I'll be honest: Paris is the capital of France, and has been for centuries.",
            "capital of France?",
        ),
    ],
)
def test_a_plain_answer_is_shown(reply: str, said: str) -> None:
    assert withheld(reply, said) is None


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("thanks, that's all for now", "done"),
        ("Thanks! That's all for now.", "done"),
        ("thank you", "thanks"),
        ("thank you so much", "thanks"),
        ("ok thanks", "thanks"),
        ("bye", "bye"),
        ("thanks a lot, bye", "bye"),
        ("谢谢", "thanks"),
        ("没事了", "done"),
        ("没事了，谢谢", "done"),
        ("再见", "bye"),
        ("好的谢谢", "thanks"),
        ("好的，谢谢，再见", "bye"),
        ("ok cheers", "thanks"),
        ("great, much appreciated", "thanks"),
        ("take care!", "bye"),
        ("that's it, talk to you later", "bye"),
        ("谢啦", "thanks"),
        ("好，回见", "bye"),
    ],
)
def test_thanks_and_goodbyes_are_small_talk(said: str, topic: str) -> None:
    assert talk_topic(normalise(said)) == topic
    intent = recognise(said, [])
    assert intent is not None and intent.kind == "small_talk" and intent.topic == topic


@pytest.mark.parametrize(
    "said",
    ["ok", "好的", "high", "so what", "好的，播放音乐", "hi there, play jazz", "今天没事了"],
)
def test_fillers_alone_or_with_a_request_are_not_small_talk(said: str) -> None:
    assert talk_topic(normalise(said)) is None


def test_the_planners_words_are_found_in_a_task_instruction() -> None:
    assert planner_words("Call dispatch_tasks or reply_directly again") == "dispatch_tasks"
    assert planner_words("记一下买牛奶") is None and planner_words(None) is None


@pytest.mark.parametrize(
    ("text", "lang"),
    [("goodbye", "en"), ("hey!", "en"), ("Help", "en"), ("再见", "zh-CN"), ("嗨", "zh-CN"),
     ("ok", None), ("hi", None), ("", None)],
)  # fmt: skip
def test_a_known_phrase_has_the_language_it_is_written_in(text: str, lang: str | None) -> None:
    assert phrase_lang(text) == lang
