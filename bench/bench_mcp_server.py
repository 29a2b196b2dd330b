"""The desktop as an MCP server (issue 25, DESIGN §17): what a call through MCP costs.

    python bench/bench_mcp_server.py [--rounds 100]

One real system (the bundled Hello app, offline routing, approvals "auto"), one run:

- **Round trip.** ``instruction`` "say hello" from the official SDK's ``ClientSession``
  over streamable HTTP (``/mcp``, one session kept open as a client does) against the
  same instruction as ``POST /api/instruction`` (requests, keep-alive), alternating, so
  load on a shared machine weighs on both alike: p50 / p95, the p50 difference and
  ratio. Both go to the same controller; the difference is the MCP transport (a2wsgi,
  the SDK's session, SSE), the token check and the audit row.
- **Through stdio.** The same call from a client that started ``triton-aios mcp`` (the
  relay to ``/mcp``), and the relay's start to its tools listed.
- **Session.** A new client's ``initialize`` + ``tools/list`` on ``/mcp``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
import requests  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from bench.running import running_system  # noqa: E402

TEXT = "say hello"
TARGET_OVERHEAD_MS = 10.0
"""What the MCP path may add to an instruction's p50 (the transport, token, audit)."""


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def row(label: str, values: list[float]) -> str:
    return f"| {label} | {statistics.median(values):.2f} | {pct(values, 95):.2f} | {len(values)} |"


def check(result: types.CallToolResult) -> None:
    views = (result.structured_content or {}).get("views") or []
    if result.is_error or [v.get("app") for v in views] != ["hello"]:
        raise SystemExit(f"the MCP call did not reach Hello: {result}")


async def http_rounds(
    url: str, token: str, http: requests.Session, rounds: int
) -> tuple[list[float], list[float], list[float]]:
    """(MCP call ms, POST /api/instruction ms, new session ms), alternating."""
    mcp_ms: list[float] = []
    api_ms: list[float] = []
    sid = http.post(url + "/api/instruction", json={"text": TEXT}, timeout=30).json()["session_id"]
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as client,
        streamable_http_client(url + "/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        check(await session.call_tool("instruction", {"text": TEXT}))  # warm
        for _ in range(rounds):
            t = time.perf_counter()
            result = await session.call_tool("instruction", {"text": TEXT})
            mcp_ms.append((time.perf_counter() - t) * 1000)
            check(result)
            t = time.perf_counter()
            r = http.post(
                url + "/api/instruction", json={"text": TEXT, "session_id": sid}, timeout=30
            )
            api_ms.append((time.perf_counter() - t) * 1000)
            if r.status_code != 200 or [x["app"] for x in r.json()["results"]] != ["hello"]:
                raise SystemExit(f"POST /api/instruction failed: {r.status_code} {r.text[:200]}")
    new_ms: list[float] = []
    for _ in range(max(3, rounds // 10)):
        t = time.perf_counter()
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(url + "/mcp", http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.list_tools()
            new_ms.append((time.perf_counter() - t) * 1000)
    return mcp_ms, api_ms, new_ms


async def stdio_rounds(data_dir: Path, token: str, rounds: int) -> tuple[float, list[float]]:
    """(start of ``triton-aios mcp`` to its tools listed ms, call ms)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "desktop_app.py"), "mcp", "--data-dir", str(data_dir)],
        env={**os.environ, "AIOS_MCP_TOKEN": token, "PYTHONPATH": str(ROOT)},
    )
    calls: list[float] = []
    t = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        start_ms = (time.perf_counter() - t) * 1000
        for _ in range(rounds):
            t = time.perf_counter()
            result = await session.call_tool("instruction", {"text": TEXT})
            calls.append((time.perf_counter() - t) * 1000)
            check(result)
    return start_ms, calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=100)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no access log lines
    tmp = Path(tempfile.mkdtemp(prefix="bench_mcp_server_"))
    try:
        apps = tmp / "apps"
        shutil.copytree(ROOT / "apps" / "hello", apps / "hello")
        raw: dict[str, Any] = {
            "apps_dir": str(apps),
            "data_dir": str(tmp / "data"),
            "llm": {"api_key": ""},
            "memory": {"enabled": False},
            "language": "en",
        }
        with running_system(raw) as (system, http):
            token = system.mcp_tokens.create("bench", ["instruction"])["token"]
            mcp_ms, api_ms, new_ms = anyio.run(http_rounds, system.url, token, http, args.rounds)
            start_ms, stdio_ms = anyio.run(
                stdio_rounds, system.data_dir, token, max(10, args.rounds // 5)
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    p50_mcp, p50_api = statistics.median(mcp_ms), statistics.median(api_ms)
    overhead = p50_mcp - p50_api
    print("\n| round trip of instruction 'say hello' | p50 ms | p95 ms | n |")
    print("|---|---|---|---|")
    print(row("POST /api/instruction (baseline)", api_ms))
    print(row("MCP tools/call over /mcp (SDK client)", mcp_ms))
    print(row("MCP tools/call through triton-aios mcp (stdio)", stdio_ms))
    print(row("new /mcp session: initialize + tools/list", new_ms))
    print(f"\ntriton-aios mcp start to tools listed: {start_ms:.0f} ms")
    met = "met" if overhead <= TARGET_OVERHEAD_MS else "NOT met"
    print(
        f"MCP over /mcp vs POST /api/instruction: +{overhead:.2f} ms p50 "
        f"(x{p50_mcp / p50_api:.2f}); target <= +{TARGET_OVERHEAD_MS:g} ms: {met}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
