"""The desktop window: pywebview when a GUI backend and a display exist,
otherwise one line saying why, and the system browser if there is one.

Backends: GTK + WebKit2GTK on Linux (``scripts/install`` installs them),
EdgeChromium (WebView2) on Windows, Cocoa/WKWebView on macOS.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import webbrowser
from typing import Literal

from aios.config import Config

log = logging.getLogger(__name__)

SELFTEST_TIMEOUT = 30.0


def gui_problem() -> str | None:
    """Why no window can be opened here, or None."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return "no display (DISPLAY/WAYLAND_DISPLAY unset)"
    try:
        import webview  # noqa: F401
    except ImportError as e:
        return f"pywebview is not installed ({e})"
    return None


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
    print(f"AIOS: no desktop window: {problem}; serving at {url}", flush=True)
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
