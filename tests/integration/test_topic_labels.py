"""The model's topic labels (``duplex.topic_llm``, aios/control/topic_labels.py) through the
real ``LLMClient`` against the fake OpenAI server: off by default; on, a quiet session's
topics are shown to the model in one call and its labels replace the rules' ones, once;
the session's token budget stops further calls; a bad answer leaves the rules' labels and
is one log line."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.config import Config
from aios.control.topic_labels import Labeller
from aios.control.topics import TopicTree
from aios.events import EventBus
from aios.llm.client import LLMClient
from aios.store import Store
from tests.fakes.fake_openai import FakeOpenAI
from tests.util import wait_for


class Parts:
    def __init__(self, tmp: Path, fake: FakeOpenAI) -> None:
        self.raw: dict[str, Any] = {
            "llm": {
                "api_key": "sk-test",
                "base_url": fake.url,
                "model": "fake",
                "max_retries": 0,
                "measure_local": False,
            },
            "duplex": {"topic_llm_delay_s": 0.05, "topic_llm_budget_tokens": 10_000},
        }
        self.store = Store(tmp / "aios.db")
        self.llm = LLMClient(self.config(), self.store)
        self.topics = TopicTree(self.store, EventBus(), self.config)
        self.labeller = Labeller(self.topics, self.store, lambda: self.llm, self.config)
        self.sid = self.store.ensure_session(None)

    def config(self) -> Config:
        return Config.model_validate(self.raw)

    def say(self, text: str, app: str) -> str:
        hid = self.store.add_history(self.sid, "user", {"text": text})
        topic = self.topics.turn(self.sid, hid, text, app, fallback_label=app.title())
        self.labeller.want(self.sid)
        return topic.id

    def label(self, topic_id: str) -> tuple[str, str]:
        topic = self.topics.get(self.sid, topic_id)
        return topic.label, topic.labelled_by

    def close(self) -> None:
        self.labeller.close()
        self.llm.close()
        self.store.close()


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[Parts, FakeOpenAI]]:
    with FakeOpenAI(api_key="sk-test") as fake:
        p = Parts(tmp_path, fake)
        yield p, fake
        p.close()


def _labels(**labels: str) -> dict[str, Any]:
    body = {"labels": [{"id": k, "label": v} for k, v in labels.items()]}
    return {"content": "", "constrained": json.dumps(body, ensure_ascii=False)}


def test_labels_come_once_after_a_quiet_moment_and_only_when_on(
    parts: tuple[Parts, FakeOpenAI],
) -> None:
    p, fake = parts
    milk = p.say("记一下买牛奶和鸡蛋", "notes")
    assert p.labeller.calls == 0 and fake.requests == []  # off by default
    p.raw["duplex"]["topic_llm"] = True
    jazz = p.say("play some jazz", "music")
    fake.script([_labels(**{milk: "购物清单", jazz: "Jazz to relax"})])
    wait_for(lambda: p.label(jazz)[1] == "llm", "the model's labels", 10)
    assert p.label(milk) == ("购物清单", "llm") and p.label(jazz) == ("Jazz to relax", "llm")
    (request,) = fake.requests
    shown = json.loads(request["messages"][-1]["content"])["topics"]
    assert {t["id"]: t["turns"] for t in shown} == {
        milk: ["记一下买牛奶和鸡蛋"],
        jazz: ["play some jazz"],
    }
    assert p.labeller.label(p.sid) == {}  # each topic once: nothing left to ask
    assert len(fake.requests) == 1


def test_the_budget_and_a_bad_answer(
    parts: tuple[Parts, FakeOpenAI], caplog: pytest.LogCaptureFixture
) -> None:
    p, fake = parts
    p.raw["duplex"].update(topic_llm=True, topic_llm_delay_s=3600, topic_llm_budget_tokens=1)
    milk = p.say("记一下买牛奶", "notes")
    fake.script([{"content": "", "constrained": json.dumps({"labels": "nope"})}])
    with caplog.at_level(logging.WARNING):
        p.labeller._run(p.sid)  # the debounce's own call, at once  # noqa: SLF001
    assert p.label(milk) == ("记一下买牛奶", "rules")  # the rules' label stays
    assert [r.getMessage() for r in caplog.records if "topic labels" in r.getMessage()]
    assert len(fake.requests) == 1
    p.say("记一下周五开会", "notes")  # past the budget: no call is even planned
    assert p.labeller.label(p.sid) == {} and len(fake.requests) == 1
