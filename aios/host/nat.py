"""The network of an app granted ``network`` (DESIGN §14.5): its own namespace, user-mode NAT.

An app granted ``network`` must reach the internet, never the host's
loopback, where the desktop's API listens, nor other apps. Sharing the host's
network namespace (bwrap ``--share-net``) gives it all of those: with a
stolen launch token, an app called the desktop's API on ``127.0.0.1``. So it
keeps the private network namespace every confined app has, and ``pasta``
(Debian package ``passt``) connects that namespace to the outside through
ordinary sockets of the host:

* ``--config-net``: an interface with the host's address and a default
  route in the app's namespace; the host's address is the namespace's own,
  so a connection to it stays inside;
* ``--tcp-ns none --udp-ns none``: no port of the host's loopback is
  forwarded into the namespace (pasta's default, ``auto``, forwards every
  bound one);
* ``--no-map-gw``: the gateway address is the real gateway, not the host's
  loopback (pasta's default maps it there);
* ``--tcp-ports none --udp-ports none``: nothing on the host reaches the
  app's ports.

The sequence (bwrap sets the namespace up, then waits for pasta): bwrap runs
with ``--info-fd`` (it reports the sandbox's pid) and ``--block-fd`` (it runs
the app only once a byte arrives); :meth:`Nat.connect` reads the pid, starts
pasta on ``/proc/<pid>/ns/net`` in the foreground and waits for the pid file
pasta writes once the namespace is configured (the write end of a pipe, so
readiness is an event, not a poll), then lets the app run. pasta is started
like every process of the system (:func:`aios.host.procgroup.popen`: death signal,
orphan guard) and stopped by :meth:`Nat.close` with the app's sandbox, so it
never outlives the app.

Where pasta is missing or fails, the app does not start and its status says
why: it never falls back to the host's network.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from aios.host import procgroup
from aios.host.os_sandbox import SANE_PATH

log = logging.getLogger(__name__)

SETUP_TIMEOUT = 10.0
"""Seconds bwrap may take to report its sandbox, and pasta to configure the namespace."""
STOP_GRACE = 1.0
"""Seconds pasta may take to end after SIGTERM."""
LOG_NAME = "pasta.log"
"""pasta's messages, in the app's runtime directory (read when it fails)."""
NOISE = "syslog"
"""pasta's complaints that it has no syslog here: not the reason for anything."""
READ_CHUNK = 4096


class NatUnavailable(OSError):
    """The app is granted ``network`` but cannot get its own NAT: it must not start."""


def pasta_path() -> str | None:
    return shutil.which("pasta", path=SANE_PATH)


def nat_unavailable() -> str | None:
    """Why an app granted ``network`` cannot get its own NAT here, or None."""
    if pasta_path() is None:
        return (
            "it is granted network, but pasta (user-mode NAT, Debian package passt) is not "
            "installed; it is not started rather than share the host's network"
        )
    return None


def pasta_argv(pasta: str, netns: str, ready_fd: int) -> list[str]:
    """pasta giving the namespace at ``netns`` the outside, and nothing of the host."""
    return [
        pasta,
        "--foreground",
        "--quiet",
        # as root pasta would drop to "nobody", who may not open another namespace
        "--runas",
        f"{os.getuid()}:{os.getgid()}",
        "--config-net",
        "--tcp-ports",
        "none",
        "--udp-ports",
        "none",
        "--tcp-ns",
        "none",
        "--udp-ns",
        "none",
        "--no-map-gw",
        "--pid",
        f"/proc/self/fd/{ready_fd}",
        "--netns",
        netns,
    ]


def _read_until(fd: int, deadline: float, complete: Callable[[bytes], bool]) -> bytes:
    """Bytes from ``fd`` until they are ``complete``, EOF or the deadline."""
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return data
        chunk = os.read(fd, READ_CHUNK)
        if not chunk:
            return data
        data += chunk
        if complete(data):
            return data


def _json_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except ValueError:
        return False


class Nat:
    """One app launch's pasta: the pipes bwrap reports and waits on, then pasta itself."""

    def __init__(self, runtime_dir: Path) -> None:
        pasta = pasta_path()
        if pasta is None:
            raise NatUnavailable(nat_unavailable())
        self.pasta = pasta
        self.log_path = runtime_dir / LOG_NAME
        self._info_r, self._info_w = os.pipe()
        self._block_r, self._block_w = os.pipe()
        for fd in (self._info_w, self._block_r):
            os.set_inheritable(fd, True)
        self.proc: subprocess.Popen[bytes] | None = None

    def bwrap_options(self) -> list[str]:
        return ["--info-fd", str(self._info_w), "--block-fd", str(self._block_r)]

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self._info_w, self._block_r)

    def connect(self) -> None:
        """After bwrap started: give its namespace pasta, then let the app run.

        Raises :class:`NatUnavailable` naming pasta's own reason when it fails.
        """
        _close(self._info_w, self._block_r)  # the child holds them now
        self._info_w = self._block_r = -1
        deadline = time.monotonic() + SETUP_TIMEOUT
        raw = _read_until(self._info_r, deadline, _json_object)
        try:
            pid = int(json.loads(raw)["child-pid"])
        except (ValueError, KeyError, TypeError):
            raise NatUnavailable(
                f"bwrap did not report its sandbox for the network: {raw[:200]!r}"
            ) from None
        ready_r, ready_w = os.pipe()
        try:
            with open(self.log_path, "wb") as err:
                self.proc = procgroup.popen(
                    pasta_argv(self.pasta, f"/proc/{pid}/ns/net", ready_w),
                    subprocess.Popen,
                    stdin=subprocess.DEVNULL,
                    stdout=err,
                    stderr=err,
                    close_fds=True,
                    pass_fds=(ready_w,),
                    env={"PATH": SANE_PATH},
                )
            os.close(ready_w)
            ready_w = -1
            written = _read_until(ready_r, deadline, lambda d: d.endswith(b"\n"))
        finally:
            _close(ready_r, ready_w)
        if not written.strip().isdigit():
            raise NatUnavailable(f"pasta could not give the app its network: {self._why()}")
        os.write(self._block_w, b"1")  # bwrap runs the app now
        log.info("pasta %d gives sandbox %d its network", self.proc.pid, pid)

    def _why(self) -> str:
        if self.proc is not None and self.proc.poll() is None:
            return f"not ready within {SETUP_TIMEOUT:g} s"
        try:
            lines = self.log_path.read_text("utf-8", "replace").splitlines()
        except OSError:
            lines = []
        said = [line.strip() for line in lines if line.strip() and NOISE not in line]
        code = self.proc.returncode if self.proc is not None else None
        return "; ".join(said[-2:]) or f"exit status {code}"

    def close(self) -> None:
        """Stop pasta (the app's namespace is gone or going) and close the pipes."""
        if self.proc is not None:
            procgroup.stop(self.proc, STOP_GRACE)
            self.proc = None
        _close(self._info_r, self._info_w, self._block_r, self._block_w)
        self._info_r = self._info_w = self._block_r = self._block_w = -1


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass
