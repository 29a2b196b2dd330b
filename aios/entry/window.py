"""The desktop window: pywebview when a GUI backend and a display exist,
otherwise one line saying why, and the system browser if there is one.

Backends: GTK + WebKit2GTK on Linux (``scripts/install`` installs them),
EdgeChromium (WebView2) on Windows, Cocoa/WKWebView on macOS.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
import webbrowser
from typing import Literal

from aios.config import Config

log = logging.getLogger(__name__)

SELFTEST_TIMEOUT = 30.0
NOTIFY_TIMEOUT = 5.0
"""Seconds ``notify-send`` may take to hand the notification to the desktop."""


NO_DISPLAY = "no display (DISPLAY/WAYLAND_DISPLAY unset)"

INSTALL_HINTS: dict[str, str] = {
    "display": "start it from a desktop session, or run `triton-aios --headless` and open "
    "the URL below in a browser",
    "pywebview": "install the window's Python packages: pip install 'triton-aios[desktop]' "
    "(scripts/install does it)",
    "linux": "install the GTK WebKit backend: sudo apt-get install gir1.2-webkit2-4.1 "
    "gir1.2-gtk-3.0 libgirepository1.0-dev libcairo2-dev, then pip install "
    "'triton-aios[desktop]' (scripts/install does both)",
    "win32": "install Microsoft Edge WebView2 (https://developer.microsoft.com/microsoft-edge/"
    "webview2/) and pip install 'triton-aios[desktop]'",
    "darwin": "pip install 'triton-aios[desktop]' (pyobjc); macOS has WKWebView built in",
}
"""What to install, by cause: no display, no pywebview, or no GUI backend on this platform."""


def gui_problem() -> str | None:
    """Why no window can be opened here, or None."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return NO_DISPLAY
    try:
        import webview  # noqa: F401
    except ImportError as e:
        return f"pywebview is not installed ({e})"
    return None


def no_window_hint(problem: str) -> str:
    """One line for a start without a window: why, and what to install or do."""
    if problem == NO_DISPLAY:
        cause = "display"
    elif problem.startswith("pywebview is not installed"):
        cause = "pywebview"
    else:
        cause = "linux" if sys.platform.startswith("linux") else sys.platform
    hint = INSTALL_HINTS.get(cause, INSTALL_HINTS["pywebview"])
    return f"no desktop window: {problem}. To get the window: {hint}"


def tell_user(message: str) -> None:
    """Say ``message`` where a user who double-clicked the icon (no terminal) sees it.

    Dialog-free: a desktop notification through ``notify-send`` when a display and the
    tool exist (the terminal gets the same line on stdout either way).
    """
    if not shutil.which("notify-send") or gui_problem() == NO_DISPLAY:
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["notify-send", "--app-name=Triton AIOS", "Triton AIOS", message],
            capture_output=True,
            timeout=NOTIFY_TIMEOUT,
            check=False,
        )


def open_window(url: str, config: Config, stop: threading.Event, *, selftest: bool = False) -> bool:
    """Block until the window is closed or ``stop`` is set; False if no window could open.

    ``selftest``: open the window, wait for the page, print its title as read
    through ``evaluate_js``, and close it (a check that the GUI stack works here).
    """
    problem = gui_problem()
    if problem is None:
        try:
            _run_webview(url, config, stop, selftest)
            return True
        except Exception as e:  # noqa: BLE001 - any backend failure falls back to the browser
            problem = f"pywebview could not start a GUI backend: {e}"
    hint = no_window_hint(problem)
    print(f"AIOS: {hint}; serving at {url}", flush=True)
    tell_user(f"{hint}. The desktop opens in your browser meanwhile.")
    if selftest:
        return False
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        log.info("no system browser found; open the URL above yourself")
    stop.wait()
    return False


WEBVIEW_STORAGE = "webview"
"""Folder of the data dir where the desktop window keeps its web storage."""


def _run_webview(url: str, config: Config, stop: threading.Event, selftest: bool) -> None:
    import webview

    window = webview.create_window(
        "Triton AIOS",
        url,
        width=config.desktop.width,
        height=config.desktop.height,
        min_size=(800, 560),
    )
    if window is None:  # pywebview gives None only to a call after start(), off the main thread
        raise RuntimeError("pywebview did not create the desktop window")

    def after_start() -> None:
        if not selftest:
            return
        loaded = window.events.loaded.wait(SELFTEST_TIMEOUT)
        title = window.evaluate_js("document.title") if loaded else None
        backend = getattr(getattr(webview, "guilib", None), "__name__", "?")
        print(f"AIOS window: loaded={bool(loaded)} title={title!r} backend={backend}", flush=True)
        window.destroy()

    def watch_stop() -> None:
        stop.wait()
        try:
            window.destroy()
        except Exception:  # noqa: BLE001 - already closed
            pass

    threading.Thread(target=watch_stop, daemon=True).start()
    gui: Literal["gtk"] | None = "gtk" if sys.platform.startswith("linux") else None
    from aios.web import WINDOW_UA_MARK

    agent = (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        f"{WINDOW_UA_MARK}1"
    )
    # Not private: the page keeps its session (and so its conversation and window
    # layout, DESIGN §13) in localStorage, which must outlive the window.
    storage = config.data_path / WEBVIEW_STORAGE
    storage.mkdir(parents=True, exist_ok=True, mode=0o700)
    webview.start(
        after_start, gui=gui, user_agent=agent, private_mode=False, storage_path=str(storage)
    )
    stop.set()
