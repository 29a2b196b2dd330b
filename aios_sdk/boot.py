"""The first code run in every app's process (DESIGN §11): readiness, relays, then the app.

    python3 <sdk>/boot.py main.py

**Readiness is signalled, not polled.** The launcher hands every app (confined
or not) the write end of a pipe (``AIOS_READY_FD``). This module wraps
:meth:`socket.socket.listen` before the app's code runs: the moment the app
listens where the system will call it (``APP_PORT``, or its ``app.sock`` when
confined), one byte goes down the pipe and the supervisor, blocked on the
other end, marks the app running. Any server written on Python's sockets
(the SDK's, the spec's raw Flask template, WSGI and asyncio servers) signals
this way; one that listens from native code is found by a slow probe of the
port instead (:data:`FALLBACK_PROBE`).

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
  the SDK, ``0.0.0.0:APP_PORT``) is bridged: the moment that port listens, a
  relay here listens on ``app.sock`` and forwards to it; then readiness is
  signalled.

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
# aios: these are aios.names.ENV_SYSTEM_SOCKET, ENV_APP_SOCKET, ENV_READY_FD (and
# ENV_SYSTEM_URL below).
SYSTEM_SOCKET_ENV = "AIOS_SYSTEM_SOCKET"
APP_SOCKET_ENV = "AIOS_APP_SOCKET"
READY_FD_ENV = "AIOS_READY_FD"
"""The write end of the launcher's readiness pipe."""
READY_BYTE = b"r"
CHUNK = 65536
BACKLOG = 128
FALLBACK_PROBE = 0.25
"""Seconds between probes of ``APP_PORT`` for an app whose server listens from native
code (no :meth:`socket.socket.listen` call to see); Python servers never wait on it."""
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


class Readiness:
    """Tells the launcher, once, that the app listens where the system calls it.

    ``fd`` is the pipe's write end (-1: nobody listens for it, e.g. an app run by
    hand). For a confined app that serves TCP, the first listen on ``port``
    starts the ``app.sock`` relay before the signal, so the system's first
    connection finds it.
    """

    def __init__(self, fd: int, port: int | None, app_socket: str) -> None:
        self.fd = fd
        self.port = port
        self.app_socket = app_socket
        self.done = threading.Event()
        self._lock = threading.Lock()

    def listening(self, sock: socket.socket) -> None:
        """``sock`` started listening: signal if it is the app's own address."""
        if self.done.is_set():
            return
        try:
            name = sock.getsockname()
        except OSError:
            return
        if sock.family == socket.AF_UNIX:
            if self.app_socket and name == self.app_socket:
                self.signal()
        elif sock.family in (socket.AF_INET, socket.AF_INET6) and name[1] == self.port:
            self._app_port_listens()

    def _app_port_listens(self) -> None:
        if self.app_socket and not SDK_SERVES.is_set():
            listener = _app_socket_listener(self.app_socket)
            if listener is None:
                return  # the app binds app.sock itself: its own listen signals
            _start("aios-app-relay", listener, _tcp_connector(self.port or 0))
        self.signal()

    def signal(self) -> None:
        with self._lock:
            if self.done.is_set():
                return
            self.done.set()
            fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                os.write(fd, READY_BYTE)
            except OSError:
                pass  # the launcher stopped waiting (it gave up, or is stopping us)
            finally:
                os.close(fd)

    def probe(self) -> None:
        """The fallback for servers that listen without :meth:`socket.socket.listen`."""
        while not self.done.wait(FALLBACK_PROBE):
            if self.app_socket and os.path.exists(self.app_socket):
                if _unix_accepts(self.app_socket):
                    self.signal()
            elif self.port is not None and _tcp_accepts(self.port):
                self._app_port_listens()


def _unix_accepts(path: str) -> bool:
    try:
        _unix_connector(path)().close()
        return True
    except OSError:
        return False


def _app_socket_listener(path: str) -> socket.socket | None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)
        listener.listen(BACKLOG)
    except OSError:  # the app bound it in the meantime
        listener.close()
        return None
    return listener


def watch_listens(readiness: Readiness) -> None:
    """Wrap :meth:`socket.socket.listen` so ``readiness`` sees every listen of the app."""
    original = socket.socket.listen

    def listen(self: socket.socket, *args: int) -> None:
        original(self, *args)
        readiness.listening(self)

    socket.socket.listen = listen  # type: ignore[method-assign,assignment]


def _ready_fd() -> int:
    """The readiness pipe from the environment (-1 without one); the app's children never
    inherit it."""
    raw = os.environ.pop(READY_FD_ENV, "")
    if not raw.isdigit():
        return -1
    fd = int(raw)
    try:
        os.set_inheritable(fd, False)
    except OSError:
        return -1
    return fd


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
    readiness = Readiness(_ready_fd(), int(port) if port.isdigit() else None, app_socket)
    if readiness.fd >= 0 or app_socket:
        watch_listens(readiness)
        threading.Thread(target=readiness.probe, name="aios-ready-probe", daemon=True).start()
    entry = argv[0]
    sys.argv = list(argv)
    # as `python3 main.py` would: the script's folder first on the path, not this one's
    sys.path[0] = os.path.dirname(os.path.abspath(entry))
    runpy.run_path(entry, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
