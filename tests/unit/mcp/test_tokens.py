"""MCP tokens (aios/mcp/tokens.py, DESIGN §17): kept hashed in a 0600 file, scoped,
revoked at once; a damaged file opens nothing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from aios.errors import BadRequest, NotFound
from aios.mcp.tokens import TOKENS_FILE, McpTokens


def test_a_token_is_kept_hashed_and_verified_until_revoked(tmp_path: Path) -> None:
    tokens = McpTokens(tmp_path)
    made = tokens.create("Claude Desktop", ["instruction", "app.notes"])
    secret = made["token"]
    stored = (tmp_path / TOKENS_FILE).read_text(encoding="utf-8")
    assert secret not in stored and "Claude Desktop" in stored
    assert stat.S_IMODE((tmp_path / TOKENS_FILE).stat().st_mode) == 0o600
    found = tokens.verify(secret)
    assert found is not None and found.name == "Claude Desktop"
    assert found.allows("instruction") and found.allows("app.notes")
    assert not found.allows("app.files") and not found.allows("memory_search")
    assert tokens.verify(secret[:-1] + ("A" if secret[-1] != "A" else "B")) is None
    assert [t["name"] for t in tokens.listing()] == ["Claude Desktop"]
    assert "token" not in tokens.listing()[0]
    tokens.revoke(made["id"])
    assert tokens.verify(secret) is None
    with pytest.raises(NotFound):
        tokens.revoke(made["id"])


def test_app_star_covers_every_app_and_defaults_apply(tmp_path: Path) -> None:
    made = McpTokens(tmp_path).create("goose")
    assert made["scopes"] == ["instruction", "app.*"]
    found = McpTokens(tmp_path).verify(made["token"])
    assert found is not None and found.allows("app.anything")


@pytest.mark.parametrize(
    ("name", "scopes", "why"),
    [
        ("", None, "'name'"),
        ("x\ny", None, "control characters"),
        ("ok", ["shell_exec"], "scope 'shell_exec' does not exist"),
        ("ok", ["app.../etc"], "does not exist"),
        ("ok", "instruction", "must be a list"),
    ],
)
def test_bad_names_and_scopes_are_refused(
    tmp_path: Path, name: str, scopes: object, why: str
) -> None:
    with pytest.raises(BadRequest, match=why):
        McpTokens(tmp_path).create(name, scopes)
    assert not (tmp_path / TOKENS_FILE).exists()


def test_a_damaged_file_opens_nothing(tmp_path: Path) -> None:
    tokens = McpTokens(tmp_path)
    secret = tokens.create("ide")["token"]
    (tmp_path / TOKENS_FILE).write_text("{not json", encoding="utf-8")
    assert tokens.verify(secret) is None
    assert tokens.verify("the launch token") is None  # not an MCP token at all
