"""HTTP to one app (DESIGN §9): call slots, deadlines, capped reads, the secret header.

Calls to one app never wait on another app (issue 8 item 5). Every call the
controller makes to an app (``/handle``, one round at a time) takes one of that
app's slots first. An app has ``apps.max_concurrent_calls`` slots; a call that
finds them taken waits, behind that app only, for at most ``apps.busy_wait``
seconds, and at most ``apps.max_waiting_calls`` calls may wait: beyond that a
call fails at once with :class:`~aios.errors.AppBusy` (HTTP 503). A hung app
thus holds its own slots and nothing else.

Tasks of a plan run each in a thread of their own (:func:`run_in_thread`), not
in a pool shared by every app: a shared pool filled by calls to a hung app
used to hold back calls to every other one.

What sends the request is a :class:`Transport`: :class:`HttpTransport` in the
system, a fake in tests (no processes, no HTTP). :class:`AppClient` does the rest
— the slot, the deadline, the checks on the reply — whatever the transport.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import requests
from requests.adapters import HTTPAdapter

from aios.errors import AppBusy, AppReplyInvalid, AppTimeout, AppUnavailable, ProtocolError
from aios.protocol import app_secret, forwardable_reply, jsondepth

if TYPE_CHECKING:
    from aios.apphost.registry import AppRecord, Launcher
    from aios.config import AppsConfig, Config
    from aios.runs.approvals import Approvals

log = logging.getLogger(__name__)

T = TypeVar("T")


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


def run_in_thread(fn: Callable[..., T], *args: object, name: str = "aios-task") -> Future[T]:
    """``fn(*args)`` in a new daemon thread; its result (or exception) in the future."""
    fut: Future[T] = Future()

    def run() -> None:
        if not fut.set_running_or_notify_cancel():
            return
        try:
            fut.set_result(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the future
            fut.set_exception(e)

    # the thread inherits the caller's context variables (the trace's session and run)
    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(run,), name=name, daemon=True).start()
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
        read_timeout: float,
        limit: int,
    ) -> RawReply: ...

    def close(self) -> None: ...


class HttpTransport:
    """POST over HTTP (a confined app's Unix socket included), with the launch's secret."""

    def __init__(self, launcher: Launcher) -> None:
        # One session for all request threads (the HTTP server makes a thread per
        # request): its connection pool keeps connections to the apps alive.
        self._http = requests.Session()
        self._http.trust_env = False
        self._http.mount("http://", HTTPAdapter(pool_connections=32, pool_maxsize=32))
        launcher.mount(self._http, pool_connections=32, pool_maxsize=32)

    def send(
        self,
        record: AppRecord,
        url: str,
        body: dict[str, Any],
        *,
        connect_timeout: float,
        read_timeout: float,
        limit: int,
    ) -> RawReply:
        """POST ``body`` and read the reply (its body None when larger than ``limit`` bytes)."""
        try:
            resp = self._http.post(
                url,
                json=body,
                timeout=(connect_timeout, read_timeout),
                headers=app_secret.headers(record.launch_secret),
                stream=True,
            )
        except requests.Timeout as e:
            raise AppTimeout(
                f"app {record.id!r} did not answer within {connect_timeout:g} s"
            ) from e
        except requests.ConnectionError as e:
            raise AppUnavailable(f"app {record.id!r} is not reachable on port {record.port}") from e
        try:
            return RawReply(resp.status_code, _read_capped(resp, limit))
        except requests.Timeout as e:
            raise AppTimeout(
                f"app {record.id!r} did not finish its reply within {connect_timeout:g} s"
            ) from e
        finally:
            resp.close()

    def close(self) -> None:
        self._http.close()


def _read_capped(resp: requests.Response, limit: int) -> bytes | None:
    chunks, total = [], 0
    for chunk in resp.iter_content(65536):
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


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
        self._deadlines: dict[str, dict[int, float]] = {}
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
            return max(pending.values()) if pending else None

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
        calls waits for the user"): the call is made on its own thread with a
        socket timeout that covers the longest wait, and the deadline here
        moves on for as long as the app waits on a decision.
        """
        config = self._settings()
        timeout = self._handle_timeout()
        fut = run_in_thread(
            lambda: self.transport.send(
                record,
                url,
                body,
                connect_timeout=config.handle_timeout,
                read_timeout=timeout + config.approvals.timeout,
                limit=limit,
            ),
            name=f"aios-call-{record.id}",
        )
        deadline = time.monotonic() + timeout
        key = next(self._deadline_ids)
        with self._deadline_lock:
            self._deadlines.setdefault(record.id, {})[key] = deadline
        try:
            while True:
                try:
                    return fut.result(timeout=max(0.0, deadline - time.monotonic()))
                except FutureTimeout:
                    if self.approvals.waits_for(record.id):
                        deadline = time.monotonic() + timeout
                        with self._deadline_lock:
                            self._deadlines[record.id][key] = deadline
                        continue
                    raise AppTimeout(
                        f"app {record.id!r} did not answer within {timeout:g} s"
                    ) from None
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
