"""Runs (DESIGN §12): every instruction, open and action, from start to its final view.

A :class:`Run` is what the user can watch and stop: its state (``running``
→ ``waiting`` for the user → ``running`` → ``done`` | ``failed`` |
``cancelled`` | ``interrupted``), its steps with their risk, decision and
status, and a cancel flag that the executor looks at before every step and
that aborts a command in flight. :class:`Runs` keeps the active ones,
persists every change (:class:`~aios.store.runs.RunStore`) and announces it
(``run`` and ``step`` events).

An entry point (``POST /api/instruction``, ``/action``, ``/apps/<id>/open``)
runs its work on a thread and waits until the work is finished or the run
pauses for the user (:meth:`Run.wait_settled`); paused, it answers at once
with ``state: "waiting"`` and the pending interaction, and the work goes on,
ending with a ``view`` event carrying the ``run_id``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aios.errors import Conflict, NotFound
from aios.names import new_id
from aios.protocol import ToolResult
from aios.protocol.outbound import Taint, read_of

if TYPE_CHECKING:
    from aios.events import EventBus
    from aios.store.runs import RunStore

log = logging.getLogger(__name__)

ACTIVE = ("running", "waiting")
FINAL = ("done", "failed", "cancelled", "interrupted")
FINISH_WAIT = 5.0
"""Seconds a cancelled run's app gets to show its final view before the window shows
a cancelled view instead (DESIGN §12: "briefly bounded")."""


@dataclass
class Run:
    run_id: str
    session_id: str
    app: str
    kind: str
    text: str | None = None
    state: str = "running"
    cancel: threading.Event = field(default_factory=threading.Event)
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Interactions this run waits on (their public form)."""
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _finished: bool = False
    response: dict[str, Any] | None = None
    unsaved: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    unsaved_plan: list[dict[str, Any]] = field(default_factory=list)
    """A quiet plan (see :meth:`Runs.plan`) stored only when it ends."""
    """Step changes announced but not stored yet (see :meth:`Runs.step`)."""
    waits: int = 0
    """Interactions of this run pending now (tasks of one instruction ask in parallel)."""
    paused: bool = False
    """It waited for the user at least once: its final views go out as events."""
    covered: list[str] = field(default_factory=list)
    """Calls a yes to one of this run's confirms approved, once each (:func:`covered_key`)."""
    locale: str = ""
    """The UI language its messages are in: the request's, else ``config.language``."""
    launches: int = 0
    """``launch`` steps this run made (DESIGN §14.4: a fan-out over the limit is refused)."""
    taint: Taint = field(default_factory=Taint)
    """What it has read that the user did not type (DESIGN §14.5): once not empty, every
    request and command of the run asks, and the card says what was read."""

    def public(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "session_id": self.session_id,
            "app": self.app,
            "kind": self.kind,
            "state": self.state,
            "text": self.text,
            "steps": list(self.steps.values()),
            "pending": list(self.pending),
        }

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Until the work finished (True) or the run waits for the user (False)."""
        with self._changed:
            self._changed.wait_for(lambda: self._finished or self.state == "waiting", timeout)
            return self._finished

    def wait_finished(self, timeout: float | None = None) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._finished, timeout)

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()


class Runs:
    """The active runs of this system, persisted and announced."""

    def __init__(self, store: RunStore, bus: EventBus, clock: Callable[[], float] = time.time):
        self._store = store
        self._bus = bus
        self._clock = clock
        self._lock = threading.Lock()
        self.lock = threading.RLock()
        """Held while a run's pending interactions and waiting state change together."""
        self._active: dict[str, Run] = {}
        self.closing = threading.Event()
        """Set by :meth:`shutdown`: nothing more is written for the runs still at work."""
        self.language: Callable[[], str] = lambda: "zh-CN"
        """The UI language (``config.language``; set by the system) for a run's messages."""
        self._loose: dict[str, Taint] = {}
        """App id -> what its calls outside any run have read (they form one run)."""
        self._cached: dict[tuple[str, str], list[str]] = {}
        """(app id, cache key) -> what the run that stored the value had read: reading the
        value back carries that taint into the run that reads it (in memory only)."""

    def start(
        self,
        kind: str,
        app: str,
        session_id: str,
        text: str | None = None,
        request: dict[str, Any] | None = None,
    ) -> Run:
        """A new run; ``request`` is what a retry sends again (``POST /api/runs/<id>/retry``)."""
        run = Run(run_id=new_id("run"), session_id=session_id, app=app, kind=kind, text=text)
        run.locale = str((request or {}).get("locale") or self.language())
        self._store.create_run(
            run.run_id, session_id=session_id, app=app, kind=kind, text=text, request=request
        )
        with self._lock:
            self._active[run.run_id] = run
        self._announce(run)
        return run

    def get(self, run_id: str) -> Run | None:
        with self._lock:
            return self._active.get(run_id)

    def stored(self, run_id: str) -> dict[str, Any] | None:
        """The run as the store keeps it (its final response, actions included), ended
        or not: a topic's last view is shown again from it (aios/control/topics.py)."""
        return self._store.run(run_id)

    def active(self, session_id: str | None = None) -> list[Run]:
        with self._lock:
            runs = list(self._active.values())
        return [r for r in runs if session_id is None or r.session_id == session_id]

    def note_read(
        self, run: Run | None, app: str, tool: str, args: Any, result: ToolResult
    ) -> None:
        """A step or call ran: what it read that the user did not type taints its run
        (a call outside any run taints the app's calls outside runs)."""
        if result.status != "ok" and result.result is None:
            return  # nothing came back
        given = args if isinstance(args, dict) else {}
        taint = self.taint_of(run, app)
        key = (app, str(given.get("key")))
        if tool == "cache_set":  # the value may hold what the run read: it keeps the taint
            reads = self.reads_for(run, app)
            with self._lock:
                if reads:
                    self._cached[key] = reads
                else:
                    self._cached.pop(key, None)
            return
        if tool == "cache_get":
            with self._lock:
                carried = list(self._cached.get(key, ()))
            for what in carried:
                taint.add(what)
            return
        taint.add(read_of(tool, given))

    def taint_of(self, run: Run | None, app: str) -> Taint:
        """The taint a call of ``app`` is judged by: its run's, else the app's calls'
        outside runs."""
        if run is not None:
            return run.taint
        with self._lock:
            return self._loose.setdefault(app, Taint())

    def reads_for(self, run: Run | None, app: str) -> list[str]:
        """What a step or call of ``app`` in ``run`` (None: outside any run) is tainted
        by: its run's reads, and those of every other active run of the app, in any
        session (one process holds what they all read; a session id the app names
        cannot take a call out of the run it is in)."""
        reads = self.taint_of(run, app).snapshot()
        for other in self.active():
            if other is not run and app in other.app.split(","):
                reads += [r for r in other.taint.snapshot() if r not in reads]
        return reads

    def shutdown(self) -> None:
        """The system stops: its active runs end ``interrupted`` (kept for the next start)."""
        self.closing.set()
        with self._lock:
            runs, self._active = list(self._active.values()), {}
        for run in runs:
            run.cancel.set()
        try:
            self._store.interrupt_unfinished_runs()
        except Exception:  # noqa: BLE001 - the next start does it again
            log.exception("could not mark the active runs interrupted")

    def set_state(self, run: Run, state: str, response: dict[str, Any] | None = None) -> None:
        if run.state in FINAL or self.closing.is_set():
            return
        run.state = state
        if state == "waiting":
            run.paused = True
        if response is not None:
            run.response = response
        self._store.set_run_state(run.run_id, state, response=response)
        self._announce(run)
        run._notify()

    def finish(self, run: Run, response: dict[str, Any] | None, *, failed: bool = False) -> None:
        """The work ended: the run becomes done, failed or (if asked to stop) cancelled."""
        state = "cancelled" if run.cancel.is_set() else ("failed" if failed else "done")
        self.flush(run)
        self.set_state(run, state, response)
        with run._changed:
            run._finished = True
        run._notify()
        with self._lock:
            self._active.pop(run.run_id, None)

    def plan(self, run: Run, entries: list[dict[str, Any]]) -> None:
        """A new plan (one round of steps) of the run: stored after the earlier ones.

        A plan of quiet steps only (nothing that acts, nothing to ask) is
        stored when it ends, with its results, in one transaction (:meth:`flush`).
        """
        for entry in entries:
            run.steps[str(entry["step_id"])] = dict(entry)
        if self.closing.is_set():
            return
        quiet = all(
            e.get("risk") not in ("medium", "high") and e.get("rule") == "allow" for e in entries
        )
        if quiet:
            run.unsaved_plan = [dict(e) for e in entries]
        else:
            self._store.set_steps(run.run_id, entries, append=True)
        for entry in entries:
            self._emit_step(run, entry)

    def step(self, run: Run, entry: dict[str, Any]) -> None:
        """A step changed (started, finished, decided): announce it at once; store it.

        A step that acts (``medium``/``high``: writes, commands) is stored as it
        starts and ends, so after a crash the run says which one may have half
        run. The quiet steps (``safe``/``low``) are stored in one transaction
        with the next write of the run, or when the plan ends (:meth:`flush`):
        a plan of reads costs no database write per step (bench).
        """
        key = str(entry["step_id"])
        merged = {**run.steps.get(key, {}), **entry}
        run.steps[key] = merged
        if self.closing.is_set():
            return
        fields = {k: v for k, v in entry.items() if k != "step_id"}
        acts = merged.get("risk") in ("medium", "high")
        if acts or "decision" in entry:
            run.unsaved.append((key, fields))
            self._write_steps(run)
        elif entry.get("status") != "started":
            run.unsaved.append((key, fields))
        self._emit_step(run, merged)

    def flush(self, run: Run) -> None:
        """Store the quiet steps' statuses not written yet (a plan ended)."""
        if self.closing.is_set():
            return
        if run.unsaved_plan:
            plan, run.unsaved_plan = run.unsaved_plan, []
            changes: dict[str, dict[str, Any]] = {}
            for key, fields in run.unsaved:
                changes.setdefault(key, {}).update(fields)
            run.unsaved = [u for u in run.unsaved if u[0] not in {str(e["step_id"]) for e in plan}]
            self._store.set_steps(
                run.run_id,
                [{**e, **changes.get(str(e["step_id"]), {})} for e in plan],
                append=True,
            )
        if run.unsaved:
            self._write_steps(run)

    def _write_steps(self, run: Run) -> None:
        updates, run.unsaved = run.unsaved, []
        self._store.update_steps(run.run_id, updates)

    def progress(self, run: Run, step_id: str, report: dict[str, Any]) -> None:
        """How far a long step got: announced only (a ``progress`` event), not stored."""
        self._bus.emit(
            "progress",
            {
                "run_id": run.run_id,
                "app": run.app,
                "session_id": run.session_id,
                "step_id": step_id,
                **report,
            },
        )

    def _emit_step(self, run: Run, entry: dict[str, Any]) -> None:
        self._bus.emit(
            "step",
            {"run_id": run.run_id, "app": run.app, "session_id": run.session_id, **entry},
        )

    def cancel(self, run_id: str) -> dict[str, Any]:
        """Stop a run; 404 for an unknown one, 409 for one that already ended."""
        run = self.get(run_id)
        if run is None:
            row = self._store.run(run_id)
            if row is None:
                raise NotFound(f"no run {run_id!r}")
            raise Conflict(f"run {run_id} already ended: {row.get('state')}", current=row)
        run.cancel.set()
        run._notify()
        log.info("run %s (%s) cancelled by the user", run_id, run.app)
        return {"run_id": run_id, "state": "cancelling"}

    def cancel_session(self, session_id: str) -> list[str]:
        """Cancel the session's active runs (typed or spoken 停止 / 取消 / stop)."""
        ids = [r.run_id for r in self.active(session_id)]
        for run_id in ids:
            try:
                self.cancel(run_id)
            except (NotFound, Conflict):
                pass
        return ids

    def _announce(self, run: Run) -> None:
        self._bus.emit(
            "run",
            {
                "run_id": run.run_id,
                "state": run.state,
                "app": run.app,
                "session_id": run.session_id,
                "kind": run.kind,
            },
        )


_WAITING = {False: "等待你的确认", True: "Waiting for your approval"}


def waiting_view(run: Run) -> dict[str, Any]:
    """What an entry point answers while its run waits for the user (DESIGN §12)."""
    en = run.locale.lower().startswith("en")
    return {
        "status": "ok",
        "view_type": "text",
        "data": {"content": _WAITING[en] + "…"},
        "actions": [],
        "message": _WAITING[en],
        "run_id": run.run_id,
        "state": "waiting",
        "pending": list(run.pending),
    }
