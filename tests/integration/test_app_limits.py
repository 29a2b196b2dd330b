"""Isolation between apps, liveness, memory and log limits (issue 8, items 5 and 6).

Real app processes from ``tests/fixtures/apps_limits``, each misbehaving by
its own code, behind the real HTTP server. Every wait polls a condition
with a deadline; none counts on time passing.
"""

from __future__ import annotations

import functools
import json
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests import util
from tests.integration.conftest import FIXTURES, Running, copy_apps, start_system

LIMITS_APPS = FIXTURES / "apps_limits"
DEADLINE = 30.0
"""Seconds any awaited condition may take on a loaded machine."""
FAST_LIVENESS = {
    "liveness_interval": 0.1,
    "liveness_timeout": 1.0,
    "liveness_failures": 2,
    "restart_limit": 1,
    "backoff_initial": 0.05,
    "backoff_max": 0.1,
}


wait_for = functools.partial(util.wait_for, timeout=DEADLINE)


def app_info(running: Running, app_id: str) -> dict[str, Any]:
    apps = running.get("/api/apps").json()
    return next(a for a in apps if a["id"] == app_id)


def launches(running: Running, app_id: str) -> int:
    path = running.data_dir / "logs" / f"{app_id}.log"
    return path.read_text(encoding="utf-8", errors="replace").count(f"launch {app_id} on port")


@contextmanager
def frozen_process(pid: int) -> Iterator[None]:
    """SIGSTOP ``pid`` and every process under it for the block: the app keeps its socket
    open and answers nothing (confined, ``pid`` is bwrap and the app runs below it)."""
    root = psutil.Process(pid)
    tree = [root, *root.children(recursive=True)]
    for p in tree:
        p.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for p in tree:
            p.send_signal(signal.SIGCONT)


@pytest.fixture
def make_limited(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    """Start a system on copies of ``apps_limits`` apps (``apps=`` is the config section)."""
    started: list[Running] = []

    def make(names: list[str], **overrides: Any) -> Running:
        apps_dir = copy_apps(tmp_path / "apps", names, LIMITS_APPS)
        running = start_system(apps_dir, tmp_path / "data", **overrides)
        started.append(running)
        return running

    yield make
    for running in started:
        running.stop()


# ------------------------------------------------------------------ isolation


def test_calls_to_a_hung_app_never_delay_an_instruction_to_another_app(
    make_limited: Callable[..., Running],
) -> None:
    running = make_limited(["steady", "frozen"], handle_timeout=60, apps={"liveness_interval": 600})
    slots = running.system.controller.slots
    pid = running.system.launcher.get("frozen").pid
    with ThreadPoolExecutor(max_workers=10) as pool:
        with frozen_process(pid):
            hung = [
                pool.submit(running.post, "/api/instruction", {"text": "frozen"}, timeout=90)
                for _ in range(10)
            ]
            # All ten are now with the frozen app (in flight or waiting behind it).
            wait_for(lambda: sum(slots.load("frozen")) == 10, "10 calls on the frozen app")
            r = running.post("/api/instruction", {"text": "steady"}, timeout=DEADLINE)
            assert r.status_code == 200, r.text
            (result,) = r.json()["results"]
            assert result["app"] == "steady" and result["response"]["status"] == "ok"
            assert not any(f.done() for f in hung), "the frozen app answered while stopped"
        replies = [f.result() for f in hung]
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    assert all(r.json()["results"][0]["response"]["status"] == "ok" for r in replies)


def test_a_call_beyond_a_busy_apps_slots_fails_at_once_with_503(
    make_limited: Callable[..., Running],
) -> None:
    running = make_limited(
        ["steady", "frozen"],
        handle_timeout=60,
        apps={"liveness_interval": 600, "max_concurrent_calls": 2, "max_waiting_calls": 0},
    )
    slots = running.system.controller.slots
    pid = running.system.launcher.get("frozen").pid
    action = {"app": "frozen", "action_id": "go"}
    with ThreadPoolExecutor(max_workers=2) as pool:
        with frozen_process(pid):
            pending = [
                pool.submit(running.post, "/api/action", action, timeout=90) for _ in range(2)
            ]
            wait_for(lambda: slots.load("frozen") == (2, 0), "both slots of frozen taken")
            r = running.post("/api/action", action, timeout=DEADLINE)
            assert r.status_code == 503
            assert "app 'frozen' is busy" in r.json()["error"]
            assert running.act("steady", {"action_id": "go"})["status"] == "ok"
            assert not any(f.done() for f in pending)
        assert all(f.result().status_code == 200 for f in pending)


# ------------------------------------------------------------------- liveness


def test_an_app_that_accepts_tcp_but_never_answers_http_is_restarted_then_failed(
    make_limited: Callable[..., Running],
) -> None:
    running = make_limited(["mute", "steady"], apps=FAST_LIVENESS)
    info = wait_for(
        lambda: (a := app_info(running, "mute"))["status"] == "failed" and a,
        "mute to be given up on",
    )
    assert "did not answer GET /health for" in info["error"]
    assert "(2 times in a row)" in info["error"]
    assert launches(running, "mute") == 2  # restarted once under the policy, then failed
    assert app_info(running, "steady")["status"] == "running"


def test_a_raw_flask_app_is_alive_by_its_404_until_its_handle_keeps_timing_out(
    make_limited: Callable[..., Running],
) -> None:
    running = make_limited(
        ["stuck"],
        handle_timeout=0.5,
        apps={**FAST_LIVENESS, "handle_timeouts": 2, "restart_limit": 0},
    )
    log_path = running.data_dir / "logs" / "stuck.log"
    # No /health route: its 404s are answers, so probes alone never restart it.
    wait_for(lambda: log_path.read_text().count("GET /health") >= 3, "three probes")
    assert app_info(running, "stuck")["status"] == "running"
    assert launches(running, "stuck") == 1
    for _ in range(2):
        r = running.post("/api/action", {"app": "stuck", "action_id": "go"})
        assert r.status_code == 504
    info = wait_for(
        lambda: (a := app_info(running, "stuck"))["status"] == "failed" and a, "stuck to be stopped"
    )
    assert info["error"].startswith("it did not answer /handle in time 2 times in a row")


def test_an_app_using_more_memory_than_the_cap_is_stopped_with_the_reason(
    make_limited: Callable[..., Running],
) -> None:
    running = make_limited(["hog", "steady"], apps={**FAST_LIVENESS, "max_memory_mb": 100})
    info = wait_for(
        lambda: (a := app_info(running, "hog"))["status"] == "failed" and a, "hog to be given up on"
    )
    assert info["error"].startswith("it used more than 100 MB of memory")
    assert launches(running, "hog") == 2
    assert "killed: it used more than 100 MB" in (running.data_dir / "logs" / "hog.log").read_text(
        errors="replace"
    )
    assert app_info(running, "steady")["status"] == "running"


# ----------------------------------------------------------------------- logs


def test_a_chatty_apps_log_is_rotated_while_it_runs(make_limited: Callable[..., Running]) -> None:
    cap = 200_000
    running = make_limited(["chatty"], apps={"log_max_bytes": cap})
    rec = running.system.launcher.get("chatty")
    marker = rec.workdir / "printed.txt"
    wait_for(marker.exists, "chatty to finish printing")
    printed = int(wait_for(lambda: marker.read_text(), "the byte count"))
    assert printed > 10 * cap
    log_path = running.data_dir / "logs" / "chatty.log"
    backup = log_path.with_name("chatty.log.1")
    assert log_path.stat().st_size <= cap and backup.stat().st_size <= cap
    assert backup.read_text().count("chatter x") > 100  # the output really went through
    # Rotated while running: the same process, still answering.
    assert psutil.pid_exists(rec.pid) and app_info(running, "chatty")["status"] == "running"
    assert running.act("chatty", {"action_id": "go"})["status"] == "ok"


# ------------------------------------------- per-app limits (DESIGN §11 item 8)

TMP_FILLER = '''
"""Writes to its /tmp until the disk is full, then says how far it got in its workdir."""
import errno, json, os, uuid
from pathlib import Path
from aios_sdk import AIOSAgent

MAX_BYTES = {max_bytes}  # only keeps an uncapped /tmp from filling the host's disk
CHUNK = b"\\0" * 65536
path = Path("/tmp") / f"aios-tmpfill-{{uuid.uuid4().hex}}"
written, failed = 0, None
with path.open("wb", buffering=0) as f:
    try:
        while written < MAX_BYTES:
            written += f.write(CHUNK)
    except OSError as e:
        failed = errno.errorcode.get(e.errno, str(e.errno))
work = Path(os.environ["AIOS_WORKDIR"])
report = {{"path": str(path), "written": written, "errno": failed}}
(work / "filled.tmp").write_text(json.dumps(report))
(work / "filled.tmp").rename(work / "filled.json")


class TmpFill(AIOSAgent):
    name = "TmpFill"

    def handle(self, instruction, context, action_request=None):
        return {{"status": "ok", "view_type": "text", "data": {{"content": "full"}},
                "actions": []}}


if __name__ == "__main__":
    TmpFill().run()
'''
MB = 1024 * 1024


def report(running: Running, app_id: str, name: str) -> dict[str, Any]:
    """The JSON an ``apps_limits`` app wrote into its workdir once it hit its limit."""
    rec = running.system.launcher.get(app_id)
    assert rec is not None, f"{app_id} is not installed"
    path = rec.workdir / name
    text = wait_for(lambda: path.is_file() and path.read_text(), f"{app_id} to write {name}")
    return dict(json.loads(str(text)))


def test_an_app_gets_fewer_tasks_than_the_process_limit_and_its_status_says_so(
    make_limited: Callable[..., Running],
) -> None:
    limit = 16
    running = make_limited(
        ["forker", "steady"], apps={"max_processes": limit, "liveness_interval": 0.2}
    )
    assert app_info(running, "forker")["confined"] is True
    forked = report(running, "forker", "forked.json")
    assert forked["errno"] == "EAGAIN", forked
    assert 0 < forked["children"] < limit, forked  # the app itself and its threads count too
    info = wait_for(
        lambda: (a := app_info(running, "forker")).get("error") and a, "forker's status reason"
    )
    assert isinstance(info, dict)
    assert f"reached its limit of {limit} processes" in info["error"], info
    # Its neighbour is not limited by it, and forker still answers once its children are gone.
    assert running.act("steady", {"action_id": "go"})["status"] == "ok"
    assert running.act("forker", {"action_id": "go"})["status"] == "ok"


def test_an_app_hits_emfile_below_the_open_files_limit(
    make_limited: Callable[..., Running],
) -> None:
    limit = 64
    running = make_limited(["fdhog"], apps={"max_open_files": limit})
    opened = report(running, "fdhog", "opened.json")
    assert opened["errno"] == "EMFILE", opened
    assert 0 < opened["opened"] < limit, opened  # stdio and the SDK's own files count too
    assert running.act("fdhog", {"action_id": "go"})["status"] == "ok"


def test_an_apps_private_tmp_is_capped_and_the_hosts_tmp_untouched(
    make_limited: Callable[..., Running], tmp_path: Path
) -> None:
    cap_mb = 8
    folder = tmp_path / "apps" / "tmpfill"
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(TMP_FILLER.format(max_bytes=16 * cap_mb * MB), "utf-8")
    (folder / "manifest.json").write_text(
        json.dumps(
            {
                "name": "TmpFill",
                "entry": "main.py",
                "description": "fills its /tmp",
                "role_prompt": "test app",
            }
        )
    )
    running = make_limited([], apps={"tmp_mb": cap_mb})
    filled = report(running, "tmpfill", "filled.json")
    host_file = Path(filled["path"])
    try:
        assert filled["errno"] == "ENOSPC", filled
        assert cap_mb * MB // 2 <= filled["written"] <= cap_mb * MB, filled
        assert not host_file.exists(), "the app's /tmp file is on the host's /tmp"
    finally:
        host_file.unlink(missing_ok=True)
