"""The sandbox under attack: one row per attempt, every tool through aios.tools.invoke.

Each row asserts the refusal (or failure) text AND that nothing happened
outside the workdir: a sentinel file keeps its bytes and no file appears or
changes anywhere under the test's temporary folder outside the workdir.

Command rows run in two modes where it matters:

* ``bwrap`` — the OS sandbox (bubblewrap) is on; commands see only /usr,
  /etc (secrets masked), a scratch /tmp and the workdir, with no network.
* ``fallback`` — ``tool_sandbox.os_sandbox = "off"``: only the argv rules
  (no shell, whitelist, path arguments confined), rlimits and the kill of
  the process group. These rows show what the fallback still refuses.

What ONLY the OS sandbox stops (rows marked bwrap-only; the fallback lets
them through, see test_fallback_cannot_see_inside_interpreter_code):
paths computed or hidden inside an interpreter's code string —
``python3 -c "open(os.path.join('..', 'config.json'))"``,
``open('/abs/path/of/aios.db')``, writing to an absolute path, reading
another app's workspace, /etc/shadow, the system's /proc/<pid>/environ, a
socket to the system's own port on loopback — and a grandchild that leaves
the process group with setsid (caught in the fallback only by a pids cgroup).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
import pytest

from aios.config import SandboxConfig
from aios.host.os_sandbox import detect
from aios.protocol import ToolResult
from aios.store import Store
from aios.tools import ToolContext, invoke
from tests.conftest import make_ctx

CAPS = detect()
HAS_BWRAP = CAPS.bwrap is not None
SECRET = "sk-SECRET"  # what the app_dir fixture puts in the neighbouring config.json

# ------------------------------------------------------------------ fixtures


class _Recorder(BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        type(self).seen.append(self.path)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://evil.test/steal")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"system secret"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Env:
    tmp: Path
    """The test's folder: holds config.json, the store, other apps; all outside the workdir."""
    workdir: Path
    store: Store
    port: int
    seen: list[str]

    @property
    def db(self) -> Path:
        return self.tmp / "data" / "aios.db"

    @property
    def sentinel(self) -> Path:
        return self.tmp / "sentinel.txt"

    def fmt(self, value: Any) -> Any:
        """Fill ``{tmp}``, ``{db}``, ``{port}``, ``{pid}`` in a row's arguments."""
        if isinstance(value, str):
            return value.format(
                tmp=self.tmp, db=self.db, port=self.port, pid=os.getpid(), workdir=self.workdir
            )
        if isinstance(value, list):
            return [self.fmt(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fmt(v) for k, v in value.items()}
        return value


@pytest.fixture
def env(tmp_path: Path, workdir: Path, store: Store) -> Iterator[Env]:
    (tmp_path / "sentinel.txt").write_text("untouched")
    (tmp_path / "outside_dir").mkdir()
    store.cache_set("other", "secret", "other app's cached secret")
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Env(
            tmp=tmp_path,
            workdir=workdir,
            store=store,
            port=server.server_address[1],
            seen=_Recorder.seen,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def outside(env: Env) -> dict[str, bytes | str]:
    """Every entry under the test folder outside the workdir (the store's files excepted)."""
    out: dict[str, bytes | str] = {}
    for p in sorted(env.tmp.rglob("*")):
        rel = p.relative_to(env.tmp)
        if rel.parts[0] == "data" or p == env.workdir or env.workdir in p.parents:
            continue
        if p.is_symlink():
            out[str(rel)] = "-> " + os.readlink(p)
        elif p.is_file():
            out[str(rel)] = p.read_bytes()
        else:
            out[str(rel)] = "dir"
    return out


# ---------------------------------------------------------------- the table


@dataclass
class Attack:
    tool: str
    args: dict[str, Any]
    error: str
    """Expected start of the error (after filling placeholders)."""
    stderr: str | None = None
    """For commands stopped by the OS sandbox: what the command itself reports."""
    modes: tuple[str, ...] = ("any",)
    sandbox: dict[str, Any] = field(default_factory=dict)
    setup: Callable[[Env], None] | None = None
    ctx: dict[str, Any] = field(default_factory=dict)


def link(name: str, target: str) -> Callable[[Env], None]:
    def make(env: Env) -> None:
        (env.workdir / name).symlink_to(env.fmt(target))

    return make


def evil_script(env: Env) -> None:
    p = env.workdir / "evil"
    p.write_text(f"#!/bin/sh\necho pwned > {env.tmp}/owned.txt\n")
    p.chmod(0o755)


def outside_script(env: Env) -> None:
    (env.tmp / "evil.py").write_text(f"open({str(env.tmp / 'owned.txt')!r}, 'w').write('x')\n")


def sh(
    cmd: str | list[str],
    error: str,
    *,
    stderr: str | None = None,
    modes: tuple[str, ...] = ("bwrap", "fallback"),
    **kw: Any,
) -> Attack:
    return Attack("shell_exec", {"cmd": cmd}, error, stderr=stderr, modes=modes, **kw)


def py(code: str, stderr: str, **kw: Any) -> Attack:
    """A payload inside python3 code: the argv rules pass it; only bwrap stops it."""
    return sh(["python3", "-c", code], "exit code 1", stderr=stderr, modes=("bwrap",), **kw)


W = "command whitelist: "
P = "path confinement: "
OP = "command policy: shell operator "
ATTACKS: dict[str, Attack] = {
    # --- the file tools
    "file_read-dotdot": Attack(
        "file_read",
        {"path": "../../../config.json"},
        P + "'../../../config.json' resolves outside the app's workdir",
    ),
    "file_write-dotdot": Attack(
        "file_write",
        {"path": "../../../owned.txt", "content": "x"},
        P + "'../../../owned.txt' resolves outside",
    ),
    "file_list-dotdot": Attack(
        "file_list", {"path": "../.."}, P + "'../..' resolves outside the app's workdir"
    ),
    "file_read-absolute": Attack(
        "file_read", {"path": "{tmp}/config.json"}, P + "absolute path '{tmp}/config.json' refused"
    ),
    "file_write-absolute": Attack(
        "file_write",
        {"path": "{tmp}/sentinel.txt", "content": "x"},
        P + "absolute path '{tmp}/sentinel.txt' refused",
    ),
    "file_read-symlink-escape": Attack(
        "file_read",
        {"path": "peek"},
        P + "'peek' resolves outside",
        setup=link("peek", "{tmp}/config.json"),
    ),
    "file_write-symlink-escape": Attack(
        "file_write",
        {"path": "note.txt", "content": "x"},
        P + "'note.txt' resolves outside",
        setup=link("note.txt", "{tmp}/sentinel.txt"),
    ),
    "file_write-through-symlinked-dir": Attack(
        "file_write",
        {"path": "d/new.txt", "content": "x"},
        P + "'d/new.txt' resolves outside",
        setup=link("d", "{tmp}/outside_dir"),
    ),
    "file_list-symlinked-dir": Attack(
        "file_list", {"path": "d"}, P + "'d' resolves outside", setup=link("d", "{tmp}/outside_dir")
    ),
    "file_write-too-big": Attack(
        "file_write",
        {"path": "big.txt", "content": "x" * 5000},
        "resource limit: writing workspace/big.txt would make it 5000 bytes",
        sandbox={"max_file_bytes": 2048},
    ),
    # --- shell operators: refused before anything runs
    "op-semicolon": sh("echo hi; cat ../../../config.json", OP + "';' is not allowed"),
    "op-and": sh("echo hi && echo pwned > ../../../owned.txt", OP + "'&&' is not allowed"),
    "op-or": sh("cat nothing || cat ../../../config.json", OP + "'||' is not allowed"),
    "op-subst": sh("echo $(cat ../../../config.json)", OP + "'$(' is not allowed"),
    "op-backticks": sh("echo `cat ../../../config.json`", OP + "'`' is not allowed"),
    "op-braces": sh("echo ${{HOME}}", OP + "'${{' is not allowed"),
    "op-redirect-out": sh("echo pwned > ../../../owned.txt", OP + "'>' is not allowed"),
    "op-redirect-in": sh("cat < ../../../config.json", OP + "'<' is not allowed"),
    "op-background": sh("python3 -c 'import time; time.sleep(30)' &", OP + "'&' is not allowed"),
    "op-newline": sh(
        "echo hi\ncat ../../../config.json", "command policy: a line break is not allowed"
    ),
    "op-subshell": sh("(cat ../../../config.json)", OP + "'(' is not allowed"),
    # --- whitelist bypasses
    "wl-bin-sh": sh(
        "/bin/sh -c 'echo pwned > ../../../owned.txt'", W + "'/bin/sh' must be named without a path"
    ),
    "wl-sh-c": sh("sh -c 'echo pwned > ../../../owned.txt'", W + "'sh' is not allowed"),
    "wl-env-sh": sh("env sh -c id", W + "'env' is not allowed"),
    "wl-bash": sh("bash", W + "'bash' is not allowed"),
    "wl-dot-slash": sh("./evil", W + "'./evil' must be named without a path", setup=evil_script),
    "wl-pipe-stage": sh("echo x | sh", W + "'sh' is not allowed"),
    "wl-as-list": sh(["sh", "-c", "id"], W + "'sh' is not allowed"),
    # --- path arguments of whitelisted programs
    "arg-dotdot": sh(
        "cat ../../../config.json", P + "argument '../../../config.json' points outside the workdir"
    ),
    "arg-absolute": sh(
        "cat {tmp}/config.json", P + "argument '{tmp}/config.json' points outside the workdir"
    ),
    "arg-symlink": sh(
        "cat peek",
        P + "argument 'peek' points outside the workdir",
        setup=link("peek", "{tmp}/config.json"),
    ),
    "arg-home": sh("ls ~", P + "argument '~' points outside the workdir"),
    "arg-option-value": sh(
        "python3 -X pycache_prefix=/tmp/x -c 1",
        P + "argument 'pycache_prefix=/tmp/x' points outside",
    ),
    "arg-script-outside": sh(
        "python3 ../../../evil.py",
        P + "argument '../../../evil.py' points outside the workdir",
        setup=outside_script,
    ),
    "arg-literal-in-code": sh(
        ["python3", "-c", "print(open('../../../config.json').read())"],
        P + "argument \"print(open('../../../config.json').read())\" points outside the workdir",
    ),
    "cwd-outside": Attack(
        "shell_exec",
        {"cmd": "ls", "cwd": "../../.."},
        P + "'../../..' resolves outside",
        modes=("bwrap", "fallback"),
    ),
    # --- payloads inside interpreter code: only the OS sandbox stops these
    "py-read-config": py(
        "import os; print(open(os.path.join('..', '..', '..', 'config.json')).read())",
        "FileNotFoundError",
    ),
    "py-read-database": py("print(open('{db}', 'rb').read(64))", "FileNotFoundError"),
    "py-read-other-app": py(
        "print(open('{tmp}/apps/other/workspace/private.txt').read())", "FileNotFoundError"
    ),
    "py-write-next-to-workdir": py(
        "open('{tmp}/owned.txt', 'w').write('pwned')", "Read-only file system"
    ),
    "py-write-system": py("open('/etc/aios_owned', 'w').write('pwned')", "Read-only file system"),
    "py-read-shadow": py("print(open('/etc/shadow').read())", "PermissionError"),
    "py-list-project": py("import os; print(os.listdir('/work'))", "FileNotFoundError"),
    "py-read-system-environ": py("print(open('/proc/{pid}/environ').read())", "FileNotFoundError"),
    "py-connect-system-port": py(
        "import socket; socket.create_connection(('127.0.0.1', {port}))", "ConnectionRefusedError"
    ),
    # --- resources
    "memory-hog": sh(
        ["python3", "-c", "x = []\nwhile True: x.append(bytearray(10**7))"],
        "exit code 1",
        stderr="MemoryError",
        sandbox={"memory_mb": 128},
    ),
    "output-flood": sh(
        ["python3", "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
        "output flood: more than 65536 bytes of output; process group killed",
        sandbox={"max_output_bytes": 4096},
    ),
    "huge-file": sh(
        ["python3", "-c", "open('big.bin', 'wb').write(b'x' * 10**7)"],
        "exit code 1",
        stderr="File too large",
        sandbox={"max_file_bytes": 100_000},
    ),
    # --- network
    "http-domain": Attack(
        "http_request",
        {"url": "http://evil.test/steal"},
        "network policy: domain 'evil.test' is not in the whitelist",
        sandbox={"http_domain_whitelist": ["example.com"]},
    ),
    "http-redirect": Attack(
        "http_request",
        {"url": "http://127.0.0.1:{port}/redirect"},
        "redirect refused: network policy: domain 'evil.test' is not in the whitelist",
        sandbox={"http_domain_whitelist": ["127.0.0.1"]},
    ),
    "http-system-port": Attack(
        "http_request",
        {"url": "http://127.0.0.1:{port}/"},
        "network policy: port {port} on 127.0.0.1 belongs to the system",
        ctx={"forbidden": True},
    ),
    "http-system-port-by-name": Attack(
        "http_request",
        {"url": "http://localhost:{port}/"},
        "network policy: port {port} on localhost belongs",
        ctx={"forbidden": True},
    ),
    # --- database
    "db-attach-outside": Attack(
        "db_query",
        {"dsn": "notes.db", "sql": "ATTACH DATABASE '{tmp}/stolen.db' AS s"},
        "database policy: ATTACH '{tmp}/stolen.db' refused: it is outside the app's workdir",
    ),
    "db-attach-store": Attack(
        "db_query",
        {"dsn": ":memory:", "sql": "ATTACH DATABASE '{db}' AS s"},
        "database policy: ATTACH '{db}' refused: it is outside",
    ),
    "db-dsn-dotdot": Attack(
        "db_query",
        {"dsn": "sqlite:///../../../data/aios.db", "sql": "SELECT * FROM sqlite_master"},
        P + "'../../../data/aios.db' resolves outside",
    ),
    "db-dsn-absolute": Attack(
        "db_query", {"dsn": "{db}", "sql": "SELECT 1"}, P + "absolute path '{db}' refused"
    ),
    # --- cache
    "cache-ui-snapshot": Attack(
        "cache_get",
        {"key": "desktop:ui_snapshot"},
        "cache policy: 'desktop:ui_snapshot': permission 'desktop.control' is not granted",
    ),
}


def _params() -> list[Any]:
    out = []
    for name, attack in ATTACKS.items():
        for mode in attack.modes:
            marks = (
                [pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap does not work here")]
                if mode == "bwrap"
                else []
            )
            out.append(
                pytest.param(
                    attack, mode, id=name if mode == "any" else f"{name}-{mode}", marks=marks
                )
            )
    return out


def context(env: Env, attack: Attack, mode: str) -> ToolContext:
    sandbox = {"os_sandbox": "off" if mode == "fallback" else "auto", **attack.sandbox}
    kw: dict[str, Any] = {}
    if attack.ctx.get("forbidden"):
        kw["forbidden_ports"] = lambda: {env.port}
    return make_ctx(env.workdir, env.store, sandbox=SandboxConfig(**sandbox), **kw)


@pytest.mark.parametrize(("attack", "mode"), _params())
def test_attack_is_stopped_and_nothing_happens_outside(env: Env, attack: Attack, mode: str) -> None:
    if attack.setup is not None:
        attack.setup(env)
    before = outside(env)
    requests_before = list(env.seen)
    r = invoke(attack.tool, env.fmt(attack.args), context(env, attack, mode))
    assert r.status == "error", r.result
    assert r.error is not None and r.error.startswith(env.fmt(attack.error)), r.error
    if attack.stderr is not None:
        assert attack.stderr in r.result["stderr"], r.result
    assert SECRET not in json.dumps(r.result), "a secret leaked into the result"
    assert "other app's" not in json.dumps(r.result)
    assert outside(env) == before
    assert env.sentinel.read_text() == "untouched"
    if attack.tool != "http_request" or "redirect" not in attack.args["url"]:
        assert env.seen == requests_before, "the system's port was reached"
    row = env.store.audit_rows(app="demo", limit=1)[0]
    assert row["tool"] == attack.tool
    assert row["status"] in ("denied", "error")


def test_the_table_is_big_enough() -> None:
    assert len(ATTACKS) >= 30


# ------------------------------------------------ cases that need more than a row


def test_another_apps_cache_key_is_out_of_reach(env: Env) -> None:
    ctx = make_ctx(env.workdir, env.store)
    for key in ("secret", "other:secret", "other/secret"):
        r = invoke("cache_get", {"key": key}, ctx)
        assert (r.status, r.result, r.meta) == ("ok", None, {"hit": False})
    assert env.store.cache_get("other", "secret") == "other app's cached secret"


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap does not work here")
def test_writes_inside_land_on_disk_and_writes_outside_land_nowhere(env: Env) -> None:
    # The workdir is under /tmp here (pytest's tmp_path): the sandbox's own
    # /tmp must not hide it, and must swallow writes meant for the host's /tmp.
    marker = f"aios-attack-{uuid.uuid4().hex}"
    code = (
        "import os\n"
        "open('inside.txt', 'w').write('kept')\n"
        f"open('/tmp/{marker}', 'w').write('scratch')\n"
        f"print(sorted(os.listdir('/tmp')), os.path.exists('{env.tmp}/config.json'))\n"
    )
    before = outside(env)
    r = invoke("shell_exec", {"cmd": ["python3", "-c", code]}, make_ctx(env.workdir, env.store))
    assert r.status == "ok", r.result
    assert (env.workdir / "inside.txt").read_text() == "kept"
    assert not Path("/tmp", marker).exists()
    assert r.result["stdout"].endswith("False\n")  # the neighbour's config.json is absent
    assert outside(env) == before


def fallback_ctx(env: Env) -> ToolContext:
    return make_ctx(env.workdir, env.store, sandbox=SandboxConfig(os_sandbox="off"))


def test_fallback_cannot_see_inside_interpreter_code(env: Env) -> None:
    """Documents the limit of the argv rules: a path computed in code gets through.

    This is why bubblewrap is used wherever it works, and why the system
    warns at startup when it does not.
    """
    code = "import os; print(open(os.path.join('..', '..', '..', 'config.json')).read())"
    r = invoke("shell_exec", {"cmd": ["python3", "-c", code]}, fallback_ctx(env))
    assert r.status == "ok"
    assert SECRET in r.result["stdout"]


def _find(marker: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if any(marker in part for part in (p.info["cmdline"] or [])):
            found.append(p)
    return found


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


GRANDCHILD = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)  # {marker}']"
    "{extra})\n"
    "print('spawned', flush=True)\n"
    "time.sleep(60)\n"
)


def _modes_for_setsid() -> list[Any]:
    fallback_ok = CAPS.pids_cgroup is not None
    return [
        pytest.param(
            "bwrap", "", id="bwrap", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bubblewrap")
        ),
        pytest.param("fallback", "", id="fallback"),
        pytest.param(
            "bwrap",
            ", start_new_session=True",
            id="setsid-bwrap",
            marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bubblewrap"),
        ),
        pytest.param(
            "fallback",
            ", start_new_session=True",
            id="setsid-fallback",
            marks=pytest.mark.skipif(
                not fallback_ok,
                reason="only a pids cgroup catches a setsid grandchild without bubblewrap",
            ),
        ),
    ]


@pytest.mark.parametrize(("mode", "extra"), _modes_for_setsid())
def test_timeout_kills_grandchildren(env: Env, mode: str, extra: str) -> None:
    marker = f"grandchild-{uuid.uuid4().hex}"
    ctx = make_ctx(
        env.workdir,
        env.store,
        sandbox=SandboxConfig(os_sandbox="off" if mode == "fallback" else "auto"),
    )
    box: list[ToolResult] = []
    code = GRANDCHILD.format(marker=marker, extra=extra)
    t = threading.Thread(
        target=lambda: box.append(
            invoke("shell_exec", {"cmd": ["python3", "-c", code], "timeout": 2}, ctx)
        )
    )
    t.start()
    seen: list[int] = []
    while t.is_alive() and not seen:
        seen = [p.pid for p in _find(marker)]
        time.sleep(0.02)
    t.join()
    r = box[0]
    assert r.error == "timed out after 2s; process group killed"
    assert r.result["stdout"] == "spawned\n"
    assert seen, "the grandchild never started"
    assert not any(_alive(pid) for pid in seen)
    assert not _find(marker)


FORK_BOMB = (
    "import os, time  # {marker}\n"
    "for _ in range(200):\n"
    "    try:\n"
    "        os.fork()\n"
    "    except OSError as e:\n"
    "        print('fork refused:', e.strerror, flush=True)\n"
    "        break\n"
    "time.sleep(60)\n"
)


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("bwrap", marks=pytest.mark.skipif(not HAS_BWRAP, reason="no bubblewrap")),
        pytest.param(
            "fallback",
            marks=pytest.mark.skipif(
                CAPS.process_limit(in_bwrap=False) == "none", reason="no process limit here"
            ),
        ),
    ],
)
def test_fork_bomb_hits_the_process_limit_and_leaves_no_survivors(env: Env, mode: str) -> None:
    if CAPS.process_limit(in_bwrap=mode == "bwrap") == "none":
        pytest.skip("no process-count limit works here")
    marker = f"forkbomb-{uuid.uuid4().hex}"
    ctx = make_ctx(
        env.workdir,
        env.store,
        sandbox=SandboxConfig(os_sandbox="off" if mode == "fallback" else "auto", max_processes=16),
    )
    r = invoke(
        "shell_exec", {"cmd": ["python3", "-c", FORK_BOMB.format(marker=marker)], "timeout": 2}, ctx
    )
    assert r.error == "timed out after 2s; process group killed"
    assert "fork refused: Resource temporarily unavailable" in r.result["stdout"]
    if CAPS.pids_cgroup is not None:
        assert r.meta is not None and r.meta["process_limit_hit"] is True
    assert not _find(marker), "fork bomb survivors"
