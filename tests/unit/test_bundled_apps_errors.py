"""Bundled apps fall back when the LLM fails, but never hide their own bugs.

They used to catch ``AttributeError`` next to ``LLMError``: a typo in the app
then looked like "no LLM" and silently took the offline path.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from aios.errors import LLMError
from tests.conftest import ROOT


def load_app(name: str) -> ModuleType:
    folder = ROOT / "apps" / name
    spec = importlib.util.spec_from_file_location(f"_bundled_{name}_main", folder / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))  # its own helper modules (notes_lib, files_lib)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def code_from_words(agent: Any) -> str:
    try:
        agent._from_words(False, "a program")
    except Exception as e:  # noqa: BLE001 - the app's own Problem: "not Python code"
        if type(e).__name__ == "Problem":
            return "asks for code"
        raise
    return "wrote code"


# (app, agent class, how to call its LLM-backed helper, its offline answer)
CASES: list[tuple[str, str, Callable[[Any], Any], Any]] = [
    ("notes", "NotesAgent", lambda a: a._llm_intent("记一下"), ("unknown", "记一下")),
    ("code", "CodeAgent", code_from_words, "asks for code"),
    ("files", "FilesAgent", lambda a: a._llm_intent(None, "look")[0], "unknown"),
]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Callable[[Any], Any], Any]]:
    app, cls, call, offline = request.param
    agent = getattr(load_app(app), cls)()
    yield agent, call, offline


def test_an_llm_failure_takes_the_offline_path(case: tuple[Any, Any, Any]) -> None:
    agent, call, offline = case

    def failing(*_a: Any, **_k: Any) -> Any:
        raise LLMError("the language model could not answer")

    agent.llm = failing
    assert call(agent) == offline


def test_a_bug_in_the_app_is_not_mistaken_for_a_missing_llm(case: tuple[Any, Any, Any]) -> None:
    agent, call, _ = case

    def buggy(*_a: Any, **_k: Any) -> Any:
        raise AttributeError("'NoneType' object has no attribute 'strip'")

    agent.llm = buggy
    with pytest.raises(AttributeError):
        call(agent)
