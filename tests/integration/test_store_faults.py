"""The database under faults, through the real system: a full disk (tmpfs),
a damaged file at start, store errors as JSON, tasks per instruction,
history pages, and the background pruner."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.errors import StoreFull
from aios.store import Store
from tests.integration.conftest import SYSTEM_APPS, Running

ROOT = Path(__file__).resolve().parent.parent.parent
TOKEN = "store-faults-token"
DEADLINE = 30.0
TMPFS_SIZE = "2m"


def _until(check: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


class Desktop:
    """``desktop_app.py --headless`` with the echo app, stopped with SIGTERM."""

    def __init__(self, tmp_path: Path, data_dir: Path):
        apps = tmp_path / "apps"
        if not apps.exists():
            shutil.copytree(SYSTEM_APPS / "echo", apps / "echo")
        self.log = tmp_path / f"desktop-{len(list(tmp_path.glob('desktop-*')))}.log"
        self._log = self.log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "desktop_app.py"), "--headless", "--port", "0",
             "--apps-dir", str(apps), "--data-dir", str(data_dir)],
            stdout=subprocess.PIPE, stderr=self._log, text=True,
            env={**os.environ, "AIOS_TOKEN": TOKEN, "AIOS_LLM_API_KEY": "",
                 "DEEPSEEK_API_KEY": ""})
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("AIOS ready: "):
            self.stop()
            pytest.fail(f"no ready line: {line!r}; stderr: {self.stderr}")
        self.base = line.split(" ", 2)[2].split("/?")[0]
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {TOKEN}"

    def get(self, path: str) -> requests.Response:
        return self.http.get(self.base + path, timeout=DEADLINE)

    def post(self, path: str, body: Any) -> requests.Response:
        return self.http.post(self.base + path, json=body, timeout=DEADLINE)

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.communicate(timeout=DEADLINE)
        self._log.close()
        self.stderr = self.log.read_text()
        return self.stderr


# ------------------------------------------------------------------ full disk

@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "data"
    mount.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs",
                               str(mount)], capture_output=True, text=True, timeout=DEADLINE)
    except (OSError, subprocess.TimeoutExpired) as e:
        pytest.skip(f"cannot mount a tmpfs here: {e}")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, timeout=DEADLINE)


def _fill(directory: Path) -> Path:
    filler = directory / "filler"
    with filler.open("wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


def test_a_full_disk_gives_json_errors_health_says_so_and_the_system_recovers(
        tmp_path: Path, small_disk: Path) -> None:
    desk = Desktop(tmp_path, small_disk)
    try:
        assert desk.post("/api/apps/echo/open", {}).status_code == 200
        filler = _fill(small_disk)

        def refused() -> list[requests.Response]:  # a list: a 503 Response is falsy
            r = desk.post("/api/apps/echo/open", {})
            return [r] if r.status_code != 200 else []

        [r] = _until(refused, "a write to fail on the full disk")
        assert r.status_code == 503 and r.headers["Content-Type"] == "application/json"
        assert f"the disk holding {small_disk} is full" in r.json()["error"]
        health = desk.get("/api/health").json()
        assert health["status"] == "degraded" and "is full" in health["store"]

        filler.unlink()
        _until(lambda: desk.get("/api/health").json()["status"] == "ready",
               "health to recover once space returned")
        assert desk.post("/api/apps/echo/open", {}).status_code == 200
    finally:
        err = desk.stop()
    tracebacks = [line for line in err.splitlines() if line.startswith("Traceback")]
    assert not tracebacks, err[-2000:]


# ------------------------------------------------------- damaged file at start

def _damaged_db(data_dir: Path, how: str) -> None:
    s = Store(data_dir / "aios.db")
    for i in range(3000):
        s.add_history("s1", "user", "x" * 200 + str(i))
    s.close()
    path = data_dir / "aios.db"
    with path.open("r+b") as f:
        if how == "bad header":
            f.write(b"this is no db!!!")
        elif how == "truncated":
            f.truncate(path.stat().st_size // 2)
        else:
            f.seek(4096 * 3)
            f.write(os.urandom(4096 * 20))


@pytest.mark.parametrize("how", ["bad header", "truncated", "garbage pages"])
def test_a_damaged_database_at_start_is_moved_aside_in_one_line_and_the_system_works(
        tmp_path: Path, how: str) -> None:
    data = tmp_path / "data"
    _damaged_db(data, how)
    desk = Desktop(tmp_path, data)
    try:
        assert desk.get("/api/health").json()["store"] == "ok"
        r = desk.post("/api/apps/echo/open", {})
        assert r.status_code == 200 and r.json()["response"]["status"] == "ok"
    finally:
        err = desk.stop()
    said = [line for line in err.splitlines() if "is damaged" in line]
    assert len(said) == 1 and "moved it to" in said[0], err[-2000:]
    assert "Traceback" not in err
    assert len(list(data.glob("aios.db.broken-*"))) >= 1


# ------------------------------------------------------------- through the API

def test_store_errors_and_unexpected_errors_are_json(
        make_system: Callable[..., Running], monkeypatch: pytest.MonkeyPatch) -> None:
    running = make_system(["echo"])
    path = running.system.store.location

    def full(*a: Any, **kw: Any) -> None:
        raise StoreFull(f"the disk holding {path} is full: free some space")

    monkeypatch.setattr(running.system.store, "session", full)
    r = running.get("/api/sessions/sess_x")
    assert r.status_code == 503 and r.json() == {
        "error": f"the disk holding {path} is full: free some space"}

    def bug(*a: Any, **kw: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(running.system.store, "session", bug)
    r = running.get("/api/sessions/sess_x")
    assert r.status_code == 500 and r.headers["Content-Type"] == "application/json"
    assert "RuntimeError: a bug" in r.json()["error"]


def test_every_instruction_keeps_its_own_tasks(make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"])
    sid = None
    for n in range(4):
        out = running.instruct(f"echo number {n}", sid)
        sid = out["session_id"]
        assert out["plan"][0]["id"] == "t1"
    mem = running.get(f"/api/sessions/{sid}").json()
    assert [t["instruction"] for t in mem["completed_tasks"]] == \
        [f"echo number {n}" for n in range(4)]
    assert len({t["task_id"] for t in mem["completed_tasks"]}) == 4
    assert all(t["status"] == "done" for t in mem["completed_tasks"])


def test_tasks_left_running_by_a_killed_run_are_interrupted_at_start(
        tmp_path: Path, make_system: Callable[..., Running]) -> None:
    data = tmp_path / "data"
    s = Store(data / "aios.db")
    sid = s.ensure_session()
    s.upsert_task(sid, "r1-t1", app="echo", instruction="long", depends_on=[],
                  status="running")
    s.close()
    running = make_system(["echo"], data_dir=data)
    mem = running.get(f"/api/sessions/{sid}").json()
    assert mem["current_tasks"] == []
    assert [(t["task_id"], t["status"]) for t in mem["completed_tasks"]] == \
        [("r1-t1", "interrupted")]


def test_session_history_is_paginated_and_bad_parameters_are_named(
        make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"], store={"history_page": 3, "history_page_max": 5})
    sid = running.open("echo")["session_id"]
    for _ in range(3):
        running.open("echo", sid)  # 2 entries each: the open and the app's reply
    first = running.get(f"/api/sessions/{sid}").json()
    assert len(first["history"]) == 3 and first["has_more"] is True
    seen = [h["id"] for h in first["history"]]
    before = first["next_before"]
    while before is not None:
        page = running.get(f"/api/sessions/{sid}?before={before}&limit=5").json()
        seen = [h["id"] for h in page["history"]] + seen
        before = page["next_before"]
    assert len(seen) == 8 and seen == sorted(seen)
    for query, name in (("limit=abc", "limit"), ("limit=6", "limit"), ("limit=0", "limit"),
                        ("before=-1", "before"), ("before=x", "before")):
        r = running.get(f"/api/sessions/{sid}?{query}")
        assert r.status_code == 400 and f"'{name}'" in r.json()["error"], (query, r.text)


def test_the_system_runs_the_pruner_in_the_background(
        make_system: Callable[..., Running]) -> None:
    running = make_system(["echo"], retention={"history_rows_per_session": 10,
                                               "prune_interval": 0.1})
    sid = running.open("echo")["session_id"]
    for _ in range(8):
        running.open("echo", sid)
    pruner = running.system.pruner
    seen = pruner.passes
    with pruner.passed:
        assert pruner.passed.wait_for(lambda: pruner.passes >= seen + 1, timeout=DEADLINE)
    mem = running.get(f"/api/sessions/{sid}?limit=100").json()
    assert len(mem["history"]) == 10 and mem["has_more"] is False
