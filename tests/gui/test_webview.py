"""The real desktop window, started as a double-click starts it: the desktop entry
``scripts/install`` writes (``aios.entry.xdg``) is valid for
``desktop-file-validate``, and its ``Exec`` command under Xvfb opens pywebview (GTK +
WebKit2GTK) on the desktop page, whose title is read back through ``evaluate_js``;
closing the window shuts the whole system down."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aios.entry import window, xdg as desktop_entry
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


def _selftest_args(tmp_path: Path) -> list[str]:
    """Open the window once on the echo app copied into ``tmp_path`` (the selftest)."""
    shutil.copytree(SYSTEM_APPS / "echo", tmp_path / "apps" / "echo")
    config = tmp_path / "config.json"  # echo runs from the start (not on demand)
    config.write_text(json.dumps({"apps": {"autostart": "all"}}), encoding="utf-8")
    return [
        "--selftest",
        "--config",
        str(config),
        "--port",
        "0",
        "--apps-dir",
        str(tmp_path / "apps"),
        "--data-dir",
        str(tmp_path / "data"),
    ]


def _exec_of(entry: Path) -> list[str]:
    """The entry's ``Exec`` command as a launcher runs it (field codes dropped)."""
    line = next(x for x in entry.read_text().splitlines() if x.startswith("Exec="))
    return [a for a in shlex.split(line.removeprefix("Exec=")) if not a.startswith("%")]


def _installed_entry(home: Path) -> Path:
    (home / "Desktop").mkdir(parents=True)
    places = desktop_entry.Places.for_user({"HOME": str(home)})
    written = desktop_entry.install(places, desktop_entry.launcher_command())
    menu = places.applications / "triton-aios.desktop"
    assert menu in written and places.desktop is not None
    on_desktop = places.desktop / "triton-aios.desktop"
    assert on_desktop in written and on_desktop.stat().st_mode & 0o111, "not launchable"
    assert (places.icons / "triton-aios.svg").read_bytes().startswith(b"<svg")
    for entry in (menu, on_desktop):
        check = subprocess.run(
            ["desktop-file-validate", str(entry)], capture_output=True, text=True
        )
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout
    text = menu.read_text()
    assert "Terminal=false" in text and "Icon=triton-aios" in text
    return menu


@pytest.mark.skipif(
    shutil.which("desktop-file-validate") is None,
    reason="needs desktop-file-validate: run scripts/install --test",
)
def test_the_desktop_entry_opens_the_window_and_closing_it_stops_the_system(
    tmp_path: Path,
) -> None:
    command = _exec_of(_installed_entry(tmp_path / "home"))
    assert Path(command[0]).is_file(), f"Exec names no program: {command}"
    proc = subprocess.run(
        [
            "xvfb-run",
            "-a",
            "-s",
            "-screen 0 1280x800x24",
            *command,
            *_selftest_args(tmp_path),
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


def test_without_a_display_the_start_says_what_to_do(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "desktop_app.py"), *_selftest_args(tmp_path)],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert proc.returncode == 1
    assert f"AIOS: {window.no_window_hint(window.NO_DISPLAY)}; serving at http://127.0.0.1:" in (
        proc.stdout
    )
    assert "triton-aios --headless" in proc.stdout


def test_a_missing_gui_backend_names_the_packages_to_install() -> None:
    hint = window.no_window_hint("pywebview could not start a GUI backend: no module gi")
    if sys.platform.startswith("linux"):
        assert "apt-get install gir1.2-webkit2-4.1" in hint
    assert "scripts/install" in hint
