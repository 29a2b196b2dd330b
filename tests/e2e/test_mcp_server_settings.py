"""Settings → MCP server in Chromium (DESIGN §17): the user makes a token for a client,
sees its secret once, the client (the official SDK over /mcp) lists the tools the token's
scopes allow; the user turns memory_search on, revokes the token, and its next request
is refused. The tab is there in Chinese too.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import anyio
import requests
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from playwright.sync_api import Locator, expect

from tests.e2e.conftest import Desk

SYSTEM_APPS = ["gallery"]


def open_mcp_page(desk: Desk) -> Locator:
    page = desk.page
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    page.locator("#settings_tab_mcpserver").click()
    mcp_page = page.locator("#mcp_page")
    expect(mcp_page.locator("#mcp_url")).to_have_text(f"{desk.running.url}/mcp")
    return mcp_page


def tools_of(url: str, token: str, say: str | None = None) -> tuple[list[str], str | None]:
    """The tools the token lists, and (``say`` given) the session its instruction went to."""

    async def go() -> tuple[list[str], str | None]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(url + "/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            if say is None:
                return names, None
            result = await session.call_tool("instruction", {"text": say})
            assert not result.is_error, result
            return names, (result.structured_content or {}).get("session_id")

    # Playwright's sync API keeps an event loop in this thread: the client gets its own
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, go).result(timeout=60)


def test_a_token_is_made_used_and_revoked_in_settings(desk: Desk) -> None:
    page = desk.page
    mcp_page = open_mcp_page(desk)
    expect(mcp_page.locator("#mcp_tokens")).to_have_text("No tokens yet.")
    page.locator("#mcp_token_name").fill("Claude Desktop")
    page.locator('[data-scope="app.*"]').uncheck()
    page.locator('[data-scope="memory_search"]').check()
    page.locator("#mcp_token_create").click()
    secret = page.locator("#mcp_token_secret")
    expect(secret).to_have_value(re.compile(r"^aios_mcp_"))
    token = secret.input_value()
    item = mcp_page.locator(".mcp-token", has_text="Claude Desktop")
    expect(item.locator(".mcp-scope")).to_have_text(["instruction", "memory_search"])
    desk.shot("mcp_token_made")
    listed = desk.api("GET", "/api/mcp/tokens")["tokens"]
    assert [(t["name"], t["scopes"]) for t in listed] == [
        ("Claude Desktop", ["instruction", "memory_search"])
    ]

    names, sid = tools_of(desk.running.url, token, say="gallery")
    assert names == ["instruction"]  # memory_search is off
    # the client's instruction is in the conversation panel, in its own conversation
    page.keyboard.press("Control+.")
    conv = page.locator("#conversation")
    expect(conv).to_be_visible()
    conv.locator(".conv-sessions").select_option(sid)
    turn = conv.locator(".conv-user").last
    expect(turn.locator(".conv-text")).to_have_text("gallery")
    expect(turn.locator(".conv-via")).to_have_text("via Claude Desktop")
    desk.shot("mcp_turn_in_panel")
    page.keyboard.press("Control+.")
    switch = page.locator("#mcp_memory_search")
    switch.focus()
    page.keyboard.press("Space")
    expect(switch).to_be_checked()
    expect(page.locator("#mcp_status")).to_have_text("memory_search is on")
    assert tools_of(desk.running.url, token)[0] == ["instruction", "memory_search"]

    item.get_by_role("button", name="Revoke").click()
    expect(page.locator("#mcp_status")).to_have_text(
        "Token of Claude Desktop revoked: its next call is refused"
    )
    expect(mcp_page.locator("#mcp_tokens")).to_have_text("No tokens yet.")
    refused = requests.post(
        desk.running.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=20,
    )
    assert refused.status_code == 401 and "revoked" in refused.json()["error"]
    desk.api("POST", "/api/config", {"updates": {"mcp_server": {"memory_search": False}}})


def test_the_page_speaks_chinese(desk: Desk) -> None:
    desk.api("POST", "/api/config", {"updates": {"language": "zh-CN"}})
    try:
        page = desk.page
        page.reload()
        page.locator("#start_button").click()
        page.locator("#start_settings").click()
        expect(page.locator("#settings_tab_mcpserver")).to_have_text("MCP 服务")
        page.locator("#settings_tab_mcpserver").click()
        expect(page.locator("#mcp_token_create")).to_have_text("创建令牌")
        desk.shot("mcp_page_zh")
    finally:
        desk.api("POST", "/api/config", {"updates": {"language": "en"}})
