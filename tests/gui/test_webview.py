"""The real desktop window: pywebview (GTK + WebKit2GTK) under Xvfb opens the
desktop page, the title is read back through ``evaluate_js``, and closing the
window shuts the whole system down."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import SYSTEM_APPS

ROOT = Path(__file__).resolve().parent.parent.parent


def _gtk_webkit() -> bool:
    if importlib.util.find_spec("gi") is None:
        return False
    probe = (
        "import gi; gi.require_version('Gtk', '3.0'); gi.require_version('WebKit2', '4.1');"
        "from gi.repository import Gtk, WebKit2"
    )
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.gui,
    pytest.mark.skipif(
        shutil.which("xvfb-run") is None or not _gtk_webkit(),
        reason="needs xvfb-run, PyGObject and WebKit2GTK: run scripts/install --test",
    ),
]


def test_window_opens_the_desktop_and_closing_it_stops_the_system(tmp_path: Path) -> None:
    shutil.copytree(SYSTEM_APPS / "echo", tmp_path / "apps" / "echo")
    proc = subprocess.run(
        [
            "xvfb-run",
            "-a",
            "-s",
            "-screen 0 1280x800x24",
            sys.executable,
            str(ROOT / "desktop_app.py"),
            "--selftest",
            "--port",
            "0",
            "--apps-dir",
            str(tmp_path / "apps"),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "AIOS ready: http://127.0.0.1:" in out
    assert "AIOS window: loaded=True title='Triton AIOS' backend=webview.platforms.gtk" in out
    # the window closed, the system stopped: its app log says the app was stopped
    log = (tmp_path / "data" / "logs" / "echo.log").read_text()
    assert "terminated" in log or "killed" in log
