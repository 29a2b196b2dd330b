"""Settings → MCP in Chromium (DESIGN §17): the user adds an MCP server by its command, sees
it start and list its tools with their annotations, makes one tool ask first, turns the
server's network on, turns it off and removes it; the desktop's config follows each step."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import expect

from aios.host import nat
from tests.e2e.conftest import Desk, Running
from tests.util import wait_for

TOY = Path(__file__).resolve().parent.parent / "mcp_servers" / "toy.py"


def test_add_a_server_see_its_tools_override_a_risk_turn_it_off_and_remove_it(
    system_factory: Callable[..., Running], open_desk: Callable[..., Desk]
) -> None:
    running = system_factory(["gallery"])
    desk = open_desk(running)
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#settings_tab_mcp").click()
    expect(page.locator("#mcp_page")).to_contain_text("No MCP server yet.")

    page.locator("#mcp_new_name").fill("toy")
    page.locator("#mcp_new_where").fill(f'"{sys.executable}" "{TOY}"')
    page.locator("#mcp_new_apps").fill("gallery")
    page.locator("#mcp_add").click()
    server = page.locator('.mcp-server[data-server="toy"]')
    expect(server.locator(".mcp-status")).to_have_text("ready", timeout=30_000)
    lookup = server.locator('.mcp-tool[data-tool="mcp.toy.lookup"]')
    expect(lookup.locator(".mcp-notes")).to_have_text("read-only")
    expect(server.locator('.mcp-tool[data-tool="mcp.toy.wipe"] .mcp-notes')).to_have_text(
        "destructive"
    )
    page.set_viewport_size({"width": 1024, "height": 700})
    desk.shot("mcp_settings")
    config = running.system.config.mcp.servers["toy"]
    assert config is not None and config.command == [sys.executable, str(TOY)]
    assert config.apps == ["gallery"]

    lookup.locator("select.mcp-risk").select_option("high")
    expect(page.locator("#mcp_status")).to_have_text("toy saved.")
    server_cfg = running.system.config.mcp.servers["toy"]
    assert server_cfg is not None and server_cfg.tools["lookup"].risk == "high"

    # its network: none until granted; the switch restarts it with its own (pasta)
    expect(page.locator("#mcp_toy_network")).not_to_be_checked()
    page.locator("#mcp_toy_network").check()
    wait_for(lambda: running.system.config.mcp.servers["toy"].network, "network granted")
    expect(page.locator("#mcp_toy_network")).to_be_checked()
    if nat.pasta_path() is not None:
        expect(server.locator(".mcp-status")).to_have_text("ready", timeout=30_000)

    page.locator('label[for="mcp_toy_enabled"]').click()
    expect(server.locator(".mcp-status")).to_have_text("off")
    assert "mcp.toy.lookup" not in running.system.mcp.tools_for("gallery")

    server.locator("button", has_text="Remove").click()
    expect(page.locator("#mcp_status")).to_have_text("toy removed.")
    expect(page.locator("#mcp_page")).to_contain_text("No MCP server yet.")
    assert "toy" not in running.system.config.mcp.active()
