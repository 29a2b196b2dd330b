"""What the desktop adds to an MCP tool call (DESIGN §17), measured against the SDK alone.

    python bench/bench_mcp.py [--calls 300] [--starts 5]

The server is ``tests/mcp_servers/toy.py`` (the official SDK), started the way the desktop
starts it (confined by bubblewrap where that works, :mod:`aios.mcp.confine`). In one run:

* **call**: the read-only tool ``lookup`` as a plan step through the executor (validation,
  grant, risk, timeout, cancel watch, result conversion, audit row in a real store) against
  the same call made directly with the SDK's ``ClientSession`` on its own connection to
  the same command; p50 and p95 per call. Target: overhead ≤ 2 ms p50.
* **start**: from asking for the server to its tools listed: the desktop's manager
  (``McpClients``) against ``stdio_client`` + ``initialize`` + ``list_tools`` by hand.
* **10 concurrent calls**: ten executor plans at once (threads, as runs are) against ten
  ``call_tool`` at once on the direct session (``asyncio.gather``); wall time per batch.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from aios.config import Config, validate_config  # noqa: E402
from aios.mcp import confine  # noqa: E402
from aios.mcp.client import McpClients  # noqa: E402
from aios.store import Store  # noqa: E402
from aios.tools import ToolContext  # noqa: E402
from aios.tools.executor import Executor  # noqa: E402
from aios.tools.sandbox import SandboxPolicy  # noqa: E402

TOY = ROOT / "tests" / "mcp_servers" / "toy.py"
TARGET_MS = 2.0
APP = "bench"
STEP = [{"step_id": 1, "tool": "mcp.toy.lookup", "args": {"word": "benchmark"}}]


def _config(data: Path) -> Config:
    server = {"command": [sys.executable, str(TOY)], "apps": [APP]}
    return validate_config({"data_dir": str(data), "mcp": {"servers": {"toy": server}}})


def _wait_ready(clients: McpClients, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(s["status"] == "ready" for s in clients.status()):
            return
        time.sleep(0.002)
    raise SystemExit(f"the server did not start: {clients.status()}")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Direct:
    """The SDK alone: one ``ClientSession`` on its own connection, in a loop of its own."""

    def __init__(self, config: Config, data: Path) -> None:
        server = config.mcp.active()["toy"]
        self.params = confine.parameters("toy", server, data, config.apps.confinement)
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.stop = asyncio.Event()
        self.session: ClientSession | None = None
        self.start_s = 0.0
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),))
        self.thread.start()
        self.ready.wait(60)

    async def _run(self) -> None:
        self.stop = asyncio.Event()
        t0 = time.perf_counter()
        with open("/dev/null", "w") as errlog:
            async with stdio_client(self.params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.list_tools()
                    self.start_s = time.perf_counter() - t0
                    self.session = session
                    self.ready.set()
                    await self.stop.wait()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def call(self) -> float:
        assert self.session is not None
        session = self.session

        async def one() -> float:
            t0 = time.perf_counter()
            await session.call_tool("lookup", {"word": "benchmark"})
            return (time.perf_counter() - t0) * 1000

        return float(self.run(one()))

    def batch(self, n: int) -> float:
        assert self.session is not None
        session = self.session

        async def many() -> float:
            t0 = time.perf_counter()
            await asyncio.gather(
                *(session.call_tool("lookup", {"word": "benchmark"}) for _ in range(n))
            )
            return (time.perf_counter() - t0) * 1000

        return float(self.run(many()))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)
        self.loop.close()


def _ctx(clients: McpClients, work: Path, store: Store) -> ToolContext:
    policy = SandboxPolicy.build(Config().tool_sandbox, work)
    return ToolContext(
        app_id=APP, workdir=policy.workdir, policy=policy, store=store, mcp=clients.call
    )


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--batches", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        base = Path(tmp)
        data, work = base / "data", base / "work"
        data.mkdir()
        work.mkdir()
        config = _config(data)
        store = Store(data / "aios.db")

        # start to tools listed
        ours, direct_starts = [], []
        for _ in range(args.starts):
            clients = McpClients(data, lambda: config)
            t0 = time.perf_counter()
            clients.start()
            _wait_ready(clients)
            ours.append((time.perf_counter() - t0) * 1000)
            clients.stop()
            d = Direct(config, data)
            direct_starts.append(d.start_s * 1000)
            d.close()

        clients = McpClients(data, lambda: config)
        clients.start()
        _wait_ready(clients)
        direct = Direct(config, data)
        ctx = _ctx(clients, work, store)
        executor = Executor()
        for _ in range(20):  # warm up both paths
            executor.run(STEP, ctx)
            direct.call()
        via, alone = [], []
        for _ in range(args.calls):  # interleaved: the same machine load for both
            via.append(_timed(lambda: executor.run(STEP, ctx)))
            alone.append(direct.call())
        assert executor.run(STEP, ctx)["step_1"]["status"] == "ok"

        batch_via, batch_alone = [], []
        for _ in range(args.batches):
            threads = [threading.Thread(target=executor.run, args=(STEP, ctx)) for _ in range(10)]
            t0 = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            batch_via.append((time.perf_counter() - t0) * 1000)
            batch_alone.append(direct.batch(10))
        direct.close()
        clients.stop()
        store.close()

    confined = "confined (bubblewrap)" if "bwrap" in direct.params.command else "unconfined"
    p50_via, p50_alone = statistics.median(via), statistics.median(alone)
    print(f"MCP tool call, stdio server {confined}, {args.calls} calls each")
    print(
        f"  direct ClientSession.call_tool   p50 {p50_alone:7.3f} ms  "
        f"p95 {_pct(alone, 0.95):7.3f} ms"
    )
    print(
        f"  executor plan step (mcp.toy.*)   p50 {p50_via:7.3f} ms  p95 {_pct(via, 0.95):7.3f} ms"
    )
    overhead = p50_via - p50_alone
    verdict = "ok" if overhead <= TARGET_MS else "OVER TARGET"
    print(
        f"  overhead p50 {overhead:6.3f} ms (x{p50_via / p50_alone:.2f}); "
        f"target <= {TARGET_MS:g} ms: {verdict}"
    )
    print(f"server start to tools listed, {args.starts} starts each")
    print(
        "  stdio_client + initialize + list_tools  "
        f"median {statistics.median(direct_starts):7.1f} ms"
    )
    print(f"  McpClients.start() to ready            median {statistics.median(ours):7.1f} ms")
    print(f"10 concurrent calls, {args.batches} batches each (wall time per batch)")
    print(
        f"  asyncio.gather on one ClientSession     median {statistics.median(batch_alone):7.2f} ms"
    )
    print(
        f"  10 executor plans in 10 threads         median {statistics.median(batch_via):7.2f} ms"
    )


if __name__ == "__main__":
    main()
