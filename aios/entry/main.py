"""Triton AIOS: start the system and open the desktop window.

    triton-aios                 # window (pywebview), or the browser without a GUI
    triton-aios --headless      # serve only; open the printed URL yourself
    triton-aios mcp             # the running desktop's MCP tools on stdio (AIOS_MCP_TOKEN)

``python3 desktop_app.py`` in a checkout runs the same ``main``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from aios.config import PROJECT_ROOT, load_config
from aios.errors import AIOSError
from aios.names import ENV_LOG_LEVEL, ENV_TOKEN

log = logging.getLogger("aios")

MAX_PORT = 65535
MAIN_WAIT_SLICE = 0.5
"""Seconds the main thread waits at a time, so that a Python signal handler always gets to run."""
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Triton AIOS desktop")
    p.add_argument("--headless", action="store_true", help="serve the desktop without a window")
    p.add_argument("--port", type=int, default=None, help="desktop port (default: config or free)")
    p.add_argument("--apps-dir", type=Path, default=None, help="folder of apps (default: apps/)")
    p.add_argument("--data-dir", type=Path, default=None, help="runtime data (default: data/)")
    p.add_argument("--config", type=Path, default=None, help="config file (default: config.json)")
    p.add_argument(
        "--selftest",
        action="store_true",
        help="open the window, print the page title read through the web engine, exit",
    )
    p.add_argument(
        "--new-token",
        action="store_true",
        help="replace the launch token kept in the data dir (open pages must reload)",
    )
    p.add_argument("--log-level", default=os.environ.get(ENV_LOG_LEVEL, "INFO"))
    return p.parse_args(argv)


def startup_problem(apps_dir: Path, data_dir: Path) -> str | None:
    """Why the system cannot start with these folders (one line), or None.

    The apps folder must exist (it is never created: a typo would silently
    give an empty desktop); the data folder is created if missing and must
    be a writable folder.
    """
    if not apps_dir.exists():
        return f"the apps folder {apps_dir} does not exist; create it or pass --apps-dir"
    if not apps_dir.is_dir():
        return f"the apps folder {apps_dir} is a file, not a folder"
    try:
        os.listdir(apps_dir)
    except OSError as e:
        return f"the apps folder {apps_dir} cannot be read: {e.strerror or e}"
    if data_dir.exists() and not data_dir.is_dir():
        return f"the data folder {data_dir} is a file, not a folder"
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"the data folder {data_dir} cannot be created: {e.strerror or e}"
    try:
        with tempfile.TemporaryFile(dir=data_dir):
            pass
    except OSError as e:
        return f"the data folder {data_dir} is not writable: {e.strerror or e}"
    return None


def install_stop_signals(stop: threading.Event) -> None:
    """Make SIGTERM and SIGINT set ``stop``, whichever thread the kernel hands them to.

    Python runs a signal handler in the main thread, between two bytecodes. A
    signal the kernel delivers to a worker thread while the main thread sits
    in C (a lock wait, the GUI main loop) does not wake the main thread, and
    the handler waits for it. The C-level handler writes the signal number to
    the wakeup fd at once, though: a thread reading that pipe sets ``stop``,
    which wakes any waiter.
    """
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def _request(signum: int) -> None:
        if not stop.is_set():
            log.info("signal %s: shutting down", signal.Signals(signum).name)
        stop.set()

    def _watch() -> None:
        while data := os.read(r, 64):
            for signum in data:
                if signum in STOP_SIGNALS:
                    _request(signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda signum, _frame: _request(signum))
    threading.Thread(target=_watch, name="signal-watch", daemon=True).start()


def wait_for_stop(stop: threading.Event) -> None:
    """Wait in short slices: the main thread is never parked in one untimed wait."""
    while not stop.wait(MAIN_WAIT_SLICE):
        pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["mcp"]:  # the SDK is imported only for this command
        from aios.mcp.server_stdio import main as mcp_main

        return mcp_main(argv[1:])
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.port is not None and not 0 <= args.port <= MAX_PORT:
        print(
            f"aios: --port {args.port} is not a port number: use 0 (any free port) to {MAX_PORT}",
            file=sys.stderr,
        )
        return 2
    overrides: dict[str, Any] = {}
    if args.apps_dir:
        overrides["apps_dir"] = str(args.apps_dir.resolve())
    if args.data_dir:
        overrides["data_dir"] = str(args.data_dir.resolve())
    try:
        config = load_config(args.config, overrides=overrides)
    except AIOSError as e:
        print(f"aios: {e}", file=sys.stderr)
        return 2
    problem = startup_problem(config.apps_path, config.data_path)
    if problem:
        print(f"aios: {problem}", file=sys.stderr)
        return 2

    from aios.system import System
    from aios.web import ServerThread, create_app

    port = args.port if args.port is not None else config.desktop.port
    try:
        server = ServerThread(port, request_timeout=config.web.request_timeout)
    except OSError as e:
        print(f"aios: cannot listen on 127.0.0.1:{port}: {e.strerror}", file=sys.stderr)
        return 2
    port_map = None if args.data_dir else PROJECT_ROOT / "port_map.json"
    stop = threading.Event()
    install_stop_signals(stop)
    try:
        system = System(
            config,
            port=server.port,
            token=os.environ.get(ENV_TOKEN) or None,
            port_map_path=port_map,
            new_token=args.new_token,
        )
    except (AIOSError, OSError) as e:
        server.shutdown()
        print(f"aios: cannot start: {e}", file=sys.stderr)
        return 2
    server.attach(create_app(system))
    server.start()
    code = 0
    try:
        # Bounded: one app that never listens must not hold the desktop (it stays
        # "starting" in /api/health until it listens or its app_start_timeout fails it).
        system.start(ready_wait=config.startup_ready_wait, cancel=stop)
        if not stop.is_set():
            url = f"{system.url}/?token={system.token}"
            print(f"AIOS ready: {url}", flush=True)
            if args.headless:
                wait_for_stop(stop)
            else:
                from aios.entry.window import open_window

                if not open_window(url, config, stop, selftest=args.selftest) and args.selftest:
                    code = 1
    except (AIOSError, OSError) as e:  # e.g. the apps folder became unreadable meanwhile
        print(f"aios: cannot start: {e}", file=sys.stderr)
        code = 2
    finally:
        server.shutdown()
        system.stop()
        log.info("stopped")
    return code
