"""The MCP client's rules without a server (DESIGN §17): risk from annotations, grants,
results as the run gets them, and a token that never follows a moved URL."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from aios.config import Config, McpServerConfig, apply_updates, validate_config
from aios.errors import ConfigError, ToolFailed
from aios.mcp import tools as mcptools
from aios.protocol import parse_steps
from aios.tools.base import ToolContext
from aios.tools.risk import classify
from aios.tools.sandbox import SandboxPolicy

TOKEN = "mcp-secret-token-9876"


@pytest.mark.parametrize(
    ("notes", "override", "risk"),
    [
        ({"readOnlyHint": True}, None, "low"),
        ({"destructiveHint": True}, None, "high"),
        ({"readOnlyHint": True, "destructiveHint": True}, None, "high"),
        ({}, None, "medium"),
        (None, None, "medium"),
        ({"readOnlyHint": True}, "high", "high"),
        ({"destructiveHint": True}, "low", "low"),
    ],
)
def test_risk_from_annotations_and_the_users_override(
    notes: dict[str, bool] | None, override: str | None, risk: str
) -> None:
    assert mcptools.risk_from(notes, override) == risk  # type: ignore[arg-type]


def test_classify_knows_listed_mcp_tools_and_asks_for_unknown_ones() -> None:
    mcptools.set_risks("unit", {"read": "low", "drop": "high"})
    assert classify("mcp.unit.read", {}) == "low"
    assert classify("mcp.unit.drop", {}) == "high"
    assert classify("mcp.unit.other", {}) == "high"  # not listed now: the riskiest class
    mcptools.set_risks("unit", {})
    assert classify("mcp.unit.read", {}) == "high"


def test_grants_per_server_and_per_tool() -> None:
    server = McpServerConfig.model_validate(
        {
            "command": ["x"],
            "apps": ["notes"],
            "tools": {
                "wide": {"apps": ["notes", "music"]},
                "none": {"apps": []},
                "off": {"enabled": False},
            },
        }
    )
    assert mcptools.granted(server, "plain", "notes")
    assert not mcptools.granted(server, "plain", "music")
    assert mcptools.granted(server, "wide", "music")
    assert not mcptools.granted(server, "none", "notes")
    assert not mcptools.granted(server, "off", "notes")
    off = server.model_copy(update={"enabled": False})
    assert not mcptools.granted(off, "plain", "notes")


def test_plan_steps_name_mcp_tools_and_nothing_looser() -> None:
    (step,) = parse_steps([{"step_id": 1, "tool": "mcp.time.get_current_time"}])
    assert step.tool == "mcp.time.get_current_time"
    for bad in ("mcp.", "mcp.Bad.x", "mcp.a", "mcp.a./x", "other.a.b"):
        with pytest.raises(Exception, match="tool"):
            parse_steps([{"step_id": 1, "tool": bad}])


def _ctx(tmp_path: Path) -> ToolContext:
    policy = SandboxPolicy.build(Config().tool_sandbox, tmp_path)
    return ToolContext(app_id="a", workdir=policy.workdir, policy=policy)


def test_structured_content_text_images_and_errors(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    out = mcptools.output(
        ctx,
        "mcp.s.t",
        {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": 1}},
        100,
        {},
    )
    assert out.result == {"n": 1}
    out = mcptools.output(ctx, "mcp.s.t", {"content": [{"type": "text", "text": "hi"}]}, 100, {})
    assert out.result == "hi"
    png = base64.b64encode(b"\x89PNG fake").decode()
    out = mcptools.output(
        ctx,
        "mcp.s.t",
        {
            "content": [
                {"type": "image", "data": png, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///r.md", "text": "# r", "mimeType": "text/markdown"},
                },
                {"type": "image", "data": "%%%", "mimeType": "image/png"},
            ]
        },
        100,
        {},
    )
    image, resource, broken = out.result["files"]
    assert (tmp_path / image["path"]).read_bytes() == b"\x89PNG fake"
    assert image["path"].startswith(".mcp/") and image["path"].endswith(".png")
    assert (tmp_path / resource["path"]).read_text() == "# r" and resource["uri"] == "file:///r.md"
    assert "not base64" in broken["error"]
    with pytest.raises(ToolFailed, match="no such city"):
        mcptools.output(
            ctx,
            "mcp.s.t",
            {"content": [{"type": "text", "text": "no such city"}], "isError": True},
            100,
            {},
        )


def test_a_long_result_is_cut_and_kept_whole_in_a_file(tmp_path: Path) -> None:
    meta: dict[str, object] = {}
    out = mcptools.output(
        _ctx(tmp_path), "mcp.s.t", {"content": [{"type": "text", "text": "y" * 5000}]}, 300, meta
    )
    assert out.result.startswith("y" * 300) and "the whole result is in .mcp/" in out.result
    kept = meta["truncated"]
    assert isinstance(kept, dict) and (tmp_path / kept["file"]).read_text() == "y" * 5000


def test_a_token_never_follows_a_moved_url_and_is_masked() -> None:
    config = validate_config(
        {"mcp": {"servers": {"docs": {"url": "https://a.example/mcp", "token": TOKEN}}}}
    )
    masked = config.masked()["mcp"]["servers"]["docs"]["token"]
    assert TOKEN not in str(config.masked()) and masked.startswith("••••")
    kept = apply_updates(
        config, {"mcp": {"servers": {"docs": {"token": masked, "enabled": False}}}}
    )
    assert kept.mcp.servers["docs"] is not None and kept.mcp.servers["docs"].token == TOKEN
    moved = apply_updates(
        config, {"mcp": {"servers": {"docs": {"url": "https://evil.example/mcp"}}}}
    )
    assert moved.mcp.servers["docs"] is not None and moved.mcp.servers["docs"].token == ""
    typed = apply_updates(
        config, {"mcp": {"servers": {"docs": {"url": "https://b.example/mcp", "token": "new"}}}}
    )
    assert typed.mcp.servers["docs"] is not None and typed.mcp.servers["docs"].token == "new"
    removed = apply_updates(config, {"mcp": {"servers": {"docs": None}}})
    assert removed.mcp.active() == {}


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ({}, "either"),
        ({"command": ["x"], "url": "http://a/mcp"}, "either"),
        ({"url": "file:///etc/passwd"}, "http://"),
        ({"url": "http://a/mcp", "headers": {"Bad: x": "1"}}, "header"),
        ({"command": ["x"], "apps": ["Not An App"]}, "not an app id"),
        ({"command": ["x"], "tools": {"a b": {}}}, "tool name"),
        ({"command": ["x"], "tools": {"t": {"risk": "extreme"}}}, "risk"),
    ],
)
def test_bad_servers_name_the_problem(server: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        validate_config({"mcp": {"servers": {"s": server}}})


def test_an_apps_link_in_its_workdir_never_takes_a_saved_result_outside(tmp_path: Path) -> None:
    """The app owns its workdir: ``.mcp`` made a link to a folder of the system's must not
    make the system write there (DESIGN §14.1)."""
    work, outside = tmp_path / "work", tmp_path / "system"
    work.mkdir()
    outside.mkdir()
    (work / ".mcp").symlink_to(outside)
    png = base64.b64encode(b"\x89PNG fake").decode()
    with pytest.raises(ToolFailed, match=r"\.mcp"):
        mcptools.output(
            _ctx(work),
            "mcp.s.t",
            {"content": [{"type": "image", "data": png, "mimeType": "image/png"}]},
            100,
            {},
        )
    assert list(outside.iterdir()) == []
