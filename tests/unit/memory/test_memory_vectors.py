"""Vector search of memories through a real ``/v1/embeddings`` over HTTP (the fake OpenAI
server on 127.0.0.1, deterministic vectors), fused with the text hits; an endpoint that
fails or is gone leaves text search working (DESIGN §15, issue 23)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from aios.errors import LLMError
from aios.memory.store import MemoryStore
from aios.memory.vectors import EndpointEmbedder, embeddings_url, pack, unpack
from aios.store import Store
from tests.fakes.fake_openai import FakeOpenAI


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(api_key="sk-test", model="embed-fake") as f:
        f.embedding_aliases = {"espresso": "coffee", "latte": "coffee", "咖啡": "coffee"}
        yield f


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "aios.db")
    yield s
    s.close()


def embedder(fake: FakeOpenAI, **kw: object) -> EndpointEmbedder:
    return EndpointEmbedder(fake.url, "sk-test", "embed-fake", **kw)  # type: ignore[arg-type]


def test_the_url_is_the_v1_embeddings_endpoint() -> None:
    assert embeddings_url("http://127.0.0.1:11434/v1/") == "http://127.0.0.1:11434/v1/embeddings"
    assert embeddings_url("https://api.example.com") == "https://api.example.com/v1/embeddings"
    assert embeddings_url("http://h/v1/chat/completions") == "http://h/v1/embeddings"


def test_vectors_are_unit_float32_blobs() -> None:
    v = unpack(pack([3.0, 4.0]))
    assert list(v) == pytest.approx([0.6, 0.8])
    assert len(pack([0.0] * 768)) == 768 * 4


def test_the_embedder_posts_openai_style(fake: FakeOpenAI) -> None:
    out = embedder(fake).embed(["I like coffee", "我喜欢咖啡"])
    assert len(out) == 2 and len(out[0]) == 64
    assert fake.embedding_inputs == ["I like coffee", "我喜欢咖啡"]
    wrong_key = EndpointEmbedder(fake.url, "sk-wrong", "embed-fake")
    with pytest.raises(LLMError, match="HTTP 401"):
        wrong_key.embed(["x"])


def test_vector_hits_join_the_text_hits(fake: FakeOpenAI, store: Store) -> None:
    mem = MemoryStore(store, embedder=embedder(fake))
    coffee = mem.add("I drink coffee every morning")
    mem.add("My cat is called Momo")
    tea = mem.add("espresso machine is broken")
    rows = store._query("SELECT id, model, dim FROM memory_vectors ORDER BY id")
    assert len(rows) == 3 and {r["model"] for r in rows} == {"embed-fake"}
    # "latte" shares no text with any memory: only the vectors find the coffee ones
    near = [m["id"] for m in mem.search("latte", scopes=["user"], k=2, touch=False)]
    assert set(near) == {coffee["id"], tea["id"]}
    # text and vectors agree: fused first
    top = mem.search("espresso", scopes=["user"], k=3, touch=False)
    assert top[0]["id"] == tea["id"] and coffee["id"] in [m["id"] for m in top]
    assert MemoryStore(store).search("latte", scopes=["user"]) == []  # without vectors


def test_vectors_keep_scopes_and_states_apart(fake: FakeOpenAI, store: Store) -> None:
    mem = MemoryStore(store, embedder=embedder(fake))
    other = mem.add("coffee notes of the notes app", scope="notes")
    gone = mem.add("coffee I stopped drinking")
    mem.delete(gone["id"])
    assert mem.search("latte", scopes=["user"]) == []
    assert [m["id"] for m in mem.search("latte", scopes=["notes"])] == [other["id"]]
    assert store._query("SELECT count(*) FROM memory_vectors WHERE id=?", (gone["id"],))[0][0] == 0


def test_an_edit_embeds_the_new_text(fake: FakeOpenAI, store: Store) -> None:
    mem = MemoryStore(store, embedder=embedder(fake))
    m = mem.add("I drink tea")
    mem.update(m["id"], text="I drink latte")
    assert fake.embedding_inputs[-1] == "I drink latte"
    assert [x["id"] for x in mem.search("espresso", scopes=["user"])] == [m["id"]]


def test_a_failing_endpoint_falls_back_to_text_search(
    fake: FakeOpenAI, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    fake.embedding_status = 500
    mem = MemoryStore(store, embedder=embedder(fake))
    with caplog.at_level(logging.DEBUG, logger="aios.memory.store"):
        m = mem.add("我每天喝咖啡")
        assert m["state"] == "active"
        assert [x["id"] for x in mem.search("咖啡", scopes=["user"])] == [m["id"]]
        assert mem.search("latte", scopes=["user"]) == []
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "HTTP 500" in warnings[0].getMessage()
    assert len(fake.embedding_inputs) == 1  # paused after the failure: no call per search
    assert store._query("SELECT count(*) FROM memory_vectors")[0][0] == 0

    fake.embedding_status = 200
    mem._embed_paused_until = 0.0  # the pause is over
    assert mem.embed_missing() == 1
    assert [x["id"] for x in mem.search("latte", scopes=["user"])] == [m["id"]]


def test_an_endpoint_that_is_gone_costs_no_search(store: Store) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    mem = MemoryStore(store, embedder=EndpointEmbedder(f"http://127.0.0.1:{port}/v1", model="m"))
    m = mem.add("running shoes size 42")
    assert [x["id"] for x in mem.search("running", scopes=["user"])] == [m["id"]]


def test_a_body_without_vectors_is_an_llm_error(fake: FakeOpenAI) -> None:
    e = embedder(fake)
    e.url = fake.url + "/chat/completions"  # HTTP 200 with a chat completion: no "data"
    with pytest.raises(LLMError, match="no usable vectors"):
        e.embed(["x"])
