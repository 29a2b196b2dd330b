"""``desktop_app.py --headless`` as a user runs it: flags, the ready line, the
token, a clean shutdown on SIGTERM, health only "ready" once every app has
settled, and one clear line (exit code 2, no traceback) for every start-up
failure: a bad config, a port out of range, a missing, unreadable or
misplaced apps or data folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import requests

from tests.integration.conftest import SYSTEM_APPS
from tests.util import desktop_argv

ROOT = Path(__file__).resolve().parent.parent.parent


def start(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        desktop_argv(tmp_path / "apps", tmp_path / "data", *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def test_headless_start_ready_line_token_and_clean_shutdown(tmp_path: Path) -> None:
    shutil.copytree(SYSTEM_APPS / "echo", tmp_path / "apps" / "echo")
    proc = start(tmp_path, env={"AIOS_TOKEN": "fixed-token-123"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("AIOS ready: http://127.0.0.1:"), line
        url = line.split(" ", 2)[2]
        assert url.endswith("/?token=fixed-token-123")
        base = url.split("/?")[0]
        s = requests.Session()
        assert s.get(url, timeout=10).status_code == 200
        s.headers["Authorization"] = "Bearer fixed-token-123"  # the page sends it so too
        health = s.get(base + "/api/health", timeout=10).json()
        # apps start on demand: echo, never used here, waits for its first use
        assert health["status"] == "ready" and health["apps"] == {"echo": "idle"}
        assert not psutil.Process(proc.pid).children(recursive=True)
        reply = s.post(base + "/api/apps/echo/open", json={}, timeout=10).json()
        assert reply["response"]["status"] == "ok"
        health = s.get(base + "/api/health", timeout=10).json()
        assert health["apps"] == {"echo": "running"}
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "the echo app runs as a child process"
        port_map = json.loads((tmp_path / "data" / "port_map.json").read_text())
        assert set(port_map) == {"echo"}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)  # also closes the pipes
    assert proc.returncode == 0
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert not alive, f"left behind: {alive}"


def test_invalid_config_stops_startup_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"max_rounds": "many"}))
    (tmp_path / "apps").mkdir()
    proc = start(tmp_path, "--config", str(bad))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "config key 'max_rounds'" in lines[0]
    assert "AIOS ready" not in out


# ------------------------------------------------------------ startup failures


def _fail_to_start(
    tmp_path: Path,
    *args: str,
    wrapper: list[str] | None = None,
    apps_dir: Path | None = None,
    data_dir: Path | None = None,
) -> str:
    """Run a start that must fail; its single stderr line."""
    apps_dir = apps_dir or tmp_path / "apps"
    data_dir = data_dir or tmp_path / "data"
    proc = subprocess.run(
        [*(wrapper or []), *desktop_argv(apps_dir, data_dir, *args, port=None)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "AIOS ready" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_port_outside_0_to_65535_is_refused(tmp_path: Path, port: str) -> None:
    (tmp_path / "apps").mkdir()
    line = _fail_to_start(tmp_path, "--port", port)
    assert line == (f"aios: --port {port} is not a port number: use 0 (any free port) to 65535")


def test_a_missing_apps_dir_is_refused_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-apps"
    line = _fail_to_start(tmp_path, apps_dir=missing)
    assert line == f"aios: the apps folder {missing} does not exist; create it or pass --apps-dir"
    assert not missing.exists()


def test_an_apps_dir_or_data_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    afile = tmp_path / "a-file"
    afile.write_text("not a folder")
    assert (
        _fail_to_start(tmp_path, apps_dir=afile)
        == f"aios: the apps folder {afile} is a file, not a folder"
    )
    assert (
        _fail_to_start(tmp_path, data_dir=afile)
        == f"aios: the data folder {afile} is a file, not a folder"
    )


def test_a_data_dir_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    (tmp_path / "a-file").write_text("")
    inside_a_file = tmp_path / "a-file" / "data"
    line = _fail_to_start(tmp_path, data_dir=inside_a_file)
    assert line.startswith(f"aios: the data folder {inside_a_file} cannot be created: ")


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_read_only_data_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "apps").mkdir()
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o555)
    # As root, permissions bind only without CAP_DAC_OVERRIDE: drop it for the run.
    wrapper = (
        ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    )
    try:
        line = _fail_to_start(tmp_path, wrapper=wrapper)
    finally:
        data.chmod(0o755)
    assert line == f"aios: the data folder {data} is not writable: Permission denied"


# ------------------------------------------------------------------ readiness


def test_health_says_ready_only_once_every_app_has_settled(tmp_path: Path) -> None:
    """Polled from the first moment the server answers: never "ready" before discovery
    (``apps={}``) nor while an app is still starting."""
    apps = tmp_path / "apps"
    for name in ("echo", "slow"):
        shutil.copytree(SYSTEM_APPS / name, apps / name)
    port = _free_port()
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"apps": {"autostart": "all"}}), encoding="utf-8")
    proc = start(
        tmp_path, "--port", str(port), "--config", str(config), env={"AIOS_TOKEN": "tok"}
    )  # the last --port wins
    seen: list[dict[str, object]] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                r = requests.get(
                    f"http://127.0.0.1:{port}/api/health",
                    timeout=5,
                    headers={"Authorization": "Bearer tok"},
                )
            except requests.ConnectionError:
                continue
            if r.status_code != 200:
                continue  # 503 while the system is being built
            seen.append(r.json())
            if seen[-1]["status"] == "ready":
                break
        assert seen and seen[-1]["status"] == "ready", seen[-3:]
        for h in seen:
            if h["status"] == "ready":
                assert h["apps"] == {"echo": "running", "slow": "running"}, h
            else:
                assert h["apps"] != {"echo": "running", "slow": "running"}, h
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
