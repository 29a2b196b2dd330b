"""A key is only ever sent to the endpoint it was entered for (DESIGN §11)."""

from __future__ import annotations

from aios.config import Config, apply_updates

KEY = "sk-stored-key-1234"


def config() -> Config:
    return Config.model_validate(
        {
            "deepseek_api_key": KEY,
            "llm": {
                "base_url": "https://api.deepseek.com",
                "api_key": KEY,
                "fallback": {"base_url": "https://backup.example/v1", "model": "m", "api_key": KEY},
            },
        }
    )


def test_moving_base_url_without_a_key_clears_it() -> None:
    new = apply_updates(config(), {"llm": {"base_url": "http://127.0.0.1:47101/v1"}})
    assert new.llm.api_key == "" and new.deepseek_api_key == "" and new.llm_api_key == ""
    assert new.llm.fallback.api_key == KEY  # the fallback's endpoint did not move


def test_moving_the_fallback_without_a_key_clears_its_key() -> None:
    new = apply_updates(config(), {"llm": {"fallback": {"base_url": "http://evil.example"}}})
    assert new.llm.fallback.api_key == "" and new.llm.api_key == KEY


def test_a_key_entered_with_the_new_url_is_kept_and_the_masked_one_is_not_a_key() -> None:
    new = apply_updates(
        config(), {"llm": {"base_url": "https://other.example", "api_key": "sk-new"}}
    )
    assert new.llm.api_key == "sk-new"
    masked = config().masked()["llm"]["api_key"]
    new = apply_updates(config(), {"llm": {"base_url": "https://other.example", "api_key": masked}})
    assert new.llm.api_key == ""


def test_the_same_url_sent_back_keeps_the_key() -> None:
    new = apply_updates(
        config(), {"llm": {"base_url": "https://api.deepseek.com", "model": "deepseek-reasoner"}}
    )
    assert new.llm.api_key == KEY and new.llm.model == "deepseek-reasoner"
