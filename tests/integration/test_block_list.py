"""The block list is config (DESIGN §12): GET /api/config shows it for Settings, a change
naming an unknown rule is a 400 JSON naming the known ones, and the configured words reach
a running app's tools."""

from __future__ import annotations

from collections.abc import Callable

from aios.config import DEFAULT_BLOCK_LIST
from aios.tools import invoke
from tests.integration.conftest import Running

EXTRA = ["sudo", "su", "doas", "pkexec", "run0"]


def test_get_config_shows_the_block_list_with_its_defaults(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"], approvals={"block_list": {"privilege-escalation": EXTRA}})
    r = running.get("/api/config")
    assert r.status_code == 200
    approvals = r.json()["config"]["approvals"]
    assert approvals["timeout"] == 600  # the section comes whole, defaults included
    assert approvals["block_list"] == {
        **{rule: list(words) for rule, words in DEFAULT_BLOCK_LIST.items()},
        "privilege-escalation": EXTRA,
    }
    # the configured words reach the running app's sandbox: run0 is refused by name
    result = invoke("shell_exec", {"cmd": "run0 ls"}, running.system.tool_context("echo"))
    assert result.error is not None
    assert result.error.startswith("blocked: privilege-escalation (run0): ")


def test_an_unknown_rule_is_a_400_naming_the_known_ones(
    make_system: Callable[..., Running],
) -> None:
    running = make_system([])
    r = running.post("/api/config", {"updates": {"approvals": {"block_list": {"fork-bomb": []}}}})
    assert r.status_code == 400 and r.headers["Content-Type"].startswith("application/json")
    error = r.json()["error"]
    assert "unknown block-list rule 'fork-bomb'" in error
    assert all(rule in error for rule in ("privilege-escalation", "power", "disk-format"))
    after = running.get("/api/config").json()["config"]["approvals"]["block_list"]
    assert "fork-bomb" not in after
