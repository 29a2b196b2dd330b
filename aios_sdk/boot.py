"""The first code run inside a confined app's sandbox (DESIGN §11): relays, then the app.

    python3 <sdk>/boot.py main.py

A confined app has its own network namespace: the host's loopback, where
the system listens, is not reachable, and nothing on the host can reach the
app's port. The channel is two Unix sockets in ``/run/aios`` (the app's
runtime directory, which only the system and this app see):

* ``system.sock`` (the system listens): a relay here listens on the
  sandbox's own ``127.0.0.1:<system port>`` (from ``AIOS_SYSTEM_URL``) and
  forwards each connection to it, so ``requests.post(AIOS_SYSTEM_URL ...)``
  works unchanged. The SDK's client skips the relay and uses the socket.
* ``app.sock`` (the system connects): an SDK app serves it itself. An app
  that serves plain TCP on ``APP_PORT`` instead (a raw Flask app without
  the SDK, ``0.0.0.0:APP_PORT``) is bridged: once that port accepts a
  connection, a relay here listens on ``app.sock`` and forwards to it.

Then the app's entry runs in this interpreter as ``__main__``, exactly as
``python3 main.py`` would run it. Only the standard library is used here:
the relays must not depend on what the app installs or breaks.
"""

from __future__ import annotations

import errno
import os
import runpy
import socket
import sys
import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

# This file runs by path before any import path is set, so it imports nothing of
# aios: these three are aios.names.ENV_SYSTEM_SOCKET, ENV_APP_SOCKET, ENV_SYSTEM_URL.
SYSTEM_SOCKET_ENV = "AIOS_SYSTEM_SOCKET"
APP_SOCKET_ENV = "AIOS_APP_SOCKET"
CHUNK = 65536
BACKLOG = 128
FAST_POLL = 0.01
"""Seconds between looks for the app's TCP port while it starts..."""
SLOW_POLL = 0.2
"""... and after ``FAST_POLL_FOR`` seconds without it (an app that serves late, or never)."""
FAST_POLL_FOR = 5.0
ACCEPT_RETRY = 0.05
"""Seconds to wait when accept() fails for want of file descriptors."""
SDK_SERVES = threading.Event()
"""Set by the SDK when it serves ``app.sock`` itself: the app port needs no bridge."""


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _bridge(client: socket.socket, connect: Callable[[], socket.socket]) -> None:
    try:
        upstream = connect()
    except OSError:
        client.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def relay(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    """Accept on ``listener`` forever; pipe each connection to a new ``connect()``."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                time.sleep(ACCEPT_RETRY)
                continue
            return
        threading.Thread(target=_bridge, args=(client, connect), daemon=True).start()


def _start(name: str, listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    threading.Thread(target=relay, args=(listener, connect), name=name, daemon=True).start()


def _unix_connector(path: str) -> Callable[[], socket.socket]:
    def connect() -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            s.close()
            raise
        return s

    return connect


def _tcp_connector(port: int) -> Callable[[], socket.socket]:
    return lambda: socket.create_connection(("127.0.0.1", port))


def start_system_relay(system_url: str, system_socket: str) -> bool:
    """Listen on the sandbox's ``127.0.0.1:<system port>``; False when the port is taken.

    An app granted ``network`` has its own namespace too (pasta gives it the
    outside, not the host's loopback), so the port is free there as well.
    """
    port = urlsplit(system_url).port
    if port is None:
        return False
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(BACKLOG)
    except OSError:
        listener.close()
        return False
    _start("aios-system-relay", listener, _unix_connector(system_socket))
    return True


def _tcp_accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def bridge_app_port(app_socket: str, port: int) -> None:
    """Once ``127.0.0.1:port`` accepts, serve ``app_socket`` by relaying to it.

    Returns at once if the app serves ``app_socket`` itself (an SDK app).
    """
    began = time.monotonic()
    while not SDK_SERVES.is_set() and not os.path.exists(app_socket):
        if _tcp_accepts(port):
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                listener.bind(app_socket)
            except OSError:  # the app bound it in the meantime
                listener.close()
                return
            listener.listen(BACKLOG)
            relay(listener, _tcp_connector(port))
            return
        SDK_SERVES.wait(FAST_POLL if time.monotonic() - began < FAST_POLL_FOR else SLOW_POLL)


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: boot.py ENTRY [ARGS...]")
    # Run as a script, this module is ``__main__``; the SDK finds it (SDK_SERVES) by name.
    sys.modules.setdefault("aios_sdk.boot", sys.modules[__name__])
    system_socket = os.environ.get(SYSTEM_SOCKET_ENV, "")
    app_socket = os.environ.get(APP_SOCKET_ENV, "")
    if system_socket:
        start_system_relay(os.environ.get("AIOS_SYSTEM_URL", ""), system_socket)
    port = os.environ.get("APP_PORT", "")
    if app_socket and port.isdigit():
        threading.Thread(
            target=bridge_app_port, args=(app_socket, int(port)), name="aios-app-relay", daemon=True
        ).start()
    entry = argv[0]
    sys.argv = list(argv)
    # as `python3 main.py` would: the script's folder first on the path, not this one's
    sys.path[0] = os.path.dirname(os.path.abspath(entry))
    runpy.run_path(entry, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
