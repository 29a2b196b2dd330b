"""Shared fixtures: temporary workdirs, a real SQLite store, tool contexts,
and a guard that fails any test which leaves a child process behind."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from aios.config import Config, SandboxConfig
from aios.store import Store
from aios.tools.base import ToolContext
from aios.tools.sandbox import SandboxPolicy
from tests.util import wait_for

ROOT = Path(__file__).resolve().parent.parent
LEAK_GRACE = 3.0
"""Seconds a test's child processes may take to exit after it ends."""


def children_now() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def fail_on_leaked_children(
    before: set[int], ignore: Callable[[psutil.Process], bool] = lambda p: False
) -> None:
    """Fail (and kill them) if child processes born since ``before`` outlive a short grace."""
    me = psutil.Process()

    def leaked_now() -> list[psutil.Process]:
        return [
            p
            for p in me.children(recursive=True)
            if p.pid not in before and alive(p) and not ignore(p)
        ]

    try:
        wait_for(lambda: not leaked_now(), "child processes to exit", LEAK_GRACE)
        return
    except AssertionError:
        leaked = leaked_now()
    if not leaked:
        return
    names = [f"{p.pid}:{' '.join(p.cmdline()[:4]) if alive(p) else '?'}" for p in leaked]
    for p in leaked:
        try:
            p.kill()
        except psutil.Error:
            pass
    pytest.fail(f"test leaked child processes: {names}")


@pytest.fixture(autouse=True)
def no_leaked_children() -> Iterator[None]:
    """Every test must reap what it starts (apps, commands, background processes)."""
    before = children_now()
    yield
    fail_on_leaked_children(before)


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    """An app folder with an empty ``workspace/`` and a neighbour holding secrets."""
    d = tmp_path / "apps" / "demo"
    (d / "workspace").mkdir(parents=True)
    (tmp_path / "config.json").write_text('{"deepseek_api_key": "sk-SECRET"}')
    other = tmp_path / "apps" / "other" / "workspace"
    other.mkdir(parents=True)
    (other / "private.txt").write_text("other app's secret")
    return d


@pytest.fixture
def workdir(app_dir: Path) -> Path:
    return (app_dir / "workspace").resolve()


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "data" / "aios.db")
    yield s
    s.close()


@pytest.fixture
def policy(workdir: Path, config: Config) -> SandboxPolicy:
    return SandboxPolicy.build(config.tool_sandbox, workdir)


def make_ctx(
    workdir: Path,
    store: Store | None,
    *,
    app_id: str = "demo",
    sandbox: SandboxConfig | None = None,
    config: Config | None = None,
    **kw: object,
) -> ToolContext:
    config = config or Config()
    pol = SandboxPolicy.build(sandbox or config.tool_sandbox, workdir)
    timeouts = {
        t: config.timeout_for(t)
        for t in (
            "http_request",
            "file_read",
            "file_write",
            "file_list",
            "shell_exec",
            "process_start",
            "db_query",
            "cache_get",
            "cache_set",
            "notify",
        )
    }
    return ToolContext(
        app_id=app_id, workdir=workdir, policy=pol, store=store, timeouts=timeouts, **kw
    )  # type: ignore[arg-type]


@pytest.fixture
def ctx(workdir: Path, store: Store) -> Iterator[ToolContext]:
    from aios.tools.processes import ProcessTable

    table = ProcessTable(max_per_app=Config().tool_sandbox.max_background_processes)
    c = make_ctx(workdir, store, processes=table)
    yield c
    table.shutdown()
