"""The desktop as an MCP server (DESIGN §17), driven by the official SDK's client.

A real system (the real Hello app, the runs test app ``planner``, smart approvals)
serves ``/mcp``; the SDK's ``ClientSession`` talks to it over streamable HTTP, and
over stdio through ``triton-aios mcp`` as a real subprocess. Approval cards are
answered as the desktop does (``POST /api/interactions/<id>``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from aios.config import PROJECT_ROOT
from tests.integration.conftest import FIXTURES, TOKEN, Running, copy_apps, start_system
from tests.util import wait_for

T = TypeVar("T")
SHELL = [{"step_id": "run", "tool": "shell_exec", "args": {"cmd": "echo hello"}}]
CLIENT = "pytest client"


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("mcp_server")
    apps = copy_apps(root / "apps", ["hello"], source=PROJECT_ROOT / "apps")
    copy_apps(apps, ["planner"], source=FIXTURES / "apps_runs")
    running = start_system(
        apps, root / "data", approvals={"mode": "smart", "timeout": 600}, language="en"
    )
    yield running
    running.stop()


def make_token(desk: Running, name: str = CLIENT, scopes: list[str] | None = None) -> str:
    body: dict[str, Any] = {"name": name}
    if scopes is not None:
        body["scopes"] = scopes
    r = desk.post("/api/mcp/tokens", body)
    assert r.status_code == 201, r.text
    token: str = r.json()["token"]
    return token


def over_http(desk: Running, token: str, use: Callable[[ClientSession], Awaitable[T]]) -> T:
    """``use`` with a session on ``/mcp`` (streamable HTTP), token as the bearer."""

    async def go() -> T:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(desk.url + "/mcp", http_client=http) as (read, write),
            ClientSession(
                read, write, client_info=types.Implementation(name="pytest", version="1")
            ) as session,
        ):
            await session.initialize()
            return await use(session)

    return anyio.run(go)


def text_of(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


def pending_card(desk: Running) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def card() -> bool:
        r = desk.get("/api/interactions", params={"pending": "1"})
        found[:] = [ia for ia in r.json() if ia.get("app") == "planner"]
        return bool(found)

    wait_for(card, "an approval card on the desktop", 30)
    return found[0]


# ---------------------------------------------------------------- streamable HTTP


def test_tools_listed_per_scope_and_instruction_answered_by_hello(desk: Running) -> None:
    token = make_token(desk)

    async def use(s: ClientSession) -> tuple[list[str], types.CallToolResult]:
        tools = await s.list_tools()
        return [t.name for t in tools.tools], await s.call_tool(
            "instruction", {"text": "say hello"}
        )

    names, result = over_http(desk, token, use)
    assert {"instruction", "app.hello", "app.planner"} <= set(names)
    assert "memory_search" not in names  # off unless the user allows it
    assert not result.is_error, text_of(result)
    structured = result.structured_content or {}
    assert [v["app"] for v in structured["views"]] == ["hello"]
    assert "hello" in text_of(result).lower().replace("replied", "")
    # the call is a run in the token's own conversation, marked as from the client
    sid = structured["session_id"]
    timeline = desk.get(f"/api/sessions/{sid}/timeline").json()["entries"]
    said = [e for e in timeline if e["kind"] == "user"]
    assert said[-1]["text"] == "say hello" and said[-1]["via"] == CLIENT
    audit = desk.get("/api/audit", params={"app": f"mcp:{CLIENT}"}).json()
    row = next(a for a in audit if a["tool"] == "instruction")
    assert row["status"] == "ok" and row["run_id"] == structured["run_id"]
    assert json.loads(row["args"])["client"] == CLIENT


def test_app_tool_goes_to_that_app(desk: Running) -> None:
    token = make_token(desk, "app caller", ["app.hello"])

    async def use(s: ClientSession) -> tuple[list[str], types.CallToolResult, types.CallToolResult]:
        names = [t.name for t in (await s.list_tools()).tools]
        hello = await s.call_tool("app.hello", {"text": "greet me"})
        other = await s.call_tool("instruction", {"text": "say hello"})
        return names, hello, other

    names, hello, other = over_http(desk, token, use)
    assert names == ["app.hello"]
    assert not hello.is_error, text_of(hello)
    assert [v["app"] for v in (hello.structured_content or {})["views"]] == ["hello"]
    assert other.is_error and "may not call 'instruction'" in text_of(other)


def test_a_call_waits_for_its_card_then_deny_is_an_error(desk: Running) -> None:
    token = make_token(desk, "approver")
    progress: list[str] = []
    results: list[types.CallToolResult] = []

    async def use(s: ClientSession) -> None:
        async def seen(value: float, total: float | None, message: str | None) -> None:
            progress.append(message or "")

        for _ in range(2):
            results.append(
                await s.call_tool(
                    "app.planner", {"text": "plan " + json.dumps(SHELL)}, progress_callback=seen
                )
            )

    client = threading.Thread(target=over_http, args=(desk, token, use))
    client.start()
    try:
        card = pending_card(desk)
        wait_for(lambda: bool(progress), "a progress notification while the call waits", 30)
        assert not results  # the call waits for the user
        r = desk.post(f"/api/interactions/{card['id']}", {"decision": "allow"})
        assert r.status_code == 200, r.text
        wait_for(lambda: len(results) == 1, "the allowed call's result", 30)
        card = pending_card(desk)
        r = desk.post(f"/api/interactions/{card['id']}", {"decision": "deny"})
        assert r.status_code == 200, r.text
    finally:
        client.join(60)
    allowed, denied = results
    assert not allowed.is_error, text_of(allowed)
    assert "waiting for the user's approval" in progress[0]
    assert denied.is_error
    assert "denied on the desktop" in text_of(denied) and "shell_exec" in text_of(denied)
    audit = desk.get("/api/audit", params={"app": "mcp:approver"}).json()
    assert [a["status"] for a in audit] == ["denied", "ok"]


def test_memory_search_needs_the_setting_and_the_scope(desk: Running) -> None:
    scoped = make_token(desk, "memory reader", ["memory_search"])
    unscoped = make_token(desk, "no memory", ["instruction"])
    assert desk.post("/api/memories", {"text": "my cat is called Tom"}).status_code in (200, 201)

    async def use(s: ClientSession) -> tuple[list[str], types.CallToolResult]:
        names = [t.name for t in (await s.list_tools()).tools]
        return names, await s.call_tool("memory_search", {"query": "cat"})

    names, off = over_http(desk, scoped, use)
    assert names == [] and off.is_error and "memory_search is off" in text_of(off)
    r = desk.post("/api/config", {"updates": {"mcp_server": {"memory_search": True}}})
    assert r.status_code == 200, r.text
    try:
        names, found = over_http(desk, scoped, use)
        assert names == ["memory_search"]
        assert not found.is_error and "Tom" in text_of(found)
        names, refused = over_http(desk, unscoped, use)
        assert "memory_search" not in names
        assert refused.is_error and "may not call 'memory_search'" in text_of(refused)
    finally:
        desk.post("/api/config", {"updates": {"mcp_server": {"memory_search": False}}})


def test_revoked_launch_and_bad_tokens_are_refused(desk: Running) -> None:
    token = make_token(desk, "to revoke")
    listed = desk.get("/api/mcp/tokens").json()["tokens"]
    token_id = next(t["id"] for t in listed if t["name"] == "to revoke")
    assert all("token" not in t and "hash" not in t for t in listed)
    stored = (desk.data_dir / "mcp_tokens.json").read_text(encoding="utf-8")
    assert token not in stored  # kept hashed

    async def use(s: ClientSession) -> tuple[types.CallToolResult, BaseException | None]:
        first = await s.call_tool("instruction", {"text": "say hello"})
        assert desk.http.delete(f"{desk.url}/api/mcp/tokens/{token_id}").status_code == 200
        try:
            await s.call_tool("instruction", {"text": "say hello"})
        except Exception as e:  # noqa: BLE001 - what the client sees
            return first, e
        return first, None

    first, refused = over_http(desk, token, use)
    assert not first.is_error
    assert refused is not None
    for bad, why in (
        (TOKEN, "the launch token does not open /mcp"),
        ("aios_mcp_not-a-token", "MCP token invalid or revoked"),
        (token, "MCP token invalid or revoked"),
    ):
        r = desk.http.post(
            desk.url + "/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": f"Bearer {bad}"},
        )
        assert r.status_code == 401 and why in r.json()["error"], r.text
    # a page elsewhere cannot drive /mcp with a token it got hold of (origin guard)
    other = make_token(desk, "from a page")
    r = desk.http.post(
        desk.url + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {other}", "Origin": "http://evil.example"},
    )
    assert r.status_code == 403 and "origin" in r.json()["error"], r.text
    # and an MCP token opens nothing but /mcp
    r = desk.http.get(desk.url + "/api/config", headers={"Authorization": f"Bearer {other}"})
    assert r.status_code == 401 and "launch token" in r.json()["error"], r.text


def test_token_api_refuses_bad_input(desk: Running) -> None:
    r = desk.post("/api/mcp/tokens", {"name": "x", "scopes": ["shell"]})
    assert r.status_code == 400 and "scope 'shell' does not exist" in r.json()["error"]
    r = desk.post("/api/mcp/tokens", {"scopes": ["instruction"]})
    assert r.status_code == 400 and "'name'" in r.json()["error"]
    r = desk.http.delete(f"{desk.url}/api/mcp/tokens/mcpt_nope")
    assert r.status_code == 404 and "no MCP token" in r.json()["error"]


# ---------------------------------------------------------------- stdio


def test_stdio_command_relays_to_the_desktop(desk: Running) -> None:
    token = make_token(desk, "stdio host")
    env = {
        **os.environ,
        "AIOS_MCP_TOKEN": token,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(PROJECT_ROOT / "desktop_app.py"), "mcp", "--data-dir", str(desk.data_dir)],
        env=env,
    )

    async def go() -> tuple[list[str], types.CallToolResult]:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            return names, await s.call_tool("instruction", {"text": "say hello"})

    names, result = anyio.run(go)
    assert {"instruction", "app.hello"} <= set(names)
    assert not result.is_error, text_of(result)
    assert [v["app"] for v in (result.structured_content or {})["views"]] == ["hello"]
    audit = desk.get("/api/audit", params={"app": "mcp:stdio host"}).json()
    assert audit and audit[0]["tool"] == "instruction"


def test_stdio_command_says_why_it_cannot_serve(desk: Running) -> None:
    env = {
        **os.environ,
        "AIOS_MCP_TOKEN": TOKEN,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    done = subprocess.run(
        [
            sys.executable,
            str(PROJECT_ROOT / "desktop_app.py"),
            "mcp",
            "--data-dir",
            str(desk.data_dir),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "the launch token does not open /mcp" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_stopped_desktop_takes_its_address_back(tmp_path: Path) -> None:
    """``desktop.json`` lives as long as the desktop: after a stop, ``triton-aios mcp``
    says no desktop runs instead of relaying to a dead address."""
    apps = tmp_path / "apps"
    apps.mkdir()
    running = start_system(apps, tmp_path / "data")
    desktop_file = tmp_path / "data" / "desktop.json"
    try:
        assert json.loads(desktop_file.read_text())["pid"] == os.getpid()
    finally:
        running.stop()
    assert not desktop_file.exists()
    env = {**os.environ, "AIOS_MCP_TOKEN": TOKEN, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            str(PROJECT_ROOT / "desktop_app.py"),
            "mcp",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "no running desktop found" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_client_that_gives_up_cancels_its_run(desk: Running) -> None:
    token = make_token(desk, "impatient")
    runs: list[str] = []

    async def use(s: ClientSession) -> None:
        started = anyio.Event()

        async def seen(value: float, total: float | None, message: str | None) -> None:
            started.set()

        async def call() -> None:
            await s.call_tool(
                "app.planner", {"text": "plan " + json.dumps(SHELL)}, progress_callback=seen
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await started.wait()  # the call waits for its card
            active = await anyio.to_thread.run_sync(
                lambda: desk.get("/api/runs", params={"active": "1"}).json()
            )
            runs.extend(r["run_id"] for r in active if r["app"] == "planner")
            tg.cancel_scope.cancel()  # the client gives up: MCP cancellation

    over_http(desk, token, use)
    assert len(runs) == 1

    def cancelled() -> bool:
        return desk.get(f"/api/runs/{runs[0]}").json()["state"] == "cancelled"

    wait_for(cancelled, "the run of the cancelled call to end cancelled", 30)
    assert not [
        ia
        for ia in desk.get("/api/interactions", params={"pending": "1"}).json()
        if ia["run_id"] == runs[0]
    ]
