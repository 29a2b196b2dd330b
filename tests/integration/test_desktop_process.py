"""``desktop_app.py --headless`` as a user runs it: flags, the ready line, the
token, a clean shutdown on SIGTERM, and one clear line for a bad config."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import requests

from tests.integration.conftest import SYSTEM_APPS

ROOT = Path(__file__).resolve().parent.parent.parent


def start(tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "desktop_app.py"), "--headless", "--port", "0",
         "--apps-dir", str(tmp_path / "apps"), "--data-dir", str(tmp_path / "data"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})})


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
        assert s.get(url, timeout=10).status_code == 200  # sets the cookie
        health = s.get(base + "/api/health", timeout=10).json()
        assert health["status"] == "ready" and health["apps"] == {"echo": "running"}
        reply = s.post(base + "/api/apps/echo/open", json={}, timeout=10).json()
        assert reply["response"]["status"] == "ok"
        children = psutil.Process(proc.pid).children(recursive=True)
        assert children, "the echo app runs as a child process"
        port_map = json.loads((tmp_path / "data" / "port_map.json").read_text())
        assert set(port_map) == {"echo"}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
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
