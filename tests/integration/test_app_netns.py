"""An app granted ``network`` gets the internet, never the host (DESIGN §14.5, issue 20 item 5).

The issue's attack: an app granted ``network`` shared the host's network, so
with the stolen launch token it called the desktop's API on
``127.0.0.1:<port>`` (read the conversation, set ``approvals.mode`` to
``auto``). Now it has its own network namespace with pasta (user-mode NAT).

Real parts: the real system (in this process) with the fixture app
``hostile_net`` (tests/fixtures/apps_hostile) under real bubblewrap and real
pasta, beside ``notes`` (a victim with a Unix socket and a port). The test
starts bait servers on the host — TCP on every IPv4 address (``0.0.0.0``),
on ``[::]``, and an abstract Unix socket — each sending a banner first; the
app reports each attempt, and the baits count the connections they accepted.
No outside host is a target: only the host's own addresses and the
namespace's gateway.

The unconfined baseline shows the test can fail: there the same attacks work.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from aios.host import nat, os_sandbox
from tests.integration.conftest import TOKEN, Running, start_system
from tests.integration.test_orphans import (
    CONFINED,
    Desktop,
    app_procs,
    assert_gone_within,
    descends_from,
    write_app,
)
from tests.util import ROOT, wait_for

if os_sandbox.detect().bwrap is None:
    pytest.skip(
        f"bubblewrap cannot run here ({os_sandbox.detect().bwrap_problem})",
        allow_module_level=True,
    )

APP = "hostile_net"
FIXTURE = ROOT / "tests" / "fixtures" / "apps_hostile" / APP
VICTIM = "notes"
BAIT = b"host-bait\n"
HANDLE_TIMEOUT = 60
START_TIMEOUT = 40.0
GONE_WITHIN = 5.0
CONTROLS = ("control_network_stack", "control_own_loopback", "control_tool")
ISSUE_ATTACKS = ("desktop_read_conversation_v4", "desktop_set_auto_v4", "host_loopback_v4")

needs_pasta = pytest.mark.skipif(
    nat.pasta_path() is None, reason="pasta is not installed (Debian: apt-get install passt)"
)


# ------------------------------------------------------------------ host side


class Baits:
    """Servers on the host that send :data:`BAIT` to whoever connects, and count them."""

    def __init__(self) -> None:
        self.accepted: list[str] = []
        self.abstract_name = f"aios-netns-bait-{uuid.uuid4().hex}"
        v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        v4.bind(("0.0.0.0", 0))  # every IPv4 address of the host, loopback included
        v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        v6.bind(("::", 0))
        ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ab.bind("\0" + self.abstract_name)  # abstract: belongs to the network namespace
        self.v4_port, self.v6_port = v4.getsockname()[1], v6.getsockname()[1]
        self._socks = [v4, v6, ab]
        for s in self._socks:
            s.listen(16)
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s: socket.socket) -> None:
        while True:
            try:
                conn, peer = s.accept()
            except OSError:
                return
            self.accepted.append(str(peer))
            with conn:
                try:
                    conn.sendall(BAIT)
                except OSError:
                    pass

    def close(self) -> None:
        for s in self._socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


@pytest.fixture
def baits() -> Iterator[Baits]:
    b = Baits()
    yield b
    b.close()


def host_addresses() -> list[str]:
    """The host's own addresses other than loopback (and link-local, which need a scope)."""
    found = []
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            ip = a.address.split("%")[0]
            if ip.startswith(("127.", "fe80")) or ip == "::1":
                continue
            found.append(ip)
    return found


def start(tmp_path: Path, grant: bool, **overrides: Any) -> Running:
    apps = tmp_path / "apps"
    apps.mkdir(parents=True)
    shutil.copytree(FIXTURE, apps / APP, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(
        ROOT / "apps" / VICTIM,
        apps / VICTIM,
        ignore=shutil.ignore_patterns("__pycache__", "*.db", "*.db-*"),
    )
    return start_system(
        apps,
        tmp_path / "data",
        handle_timeout=HANDLE_TIMEOUT,
        approvals={"mode": "smart"},
        apps={"default_grants": {APP: ["network"] if grant else []}, **overrides},
    )


@pytest.fixture
def systems() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for running in started:
        running.stop()


def statuses(running: Running) -> dict[str, dict[str, Any]]:
    body = running.get("/api/apps").json()
    entries = body["apps"] if isinstance(body, dict) else body
    return {a["id"]: a for a in entries}


def settled(running: Running, *ids: str) -> dict[str, dict[str, Any]]:
    def done() -> dict[str, dict[str, Any]] | None:
        apps = statuses(running)
        ok = all(apps.get(i, {}).get("status") in ("running", "failed") for i in ids)
        return apps if ok else None

    found = wait_for(done, f"{', '.join(ids)} to be running or failed", START_TIMEOUT)
    assert found is not None
    return found


def targets(running: Running, baits: Baits) -> dict[str, Any]:
    victim = running.system.launcher.get(VICTIM)
    assert victim is not None and victim.port is not None
    return {
        "desktop_port": running.server.port,
        "launch_token": TOKEN,  # stolen: the issue's chain read it from the system's environ
        "bait_v4": baits.v4_port,
        "bait_v6": baits.v6_port,
        "abstract_name": baits.abstract_name,
        "victim_socket": running.system.launcher.socket_for("127.0.0.1", victim.port) or "",
        "victim_port": victim.port,
        "host_addresses": host_addresses(),
    }


def attack(running: Running, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    reply = running.act(APP, {"action_id": "attack", "params": params})
    assert reply["status"] == "ok", reply
    report: dict[str, dict[str, Any]] = json.loads(reply["data"]["content"])
    return report


def app_pythons(running: Running) -> list[psutil.Process]:
    record = running.system.launcher.get(APP)
    assert record is not None and record.pid
    top = psutil.Process(record.pid)
    return [p for p in (top, *top.children(recursive=True)) if "python" in p.name()]


def nat_helpers(netns: str) -> list[psutil.Process]:
    """Live pasta processes holding the network namespace ``netns`` (``net:[inode]``)."""
    found = []
    for p in psutil.process_iter(["name"]):
        if not (p.info["name"] or "").startswith(("pasta", "passt")):
            continue
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            fds = os.listdir(f"/proc/{p.pid}/fd")
            links = {os.readlink(f"/proc/{p.pid}/fd/{fd}") for fd in fds}
        except (OSError, psutil.Error):
            continue
        if netns in links:
            found.append(p)
    return found


def approvals_mode(running: Running) -> str:
    return str(running.get("/api/config").json()["config"]["approvals"]["mode"])


# ------------------------------------------------------------------ tests


@needs_pasta
def test_a_network_app_reaches_nothing_of_the_host_and_has_a_network(
    tmp_path: Path, baits: Baits, systems: list[Running]
) -> None:
    running = start(tmp_path, grant=True)
    systems.append(running)
    apps = settled(running, APP, VICTIM)
    assert apps[APP]["status"] == "running", apps[APP]
    assert apps[APP]["confined"] is True
    assert apps[APP]["permissions"]["granted"] == ["network"]
    # its own network namespace, with a pasta of its own on it
    host_net = os.readlink("/proc/self/ns/net")
    nets = {os.readlink(f"/proc/{p.pid}/ns/net") for p in app_pythons(running)}
    assert len(nets) == 1 and host_net not in nets, nets
    (netns,) = nets
    assert len(nat_helpers(netns)) == 1
    report = attack(running, targets(running, baits))
    # the attacker tried every target it was given (not a silent skip)
    assert set(ISSUE_ATTACKS) <= set(report) and "gateway_bait" in report, sorted(report)
    assert [a for a in host_addresses() if f"host_address_{a}" not in report] == []
    succeeded = {n: r["detail"] for n, r in report.items() if r["succeeded"] and n not in CONTROLS}
    assert not succeeded, f"attacks that succeeded: {json.dumps(succeeded, indent=1)}"
    failed = {n: report[n]["detail"] for n in CONTROLS if not report[n]["succeeded"]}
    assert not failed, f"positive controls that failed: {failed}"
    # what the user would notice: nothing changed, no connection reached the host
    assert approvals_mode(running) == "smart"
    assert baits.accepted == []
    # the app still serves its views to the system through the relay (it answered above)
    assert (running.system.launcher.get(APP).workdir / "net.txt").is_file()  # type: ignore[union-attr]


def test_unconfined_the_same_attacks_reach_the_desktop(
    tmp_path: Path, baits: Baits, systems: list[Running]
) -> None:
    """The baseline the issue describes (the host's network): the test can fail."""
    running = start(tmp_path, grant=True, confinement="off")
    systems.append(running)
    assert settled(running, APP, VICTIM)[APP]["confined"] is False
    report = attack(running, targets(running, baits))
    for name in (*ISSUE_ATTACKS, "host_abstract_socket"):
        assert report[name]["succeeded"], (name, report[name])
    assert approvals_mode(running) == "auto"
    assert baits.accepted


def test_without_the_grant_the_app_has_no_network_at_all(
    tmp_path: Path, baits: Baits, systems: list[Running]
) -> None:
    running = start(tmp_path, grant=False)
    systems.append(running)
    apps = settled(running, APP, VICTIM)
    assert apps[APP]["status"] == "running" and apps[APP]["permissions"]["granted"] == []
    report = attack(running, targets(running, baits))
    assert not report["control_network_stack"]["succeeded"], report["control_network_stack"]
    assert report["control_own_loopback"]["succeeded"] and report["control_tool"]["succeeded"]
    succeeded = [n for n, r in report.items() if r["succeeded"] and n not in CONTROLS]
    assert succeeded == [], report
    assert baits.accepted == []
    (netns,) = {os.readlink(f"/proc/{p.pid}/ns/net") for p in app_pythons(running)}
    assert nat_helpers(netns) == []


@pytest.mark.parametrize("pasta", ["missing", "broken"])
def test_without_a_working_nat_a_network_app_does_not_start(
    tmp_path: Path, systems: list[Running], monkeypatch: pytest.MonkeyPatch, pasta: str
) -> None:
    """Never a silent fallback to the host's network: the app is ``failed``, saying why.

    ``missing`` points the detection at no program (a machine without passt);
    ``broken`` at ``/bin/false``, a real program that exits at once like a pasta
    that cannot run."""
    monkeypatch.setattr(nat, "pasta_path", lambda: None if pasta == "missing" else "/bin/false")
    running = start(tmp_path, grant=True)
    systems.append(running)
    apps = settled(running, APP, VICTIM)
    assert apps[VICTIM]["status"] == "running"  # the others start as usual
    assert apps[APP]["status"] == "failed", apps[APP]
    error = apps[APP]["error"]
    if pasta == "missing":
        assert "pasta" in error and "passt" in error and "host's network" in error, error
    else:
        assert "pasta could not give the app its network" in error, error
    record = running.system.launcher.get(APP)
    assert record is not None and not record.pid
    folder = str(running.apps_dir / APP)
    assert not [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if folder in " ".join(p.info["cmdline"] or [])
    ]


@needs_pasta
def test_the_nat_helper_ends_with_its_app(
    tmp_path: Path, baits: Baits, systems: list[Running]
) -> None:
    running = start(tmp_path, grant=True)
    systems.append(running)
    assert settled(running, APP, VICTIM)[APP]["status"] == "running"
    record = running.system.launcher.get(APP)
    assert record is not None
    first_pid = record.pid
    (netns,) = {os.readlink(f"/proc/{p.pid}/ns/net") for p in app_pythons(running)}
    (helper,) = nat_helpers(netns)
    # a crash: the app's python dies; its pasta goes, the restarted app has a new one
    for p in app_pythons(running):
        p.kill()
    wait_for(lambda: not helper.is_running(), "the crashed app's pasta to end", GONE_WITHIN)

    def restarted() -> str | None:
        rec = running.system.launcher.get(APP)
        if rec is None or rec.pid in (None, first_pid) or rec.status != "running":
            return None
        nets = {os.readlink(f"/proc/{p.pid}/ns/net") for p in app_pythons(running)}
        return next(iter(nets)) if len(nets) == 1 else None

    second = wait_for(restarted, "the app to run again", START_TIMEOUT)
    assert second is not None
    # the kernel may give the new namespace the freed one's number: the pasta tells them apart
    crashed_helper = helper
    (helper,) = nat_helpers(second)
    assert helper != crashed_helper and not crashed_helper.is_running()
    report = attack(running, targets(running, baits))
    assert report["control_network_stack"]["succeeded"], report["control_network_stack"]
    # removed: its folder goes, so do the app and its pasta
    shutil.rmtree(running.apps_dir / APP)
    wait_for(lambda: not helper.is_running(), "the removed app's pasta to end", GONE_WITHIN)


@needs_pasta
@pytest.mark.parametrize("event", ["kill-9", "sigterm"])
def test_the_nat_helper_does_not_outlive_the_system(tmp_path: Path, event: str) -> None:
    """``desktop_app.py`` as its own process, killed: the app and its pasta go with it."""
    desktop = Desktop(tmp_path, CONFINED)
    config = json.loads(desktop.config.read_text())
    config["apps"]["default_grants"] = {"alpha": ["network"]}
    desktop.config.write_text(json.dumps(config))
    alpha = write_app(desktop.apps, "alpha", "child")
    manifest = json.loads((alpha / "manifest.json").read_text())
    (alpha / "manifest.json").write_text(json.dumps({**manifest, "permissions": ["network"]}))
    try:
        system = desktop.start()
        a = app_procs(alpha, CONFINED)
        netns = os.readlink(f"/proc/{a.main.pid}/ns/net")
        assert netns != os.readlink("/proc/self/ns/net")
        helpers = wait_for(lambda: nat_helpers(netns), "the app's pasta", START_TIMEOUT)
        assert len(helpers) == 1 and descends_from(helpers[0], system.pid)
        if event == "kill-9":
            system.kill()
            system.wait()
        else:
            system.send_signal(signal.SIGTERM)
            system.communicate(timeout=START_TIMEOUT)
        assert_gone_within(a.all + a.spawned + helpers)
    finally:
        desktop.close()
