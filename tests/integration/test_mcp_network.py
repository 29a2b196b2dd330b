"""A stdio MCP server has the network only when granted, never the host's (DESIGN §17, §14.5).

Real parts: one desktop with two copies of the toy server (``tests/mcp_servers/toy.py``,
the official SDK) under real bubblewrap: ``closed`` (no grant) and ``open``
(``network: true``: its own namespace with real pasta, started through
:mod:`aios.mcp.netwrap`). Its tool ``dial`` opens a TCP connection. The target is
a bait on the host listening on every IPv4 address (``0.0.0.0``), sending a banner
first; it counts what it accepted. Its tool ``route`` says whether the namespace has a way
out (a default route from a non-loopback address). The test never changes the host's
network: an address added to the host's ``lo`` made the browsers of e2e tests running
beside it fail with ERR_NETWORK_CHANGED.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from aios.host import nat, os_sandbox
from tests.conftest import children_now, fail_on_leaked_children
from tests.integration.conftest import FIXTURES, Running, copy_apps, start_system
from tests.integration.test_app_netns import host_addresses
from tests.util import wait_for

if os_sandbox.detect().bwrap is None:
    pytest.skip(
        f"bubblewrap cannot run here ({os_sandbox.detect().bwrap_problem})",
        allow_module_level=True,
    )
if nat.pasta_path() is None:
    pytest.skip("pasta is not installed (Debian: apt-get install passt)", allow_module_level=True)

APP = "courier"
TOY = Path(__file__).resolve().parent.parent / "mcp_servers" / "toy.py"
BAIT = b"host-bait\n"
WAIT = 30.0
GONE_WITHIN = 5.0


class Bait:
    """A TCP server on every IPv4 address of the host that sends :data:`BAIT` first."""

    def __init__(self) -> None:
        self.accepted: list[str] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.accepted.append(peer[0])
            with conn:
                conn.sendall(BAIT)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


@pytest.fixture(scope="module")
def bait() -> Iterator[Bait]:
    b = Bait()
    yield b
    b.close()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    base = tmp_path_factory.mktemp("mcpnet")
    apps = copy_apps(base / "apps", [APP], source=FIXTURES / "apps_data")
    toy = [sys.executable, str(TOY)]
    servers = {
        "closed": {"command": toy, "apps": [APP]},
        "open": {"command": toy, "apps": [APP], "network": True},
    }
    mcp = {
        "servers": servers,
        "ping_interval": 1,  # a killed server is noticed at the next ping
        "ping_timeout": 2,
        "start_timeout": 20,
        "backoff_initial": 0.2,
        "backoff_max": 1,
    }
    before = children_now()
    r = start_system(apps, base / "data", approvals={"mode": "smart"}, mcp=mcp)
    try:
        for name in servers:
            ready(r, name)
        yield r
    finally:
        r.stop()
        fail_on_leaked_children(before)  # every server, wrapper and pasta is gone


@pytest.fixture(autouse=True)
def no_leaked_children(running: Running) -> Iterator[None]:
    """The desktop restarts its MCP servers during the tests: those are checked when it
    stops (``fail_on_leaked_children`` in ``running``); anything else at each test."""
    before = children_now()
    yield
    fail_on_leaked_children(before, ignore=_mcp_server)


def _mcp_server(p: psutil.Process) -> bool:
    try:
        line = " ".join(p.cmdline())
    except psutil.Error:
        return True
    named = p.name().startswith(("bwrap", "pasta", "passt"))
    return named or str(TOY) in line or "aios.mcp.netwrap" in line or "pasta" in line


def status(r: Running, name: str) -> dict[str, Any]:
    return next(s for s in r.system.mcp.status() if s["name"] == name)


def ready(r: Running, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: (s := status(r, name))["status"] == "ready" and s,
        f"MCP server {name} ready",
        timeout=WAIT,
    )


def dial(r: Running, server: str, targets: list[tuple[str, int]]) -> list[str]:
    """What ``server``'s ``dial`` got for each target (one plan, one step each)."""
    return call(r, server, "dial", [{"host": h, "port": p} for h, p in targets])


def call(r: Running, server: str, tool: str, each: list[dict[str, Any]] | None = None) -> list[str]:
    """``server``'s ``tool`` called once per arguments in ``each`` (one plan, one step
    each): the results."""
    each = each if each is not None else [{}]
    steps = [
        {"step_id": f"d{i}", "tool": f"mcp.{server}.{tool}", "args": args}
        for i, args in enumerate(each)
    ]
    reply = r.post("/api/action", {"app": APP, "action_id": "plan", "params": {"steps": steps}})
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body.get("state") != "waiting", f"a card was shown: {body}"
    got = body["response"]["data"]["results"]
    return [str(got[f"step_d{i}"]["result"]["result"]) for i in range(len(each))]


def wrapper_of(server: str) -> psutil.Process:
    """The live :mod:`aios.mcp.netwrap` process of ``server``."""

    def find() -> psutil.Process | None:
        for p in psutil.Process().children(recursive=True):
            try:
                line = p.cmdline()
            except psutil.Error:
                continue
            if "aios.mcp.netwrap" in line and any(a.endswith(f"/{server}.net") for a in line):
                return p
        return None

    found = wait_for(find, f"the network wrapper of {server}", WAIT)
    assert found is not None
    return found


def pastas_of(wrapper: psutil.Process) -> list[psutil.Process]:
    return [p for p in wrapper.children() if p.name().startswith(("pasta", "passt"))]


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    found = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.Error:
            continue
    return found


def test_without_the_grant_a_server_reaches_nothing(running: Running, bait: Bait) -> None:
    before = len(bait.accepted)
    addresses = [*host_addresses(), "127.0.0.1"]
    got = dial(running, "closed", [(a, bait.port) for a in addresses])
    assert all(g.startswith("cannot connect") for g in got), got
    assert bait.accepted[before:] == []
    # no namespace of its own with a network: no pasta
    assert wrapper_is_absent(running)


def wrapper_is_absent(running: Running) -> bool:
    for p in psutil.Process().children(recursive=True):
        try:
            if "aios.mcp.netwrap" in p.cmdline() and any("closed" in a for a in p.cmdline()):
                return False
        except psutil.Error:
            continue
    return True


def test_with_the_grant_it_has_a_network_but_never_the_hosts_loopback(
    running: Running, bait: Bait
) -> None:
    """The grant gives a way out (an interface with an address and a default route,
    what pasta connects to the host's sockets) and nothing of the host: the host's
    loopback, the desktop's port and the host's own addresses stay out of reach. The
    outside itself is not dialled: that would need a second address on the host, and a
    test that changes the host's network breaks the browsers of tests running beside it."""
    before = len(bait.accepted)
    desktop = running.server.port
    hostile = [("127.0.0.1", bait.port), ("127.0.0.1", desktop), ("::1", desktop)]
    # the host's own addresses: the namespace has the interface's as its own (inside)
    hostile += [(a, bait.port) for a in host_addresses()]
    got = dial(running, "open", hostile)
    reached = [(t, g) for t, g in zip(hostile, got, strict=True) if not g.startswith("cannot")]
    assert reached == []
    assert bait.accepted[before:] == []
    (granted,) = call(running, "open", "route")
    assert granted.startswith("default route via ") and " from 127." not in granted, granted
    (closed,) = call(running, "closed", "route")
    assert closed == "no default route", closed


def test_no_pasta_outlives_the_server_killed_or_disabled(running: Running) -> None:
    wrapper = wrapper_of("open")
    pastas = pastas_of(wrapper)
    assert len(pastas) == 1, pastas
    # killed outright (no chance to clean up): its pasta dies with it, the server restarts
    os.kill(wrapper.pid, signal.SIGKILL)
    wait_for(lambda: not alive(pastas), "the killed wrapper's pasta to end", GONE_WITHIN)
    wait_for(lambda: status(running, "open")["restarts"] >= 1, "the server restarted", WAIT)
    ready(running, "open")
    wrapper = wrapper_of("open")
    pastas = pastas_of(wrapper)
    assert len(pastas) == 1, pastas
    # disabled in Settings → MCP: the SDK stops it; no wrapper, no pasta left
    r = running.http.patch(running.url + "/api/mcp/servers/open", json={"enabled": False})
    assert r.status_code == 200 and r.json()["status"] == "stopped", r.text
    wait_for(lambda: not alive([wrapper, *pastas]), "the wrapper and pasta to end", WAIT)
    r = running.http.patch(running.url + "/api/mcp/servers/open", json={"enabled": True})
    assert r.status_code == 200, r.text
    ready(running, "open")


def test_without_pasta_a_server_granted_network_is_failed_never_the_hosts(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nat, "pasta_path", lambda: None)
    toy = [sys.executable, str(TOY)]
    r = running.post(
        "/api/mcp/servers", {"name": "nopasta", "command": toy, "apps": [APP], "network": True}
    )
    assert r.status_code == 201, r.text
    try:
        failed = wait_for(
            lambda: (s := status(running, "nopasta"))["status"] == "failed" and s,
            "the server without pasta failed",
            WAIT,
        )
        assert "pasta" in failed["error"] and "host's network" in failed["error"], failed
    finally:
        assert running.http.delete(running.url + "/api/mcp/servers/nopasta").ok
