"""The launch token survives a restart of the same data dir, so an open page keeps working;
``--new-token`` replaces it; the file holding it is private (mode 0600)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import requests

from tests.integration.conftest import SYSTEM_APPS
from tests.util import desktop_argv

ROOT = Path(__file__).resolve().parent.parent.parent
STOP_TIMEOUT = 30


def run_once(tmp_path: Path, *extra: str) -> tuple[str, str]:
    """Start desktop_app.py headless, return (base url, token) from its ready line, stop it."""
    env = {k: v for k, v in os.environ.items() if k != "AIOS_TOKEN"}
    proc = subprocess.Popen(
        desktop_argv(tmp_path / "apps", tmp_path / "data", *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("AIOS ready: "), line
        url = line.split(" ", 2)[2]
        base, token = url.split("/?token=")
        # the token opens the desktop; a wrong one is refused with a JSON error
        assert (
            requests.get(
                f"{base}/api/health", timeout=10, headers={"Authorization": f"Bearer {token}"}
            ).status_code
            == 200
        )
        wrong = requests.get(
            f"{base}/api/health", timeout=10, headers={"Authorization": "Bearer not-the-token"}
        )
        assert wrong.status_code == 401 and "token" in wrong.json()["error"]
        return base, token
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=STOP_TIMEOUT)  # also closes the pipe


def test_token_is_stable_across_restarts_and_new_token_replaces_it(tmp_path: Path) -> None:
    shutil.copytree(SYSTEM_APPS / "echo", tmp_path / "apps" / "echo")
    _, first = run_once(tmp_path)
    token_file = tmp_path / "data" / "token"
    assert token_file.read_text().strip() == first
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    _, again = run_once(tmp_path)
    assert again == first
    _, fresh = run_once(tmp_path, "--new-token")
    assert fresh != first
    assert token_file.read_text().strip() == fresh
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    # a damaged token file is replaced, not trusted
    token_file.write_text("not a token!\n")
    _, repaired = run_once(tmp_path)
    assert repaired not in (fresh, "not a token!")
    assert token_file.read_text().strip() == repaired


def test_aios_token_from_the_environment_is_not_written_down(tmp_path: Path) -> None:
    shutil.copytree(SYSTEM_APPS / "echo", tmp_path / "apps" / "echo")
    proc = subprocess.Popen(
        desktop_argv(tmp_path / "apps", tmp_path / "data"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "AIOS_TOKEN": "env-token-1234567890"},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip().endswith("/?token=env-token-1234567890")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=STOP_TIMEOUT)  # also closes the pipe
    assert not (tmp_path / "data" / "token").exists()
