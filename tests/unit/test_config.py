"""config.json: defaults, validation with one clear line, env and secret layering."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from aios.config import DEFAULT_CONFIG_PATH, load_config, save_settings
from aios.errors import ConfigError


def write(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "config.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def test_the_shipped_config_is_valid_and_has_the_spec_fields() -> None:
    cfg = load_config(DEFAULT_CONFIG_PATH, env={})
    assert cfg.voice_rate == 0.9 and cfg.default_voice == "zh-CN"
    assert cfg.timeout_for("shell_exec") == 60 and cfg.timeout_for("file_read") == 5
    assert cfg.timeout_for("cache_get") > 0  # every tool has a default
    assert "python3" in cfg.tool_sandbox.shell_whitelist
    assert not cfg.llm_enabled  # no key shipped


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"voice_rate": -1}, "config key 'voice_rate': Input should be greater than 0"),
        ({"tool_timeout": {"teleport": 3}}, "config key 'tool_timeout': unknown tool 'teleport'"),
        ({"tool_timeout": {"shell_exec": 0}}, "timeout for shell_exec must be a positive"),
        ({"tool_sandbox": {"shell_whitelist": "ls"}}, "config key 'tool_sandbox.shell_whitelist'"),
        ({"max_rounds": 0}, "config key 'max_rounds'"),
        ({"llm": {"modle": "x"}}, "config key 'llm.modle': unknown key"),
        ({"language": "fr"}, "config key 'language'"),
    ],
)
def test_invalid_config_is_one_line_naming_the_key(
    tmp_path: Path, data: object, needle: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, data), env={})
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_broken_json_names_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text('{\n  "voice_rate": 0.9,\n}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not valid JSON: line 3 column 1"):
        load_config(p, env={})


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.json", env={})


def test_env_overrides_secrets_and_endpoint(tmp_path: Path) -> None:
    p = write(tmp_path, {"deepseek_api_key": "from-file", "data_dir": str(tmp_path / "d")})
    cfg = load_config(p, env={})
    assert cfg.llm_api_key == "from-file" and cfg.llm_enabled
    cfg = load_config(
        p,
        env={
            "DEEPSEEK_API_KEY": "env-key",
            "AIOS_LLM_BASE_URL": "http://127.0.0.1:9/v1",
            "AIOS_LLM_MODEL": "local",
        },
    )
    assert (cfg.llm_api_key, cfg.llm.base_url, cfg.llm.model) == (
        "env-key",
        "http://127.0.0.1:9/v1",
        "local",
    )
    assert load_config(p, env={"AIOS_LLM_API_KEY": "a", "DEEPSEEK_API_KEY": "b"}).llm_api_key == "a"


def test_secrets_from_settings_live_in_the_data_dir_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    p = write(tmp_path, {"data_dir": str(data)})
    before = p.read_text()
    save_settings(data, {"llm": {"api_key": "sk-typed-in-settings"}})
    secrets = data / "settings.json"
    assert stat.S_IMODE(os.stat(secrets).st_mode) == 0o600
    assert p.read_text() == before  # the tracked config.json is never touched
    cfg = load_config(p, env={})
    assert cfg.llm_api_key == "sk-typed-in-settings"
    masked = json.dumps(cfg.masked(), ensure_ascii=False)
    assert "sk-typed-in-settings" not in masked and "••••ings" in masked
    # the environment still wins over what was typed
    assert load_config(p, env={"AIOS_LLM_API_KEY": "env"}).llm_api_key == "env"
