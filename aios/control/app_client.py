"""HTTP to one app (DESIGN §9): call slots, deadlines, capped reads, the secret header.

Calls to one app never wait on another app (issue 8 item 5). Every call the
controller makes to an app (``/handle``, one round at a time) takes one of that
app's slots first. An app has ``apps.max_concurrent_calls`` slots; a call that
finds them taken waits, behind that app only, for at most ``apps.busy_wait``
seconds, and at most ``apps.max_waiting_calls`` calls may wait: beyond that a
call fails at once with :class:`~aios.errors.AppBusy` (HTTP 503). A hung app
thus holds its own slots and nothing else.

Tasks of a plan run each in a thread of their own (:func:`run_in_thread`), not
in a bounded pool shared by every app: a shared pool filled by calls to a hung
app used to hold back calls to every other one. Threads that finished a task
wait a while for the next one, so a busy desktop does not start a thread per
call; a task that finds none idle gets a new one at once.

A call to an app waits for the reply in the calling thread: no thread per
call. The connections to each app's launch are kept alive between calls
(:class:`HttpTransport`).

What sends the request is a :class:`Transport`: :class:`HttpTransport` in the
system, a fake in tests (no processes, no HTTP). :class:`AppClient` does the rest
— the slot, the deadline, the checks on the reply — whatever the transport.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit

from aios.errors import AppBusy, AppReplyInvalid, AppTimeout, AppUnavailable, ProtocolError
from aios.protocol import app_secret, forwardable_reply, jsondepth
from aios_sdk._http import Connections, PeerTimeout, PeerUnreachable, readable

if TYPE_CHECKING:
    from aios.apphost.registry import AppRecord, Launcher
    from aios.config import AppsConfig, Config
    from aios.runs.approvals import Approvals

log = logging.getLogger(__name__)

T = TypeVar("T")

HOST = "127.0.0.1"
"""Where every app is addressed (a confined one through its socket, Host unchanged)."""
WORKER_IDLE_S = 60.0
"""Seconds an idle task thread waits for more work before it ends."""


@dataclass
class _Gate:
    cond: threading.Condition = field(default_factory=threading.Condition)
    busy: int = 0
    waiting: int = 0


class AppSlots:
    """The call slots of every app, created on first use; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[str, _Gate] = {}

    def _gate(self, app_id: str) -> _Gate:
        with self._lock:
            gate = self._gates.get(app_id)
            if gate is None:
                gate = self._gates[app_id] = _Gate()
            return gate

    def load(self, app_id: str) -> tuple[int, int]:
        """``(in flight, waiting)`` calls to ``app_id`` right now."""
        gate = self._gate(app_id)
        with gate.cond:
            return gate.busy, gate.waiting

    @contextmanager
    def slot(self, app_id: str, limits: AppsConfig) -> Iterator[None]:
        """Hold one of ``app_id``'s slots for the ``with`` block; AppBusy when none frees."""
        gate = self._gate(app_id)
        limit = limits.max_concurrent_calls
        with gate.cond:
            if gate.busy >= limit:
                if gate.waiting >= limits.max_waiting_calls:
                    raise AppBusy(
                        f"app {app_id!r} is busy: {gate.busy} calls are in flight "
                        f"and {gate.waiting} waiting for it; try again later"
                    )
                gate.waiting += 1
                try:
                    free = gate.cond.wait_for(lambda: gate.busy < limit, limits.busy_wait)
                finally:
                    gate.waiting -= 1
                if not free:
                    raise AppBusy(
                        f"app {app_id!r} is busy: none of its {limit} call slots "
                        f"freed within {limits.busy_wait:g} s; try again later"
                    )
            gate.busy += 1
        try:
            yield
        finally:
            with gate.cond:
                gate.busy -= 1
                gate.cond.notify()

    def forget(self, app_id: str) -> None:
        """Drop an idle app's gate (an unloaded app); a busy one keeps it."""
        with self._lock:
            gate = self._gates.get(app_id)
            if gate is not None and gate.busy == 0 and gate.waiting == 0:
                del self._gates[app_id]


class _Workers:
    """Threads for tasks, kept a while when idle: a task never waits for another to end
    (a new thread starts when none is idle), and a busy desktop starts no thread per
    call (an idle one takes the next task)."""

    def __init__(self, idle_s: float = WORKER_IDLE_S) -> None:
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def submit(self, job: Callable[[], None], name: str) -> None:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self)
            worker.give(job, name)
            worker.start()
        else:
            worker.give(job, name)

    def idle(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def retire(self, worker: _Worker) -> bool:
        """True when ``worker`` may end (nobody handed it a task meanwhile)."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


class _Worker(threading.Thread):
    def __init__(self, workers: _Workers) -> None:
        super().__init__(name="aios-task", daemon=True)
        self._workers = workers
        self._ready = threading.Condition()
        self._job: tuple[Callable[[], None], str] | None = None

    def give(self, job: Callable[[], None], name: str) -> None:
        with self._ready:
            self._job = (job, name)
            self._ready.notify()

    def run(self) -> None:
        while True:
            with self._ready:
                if self._job is None and not self._ready.wait_for(
                    lambda: self._job is not None, self._workers._idle_s
                ):
                    if self._workers.retire(self):
                        return
                    self._ready.wait_for(lambda: self._job is not None)
                assert self._job is not None
                (job, name), self._job = self._job, None
            self.name = name
            job()
            self.name = "aios-task"
            self._workers.idle(self)


_workers = _Workers()


def run_in_thread(fn: Callable[..., T], *args: object, name: str = "aios-task") -> Future[T]:
    """``fn(*args)`` in a thread of its own (an idle one, else a new daemon thread); its
    result (or exception) in the future."""
    fut: Future[T] = Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
            fut.set_exception(e)

    # the task runs in the caller's context variables (the trace's session and run)
    context = contextvars.copy_context()
    _workers.submit(lambda: context.run(run), name)
    return fut


# ------------------------------------------------------------------ transport


@dataclass(frozen=True)
class RawReply:
    """What an app answered: its HTTP status and body (None: larger than the limit)."""

    status: int
    body: bytes | None


class Transport(Protocol):
    """The one thing that sends a request to an app and returns its reply.

    Raises :class:`~aios.errors.AppTimeout` when the app does not answer within
    the timeouts and :class:`~aios.errors.AppUnavailable` when it cannot be reached.
    """

    def send(
        self,
        record: AppRecord,
        url: str,
        body: dict[str, Any],
        *,
        connect_timeout: float,
        deadline: Deadline,
        limit: int,
    ) -> RawReply: ...

    def close(self) -> None: ...


class Deadline:
    """When a call to an app times out: ``timeout`` seconds from now, moved on for as
    long as one of the app's own tool calls waits for the user (DESIGN §12)."""

    def __init__(self, app_id: str, timeout: float, waits: Callable[[], bool]) -> None:
        self.app_id, self.timeout, self._waits = app_id, timeout, waits
        self.at = time.monotonic() + timeout

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def renew(self) -> bool:
        """At the deadline: moved on when the app waits on a decision, else False."""
        if not self._waits():
            return False
        self.at = time.monotonic() + self.timeout
        return True

    def expired(self) -> AppTimeout:
        return AppTimeout(f"app {self.app_id!r} did not answer within {self.timeout:g} s")


class HttpTransport:
    """POST over HTTP (a confined app's Unix socket included), with the launch's secret.

    Connections to each app are kept alive between calls (:mod:`aios_sdk._http`), one
    pool per launch: a pool belongs to one app's one launch (its token, port and
    socket), so a kept connection never reaches an earlier process of the app, nor
    another app that got its port. The calling thread waits for the reply itself.
    """

    def __init__(self, launcher: Launcher) -> None:
        self._launcher = launcher
        self._pools: dict[str, tuple[tuple[str, int, str | None], Connections]] = {}
        self._lock = threading.Lock()

    def _pool(self, record: AppRecord, port: int) -> Connections:
        key = (record.token, port, self._launcher.socket_for(HOST, port))
        with self._lock:
            held = self._pools.get(record.id)
            if held is not None and held[0] == key:
                return held[1]
            pool = Connections(HOST, port, key[2])
            self._pools[record.id] = (key, pool)
            # a new launch (rare): the app's earlier one goes, and so do the pools of
            # apps relaunched or removed since, with the connections they kept
            stale = [held[1]] if held is not None else []
            for app_id, (other, kept) in list(self._pools.items()):
                current = self._launcher.get(app_id)
                if current is None or current.token != other[0]:
                    stale.append(kept)
                    del self._pools[app_id]
        for old in stale:
            old.close()
        return pool

    def send(
        self,
        record: AppRecord,
        url: str,
        body: dict[str, Any],
        *,
        connect_timeout: float,
        deadline: Deadline,
        limit: int,
    ) -> RawReply:
        """POST ``body`` and read the reply (its body None when larger than ``limit`` bytes)."""
        parts = urlsplit(url)
        port = parts.port or record.port or 80
        headers = {
            "Content-Type": "application/json",
            "Host": f"{HOST}:{port}",
            **app_secret.headers(record.launch_secret),
        }

        def wait(sock: socket.socket) -> None:
            while not readable(sock, deadline.remaining()):
                if not deadline.renew():
                    raise deadline.expired()

        data = json.dumps(body, ensure_ascii=False).encode()
        try:
            reply = self._pool(record, port).request(
                "POST",
                parts.path or "/",
                data,
                headers,
                connect_timeout=connect_timeout,
                read_timeout=connect_timeout,
                limit=limit,
                wait=wait,
            )
        except PeerTimeout as e:
            raise AppTimeout(
                f"app {record.id!r} did not answer within {connect_timeout:g} s: {e}"
            ) from e
        except PeerUnreachable as e:
            raise AppUnavailable(
                f"app {record.id!r} is not reachable on port {record.port}: {e}"
            ) from e
        return RawReply(reply.status, reply.body)

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for _, pool in pools:
            pool.close()


# ------------------------------------------------------------------ the client


class AppClient:
    """One call to one app's ``/handle``: a slot, a deadline, a checked reply.

    ``settings`` and ``handle_timeout`` are asked at every call, so a settings
    change is in force from the next call on.
    """

    def __init__(
        self,
        *,
        launcher: Launcher,
        approvals: Approvals,
        transport: Transport,
        settings: Callable[[], Config],
        handle_timeout: Callable[[], float],
    ) -> None:
        self.launcher = launcher
        self.approvals = approvals
        self.transport = transport
        self._settings = settings
        self._handle_timeout = handle_timeout
        self.slots = AppSlots()
        """Per-app call slots: a hung app holds its own, never another app's."""
        self._deadlines: dict[str, dict[int, Deadline]] = {}
        """Per app, the ``time.monotonic()`` deadline of each call in flight (part 15-L)."""
        self._deadline_ids = itertools.count()
        self._deadline_lock = threading.Lock()

    def close(self) -> None:
        self.transport.close()

    def app_deadline(self, app_id: str) -> float | None:
        """When the latest call in flight to ``app_id`` times out (``time.monotonic()``),
        or None: an LLM call the app makes for it is closed then (/api/sys/llm)."""
        with self._deadline_lock:
            pending = self._deadlines.get(app_id)
            return max(d.at for d in pending.values()) if pending else None

    def post(
        self, record: AppRecord, body: dict[str, Any], run_id: str | None = None
    ) -> dict[str, Any]:
        """The app's checked reply to ``body`` (system-only fields dropped).

        AppUnavailable / AppTimeout / AppBusy when it cannot be had;
        AppReplyInvalid when the app answered something unusable.
        """
        config = self._settings()
        if record.status != "running":  # an idle app starts now (apps.autostart)
            record = self.launcher.ensure_running(record.id, config.app_start_timeout) or record
        else:
            self.launcher.touch(record.id)
        if record.status != "running" or record.port is None or record.manifest is None:
            raise AppUnavailable(
                f"app {record.id!r} is not running (status: {record.status})"
                + (f": {record.error}" if record.error else "")
            )
        url = self.launcher.url(record.id) + record.manifest.handle_endpoint
        limit = config.max_reply_bytes
        with self.slots.slot(record.id, config.apps):
            try:
                reply = self._exchange(record, url, body, limit)
            except AppTimeout as e:
                log.warning("%s (run %s)", e, run_id or "-")
                self.launcher.note_handle(record.id, timed_out=True)
                raise
        self.launcher.note_handle(record.id, timed_out=False)
        return _checked(record.id, reply, limit, config.web.max_json_depth)

    def _exchange(self, record: AppRecord, url: str, body: dict[str, Any], limit: int) -> RawReply:
        """POST ``body`` and read the reply, within ``handle_timeout``...

        ...except while one of the app's own tool calls waits for the user
        (DESIGN §12: "the system does not time an app out while one of its
        calls waits for the user"): the deadline moves on for as long as the
        app waits on a decision (:class:`Deadline`).
        """
        config = self._settings()
        deadline = Deadline(
            record.id, self._handle_timeout(), lambda: self.approvals.waits_for(record.id)
        )
        key = next(self._deadline_ids)
        with self._deadline_lock:
            self._deadlines.setdefault(record.id, {})[key] = deadline
        try:
            return self.transport.send(
                record,
                url,
                body,
                connect_timeout=config.handle_timeout,
                deadline=deadline,
                limit=limit,
            )
        finally:
            with self._deadline_lock:
                pending = self._deadlines.get(record.id, {})
                pending.pop(key, None)
                if not pending:
                    self._deadlines.pop(record.id, None)


def _checked(app_id: str, reply: RawReply, limit: int, max_depth: int) -> dict[str, Any]:
    """The reply as the system forwards it, or AppReplyInvalid saying what is wrong."""
    raw = reply.body
    if raw is None:
        raise AppReplyInvalid(
            f"app {app_id!r} replied with more than {limit} bytes; the reply was discarded"
        )
    if reply.status >= 400 and not raw.strip().startswith(b"{"):
        raise AppReplyInvalid(
            f"app {app_id!r} answered HTTP {reply.status}: {raw[:200].decode('utf-8', 'replace')}"
        )
    try:
        payload = jsondepth.loads(raw, max_depth)
    except jsondepth.TooDeep as e:
        raise AppReplyInvalid(f"app {app_id!r} replied with invalid JSON: {e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AppReplyInvalid(f"app {app_id!r} replied with invalid JSON: {e}") from e
    try:
        return forwardable_reply(payload)
    except ProtocolError as e:
        raise AppReplyInvalid(f"app {app_id!r}: {e}") from e
