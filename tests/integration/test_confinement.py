"""An app is untrusted code (DESIGN §11, issue 10): a hostile app, run by the real system,
cannot act around the executor.

Real parts: the real launcher starts the fixture app ``hostile``
(tests/fixtures/apps_hostile) beside two victims copied from ``apps/`` —
``notes`` (a workspace and a token) and ``system_agent`` (holds
``desktop.control``) — under real bubblewrap; a recording HTTP server runs on
another 127.0.0.1 port. The hostile app runs every attack of the issue's first
list from its own process and reports each; where only the host can tell (a
write that may land in a throwaway tmpfs, a port bound in a private network)
the test looks from the host. Positive controls beside them must succeed: its
own workspace, a tool through the system, a push with its own token, the
recording server through ``http_request``.

The unconfined baseline (``apps.confinement: off``) shows the test can fail:
there the hostile app reads the system's ``/proc/<pid>/environ``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from aios.events import Subscription
from aios.host import os_sandbox
from tests.fakes.http_server import FakeHTTPServer
from tests.integration.conftest import FINAL_VIEW_WAIT, Running, start_system
from tests.util import ROOT, wait_for

if os_sandbox.detect().bwrap is None:
    pytest.skip(
        f"bubblewrap cannot run here ({os_sandbox.detect().bwrap_problem}): "
        "app confinement is unavailable",
        allow_module_level=True,
    )

HOSTILE = ROOT / "tests" / "fixtures" / "apps_hostile" / "hostile"
VICTIMS = ("notes", "system_agent")
BANNER = b"hostile-listener\n"
"""What a port bound by the hostile app sends first (its ``BANNER``)."""
PROBE_TIMEOUT = 2.0
"""Seconds one host-side probe of a port may take."""
HANDLE_TIMEOUT = 30
"""Seconds the attack action may take (every attack runs in one ``/handle`` call)."""
GONE_WITHIN = 5.0
"""Seconds every process of a removed app may take to disappear (the issue's bound)."""
BEAT_TIMEOUT = 20.0
APP_START_TIMEOUT = 30.0
"""Seconds the apps may take to be running (a loaded 2-core machine starts three)."""
HOST_CHECKED = ("write_other_app_workdir", "write_project_source")
"""Attacks that write outside: judged by whether the file exists on the host."""
BINDS = {
    "bind_desktop_port_v6": (socket.AF_INET6, "::1"),
    "bind_desktop_port_v4": (socket.AF_INET, "127.0.0.1"),
}
"""Attacks that bind the desktop port: judged by whether the host then reaches the app."""
NAMESPACES = ("pid", "mnt", "net", "user")
CONTROLS = ("control_own_workdir", "control_tool", "control_push", "control_http_request")


# ------------------------------------------------------------------ host side


def environ_of(pid: int) -> dict[str, str]:
    """A host process's environment (root reads every ``/proc/<pid>/environ``)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (v.split(b"=", 1) for v in raw.split(b"\0") if b"=" in v)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def processes_of(running: Running, app_id: str) -> list[psutil.Process]:
    """An app's processes on the host: those carrying ``AIOS_APP_ID=<id>``, and the
    launcher's process for it (bubblewrap when confined) with its descendants."""
    found: dict[int, psutil.Process] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and environ_of(int(entry.name)).get("AIOS_APP_ID") == app_id:
            try:
                found[int(entry.name)] = psutil.Process(int(entry.name))
            except psutil.Error:
                continue
    record = running.system.launcher.get(app_id)
    if record is not None and record.pid:
        try:
            top = psutil.Process(record.pid)
            for p in (top, *top.children(recursive=True)):
                found[p.pid] = p
        except psutil.Error:
            pass
    return list(found.values())


def survivors(procs: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for p in procs:
        try:  # is_running() compares the start time too: a reused pid is not "p"
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            continue
    return alive


def kill_all(procs: list[psutil.Process]) -> None:
    for p in survivors(procs):
        try:
            p.kill()
        except psutil.Error:
            pass


def stolen_token(running: Running, app_id: str) -> str:
    """The victim's ``AIOS_APP_TOKEN`` as root reads it from the host's ``/proc``
    (the launcher's record where no process shows it)."""
    for p in processes_of(running, app_id):
        token = environ_of(p.pid).get("AIOS_APP_TOKEN")
        if token:
            return token
    record = running.system.launcher.get(app_id)
    assert record is not None and record.token
    return record.token


def listener_answers(family: socket.AddressFamily, host: str, port: int) -> bool:
    """Whether a connection from the host to ``host:port`` reaches the hostile app's
    listener (it sends its banner first; the system would answer HTTP)."""
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(PROBE_TIMEOUT)
            s.connect((host, port))
            s.sendall(b"GET /api/health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            return s.recv(len(BANNER)).startswith(BANNER)
    except OSError:
        return False


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ------------------------------------------------------------------ the system


@pytest.fixture
def recorder() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as srv:
        yield srv


def apps_dir(base: Path, victims: tuple[str, ...]) -> Path:
    apps = base / "apps"
    apps.mkdir(parents=True)
    shutil.copytree(HOSTILE, apps / "hostile", ignore=shutil.ignore_patterns("__pycache__"))
    for name in victims:
        shutil.copytree(
            ROOT / "apps" / name,
            apps / name,
            ignore=shutil.ignore_patterns("__pycache__", "*.db", "*.db-*"),
        )
    return apps


Start = Callable[..., Running]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """``start(victims=VICTIMS, **config)``: a real system on a temp apps dir holding the
    hostile app and ``victims``; stopped at the end. (``make_system`` takes ``apps`` for
    the list of app names, so the ``apps`` config section is passed here instead.)"""
    started: list[Running] = []

    def make(victims: tuple[str, ...] = VICTIMS, **overrides: Any) -> Running:
        running = start_system(
            apps_dir(tmp_path / f"run{len(started)}", victims),
            tmp_path / f"run{len(started)}" / "data",
            handle_timeout=HANDLE_TIMEOUT,
            **overrides,
        )
        started.append(running)
        settings = running.data_dir / "settings.json"  # where the LLM key lives
        if not settings.exists():
            settings.write_text(json.dumps({"llm": {"api_key": "sk-not-for-apps"}}), "utf-8")
            settings.chmod(0o600)
        return running

    yield make
    for running in started:
        running.stop()


def targets(running: Running, recorder: FakeHTTPServer, marker: str) -> dict[str, Any]:
    notes = running.system.launcher.get("notes")
    assert notes is not None and notes.workdir is not None
    return {
        "system_pid": os.getpid(),  # the system runs in the test process
        "data_dir": str(running.data_dir),
        "config_path": str(ROOT / "config.json"),
        "project_root": str(ROOT),
        "victim_dir": str(notes.path),
        "victim_workdir": str(notes.workdir),
        "victim_pids": [p.pid for p in processes_of(running, "notes")],
        "victim_port": notes.port,
        "victim_token": stolen_token(running, "notes"),
        "ui_token": stolen_token(running, "system_agent")
        if running.system.launcher.get("system_agent")
        else "",
        "desktop_port": running.server.port,
        "recorder_port": recorder.port,
        "marker": marker,
    }


def attack(running: Running, params: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The hostile app's report. Its own work through the system (the positive controls)
    reads a file before its request, so the request waits on a card whatever the mode
    (DESIGN §14.5, taint): the user allows each such card, and the report is the final view."""
    sub = running.system.bus.subscribe()
    try:
        reply = running.act("hostile", {"action_id": "attack", "params": params})
        if reply.get("state") == "waiting":
            reply = allow_until_done(running, sub, reply)
    finally:
        sub.close()
    assert reply["status"] == "ok", reply
    report: dict[str, dict[str, Any]] = json.loads(reply["data"]["content"])
    return report


def allow_until_done(running: Running, sub: Subscription, reply: dict[str, Any]) -> dict[str, Any]:
    """Allow every card of ``reply``'s run as it comes, and return the run's final view."""
    run_id = reply["run_id"]
    cards = [p["id"] for p in reply["pending"]]
    deadline = time.monotonic() + FINAL_VIEW_WAIT
    while time.monotonic() < deadline:
        for ia in cards:
            r = running.post(f"/api/interactions/{ia}", {"decision": "allow"})
            assert r.status_code == 200, r.text
        cards = []
        ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
        if not ev or ev.get("run_id") != run_id:
            continue
        if ev.get("type") == "interaction" and ev.get("kind") == "approval":
            cards.append(ev["id"])
        elif ev.get("type") == "view":
            view: dict[str, Any] = ev["response"]
            return view
    raise AssertionError(f"no final view for {run_id} within {FINAL_VIEW_WAIT}s")


def apps_by_id(running: Running) -> dict[str, dict[str, Any]]:
    r = running.get("/api/apps")
    assert r.status_code == 200, r.text
    body = r.json()
    entries = body["apps"] if isinstance(body, dict) else body
    return {a["id"]: a for a in entries}


def running_apps(running: Running, ids: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``GET /api/apps`` by id, once every app of ``ids`` is running (fails naming the
    statuses otherwise)."""
    seen: dict[str, dict[str, Any]] = {}

    def all_running() -> bool:
        seen.update(apps_by_id(running))
        return all(seen.get(i, {}).get("status") == "running" for i in ids)

    try:
        wait_for(all_running, f"{', '.join(ids)} to be running", APP_START_TIMEOUT)
    except AssertionError as e:
        statuses = {i: (seen.get(i, {}).get("status"), seen.get(i, {}).get("error")) for i in ids}
        raise AssertionError(f"{e}: {statuses}") from None
    return seen


# ------------------------------------------------------------------ tests


def test_every_attack_of_the_hostile_app_fails_and_its_own_work_still_does(
    start: Start, recorder: FakeHTTPServer
) -> None:
    running = start()
    apps = running_apps(running, ("hostile", *VICTIMS))
    assert {k: apps[k]["confined"] for k in ("hostile", *VICTIMS)} == dict.fromkeys(
        ("hostile", *VICTIMS), True
    )
    # Seen from the host, the app's Python runs in namespaces of its own.
    own = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in NAMESPACES}
    pythons = [p for p in processes_of(running, "hostile") if "python" in p.name()]
    assert pythons, processes_of(running, "hostile")
    for p in pythons:
        for ns in NAMESPACES:
            assert os.readlink(f"/proc/{p.pid}/ns/{ns}") != own[ns], (p, ns)
    notes = running.system.launcher.get("notes")
    assert notes is not None and notes.workdir is not None
    victim_before = listing(notes.workdir)
    marker = f"hostile-{uuid.uuid4().hex}.txt"
    outside = [notes.workdir / marker, ROOT / "aios" / marker]
    try:
        report = attack(running, targets(running, recorder, marker))
        verdicts = {name: bool(r["succeeded"]) for name, r in report.items()}
        # Only the host can tell whether a write left the sandbox or a bind took a host port.
        for name, path in zip(HOST_CHECKED, outside, strict=True):
            verdicts[name] = path.exists()
        for name, (family, host) in BINDS.items():
            verdicts[name] = listener_answers(family, host, running.server.port)
        succeeded = {
            n: report[n]["detail"] for n, ok in verdicts.items() if ok and n not in CONTROLS
        }
        assert not succeeded, f"attacks that succeeded: {json.dumps(succeeded, indent=1)}"
        failed_controls = {n: report[n]["detail"] for n in CONTROLS if not verdicts.get(n)}
        assert not failed_controls, f"positive controls that failed: {failed_controls}"
    finally:
        for path in outside:
            path.unlink(missing_ok=True)
    # Nothing was written outside: the victim's workspace is as it was, nothing in aios/.
    assert listing(notes.workdir) == victim_before
    assert not [p.name for p in (ROOT / "aios").iterdir() if p.name.startswith("hostile-")]
    # The outside world saw the http_request, and never a direct connection.
    paths = recorder.paths()
    assert "/echo" in paths, paths
    assert "/direct" not in paths, paths
    # The hostile app's own writes are in its own workspace.
    hostile = running.system.launcher.get("hostile")
    assert hostile is not None and hostile.workdir is not None
    assert (hostile.workdir / "own.txt").read_text("utf-8") == "mine"
    assert (hostile.workdir / "via-tool.txt").read_text("utf-8") == "through the executor"


def test_only_a_granted_network_permission_opens_the_direct_network(
    start: Start, recorder: FakeHTTPServer
) -> None:
    """The manifest requests ``network``; until the user grants it, the app has no network;
    once granted (the system restarts the app into its own namespace with pasta, §14.5)
    the recording server on the host's loopback is still out of reach."""
    running = start(())
    before = running_apps(running, ("hostile",))["hostile"]
    assert before["permissions"] == {"requested": ["network"], "granted": []}, before
    only = {"recorder_port": recorder.port, "only": ["connect_outside"]}
    assert not attack(running, only)["connect_outside"]["succeeded"]
    assert "/direct" not in recorder.paths()
    first = running.system.launcher.get("hostile")
    assert first is not None
    old_token = first.token
    r = running.post("/api/apps/hostile/permissions", {"grant": ["network"]})
    assert r.status_code == 200, r.text
    assert r.json()["permissions"]["granted"] == ["network"]

    def relaunched() -> bool:
        rec = running.system.launcher.get("hostile")
        return rec is not None and rec.token != old_token and rec.status == "running"

    wait_for(relaunched, "the app to run again with the network grant", APP_START_TIMEOUT)
    report = attack(running, only)
    assert not report["connect_outside"]["succeeded"], report["connect_outside"]
    assert report["control_http_request"]["succeeded"]  # the executor's way out still works
    assert "/direct" not in recorder.paths()
    log = (running.data_dir / "logs" / "hostile.log").read_text("utf-8")
    assert "confined with its own network (pasta)" in log
    # Nor can it stand in for the desktop: a port it binds is its namespace's own.
    binds = {
        "desktop_port": running.server.port,
        "hold_seconds": HANDLE_TIMEOUT,
        "only": list(BINDS),
    }
    attack(running, binds)
    for name, (family, host) in BINDS.items():
        assert not listener_answers(family, host, running.server.port), name


def test_unconfined_the_same_app_reads_the_systems_environment(
    start: Start, recorder: FakeHTTPServer
) -> None:
    """The baseline the issue describes: the test can fail."""
    running = start(("notes",), apps={"confinement": "off"})
    apps = running_apps(running, ("hostile", "notes"))
    assert apps["hostile"]["confined"] is False
    reads = ["proc_environ_system", "proc_environ_tokens", "proc_mem_system", "read_database"]
    params = {**targets(running, recorder, "unused"), "only": reads}
    report = attack(running, params)
    assert report["proc_environ_system"]["succeeded"], report["proc_environ_system"]
    assert report["control_own_workdir"]["succeeded"], report["control_own_workdir"]
    assert report["control_http_request"]["succeeded"], report["control_http_request"]


def test_nothing_the_app_started_survives_its_folder_being_removed(
    start: Start,
) -> None:
    running = start(())
    running_apps(running, ("hostile",))
    hostile = running.system.launcher.get("hostile")
    assert hostile is not None and hostile.workdir is not None
    beat = hostile.workdir / "daemon.beat"
    reply = running.act("hostile", {"action_id": "daemon"})
    assert json.loads(reply["data"]["content"])["daemon"]["succeeded"], reply

    def beats() -> int:
        text = beat.read_text() if beat.is_file() else ""
        m = re.fullmatch(r"\d+ (\d+)", text.strip())
        return int(m.group(1)) if m else 0

    first = wait_for(beats, "the daemon's first heartbeat", BEAT_TIMEOUT)
    wait_for(lambda: beats() > first, "the daemon's next heartbeat", BEAT_TIMEOUT)
    owned = processes_of(running, "hostile")
    # positive control: the host view finds the app and its daemon (at least two processes)
    assert len(survivors(owned)) >= 2, owned
    try:
        shutil.rmtree(hostile.path)
        wait_for(
            lambda: not survivors(owned),
            f"every process of the removed app to be gone ({survivors(owned)})",
            GONE_WITHIN,
        )
    finally:
        kill_all(owned)
