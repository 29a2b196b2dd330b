"""aios/llm/providers.py: what differs between model vendors and servers, in one place."""

from __future__ import annotations

from pathlib import Path

from aios.errors import LLMError
from aios.llm.providers import (
    OLLAMA_PORT,
    ProviderProfile,
    is_loopback,
    normalize_base_url,
    rejected,
    remember_schema_support,
    schema_body,
    schema_supported,
)

SCHEMA = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
AIOS = Path(__file__).resolve().parents[3] / "aios"


def test_a_json_schema_is_asked_as_response_format_and_ollama_also_gets_format() -> None:
    body = schema_body("https://api.example.com/v1", "plan", SCHEMA)
    assert body == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "plan", "strict": True, "schema": SCHEMA},
        }
    }
    ollama = schema_body(f"http://127.0.0.1:{OLLAMA_PORT}/v1", "plan", SCHEMA)
    assert ollama["format"] == SCHEMA and "response_format" in ollama


def test_the_schema_support_is_remembered_per_endpoint_as_typed_or_pasted() -> None:
    url = "http://127.0.0.1:9/v1"
    remember_schema_support(url + "/chat/completions", False)
    try:
        assert schema_supported(url) is False and schema_supported(url + "/") is False
        remember_schema_support(url, True)
        assert schema_supported(url) is True
    finally:
        remember_schema_support(url, None)
    assert schema_supported(url) is None


def test_a_refused_request_is_told_apart_from_a_failure() -> None:
    assert rejected(LLMError("primary LLM (m at u): request rejected (HTTP 422)"))
    assert rejected(LLMError("primary LLM (m at u): not found (HTTP 404): check llm.base_url"))
    assert not rejected(LLMError("primary LLM (m at u): server error (HTTP 500)"))
    assert not rejected(LLMError("primary LLM (m at u): timed out after 30 s"))


def test_a_profile_on_a_loopback_address_is_local() -> None:
    local = ProviderProfile("primary", "http://localhost:8080/v1", "m", "k", 30.0, 2)
    remote = ProviderProfile("fallback", "https://api.example.com", "m", "k", 30.0, 2)
    assert local.local and not remote.local
    assert remote.describe() == "fallback LLM (m at https://api.example.com)"
    assert is_loopback("http://[::1]:9") and normalize_base_url(" http://h/v1/ ") == "http://h/v1"


def test_no_vendor_port_or_status_pattern_outside_llm() -> None:
    """Rule 3 of issue 21: the planner and the rest ask llm/, they know no vendor."""
    found = [
        str(p.relative_to(AIOS))
        for p in AIOS.rglob("*.py")
        if p.parent.name != "llm"
        and any(w in p.read_text(encoding="utf-8") for w in (str(OLLAMA_PORT), "(HTTP (?:"))
    ]
    assert found == []
