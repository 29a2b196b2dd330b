"""Recovery after a crash (DESIGN §12 "Recovery"): nothing re-runs silently.

A real ``desktop_app.py --headless`` process with the planner fixture app
(``tests/fixtures/apps_runs/planner``: its action ``plan`` runs the steps it
is given) in ``approvals.mode`` "smart", so a ``shell_exec`` step waits for
the user. The desktop is killed with SIGKILL — no shutdown code runs, so the
store still says ``waiting`` / ``running`` — and started again on the same
data dir: the run comes back ``interrupted``, its card is withdrawn, and the
command does not run (again).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from tests.util import desktop_argv, wait_for

PLANNER = Path(__file__).resolve().parent.parent / "fixtures" / "apps_runs" / "planner"
APP = "planner"
READY_TIMEOUT = 60.0
"""Seconds the desktop may take to print its ready line and have its app running."""
STOP_TIMEOUT = 30.0
WAIT = 20.0
"""Seconds a run or a command may take to reach the state a test waits for."""
HTTP_TIMEOUT = 20.0


class Desktop:
    """``desktop_app.py --headless`` on one apps dir and one data dir, restartable."""

    def __init__(self, tmp_path: Path) -> None:
        self.apps = tmp_path / "apps"
        self.data = tmp_path / "data"
        shutil.copytree(PLANNER, self.apps / APP, ignore=shutil.ignore_patterns("__pycache__"))
        self.workdir = self.apps / APP / "workspace"
        self.config = tmp_path / "config.json"
        self.config.write_text(
            json.dumps({"llm": {"api_key": ""}, "approvals": {"mode": "smart"}}),
            encoding="utf-8",
        )
        self.proc: subprocess.Popen[str] | None = None
        self.base = ""
        self.http = requests.Session()
        self.http.trust_env = False

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "AIOS_TOKEN"}
        self.proc = subprocess.Popen(
            desktop_argv(self.apps, self.data, "--config", str(self.config)),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line.startswith("AIOS ready: "), line
        url = line.split(" ", 2)[2]
        self.base, _, query = url.partition("/?")
        self.http.headers["Authorization"] = f"Bearer {query.removeprefix('token=')}"
        wait_for(
            lambda: self.get("/api/health").json().get("status") == "ready",
            what="the desktop's health to say ready",
            timeout=READY_TIMEOUT,
        )

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.communicate(timeout=STOP_TIMEOUT)  # reaps it and closes its stdout

    def get(self, path: str) -> requests.Response:
        return self.http.get(self.base + path, timeout=HTTP_TIMEOUT)

    def post(self, path: str, body: Any = None) -> requests.Response:
        return self.http.post(self.base + path, json=body, timeout=HTTP_TIMEOUT)

    def plan(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.post("/api/action", {"app": APP, "action_id": "plan", "params": {"steps": steps}})
        assert r.status_code == 200, r.text
        reply: dict[str, Any] = r.json()
        return reply

    def run(self, run_id: str) -> dict[str, Any]:
        r = self.get(f"/api/runs/{run_id}")
        assert r.status_code == 200, r.text
        row: dict[str, Any] = r.json()
        return row

    def close(self) -> None:
        self.http.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.communicate(timeout=STOP_TIMEOUT)


@pytest.fixture
def desktop(tmp_path: Path) -> Iterator[Desktop]:
    d = Desktop(tmp_path)
    try:
        yield d
    finally:
        d.close()


def python_step(step_id: str, code: str) -> dict[str, Any]:
    return {"step_id": step_id, "tool": "shell_exec", "args": {"cmd": ["python3", "-c", code]}}


def commands_running(code: str) -> list[psutil.Process]:
    """Host processes whose command line carries ``code`` (the command, or its bwrap)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if code in " ".join(p.info["cmdline"] or []):
                found.append(p)
        except psutil.Error:
            continue
    return found


def test_a_run_waiting_at_a_kill_9_is_interrupted_and_its_command_never_runs(
    desktop: Desktop,
) -> None:
    desktop.start()
    marker = desktop.workdir / "made.txt"
    reply = desktop.plan([python_step("mk", "open('made.txt', 'w').write('x')")])
    assert reply["state"] == "waiting", reply
    run_id, (card,) = reply["run_id"], reply["pending"]
    assert desktop.run(run_id)["state"] == "waiting"  # positive control: stored as waiting

    desktop.kill9()
    desktop.start()

    row = desktop.run(run_id)
    assert row["state"] == "interrupted", row
    assert [s["status"] for s in row["steps"]] == ["pending"], row["steps"]
    assert desktop.get("/api/interactions?pending=1").json() == []
    r = desktop.post(f"/api/interactions/{card['id']}", {"decision": "allow"})
    assert r.status_code == 409, r.text
    assert r.json()["current"]["state"] == "withdrawn"
    assert not marker.exists()
    assert desktop.run(run_id)["state"] == "interrupted"  # the late answer changed nothing


def test_a_step_allowed_just_before_a_kill_9_is_not_run_again_at_start(
    desktop: Desktop,
) -> None:
    desktop.start()
    ran = desktop.workdir / "ran.log"
    # Says it started, then runs long enough to be in flight when the desktop dies.
    code = "open('ran.log', 'a').write('ran\\n'); import time; time.sleep(30)"
    after = desktop.workdir / "after.txt"
    steps = [
        python_step("long", code),
        {"step_id": "next", "tool": "file_write", "args": {"path": "after.txt", "content": "x"}},
    ]
    reply = desktop.plan(steps)
    run_id, (card,) = reply["run_id"], reply["pending"]
    r = desktop.post(f"/api/interactions/{card['id']}", {"decision": "allow"})
    assert r.status_code == 200 and r.json()["state"] == "answered", r.text
    wait_for(ran.exists, what="the allowed command to start", timeout=WAIT)
    assert desktop.run(run_id)["state"] == "running"
    in_flight = commands_running(code)
    assert in_flight, "the command is running when the desktop is killed"

    desktop.kill9()
    try:
        gone, alive = psutil.wait_procs(in_flight, timeout=WAIT)
        assert not alive, f"the command outlived the killed desktop: {alive}"
    finally:
        for p in in_flight:  # started by this test; none may leak into the next one
            try:
                p.kill()
            except psutil.Error:
                pass
    calls_before = (desktop.workdir / "calls.log").read_text(encoding="utf-8").splitlines()
    desktop.start()

    row = desktop.run(run_id)
    assert row["state"] == "interrupted", row
    statuses = {s["step_id"]: s["status"] for s in row["steps"]}
    assert statuses["step_long"] not in ("ok", "error"), row["steps"]  # it never finished
    assert statuses["step_next"] == "pending", row["steps"]
    assert row.get("stopped_at") == "step_long", row
    assert row["steps"][0].get("decision") == "allow", row["steps"]  # the answer was kept
    assert desktop.get("/api/interactions?pending=1").json() == []
    assert desktop.get("/api/runs?active=1").json() == []
    # The same answer again is the first result, and it does not start anything.
    again = desktop.post(f"/api/interactions/{card['id']}", {"decision": "allow"})
    assert again.status_code == 200 and again.json()["state"] == "answered", again.text
    # A plan after the restart runs to its end: by then a silent re-run would have shown.
    probe = desktop.plan([{"step_id": "r", "tool": "file_list", "args": {"path": "."}}])
    assert probe["response"]["data"]["codes"] == {"step_r": None}, probe
    assert ran.read_text(encoding="utf-8").splitlines() == ["ran"]
    assert not after.exists()
    assert not commands_running(code)
    calls = (desktop.workdir / "calls.log").read_text(encoding="utf-8").splitlines()
    assert calls == [*calls_before, "plan", "results"], calls  # only the probe called the app
    assert desktop.run(run_id)["state"] == "interrupted"
