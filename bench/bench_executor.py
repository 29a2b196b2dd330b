"""How much the executor adds per step over doing the same thing directly.

    python bench/bench_executor.py [--steps 2000] [--shell 40]

For file_read and cache_get: a plan of N steps through ``Executor.run``
(templates, validation, sandbox, timeout, audit row) against N direct calls
of the same operation in the same run (``Path.read_text``,
``Store.cache_get``). The breakdown times the parts separately so a slow
number can be traced: plan validation, ``invoke`` without the audit, and
the audit insert alone. For shell_exec: the executor with the OS sandbox
off and with bubblewrap against a bare ``subprocess.run``.

Target: executor overhead ≤ 0.2 ms per step over the direct call.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aios.config import Config, SandboxConfig  # noqa: E402
from aios.protocol import ATOMIC_TOOLS, parse_steps  # noqa: E402
from aios.store import Store  # noqa: E402
from aios.tools import ToolContext, invoke  # noqa: E402
from aios.tools.executor import Executor  # noqa: E402
from aios.tools.sandbox import SandboxPolicy  # noqa: E402

TARGET_MS = 0.2


def per_op_ms(fn: Callable[[], Any], n: int, repeat: int = 3) -> float:
    """Best of ``repeat`` runs of ``fn`` (which does ``n`` operations), in ms per operation."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1000 / n)
    return min(runs)


def make_ctx(
    workdir: Path, store: Store | None, sandbox: SandboxConfig | None = None
) -> ToolContext:
    config = Config()
    policy = SandboxPolicy.build(sandbox or config.tool_sandbox, workdir)
    return ToolContext(
        app_id="bench",
        workdir=policy.workdir,
        policy=policy,
        store=store,
        timeouts={t: config.timeout_for(t) for t in ATOMIC_TOOLS},
        session_id="sess_bench",
    )


def row(label: str, executor_ms: float, direct_ms: float) -> None:
    over = executor_ms - direct_ms
    verdict = "ok" if over <= TARGET_MS else f"OVER target {TARGET_MS} ms"
    print(
        f"{label:<12} executor {executor_ms:8.4f} ms/step  direct {direct_ms:8.4f} ms  "
        f"overhead {over:8.4f} ms  ratio {executor_ms / direct_ms:7.1f}x  [{verdict}]"
    )


def bench_atomic(tmp: Path, n: int) -> None:
    workdir = tmp / "workspace"
    workdir.mkdir()
    (workdir / "greeting.txt").write_text("你好" * 50, encoding="utf-8")
    store = Store(tmp / "bench.db")
    ctx = make_ctx(workdir, store)
    ex = Executor()
    store.cache_set("bench", "k", {"a": [1, 2, 3]})

    read_plan = [
        {"step_id": i, "tool": "file_read", "args": {"path": "greeting.txt"}}
        for i in range(1, n + 1)
    ]
    cache_plan = [
        {"step_id": i, "tool": "cache_get", "args": {"key": "k"}} for i in range(1, n + 1)
    ]
    target = workdir / "greeting.txt"

    def direct_read() -> None:
        for _ in range(n):
            target.read_text(encoding="utf-8")

    def direct_cache() -> None:
        for _ in range(n):
            store.cache_get("bench", "k")

    ex.run(read_plan[:50], ctx)  # warm up imports, connections, caches
    print(f"\n== {n} steps per plan, best of 3 ==")
    read_ms = per_op_ms(lambda: ex.run(read_plan, ctx), n)
    row("file_read", read_ms, per_op_ms(direct_read, n))
    cache_ms = per_op_ms(lambda: ex.run(cache_plan, ctx), n)
    row("cache_get", cache_ms, per_op_ms(direct_cache, n))

    print("\n-- where the time goes (ms per step) --")
    print(f"parse_steps (plan validation)      {per_op_ms(lambda: parse_steps(read_plan), n):.4f}")
    no_audit = replace(ctx, store=None)

    def invoke_read(c: ToolContext) -> Callable[[], None]:
        return lambda: [invoke("file_read", {"path": "greeting.txt"}, c) for _ in range(n)]

    print(f"invoke(file_read) without audit    {per_op_ms(invoke_read(no_audit), n):.4f}")
    print(f"invoke(file_read) with audit       {per_op_ms(invoke_read(ctx), n):.4f}")

    def audit_only() -> None:
        for _ in range(n):
            store.audit(
                app="bench",
                tool="file_read",
                args='{"path": "greeting.txt"}',
                status="ok",
                duration_ms=0.1,
                session_id="sess_bench",
                step_id="step_1",
            )

    print(f"Store.audit insert alone           {per_op_ms(audit_only, n):.4f}")
    print(
        f"executor without audit (file_read) "
        f"{per_op_ms(lambda: ex.run(read_plan, no_audit), n):.4f}"
    )
    store.close()


def bench_shell(tmp: Path, n: int) -> None:
    try:
        from aios.host import os_sandbox  # noqa: F401
    except ImportError:
        print("\nshell_exec: aios.host.os_sandbox is not available; skipped")
        return
    workdir = tmp / "shell"
    workdir.mkdir()
    store = Store(tmp / "shell.db")
    ex = Executor()
    plan = [
        {"step_id": i, "tool": "shell_exec", "args": {"cmd": "echo hi"}} for i in range(1, n + 1)
    ]

    def bare() -> None:
        for _ in range(n):
            subprocess.run(["echo", "hi"], capture_output=True, check=True)

    direct = per_op_ms(bare, n, repeat=2)
    print(f"\n== shell_exec 'echo hi', {n} steps ==")
    for mode in ("off", "bwrap"):
        ctx = make_ctx(workdir, store, SandboxConfig(os_sandbox=mode))  # type: ignore[arg-type]
        first = ex.run(plan[:1], ctx)["step_1"]
        if first["status"] != "ok":
            print(f"os_sandbox={mode:<5}: failed: {first.get('error')}")
            continue
        ms = per_op_ms(lambda c=ctx: ex.run(plan, c), n, repeat=2)
        over = ms - direct
        print(
            f"os_sandbox={mode:<5} executor {ms:8.3f} ms/step  bare subprocess.run "
            f"{direct:8.3f} ms  overhead {over:8.3f} ms  ratio {ms / direct:5.1f}x"
        )
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--shell", type=int, default=40)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        bench_atomic(Path(d), opts.steps)
        bench_shell(Path(d), opts.shell)


if __name__ == "__main__":
    main()
