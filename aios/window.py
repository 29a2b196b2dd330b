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

from aios.config import Config

log = logging.getLogger(__name__)


def gui_problem() -> str | None:
    """Why no window can be opened here, or None."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        return "no display (DISPLAY/WAYLAND_DISPLAY unset)"
    try:
        import webview  # noqa: F401
    except ImportError as e:
        return f"pywebview is not installed ({e})"
    return None


def open_window(url: str, config: Config, stop: threading.Event) -> None:
    """Block until the window is closed or ``stop`` is set."""
    problem = gui_problem()
    if problem is None:
        try:
            _run_webview(url, config, stop)
            return
        except Exception as e:  # noqa: BLE001 - any backend failure falls back to the browser
            problem = f"pywebview could not start a GUI backend: {e}"
    print(f"AIOS: no desktop window: {problem}; serving at {url}", flush=True)
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        log.info("no system browser found; open the URL above yourself")
    stop.wait()


def _run_webview(url: str, config: Config, stop: threading.Event) -> None:
    import webview

    window = webview.create_window("Triton AIOS", url, width=config.desktop.width,
                                   height=config.desktop.height, min_size=(800, 560))

    def watch_stop() -> None:
        stop.wait()
        try:
            window.destroy()
        except Exception:  # noqa: BLE001 - already closed
            pass

    threading.Thread(target=watch_stop, daemon=True).start()
    gui = "gtk" if sys.platform.startswith("linux") else None
    webview.start(gui=gui)
    stop.set()
