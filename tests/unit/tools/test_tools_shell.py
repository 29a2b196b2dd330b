"""shell_exec and process_start through aios.tools.invoke, with real processes.

Most behaviour is checked twice: inside bubblewrap (when it works here) and
with the OS sandbox off, where only the argv, path and rlimit rules apply.
The hostile cases live in test_sandbox_attacks.py.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from aios.config import Config, SandboxConfig
from aios.host.os_sandbox import SANE_PATH, detect
from aios.protocol import ToolResult
from aios.store import Store
from aios.tools import ToolContext, invoke
from aios.tools.processes import ProcessTable
from tests.conftest import make_ctx
from tests.util import wait_for

HAS_BWRAP = detect().bwrap is not None
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap does not work here")
MODES = [pytest.param("auto", id="bwrap", marks=needs_bwrap), pytest.param("off", id="fallback")]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def ctx_for(
    workdir: Path,
    store: Store | None,
    mode: str = "auto",
    processes: ProcessTable | None = None,
    config: Config | None = None,
    **sandbox: Any,
) -> ToolContext:
    cfg = SandboxConfig(os_sandbox=mode, **sandbox)  # type: ignore[arg-type]
    return make_ctx(workdir, store, sandbox=cfg, processes=processes, config=config)


@pytest.fixture
def sh(workdir: Path, store: Store, mode: str) -> ToolContext:
    return ctx_for(workdir, store, mode)


def run(ctx: ToolContext, cmd: str | list[str], **args: Any) -> ToolResult:
    return invoke("shell_exec", {"cmd": cmd, **args}, ctx)


def py(code: str) -> list[str]:
    """A python3 argv (a list, so the code needs no quoting)."""
    return ["python3", "-c", code]


# ---------------------------------------------------------------- basics


def test_echo_returns_the_result_shape(sh: ToolContext, mode: str) -> None:
    r = run(sh, "echo hello   world")
    assert r.status == "ok", r.error
    assert r.result == {"exit_code": 0, "stdout": "hello world\n", "stderr": "", "truncated": False}
    assert r.meta == {"os_sandbox": "bubblewrap" if mode == "auto" else "off"}


def test_nonzero_exit_is_an_error_that_keeps_the_output(sh: ToolContext) -> None:
    r = run(sh, py("import sys; print('partial'); print('oops', file=sys.stderr); sys.exit(3)"))
    assert r.status == "error"
    assert r.error == "exit code 3"
    assert r.result == {
        "exit_code": 3,
        "stdout": "partial\n",
        "stderr": "oops\n",
        "truncated": False,
    }


def test_a_pipeline_feeds_one_stage_into_the_next(sh: ToolContext) -> None:
    r = run(sh, "echo 七里香 周杰伦 | python3 -c 'import sys; print(sys.stdin.read().split()[1])'")
    assert r.status == "ok", r.error
    assert r.result["stdout"] == "周杰伦\n"


def test_exit_code_of_a_pipeline_is_the_last_stage(sh: ToolContext) -> None:
    r = run(sh, "echo x | python3 -c 'import sys; sys.exit(4)'")
    assert (r.status, r.error) == ("error", "exit code 4")


def test_quoted_operators_are_plain_characters(sh: ToolContext) -> None:
    r = run(sh, """python3 -c "print(1 > 0); print('a|b && c;d')" """)
    assert r.status == "ok", r.error
    assert r.result["stdout"] == "True\na|b && c;d\n"


def test_words_are_split_like_a_shell_without_expansion(sh: ToolContext) -> None:
    line = """python3 -c 'import sys; print(sys.argv[1:])' 'a b' "c \\"d\\"" e\\ f *.txt $HOME"""
    r = run(sh, line)
    assert r.status == "ok", r.error
    assert r.result["stdout"] == """['a b', 'c "d"', 'e f', '*.txt', '$HOME']\n"""


def test_a_command_cannot_leave_processes_behind(sh: ToolContext) -> None:
    marker = f"leftover-{uuid.uuid4().hex}"
    child = f"import time; time.sleep(60)  # {marker}"
    r = run(
        sh,
        py(
            f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {child!r}])\n"
            "print('parent done')"
        ),
    )
    assert r.status == "ok", r.error
    assert r.result["stdout"] == "parent done\n"
    assert not [
        p
        for p in psutil.process_iter(["cmdline"])
        if any(marker in part for part in p.info["cmdline"] or [])
    ]


def test_cwd_is_resolved_inside_the_workdir(sh: ToolContext, workdir: Path) -> None:
    (workdir / "sub").mkdir()
    (workdir / "sub" / "song.mp3").write_bytes(b"id3")
    assert run(sh, "ls", cwd="sub").result["stdout"] == "song.mp3\n"
    assert run(sh, "ls", cwd="workspace/sub").result["stdout"] == "song.mp3\n"
    r = run(sh, py("import os; print(os.getcwd())"), cwd="sub")
    assert r.result["stdout"] == f"{workdir / 'sub'}\n"


@pytest.mark.parametrize(
    ("cwd", "message"),
    [
        ("..", "path confinement: '..' resolves outside the app's workdir"),
        ("/tmp", "path confinement: absolute path '/tmp' refused"),
        ("nowhere", "path not found: 'nowhere'"),
        ("file.txt", "cwd 'file.txt' is not a directory"),
    ],
)
def test_a_bad_cwd_is_refused(sh: ToolContext, workdir: Path, cwd: str, message: str) -> None:
    (workdir / "file.txt").write_text("x")
    r = run(sh, "ls", cwd=cwd)
    assert r.status == "error"
    assert r.error is not None and r.error.startswith(message)


def test_the_environment_is_scrubbed(
    sh: ToolContext, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-leak")
    monkeypatch.setenv("AIOS_APP_TOKEN", "tok-leak")
    monkeypatch.setenv("PATH", "/root/.pyenv/shims:" + SANE_PATH)
    r = run(
        sh, py("import json, os, sys; print(json.dumps(dict(os.environ))); print(sys.executable)")
    )
    assert r.status == "ok", r.error
    env_line, exe = r.result["stdout"].splitlines()
    env = json.loads(env_line)
    env.pop("PWD", None)  # bwrap sets it for --chdir
    tmp = env.pop("TMPDIR")
    assert env == {"PATH": SANE_PATH, "HOME": str(workdir), "LANG": "C.UTF-8"}
    assert tmp == "/tmp" or tmp.startswith(str(workdir) + "/")
    assert "leak" not in r.result["stdout"]
    # A real interpreter from the system, never a pyenv shim from the caller's PATH.
    assert exe.startswith(("/usr/", "/bin/")), exe


def test_output_is_decoded_as_utf8_with_replacement(sh: ToolContext) -> None:
    r = run(sh, py("import sys; sys.stdout.buffer.write('七里香 '.encode() + b'\\xff\\n')"))
    assert r.result["stdout"] == "七里香 \ufffd\n"


def test_the_whitelist_names_the_refused_program(workdir: Path, store: Store) -> None:
    ctx = ctx_for(workdir, store, "off", shell_whitelist=["echo"])
    r = run(ctx, "ls")
    assert r.status == "error"
    assert r.error == "command whitelist: 'ls' is not allowed (allowed: echo)"
    row = store.audit_rows(app="demo", limit=1)[0]
    assert (row["tool"], row["status"]) == ("shell_exec", "denied")


def test_without_the_whitelist_other_programs_run(workdir: Path, store: Store) -> None:
    ctx = ctx_for(workdir, store, "off", enable_shell_whitelist=False)
    r = run(ctx, "printf %s-%s a b")
    assert (r.status, r.result["stdout"]) == ("ok", "a-b")


def test_a_missing_program_is_a_clear_error(workdir: Path, store: Store) -> None:
    ctx = ctx_for(workdir, store, "off", shell_whitelist=["no-such-program-xyz"])
    r = run(ctx, "no-such-program-xyz")
    assert r.error == f"command not found: 'no-such-program-xyz' (searched {SANE_PATH})"


# ------------------------------------------------------- limits and capture


def test_timeout_kills_and_keeps_partial_output(sh: ToolContext) -> None:
    r = run(sh, py("import time; print('started', flush=True); time.sleep(60)"), timeout=1)
    assert r.status == "error"
    assert r.error == "timed out after 1s; process group killed"
    assert r.result["stdout"] == "started\n"


def test_timeout_is_capped_by_the_system_limit(workdir: Path, store: Store) -> None:
    config = Config(tool_timeout={"shell_exec": 1})
    ctx = ctx_for(workdir, store, "off", config=config)
    r = run(ctx, py("import time; time.sleep(60)"), timeout=500)
    assert r.error == "timed out after 1s; process group killed"


def test_output_is_capped_per_stream(workdir: Path, store: Store, mode: str) -> None:
    ctx = ctx_for(workdir, store, mode, max_output_bytes=4096)
    r = run(ctx, py("import sys; print('o' * 10000); print('e' * 10000, file=sys.stderr)"))
    assert r.status == "ok", r.error
    assert r.result["stdout"] == "o" * 4096
    assert r.result["stderr"] == "e" * 4096
    assert r.result["truncated"] is True


def test_a_cut_never_leaves_half_a_character(workdir: Path, store: Store) -> None:
    ctx = ctx_for(workdir, store, "off", max_output_bytes=1024)
    r = run(ctx, py("print('香' * 1000)"))  # 3 bytes each: 1024 = 341 chars + 1 byte
    assert r.result["stdout"] == "香" * 341


def test_cpu_limit_is_reported_by_name(workdir: Path, store: Store, mode: str) -> None:
    ctx = ctx_for(workdir, store, mode, cpu_seconds=1)
    r = run(ctx, py("while True: pass"), timeout=20)
    assert r.status == "error"
    assert r.error == "exit code 152: killed by SIGXCPU (CPU time limit of 1 s)"
    assert r.meta is not None and r.meta["signal"] == "SIGXCPU"


def test_memory_limit_stops_an_allocation(workdir: Path, store: Store, mode: str) -> None:
    ctx = ctx_for(workdir, store, mode, memory_mb=128)
    r = run(ctx, py("x = bytearray(400 * 1024 * 1024)"))
    assert r.status == "error"
    assert r.error == "exit code 1"
    assert "MemoryError" in r.result["stderr"]


def test_file_size_limit_stops_a_big_write(workdir: Path, store: Store, mode: str) -> None:
    ctx = ctx_for(workdir, store, mode, max_file_bytes=100_000)
    r = run(ctx, py("open('big.bin', 'wb').write(b'x' * 1_000_000)"))
    assert r.status == "error"
    assert "File too large" in r.result["stderr"]
    assert (workdir / "big.bin").stat().st_size <= 100_000


# ------------------------------------------------------------ process_start


def start(
    ctx: ToolContext, cmd: str, args: list[str] | None = None, background: bool = False
) -> ToolResult:
    return invoke("process_start", {"cmd": cmd, "args": args or [], "background": background}, ctx)


def test_process_start_in_the_foreground_answers_like_shell_exec(sh: ToolContext) -> None:
    r = start(sh, "python3", ["-c", "import sys; print(sys.argv[1:])", "a b", "c"])
    assert r.status == "ok", r.error
    assert r.result == {
        "exit_code": 0,
        "stdout": "['a b', 'c']\n",
        "stderr": "",
        "truncated": False,
    }
    assert start(sh, "echo one two").result["stdout"] == "one two\n"


def test_process_start_args_obey_the_same_rules(sh: ToolContext) -> None:
    r = start(sh, "cat", ["../../config.json"])
    assert r.error == "path confinement: argument '../../config.json' points outside the workdir"
    assert start(sh, "rm", ["x"]).error is not None
    assert start(sh, "rm", ["x"]).error.startswith("command whitelist: 'rm' is not allowed")


def test_a_background_process_logs_into_the_workdir(workdir: Path, store: Store, mode: str) -> None:
    table = ProcessTable(max_per_app=2)
    ctx = ctx_for(workdir, store, mode, processes=table)
    try:
        r = start(
            ctx,
            "python3",
            ["-c", "print('working', flush=True); open('done.txt', 'w').write('ok')"],
            background=True,
        )
        assert r.status == "ok", r.error
        pid = r.result["pid"]
        assert r.result == {"pid": pid, "log": f"workspace/.aios/proc_{pid}.log", "running": True}
        assert wait_for(lambda: (workdir / "done.txt").exists())
        assert wait_for(lambda: (workdir / ".aios" / f"proc_{pid}.log").read_text() == "working\n")
        # The app reads its log like any file of its own.
        assert invoke("file_read", {"path": r.result["log"]}, ctx).result == "working\n"
        assert wait_for(lambda: table.list("demo") == [])  # finished ones are pruned
    finally:
        table.shutdown()


def test_background_processes_are_capped_listed_and_stopped(workdir: Path, store: Store) -> None:
    table = ProcessTable(max_per_app=2)
    ctx = ctx_for(workdir, store, "auto" if HAS_BWRAP else "off", processes=table)
    other = make_ctx(workdir, store, app_id="other", processes=table)
    sleeper = ["-c", "import time; time.sleep(60)"]
    try:
        pids = [start(ctx, "python3", sleeper, background=True).result["pid"] for _ in range(2)]
        third = start(ctx, "python3", sleeper, background=True)
        assert third.status == "error"
        assert third.error == (
            "background process limit: app 'demo' already runs 2 (max 2, "
            "tool_sandbox.max_background_processes); wait for one to finish "
            "or stop it"
        )
        assert store.audit_rows(app="demo", limit=1)[0]["status"] == "denied"
        # The cap is per app.
        theirs = start(other, "python3", sleeper, background=True).result["pid"]
        assert sorted(p["pid"] for p in table.list("demo")) == sorted(pids)
        assert table.stop("other", pids[0]) is False  # not its process
        assert table.stop("demo", pids[0]) is True
        assert not psutil.pid_exists(pids[0])
        assert [p["pid"] for p in table.list("demo")] == [pids[1]]
        assert table.stop_app("demo") == 1
        assert table.list("demo") == []
        assert [p["pid"] for p in table.list("other")] == [theirs]
    finally:
        table.shutdown()
    assert not psutil.pid_exists(theirs)
    r = start(ctx, "python3", sleeper, background=True)
    assert r.error == "the system is shutting down; no new background processes"


def test_a_background_process_outlives_the_thread_that_started_it(
    workdir: Path, store: Store
) -> None:
    # bwrap's --die-with-parent follows the forking *thread*; a server request
    # thread ends right after answering.
    table = ProcessTable(max_per_app=1)
    ctx = ctx_for(workdir, store, "auto" if HAS_BWRAP else "off", processes=table)
    results: list[ToolResult] = []
    t = threading.Thread(
        target=lambda: results.append(
            start(ctx, "python3", ["-c", "import time; time.sleep(60)"], background=True)
        )
    )
    t.start()
    t.join()
    try:
        pid = results[0].result["pid"]
        time.sleep(0.3)
        assert [p["pid"] for p in table.list("demo")] == [pid]
        assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    finally:
        table.shutdown()


def test_background_needs_a_process_table_and_one_program(workdir: Path, store: Store) -> None:
    bare = ctx_for(workdir, store, "off")
    r = start(bare, "echo hi", background=True)
    assert r.error == "background processes are not available here (no process table)"
    table = ProcessTable(max_per_app=1)
    try:
        ctx = ctx_for(workdir, store, "off", processes=table)
        r = start(ctx, "echo hi | cat", background=True)
        assert r.error == (
            "command policy: a background process is one program, not a pipeline: 'echo hi | cat'"
        )
        assert table.list("demo") == []
    finally:
        table.shutdown()
