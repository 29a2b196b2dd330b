# Longer than ~500 lines on purpose: the registry's lifecycle (start, rescan, reload, stop)
# under two locks; manifests.py, ports.py, supervisor.py and applog.py already hold the rest.
"""The registry of apps: discovery, start/stop, hot reload and the route table.

Spec §3.4, §5.2, §5.3, §11, §14.2; DESIGN §3, §4. The launcher is the
registry of apps keyed by id (the folder name). What makes a folder a valid
app is :mod:`aios.apphost.manifests`; which port it gets, :mod:`aios.apphost.ports`; each
valid app is run by an
:class:`~aios.apphost.supervisor.AppSupervisor`, which owns the process and restarts
it per :class:`~aios.apphost.supervisor.RestartPolicy`. A bad app folder never stops
the system: it becomes an ``invalid`` record whose ``error`` says why.

Threads: one supervisor per app, one hot-reload watcher. ``_lock`` guards the
records; ``_reload_lock`` serialises structural changes (start, rescan,
restart, stop) so two of them never launch the same app twice.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import requests

from aios.apphost.bytecode import compile_shared
from aios.apphost.confinement import BOOT, Confiner, Sandbox, unavailable
from aios.apphost.manifests import (
    APP_ID_RE,
    UNCONFINED_NOTICE,
    AppRecord,
    assign_display_names,
    fingerprint,
    load_app,
)
from aios.apphost.ports import PortMap, write_json_atomic
from aios.apphost.supervisor import (
    AppStatus,
    AppSupervisor,
    Liveness,
    RestartPolicy,
    app_env,
    release,
    spawn_process,
)
from aios.config import PROJECT_ROOT, Config
from aios.errors import AppNotFound, AppUnavailable, ConfigError
from aios.host import procgroup
from aios.host.os_sandbox import SANE_PATH
from aios.names import ENV_READY_FD
from aios.protocol import Manifest, app_secret
from aios_sdk._unix import UnixAdapter

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

__all__ = ["APP_ID_RE", "AppRecord", "AppStatus", "Launcher", "RestartPolicy", "load_app"]

log = logging.getLogger(__name__)

ROUTES_FILE = "routes.json"
STOP_GRACE = 3.0
"""Seconds an app gets between SIGTERM and SIGKILL."""
WATCH_INTERVAL = 1.0
"""Seconds between two hot-reload passes."""
SETTLE_LOOK = 0.1
"""Seconds :meth:`Launcher.start`'s wait goes without looking at its cancel flag (an app
that settles wakes it at once)."""
LOAD_ATTEMPTS = 3
"""Reads of a folder that changes while it is read, before the next pass takes over."""
READY_PIPES = os.name == "posix"
"""Whether apps signal readiness on an inherited pipe (else the launcher probes their port)."""
DEFAULT_WORKDIR: str = Manifest.model_fields["workdir"].default
"""The manifest's default ``workdir`` (the first guess of the folder the watcher skips)."""


# ------------------------------------------------------------------- launcher


class Launcher:
    """The registry of apps: discovers, starts, supervises, reloads and stops them."""

    def __init__(
        self,
        apps_dir: Path,
        data_dir: Path,
        config: Config,
        *,
        system_url: str,
        port_map_path: Path,
        on_status: Callable[[AppRecord], None] | None = None,
        on_stop: Callable[[str], object] | None = None,
        restart_policy: RestartPolicy | None = None,
        stop_grace: float = STOP_GRACE,
        watch_interval: float = WATCH_INTERVAL,
    ):
        self.apps_dir = apps_dir
        self.data_dir = data_dir
        self.logs_dir = data_dir / "logs"
        self.config = config
        self.system_url = system_url
        self.port_map_path = port_map_path
        self._ports = PortMap(port_map_path, urlsplit(system_url).port)
        self.routes_path = data_dir / ROUTES_FILE
        self.policy = restart_policy or RestartPolicy.from_config(config.apps)
        self.stop_grace = stop_grace
        self.watch_interval = watch_interval
        self._on_status = on_status
        self._on_stop = on_stop
        self._lock = threading.RLock()
        self._reload_lock = threading.RLock()
        self._records: dict[str, AppRecord] = {}
        self._installs = 0
        """Generations handed out by the default :attr:`install_order` (no store)."""
        self.install_order: Callable[[list[str]], dict[str, int]] = self._count_installs
        """Each app's install generation (set by the system to the store's, which persists
        it): apps found in one scan share one, a later scan's apps get a later one."""
        self._sups: dict[str, AppSupervisor] = {}
        self._settled = threading.Condition()
        """Notified whenever an app settles (runs, fails or is stopped)."""
        self._prints: dict[str, tuple[Any, ...]] = {}
        self._closing = threading.Event()
        self._started = False
        self._discovered = False
        """Every folder found at start has its record (and, if valid, its supervisor)."""
        self._spawned: dict[int, subprocess.Popen[bytes]] = {}
        """Every process spawned in this run that was not reaped yet: shutdown kills them all."""
        self._scan_failing = False
        self._watcher: threading.Thread | None = None
        self.confiner = Confiner()
        self.channel_app: WSGIApplication | None = None
        """The system's API, served to each confined app on its own socket (set by aios.web)."""
        self.network_granted: Callable[[AppRecord], bool] = lambda rec: False
        """Whether the user granted ``network`` to an app (set by the system)."""
        self.public_extra: Callable[[AppRecord], dict[str, Any]] = lambda rec: {}
        """What the desktop sees of an app beside its manifest: its permissions and its
        quotas (DESIGN §14.6; set by the system)."""
        self.autostart: Callable[[list[str]], set[str] | None] = lambda app_ids: None
        """Which of these valid apps start with the launcher, or when their folder appears
        (None: all of them); the others are ``idle`` until :meth:`ensure_running` (set by
        the system from ``apps.autostart``). Every app at boot (None, the spec's behaviour)
        is waited for before the launcher is :meth:`ready`; a chosen few are a warm-up that
        the desktop's first paint does not need: ready does not wait on them, and a use
        meanwhile waits for their start as for a start on demand."""
        self.busy: Callable[[str], bool] = lambda app_id: False
        """Whether an app is in use (an open window, a run, a background process, a
        waiting card): it is never stopped for idleness then (set by the system)."""
        self._last_used: dict[str, float] = {}
        self._on_demand: dict[str, AppSupervisor] = {}
        """Apps being started for a use, until that start settles."""
        self._sockets: dict[int, str] = {}
        """Port -> Unix socket of each running confined app (see :meth:`socket_for`)."""
        self._confinement_problem: str | None = None
        self._warm_up = False
        """The apps started at boot are a warm-up (``autostart`` chose them): ready does
        not wait on them."""

    # -------------------------------------------------------------- lifecycle

    def start(self, ready_wait: float | None = None, cancel: threading.Event | None = None) -> None:
        """Scan, validate, assign ports and start every app in parallel.

        Then, when every app starts at boot (``autostart`` gave None), wait until every
        app has settled (running or failed), at most
        ``ready_wait`` seconds (None: no bound) and never past ``cancel`` or
        :meth:`stop`. An app still starting after that carries on by itself
        until it listens or its own ``app_start_timeout`` fails it;
        :meth:`ready` tells when every app has settled. The wait is a loop of
        short timed waits, so the caller's thread (the main thread, which
        must run signal handlers) is never parked for long.

        Raises ConfigError when the apps folder does not exist or cannot be listed.
        """
        with self._reload_lock:
            if self._started:
                raise RuntimeError("the launcher was already started; create a new one")
            self._started = True
            self._confinement_problem = unavailable(self.config.apps.confinement)
            if self._confinement_problem is not None:
                log.warning("%s (%s)", UNCONFINED_NOTICE, self._confinement_problem)
            else:
                log.info("app processes run confined (bubblewrap; DESIGN §11)")
            self.logs_dir.mkdir(parents=True, exist_ok=True)
            compile_shared()
            try:
                folders = self._list_folders()
            except OSError as e:
                raise ConfigError(
                    f"the apps folder {self.apps_dir} cannot be listed: {e.strerror or e}"
                ) from e
            self._ports.load()
            order = self.install_order(list(folders))
            records = [self._add(path, order[app_id]) for app_id, path in folders.items()]
            # Apps that name a port in their manifest choose first, so a port
            # remembered from a previous run never pushes them off it.
            records.sort(key=lambda r: (r.manifest is None or r.manifest.port is None, r.id))
            valid = [r for r in records if r.status != AppStatus.INVALID]
            wanted = self.autostart([r.id for r in valid])
            sups = [self._prepare(r) for r in valid if wanted is None or r.id in wanted]
            for r in valid:
                if wanted is not None and r.id not in wanted:
                    self._idle(r)
            with self._lock:
                self._discovered = True
                self._warm_up = wanted is not None
                if self._warm_up:  # a use before they run waits for them (ensure_running)
                    self._on_demand.update({s.app_id: s for s in sups})
            self._write_maps()
            for sup in sups:
                sup.start()
        if not self._warm_up:
            self._wait_settled(sups, ready_wait, cancel)
        log.info(
            "launcher: %d app(s) found, %d running",
            len(self._records),
            sum(r.status == AppStatus.RUNNING for r in self.apps()),
        )
        self._watcher = threading.Thread(target=self._watch, name="app-watcher", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        """Stop every app and the watcher; idempotent."""
        self._closing.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
        with self._reload_lock:
            ids = list(self._sups)
            try:
                if ids:
                    with ThreadPoolExecutor(max_workers=min(len(ids), 16)) as pool:
                        for app_id, fut in [(i, pool.submit(self._halt, i)) for i in ids]:
                            if fut.exception() is not None:  # keep stopping the others
                                log.error("stopping app %s failed: %s", app_id, fut.exception())
            finally:
                self._sweep()
                self.confiner.close()

    def restart(self, app_id: str) -> None:
        """Reload one app's folder and start it afresh; wait until it is up or failed."""
        with self._reload_lock:
            rec = self.get(app_id)
            if rec is None:
                raise AppNotFound(f"no app {app_id!r}")
            if self._closing.is_set():
                raise AppUnavailable(f"cannot restart {app_id!r}: the system is shutting down")
            sup = self._reload(rec, start=True)
        if sup is not None:
            sup.wait_settled()

    def ensure_running(self, app_id: str, timeout: float) -> AppRecord | None:
        """An app is needed (an open, an instruction, an action, a launch): start it if it
        is idle and wait, at most ``timeout`` s, until it runs or fails. Its record (None:
        no such app); it counts as used now."""
        with self._reload_lock:
            rec = self.get(app_id)
            if rec is None:
                return None
            self.touch(app_id)
            sup = None
            if rec.status == AppStatus.IDLE and not self._closing.is_set():
                log.info("app %s: starting on demand", app_id)
                sup = self._prepare(rec)
                with self._lock:
                    self._on_demand[app_id] = sup
                sup.start()
            elif rec.status == AppStatus.STARTING:
                # a start on demand is waited for by every use; a boot start that takes
                # long is not (the call fails at once, as it does for a failed app)
                with self._lock:
                    sup = self._on_demand.get(app_id)
        if sup is not None:
            sup.wait_settled(timeout)
            with self._lock:
                if self._on_demand.get(app_id) is sup:
                    del self._on_demand[app_id]
        return rec

    def touch(self, app_id: str) -> None:
        """The app was used now (its idle time starts again)."""
        with self._lock:
            self._last_used[app_id] = time.monotonic()

    def stop_idle(self) -> list[str]:
        """Stop every running app unused for ``apps.idle_stop_s`` that is not busy; their ids.

        They become ``idle`` and start again on their next use.
        """
        limit = self.config.apps.idle_stop_s
        if limit <= 0:
            return []
        stopped = []
        for rec in self.apps():
            with self._lock:
                last = max(self._last_used.get(rec.id, 0.0), rec.ready_at or 0.0)
            if rec.status != AppStatus.RUNNING or time.monotonic() - last < limit:
                continue
            if self.busy(rec.id):
                continue
            with self._reload_lock:
                with self._lock:
                    used = self._last_used.get(rec.id, 0.0)
                if rec.status != AppStatus.RUNNING or self._closing.is_set() or used > last:
                    continue  # it was used, restarted or stopped meanwhile
                self._halt(rec.id, final=False)
                self._set(rec, AppStatus.IDLE)
            log.info(
                "app %s: stopped after %g s unused; it starts again when needed", rec.id, limit
            )
            stopped.append(rec.id)
        return stopped

    def stop_app(self, app_id: str) -> None:
        """Stop one app (status ``stopped``) until :meth:`restart` or a manifest change."""
        with self._reload_lock:
            if self.get(app_id) is None:
                raise AppNotFound(f"no app {app_id!r}")
            self._halt(app_id)

    def rescan(self) -> None:
        """One hot-reload pass: pick up new folders, drop removed ones, reload changed ones."""
        with self._reload_lock:
            if self._closing.is_set():
                return
            folders = self._folders()
            if folders is None:
                return  # a failed listing says nothing about which folders exist
            changed = False
            for app_id in [i for i in self._records if i not in folders]:
                log.info("app %s: folder removed, unloading", app_id)
                self._halt(app_id, final=False)
                with self._lock:
                    rec = self._records.pop(app_id)
                    self._prints.pop(app_id, None)
                    rec.status, rec.port = AppStatus.STOPPED, None
                self._notify(rec)  # get(app_id) is already None: listeners can tell "removed"
                changed = True
            for app_id, path in folders.items():
                try:
                    changed = self._rescan_one(app_id, path) or changed
                except OSError as e:  # transient (EMFILE...): look again next pass
                    self._scan_failed(e)
            if changed:
                self._write_maps()

    def reconfigure(self, config: Config) -> None:
        """Use new settings: the next start of an app (and its start timeout) follows them."""
        with self._lock:
            self.config = config

    # ---------------------------------------------------------------- queries

    def apps(self) -> list[AppRecord]:
        with self._lock:
            return [self._records[k] for k in sorted(self._records)]

    def get(self, app_id: str) -> AppRecord | None:
        with self._lock:
            return self._records.get(app_id)

    def public_apps(self) -> list[dict[str, Any]]:
        """Every app as the desktop sees it (``GET /api/apps``, the events ``hello``), with
        its :attr:`public_extra`."""
        return [{**r.public(self.config.language), **self.public_extra(r)} for r in self.apps()]

    def by_token(self, token: str) -> AppRecord | None:
        """The app whose current launch holds ``token`` (constant-time compare)."""
        if not token:
            return None
        found = None
        for rec in self.apps():
            # Compare against every record so the time taken says nothing about which matched.
            if hmac.compare_digest(rec.token.encode() or b"\0", token.encode()):
                found = rec
        return found

    def route_table(self) -> dict[str, dict[str, Any]]:
        return {
            r.id: {"name": r.manifest.name, "port": r.port, "endpoint": r.manifest.handle_endpoint}
            for r in self.apps()
            if r.manifest is not None and r.port is not None
        }

    def url(self, app_id: str) -> str:
        rec = self.get(app_id)
        if rec is None:
            raise AppNotFound(f"no app {app_id!r}")
        if rec.port is None:
            raise AppUnavailable(f"app {app_id!r} is not running: {rec.error or rec.status}")
        return f"http://127.0.0.1:{rec.port}"

    def ready(self) -> bool:
        """Every valid app has finished starting (it runs, or it failed); with apps on
        demand, as soon as the apps folder has been scanned (what starts at boot then is
        a warm-up the desktop does not wait on).

        False until the apps folder has been scanned, so an empty registry
        before discovery never reads as "ready".
        """
        with self._lock:
            return self._discovered and (
                self._warm_up or all(s.settled for s in self._sups.values())
            )

    def ports(self) -> set[int]:
        return {r.port for r in self.apps() if r.port is not None}

    def note_handle(self, app_id: str, timed_out: bool) -> None:
        """Tell an app's supervisor that a ``/handle`` call timed out (or was answered)."""
        with self._lock:
            sup = self._sups.get(app_id)
        if sup is not None:
            sup.note_handle(timed_out)

    # -------------------------------------------------------------- internals

    def _list_folders(self) -> dict[str, Path]:
        """The app folders by id; OSError when the apps folder cannot be listed."""
        entries = sorted(self.apps_dir.iterdir())
        return {p.name: p for p in entries if p.is_dir() and not p.name.startswith((".", "_"))}

    def _folders(self) -> dict[str, Path] | None:
        """:meth:`_list_folders`, or None (logged once per outage) when it fails."""
        try:
            folders = self._list_folders()
        except OSError as e:
            self._scan_failed(e)
            return None
        if self._scan_failing:
            self._scan_failing = False
            log.info("the apps folder %s can be read again; hot reload resumes", self.apps_dir)
        return folders

    def _scan_failed(self, e: OSError) -> None:
        if not self._scan_failing:
            log.warning(
                "cannot read the apps folder %s: %s; the apps stay as they are until "
                "it can be read again",
                self.apps_dir,
                e,
            )
        self._scan_failing = True

    def _rescan_one(self, app_id: str, path: Path) -> bool:
        """Load a new folder or reload a changed one; True if the route table changed."""
        rec = self.get(app_id)
        if rec is None:
            log.info("app %s: new folder, loading", app_id)
            rec = self._add(path, self.install_order([app_id])[app_id])
            if rec.status != AppStatus.INVALID:
                wanted = self.autostart([app_id])
                if wanted is None or app_id in wanted:
                    self._prepare(rec).start()
                else:
                    self._idle(rec)
            return True
        new, old = fingerprint(path, self._workdir_of(rec)), self._prints.get(app_id)
        if new != old:
            # Any change outside the workdir (code, manifest, role.md, a link, a new file):
            # the app restarts from a fresh validation, never keeps running on a re-read.
            log.info("app %s: folder changed, reloading", app_id)
            self._reload(rec)
            return True
        return False

    def _wait_settled(
        self, sups: list[AppSupervisor], timeout: float | None, cancel: threading.Event | None
    ) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        wake = cancel or self._closing
        while True:
            pending = [s.app_id for s in sups if not s.settled]
            if not pending or self._closing.is_set() or wake.is_set():
                return
            if deadline is not None and time.monotonic() >= deadline:
                log.warning(
                    "launcher: not waiting longer than %g s for %s: still starting "
                    "(each has up to %g s to listen)",
                    timeout,
                    ", ".join(pending),
                    self.config.app_start_timeout,
                )
                return
            left = SETTLE_LOOK if deadline is None else deadline - time.monotonic()
            with self._settled:
                if not all(s.settled for s in sups):
                    self._settled.wait(max(0.0, min(SETTLE_LOOK, left)))

    def _notify_settled(self) -> None:
        with self._settled:
            self._settled.notify_all()

    def _sweep(self) -> None:
        """Kill whatever is left of every process spawned in this run (after errors, too)."""
        with self._lock:
            procs = [p for p in self._spawned.values() if p.returncode is None]
            self._spawned.clear()
        for proc in procs:
            if proc.poll() is None:
                log.error("app process %d outlived its stop; killing its process group", proc.pid)
                procgroup.force_kill(proc)

    def _notify(self, rec: AppRecord) -> None:
        if self._on_status is None:
            return
        try:
            self._on_status(rec)
        except Exception:  # noqa: BLE001 - a listener's bug must not break the launcher
            log.exception("on_status callback failed for app %s", rec.id)

    def _set(self, rec: AppRecord, status: AppStatus, error: str | None = None) -> None:
        with self._lock:
            if rec.status == status and rec.error == error:
                return
            rec.status, rec.error = status, error
            if status not in (AppStatus.STARTING, AppStatus.RUNNING):
                rec.token, rec.pid, rec.launch_secret = "", None, ""
                if rec.port is not None:
                    self._sockets.pop(rec.port, None)
        self._notify(rec)

    def _count_installs(self, app_ids: list[str]) -> dict[str, int]:
        """Install generations kept in memory only (a launcher without a store)."""
        with self._lock:
            self._installs += 1
            return dict.fromkeys(app_ids, self._installs)

    def _add(self, path: Path, installed: int) -> AppRecord:
        """Create and register the record of a new folder (not started)."""
        rec, prints = self._load(path, None)
        with self._lock:
            rec.installed = installed
            self._records[rec.id] = rec
            self._prints[rec.id] = prints
            assign_display_names(list(self._records.values()))
        if rec.status == AppStatus.INVALID:
            log.warning("app %s is invalid: %s", rec.id, rec.error)
            self._notify(rec)
        return rec

    @staticmethod
    def _workdir_of(rec: AppRecord) -> str | None:
        return rec.manifest.workdir if rec.manifest is not None else None

    def _load(self, path: Path, workdir: str | None) -> tuple[AppRecord, tuple[Any, ...]]:
        """Validate a folder and fingerprint it as it was read (see :meth:`_rescan_one`).

        The fingerprint is taken before and after reading and kept only when both agree,
        so a change while reading is seen at the next pass. ``workdir`` is the guess of
        the folder to leave out (the previous manifest's); a new manifest may move it.
        """
        guess = workdir or DEFAULT_WORKDIR
        for _ in range(LOAD_ATTEMPTS):
            before = fingerprint(path, guess)
            rec = load_app(path, self.logs_dir)
            found = self._workdir_of(rec)
            if found == guess and fingerprint(path, guess) == before:
                return rec, before
            guess = found or guess
        return rec, ()  # kept changing: the next pass reloads it

    def _reload(self, rec: AppRecord, start: bool = False) -> AppSupervisor | None:
        """Re-read ``rec``'s folder, stop its process and start it again (if valid); an
        idle app stays idle unless ``start``.

        Reading first: a transient OSError leaves the running app untouched.
        """
        stay_idle = rec.status == AppStatus.IDLE and not start
        fresh, prints = self._load(rec.path, self._workdir_of(rec))
        self._halt(rec.id, final=False)
        with self._lock:
            self._prints[rec.id] = prints
            rec.manifest, rec.role_prompt, rec.workdir, rec.icon = (
                fresh.manifest,
                fresh.role_prompt,
                fresh.workdir,
                fresh.icon,
            )
            rec.restarts = 0
            assign_display_names(list(self._records.values()))
        if fresh.status == AppStatus.INVALID:
            log.warning("app %s is invalid: %s", rec.id, fresh.error)
            with self._lock:
                rec.port = None
            self._set(rec, AppStatus.INVALID, fresh.error)
            return None
        if stay_idle:
            self._idle(rec)
            return None
        sup = self._prepare(rec)
        sup.start()
        return sup

    def _idle(self, rec: AppRecord) -> None:
        """A valid app that does not run until it is needed: its port is kept for it."""
        with self._lock:
            rec.port = self._choose_port(rec)
            self._ports.remember(rec.id, rec.port)
        self._set(rec, AppStatus.IDLE)

    def _prepare(self, rec: AppRecord) -> AppSupervisor:
        """Assign a port, mark STARTING and build the supervisor."""
        assert rec.manifest is not None
        with self._lock:
            rec.port = self._choose_port(rec)
            self._ports.remember(rec.id, rec.port)
            sup = AppSupervisor(
                rec.id,
                rec.port,
                spawn=lambda: self._spawn(rec),
                policy=self.policy,
                start_timeout=self.config.app_start_timeout,
                grace=self.stop_grace,
                log_path=rec.log_path or self.logs_dir / f"{rec.id}.log",
                liveness=Liveness.from_config(self.config.apps),
                probe_headers=lambda: app_secret.headers(rec.launch_secret),
                on_settled=self._notify_settled,
                on_status=lambda status, error: self._supervisor_status(rec, sup, status, error),
            )
            self._sups[rec.id] = sup
        self._set(rec, AppStatus.STARTING)
        return sup

    def _choose_port(self, rec: AppRecord) -> int:
        """Manifest port, else the previous port map's, else a free one (never a taken one)."""
        assert rec.manifest is not None
        assigned = {r.id: r.port for r in self._records.values() if r.port and r is not rec}
        return self._ports.choose(
            rec.id, manifest_port=rec.manifest.port, current=rec.port, assigned=assigned
        )

    def socket_for(self, host: str, port: int) -> str | None:
        """The Unix socket serving ``http://host:port`` if a confined app has that port."""
        if host not in ("127.0.0.1", "localhost"):
            return None
        with self._lock:
            return self._sockets.get(port)

    def mount(self, session: requests.Session, **pool: int) -> None:
        """Make ``session`` reach confined apps (``http://127.0.0.1:PORT``) over their sockets."""
        session.mount("http://127.0.0.1:", UnixAdapter(self.socket_for, **pool))
        session.mount("http://localhost:", UnixAdapter(self.socket_for, **pool))

    def _sandbox(self, rec: AppRecord) -> Sandbox | None:
        """This launch's confinement, or None when apps run unconfined here."""
        if self._confinement_problem is not None:
            return None
        return self.confiner.prepare(
            rec.id, self.config.apps, network=self.network_granted(rec), api=self.channel_app
        )

    def _spawn(self, rec: AppRecord) -> subprocess.Popen[bytes]:
        assert rec.manifest is not None and rec.workdir is not None and rec.port is not None
        token = secrets.token_urlsafe(32)
        secret = app_secret.new_secret()
        env = app_env(
            os.environ,
            app_id=rec.id,
            port=rec.port,
            system_url=self.system_url,
            token=token,
            workdir=rec.workdir,
            project_root=PROJECT_ROOT,
            launch_secret=secret,
        )
        with self._lock:
            rec.token, rec.spawned_at = token, time.monotonic()
            rec.launch_secret = secret
        sandbox = self._sandbox(rec)
        # Every app starts through the SDK's boot, which signals readiness on this pipe.
        ready = os.pipe() if READY_PIPES else None
        if ready is not None:
            env[ENV_READY_FD] = str(ready[1])
        argv = [sys.executable, str(BOOT), rec.manifest.entry]
        how = "unconfined"
        try:
            if sandbox is not None:
                argv = self.confiner.argv(
                    sandbox,
                    entry=rec.manifest.entry,
                    app_dir=rec.path,
                    workdir=rec.workdir,
                    env=env,
                )
                how = "confined" + (" with its own network (pasta)" if sandbox.network else "")
        except BaseException:
            for fd in ready or ():
                os.close(fd)
            if sandbox is not None:
                sandbox.close()
            raise
        try:
            proc = spawn_process(
                argv,
                cwd=rec.path,
                # confined, the environment is given to bwrap (--setenv), not to bwrap itself
                env=env if sandbox is None else {"PATH": SANE_PATH},
                log_path=rec.log_path or self.logs_dir / f"{rec.id}.log",
                header=f"launch {rec.id} on port {rec.port}, {how}",
                log_max_bytes=self.config.apps.log_max_bytes,
                preexec=sandbox.preexec() if sandbox is not None else None,
                pass_fds=sandbox.pass_fds if sandbox is not None else (),
                ready=ready,
            )
        except BaseException:
            if sandbox is not None:
                sandbox.close()
            raise
        proc.sandbox = sandbox
        if sandbox is not None:
            try:
                sandbox.started()  # an app granted network runs once its NAT is up
            except BaseException:
                procgroup.stop(proc, self.stop_grace)
                release(proc)
                proc.close_ready()  # nobody waits on it: the supervisor never gets proc
                raise
        with self._lock:
            rec.confined = sandbox is not None
            if sandbox is not None:
                self._sockets[rec.port] = str(sandbox.app_socket)
            else:
                self._sockets.pop(rec.port, None)
            rec.pid = proc.pid
            self._spawned = {pid: p for pid, p in self._spawned.items() if p.returncode is None}
            self._spawned[proc.pid] = proc
        log.info("app %s: spawned pid %d on port %d", rec.id, proc.pid, rec.port)
        return proc

    def _supervisor_status(
        self, rec: AppRecord, sup: AppSupervisor, status: AppStatus, error: str | None
    ) -> None:
        with self._lock:
            rec.restarts = sup.restarts
            if status == AppStatus.RUNNING:
                rec.ready_at = sup.ready_at
        self._set(rec, status, error)
        if status == AppStatus.FAILED:
            log.error("app %s failed: %s", rec.id, (error or "").splitlines()[0])
            self._stopped(rec.id)

    def _halt(self, app_id: str, final: bool = True) -> None:
        """Stop an app's process; with ``final`` it becomes STOPPED.

        The supervisor is dropped only once its process is gone, so a stop
        that raised leaves it registered for :meth:`stop` to finish.
        """
        with self._lock:
            sup = self._sups.get(app_id)
            rec = self._records.get(app_id)
        if sup is None or rec is None:
            return
        sup.stop()
        with self._lock:
            if self._sups.get(app_id) is sup:
                del self._sups[app_id]
            rec.token, rec.pid, rec.launch_secret = "", None, ""
            if rec.port is not None:
                self._sockets.pop(rec.port, None)
        if final:
            self._set(rec, AppStatus.STOPPED)
        self._stopped(app_id)

    def _stopped(self, app_id: str) -> None:
        if self._on_stop is None:
            return
        try:
            self._on_stop(app_id)
        except Exception:  # noqa: BLE001
            log.exception("on_stop callback failed for app %s", app_id)

    def _write_maps(self) -> None:
        try:
            self._ports.save({r.id: r.port for r in self.apps() if r.port is not None})
            write_json_atomic(self.routes_path, self.route_table())
        except OSError as e:
            log.error("cannot write the port map / route table: %s", e)

    def _watch(self) -> None:
        while not self._closing.wait(self.watch_interval):
            try:
                self.rescan()
                self.stop_idle()
            except Exception:  # noqa: BLE001 - one bad pass must not end hot reload
                log.exception("hot-reload pass failed")
