"""A tool's facts live in its ToolSpec (issue 21, rule 1): what is derived from the
registry, or kept beside it, must agree with it."""

from __future__ import annotations

import typing

from aios.config import DEFAULT_TOOL_TIMEOUTS
from aios.names import ATOMIC_TOOLS
from aios.tools import tools
from aios.tools.base import RISK_ORDER, Risk
from aios.tools.risk import classify, describe
from aios.web.runs_api import catalog
from aios.web.schemas import RiskClass
from aios_sdk.generic.toolset import relevant_tools


def test_the_registry_holds_exactly_the_atomic_tools() -> None:
    assert set(tools()) == set(ATOMIC_TOOLS)
    assert len(ATOMIC_TOOLS) == len(set(ATOMIC_TOOLS))


def test_config_default_timeouts_are_the_specs() -> None:
    # config sits below tools, so it keeps its own table: it must be the specs' timeouts
    assert DEFAULT_TOOL_TIMEOUTS == {name: spec.timeout for name, spec in tools().items()}


def test_every_tool_declares_its_facts() -> None:
    for name, spec in tools().items():
        assert spec.timeout > 0, name
        assert spec.describe is not None, name
        assert spec.offer_words, name
        assert all(w == w.lower() for w in spec.offer_words), name
        assert set(spec.risk_classes()) <= set(RISK_ORDER), name


def test_risk_literals_agree() -> None:
    assert typing.get_args(Risk) == RISK_ORDER == typing.get_args(RiskClass)


def test_classify_and_describe_ask_the_spec() -> None:
    assert classify("shell_exec", {"cmd": "ls"}) == "high"
    assert classify("db_query", {"sql": "SELECT 1"}) == "safe"
    assert classify("db_query", {"sql": "DELETE FROM t"}) == "medium"
    assert classify("http_request", {"url": "https://example.com"}) == "low"
    assert classify("http_request", {"url": "https://example.com", "method": "POST"}) == "medium"
    assert classify("my_tool", {}) is None
    assert describe("file_list", {"path": "notes", "pattern": "*.md"}) == "notes/*.md"
    assert describe("cache_get", {"key": "k"}) == "k"


def test_a_computed_risk_lists_every_class_it_gives() -> None:
    reads = {"db_query": {"sql": "SELECT 1"}, "http_request": {"url": "https://x.org"}}
    writes = {
        "db_query": {"sql": "DROP TABLE t"},
        "http_request": {"url": "https://x.org", "method": "PUT"},
    }
    for name, spec in tools().items():
        given = {classify(name, reads.get(name, {})), classify(name, writes.get(name, {}))}
        assert given == set(spec.risk_classes()), name


def test_the_catalog_serves_every_tool_riskiest_first() -> None:
    served = catalog()
    assert served["risks"] == list(RISK_ORDER)
    assert served["modes"] == {"auto": [], "smart": ["high"], "manual": ["medium", "high"]}
    names = [t["tool"] for t in served["tools"]]
    assert sorted(names) == sorted(ATOMIC_TOOLS)
    tops = [max(RISK_ORDER.index(r) for r in t["risks"]) for t in served["tools"]]
    assert tops == sorted(tops, reverse=True)


def test_the_generic_app_offers_by_the_specs_words() -> None:
    assert relevant_tools("save a note") == {"file_read", "file_write", "file_list"}
    assert relevant_tools("remember this") == {
        "cache_get",
        "cache_set",
        "memory_store",
        "memory_search",
    }
    assert relevant_tools("what did we say last time") == {"memory_store", "memory_search"}
    assert relevant_tools("查询数据库") == {"db_query"}
    assert relevant_tools("hello there") is None
