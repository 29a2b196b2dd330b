"""Confined app processes (DESIGN §11): every app runs in a bubblewrap sandbox of its own.

An app folder is third-party code; the executor must be its only way to act.
Where bubblewrap works, each launch of an app gets:

* its own user, pid, mount, network, IPC and UTS namespaces, no
  capabilities, ``--die-with-parent`` and a new session: it sees and can
  signal only its own processes, and nothing it starts outlives its
  sandbox (the pid namespace ends with its init);
* a filesystem holding only ``/usr``, ``/etc`` (entries other users may not
  read masked), the Python installation, the SDK and the ``aios`` modules it
  imports, the app's folder — all read-only — its workdir read-write, a
  private size-capped ``/tmp`` and ``/dev/shm``, and ``/run/aios``: no data
  dir, no config or settings, no other app, no launch token;
* no network but its own loopback, unless its manifest requests ``network``
  and the user granted it: then :mod:`aios.host.nat` connects its namespace to
  the outside through pasta (user-mode NAT) — never the host's network, so
  not the host's loopback, the desktop's port or other apps (§14.5);
* a pids cgroup (``apps.max_processes``) and ``RLIMIT_NOFILE``
  (``apps.max_open_files``); :meth:`Sandbox.limit_reached` says when one was hit.

The channel to the system is a per-launch runtime directory (mode 0700 on
the host, ``/run/aios`` inside) with two Unix sockets: the app serves
``app.sock``; the system serves its API on ``system.sock`` through a
:class:`Channel` that stamps every request with the app's id, so a request
arriving there can only act as that app. :mod:`aios_sdk.boot` runs first in
the sandbox and bridges both sockets to the TCP addresses the spec's apps
use (``APP_PORT``, ``AIOS_SYSTEM_URL``).

Note the uid: the sandbox's "65534" maps back to the system's own host uid
(root here), so the namespaces are the boundary, not the uid.
"""

from __future__ import annotations

import functools
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from aios.config import PROJECT_ROOT
from aios.host import os_sandbox, procgroup
from aios.host.nat import Nat, NatUnavailable, nat_unavailable
from aios.host.os_sandbox import BWRAP_EXTRA_TASKS, SANE_PATH, PidsCgroup
from aios_sdk.boot import APP_SOCKET_ENV, SYSTEM_SOCKET_ENV

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from aios.config import AppsConfig

log = logging.getLogger(__name__)

RUNTIME_IN_SANDBOX = Path("/run/aios")
APP_SOCKET = "app.sock"
SYSTEM_SOCKET = "system.sock"
SANDBOX_HOME = "/tmp"
SDK_PACKAGES = ("aios_sdk", "aios")
"""The project's folders an app may import (read-only): the SDK is built on ``aios``'s
protocol, names and errors. Nothing else of the project — no data dir, no config."""
CHANNEL_ENVIRON_KEY = "aios.channel"
"""Set (to the app's id) on every request that came through a confined app's own socket."""
CHANNEL_POLL = 0.05
"""Seconds between two looks of a channel server at its shutdown flag."""
PROBE_TIMEOUT = 15.0
MB = 1024 * 1024
BOOT = PROJECT_ROOT / "aios_sdk" / "boot.py"


# ----------------------------------------------------------------- detection


@functools.cache
def _probe(bwrap: str, python: str) -> str | None:
    """Run this Python inside an app sandbox once; the problem, or None when it works."""
    with tempfile.TemporaryDirectory(prefix="aios-confine-probe-") as tmp:
        base = Path(tmp).resolve()
        app_dir, run = base / "app", base / "run"
        (app_dir / "workspace").mkdir(parents=True)
        run.mkdir()
        argv = [
            bwrap,
            *_options(
                app_dir=app_dir,
                workdir=app_dir / "workspace",
                runtime_dir=run,
                env={"PATH": SANE_PATH},
                tmp_bytes=MB,
                python=python,
            ),
            "--",
            python,
            "-c",
            "pass",  # the interpreter and its site-packages path start; imports are the app's
        ]
        try:
            r = subprocess.run(
                argv, capture_output=True, timeout=PROBE_TIMEOUT, env={"PATH": SANE_PATH}
            )
        except (OSError, subprocess.SubprocessError) as e:
            return f"bwrap could not run Python: {e}"
    if r.returncode != 0:
        lines = r.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"Python does not run in an app sandbox: {lines[-1] if lines else r.returncode}"
    return None


def unavailable(mode: str, python: str = sys.executable) -> str | None:
    """Why apps cannot run confined here, or None when they can (probed once)."""
    if mode == "off":
        return "apps.confinement is off"
    caps = os_sandbox.detect()
    if caps.bwrap is None:
        return caps.bwrap_problem or "bubblewrap is unavailable"
    return _probe(caps.bwrap, python)


# ------------------------------------------------------------------ channel


def _tagged(app_id: str, app: WSGIApplication) -> WSGIApplication:
    def tagged(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        environ[CHANNEL_ENVIRON_KEY] = app_id
        return app(environ, start_response)

    return tagged


class Channel:
    """The system's API on one app's ``system.sock``; every request is stamped with the app."""

    def __init__(self, path: Path, app_id: str, app: WSGIApplication) -> None:
        from werkzeug.serving import make_server

        from aios_sdk._keepalive import KeepAliveHandler

        class Handler(KeepAliveHandler):  # the app's calls keep their connection open
            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                pass  # the system's own server logs the desktop's calls; apps' are audited

        self.path = path
        self._server = make_server(
            f"unix://{path}", 0, _tagged(app_id, app), threaded=True, request_handler=Handler
        )
        os.chmod(path, 0o600)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": CHANNEL_POLL},
            name=f"channel-{app_id}",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# ------------------------------------------------------------------ sandbox


@dataclass
class Sandbox:
    """One launch's confinement: its runtime dir, channel and cgroup."""

    app_id: str
    runtime_dir: Path
    network: bool
    max_processes: int
    max_open_files: int
    tmp_bytes: int
    cgroup: PidsCgroup | None = None
    channel: Channel | None = None
    nat: Nat | None = None
    """The user-mode NAT of an app granted ``network`` (its pasta)."""
    _reported: set[str] = field(default_factory=set)

    @property
    def app_socket(self) -> Path:
        return self.runtime_dir / APP_SOCKET

    def env(self) -> dict[str, str]:
        """What the app's environment gains inside the sandbox."""
        return {
            APP_SOCKET_ENV: str(RUNTIME_IN_SANDBOX / APP_SOCKET),
            SYSTEM_SOCKET_ENV: str(RUNTIME_IN_SANDBOX / SYSTEM_SOCKET),
            "HOME": SANDBOX_HOME,
            "PATH": SANE_PATH,
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def preexec(self) -> Callable[[], None]:
        """Run in the child before bwrap: join the cgroup, cap open files. Syscalls only."""
        join = self.cgroup.preexec_join() if self.cgroup is not None else None
        # never above the system's own hard limit: raising it would fail in the child
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        nofile = (
            self.max_open_files
            if hard == resource.RLIM_INFINITY
            else min(self.max_open_files, hard)
        )

        def preexec() -> None:
            if join is not None:
                join()
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        return preexec

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors bwrap inherits (the NAT's pipes)."""
        return self.nat.pass_fds if self.nat is not None else ()

    def started(self) -> None:
        """After bwrap started: set its network up (if granted) before the app runs."""
        if self.nat is not None:
            self.nat.connect()

    def limit_reached(self, pid: int) -> str | None:
        """A new limit the app ran into since the last look (said once per limit), or None."""
        found: str | None = None
        if self.cgroup is not None and self.cgroup.hit_limit():
            found = (
                f"reached its limit of {self.max_processes} processes "
                "(apps.max_processes): a fork was refused"
            )
            kind = "processes"
        elif _most_fds(pid) >= self.max_open_files:
            found = f"reached its limit of {self.max_open_files} open files (apps.max_open_files)"
            kind = "files"
        if found is None or kind in self._reported:
            return None
        self._reported.add(kind)
        return found

    def close(self) -> None:
        """After the app's processes are gone: stop the channel, kill leftovers, clean up."""
        if self.nat is not None:
            self.nat.close()
        if self.channel is not None:
            self.channel.close()
        if self.cgroup is not None:
            self.cgroup.remove()
        shutil.rmtree(self.runtime_dir, ignore_errors=True)


def _most_fds(pid: int) -> int:
    """The most open files any process of the tree under ``pid`` holds (0 if unknown)."""
    most = 0
    for p in procgroup.process_tree(pid):
        try:
            most = max(most, p.num_fds())
        except (OSError, psutil.Error):
            continue
    return most


def _python_roots(python: str) -> list[Path]:
    """The folders the Python installation needs: its prefixes (venv and base)."""
    roots: list[Path] = []
    for prefix in {sys.base_prefix, sys.prefix, str(Path(python).resolve().parent.parent)}:
        p = Path(prefix).resolve()
        if p == Path("/usr") or Path("/usr") in p.parents:
            continue  # /usr is bound anyway
        if not any(p == r or r in p.parents for r in roots):
            roots = [r for r in roots if p not in r.parents] + [p]
    return sorted(roots)


def _options(
    *,
    app_dir: Path,
    workdir: Path,
    runtime_dir: Path,
    env: dict[str, str],
    tmp_bytes: int,
    python: str,
) -> list[str]:
    binds: list[tuple[str, Path, Path]] = [("--ro-bind", p, p) for p in _python_roots(python)]
    binds += [("--ro-bind", PROJECT_ROOT / name, PROJECT_ROOT / name) for name in SDK_PACKAGES]
    binds += [("--ro-bind", app_dir, app_dir), ("--bind", runtime_dir, RUNTIME_IN_SANDBOX)]
    # Never the host's network: an app granted it gets pasta on its own namespace.
    return os_sandbox.bwrap_options(workdir, app_dir, env, tmp_bytes=tmp_bytes, binds=binds)


class Confiner:
    """Builds each app launch's sandbox; one per launcher, owning one runtime root."""

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self._root: Path | None = None
        self._lock = threading.Lock()

    def _runtime_root(self) -> Path:
        with self._lock:
            if self._root is None:
                # Short: a Unix socket's path must fit in 108 bytes.
                base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
                self._root = Path(tempfile.mkdtemp(prefix="aios-run-", dir=base))
            return self._root

    def prepare(
        self,
        app_id: str,
        apps: AppsConfig,
        *,
        network: bool,
        api: WSGIApplication | None,
    ) -> Sandbox:
        """A fresh runtime dir, the channel (when the system serves an API), the cgroup and,
        for ``network``, the NAT; :class:`NatUnavailable` when it cannot have one."""
        if network and (problem := nat_unavailable()) is not None:
            raise NatUnavailable(problem)
        runtime = self._runtime_root() / app_id
        shutil.rmtree(runtime, ignore_errors=True)  # a previous launch's sockets
        runtime.mkdir(mode=0o700)
        caps = os_sandbox.detect()
        sandbox = Sandbox(
            app_id=app_id,
            runtime_dir=runtime,
            network=network,
            max_processes=apps.max_processes,
            max_open_files=apps.max_open_files,
            tmp_bytes=apps.tmp_mb * MB,
            cgroup=PidsCgroup.create(caps.pids_cgroup, apps.max_processes + BWRAP_EXTRA_TASKS),
        )
        try:
            if api is not None:
                sandbox.channel = Channel(runtime / SYSTEM_SOCKET, app_id, api)
            if network:
                sandbox.nat = Nat(runtime)
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def argv(
        self, sandbox: Sandbox, *, entry: str, app_dir: Path, workdir: Path, env: dict[str, str]
    ) -> list[str]:
        """The command line that runs ``entry`` of ``app_dir`` inside ``sandbox``."""
        caps = os_sandbox.detect()
        assert caps.bwrap is not None
        inner_env = {**env, **sandbox.env()}
        return [
            caps.bwrap,
            *_options(
                app_dir=app_dir,
                workdir=workdir,
                runtime_dir=sandbox.runtime_dir,
                env=inner_env,
                tmp_bytes=sandbox.tmp_bytes,
                python=self.python,
            ),
            *(sandbox.nat.bwrap_options() if sandbox.nat is not None else []),
            "--",
            self.python,
            str(BOOT),
            entry,
        ]

    def close(self) -> None:
        with self._lock:
            root, self._root = self._root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)
