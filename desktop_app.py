"""Triton AIOS: start the system and open the desktop window.

    python desktop_app.py                 # window (pywebview), or the browser without a GUI
    python desktop_app.py --headless     # serve only; open the printed URL yourself
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from aios.config import load_config
from aios.errors import AIOSError

log = logging.getLogger("aios")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Triton AIOS desktop")
    p.add_argument("--headless", action="store_true", help="serve the desktop without a window")
    p.add_argument("--port", type=int, default=None, help="desktop port (default: config or free)")
    p.add_argument("--apps-dir", type=Path, default=None, help="folder of apps (default: apps/)")
    p.add_argument("--data-dir", type=Path, default=None, help="runtime data (default: data/)")
    p.add_argument("--config", type=Path, default=None, help="config file (default: config.json)")
    p.add_argument("--selftest", action="store_true",
                   help="open the window, print the page title read through the web engine, exit")
    p.add_argument("--new-token", action="store_true",
                   help="replace the launch token kept in the data dir (open pages must reload)")
    p.add_argument("--log-level", default=os.environ.get("AIOS_LOG_LEVEL", "INFO"))
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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

    from aios.server import ServerThread, create_app
    from aios.system import System

    port = args.port if args.port is not None else config.desktop.port
    try:
        server = ServerThread(port)
    except OSError as e:
        print(f"aios: cannot listen on 127.0.0.1:{port}: {e.strerror}", file=sys.stderr)
        return 2
    port_map = None if args.data_dir else Path(__file__).resolve().parent / "port_map.json"
    system = System(config, port=server.port, token=os.environ.get("AIOS_TOKEN") or None,
                    port_map_path=port_map, new_token=args.new_token)
    server.attach(create_app(system))
    server.start()

    stop = threading.Event()

    def _signal(signum: int, _frame: Any) -> None:
        log.info("signal %s: shutting down", signum)
        stop.set()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    try:
        system.start()
        url = f"{system.url}/?token={system.token}"
        print(f"AIOS ready: {url}", flush=True)
        if args.headless:
            stop.wait()
        else:
            from aios.window import open_window
            if not open_window(url, config, stop, selftest=args.selftest) and args.selftest:
                return 1
    finally:
        server.shutdown()
        system.stop()
        log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
