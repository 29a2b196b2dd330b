"""App instances and focus (DESIGN §13): which apps are open, in which session, in front.

The registry (:mod:`aios.apphost.registry`) says which apps exist; an **instance**
says that an app is open in a session: ``starting`` → ``foreground`` |
``background`` → ``stopping`` → ``stopped`` (or ``failed``), with the
instance that launched it (``parent_instance_id``) when a plan asked another
app for a result. Each session keeps a focus stack: opening or focusing an
instance brings it to the front, closing one gives the focus back to the
one below it (a launched child's parent first).

A parent waiting on a child (:meth:`Instances.await_child`) is woken by the
child's ``result`` (a reply field), by the user closing the child's window,
by the child failing, or by the run being cancelled or the wait expiring.
Instances live in memory: after a restart the windows come back from the
saved layout, not as instances.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aios.errors import NotFound
from aios.names import new_id

if TYPE_CHECKING:
    from aios.events import EventBus
    from aios.quotas import Quotas

OPEN_STATES = ("starting", "foreground", "background", "suspended")
WAIT_SLICE = 0.25
"""Seconds between two looks at a waiting parent's cancel flag and deadline."""


@dataclass
class Instance:
    instance_id: str
    app: str
    session_id: str
    state: str = "starting"
    parent_instance_id: str | None = None
    started_at: float = 0.0
    stopped_at: float | None = None
    error: str | None = None
    awaited: bool = False
    """A parent waits for this child's result."""
    outcome: dict[str, Any] | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "instance_id": self.instance_id,
            "app": self.app,
            "session_id": self.session_id,
            "state": self.state,
            "parent_instance_id": self.parent_instance_id,
            "started_at": self.started_at,
        }
        if self.stopped_at is not None:
            out["stopped_at"] = self.stopped_at
        if self.error:
            out["error"] = self.error
        return out


class Instances:
    """The open apps of every session and each session's focus stack."""

    def __init__(self, bus: EventBus, clock: Callable[[], float] = time.time) -> None:
        self._bus = bus
        self._clock = clock
        self._lock = threading.RLock()
        self._all: dict[str, Instance] = {}
        self._stacks: dict[str, list[str]] = {}
        """session id -> open instance ids, the focused one last."""
        self.quotas: Quotas | None = None
        """Bounds each app's open instances (DESIGN §14.6); set by the system."""

    # ------------------------------------------------------------ queries

    def list(self, session: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            items = [i for i in self._all.values() if session is None or i.session_id == session]
        return [i.public() for i in sorted(items, key=lambda i: i.started_at)]

    def current(self, app: str, session_id: str) -> Instance | None:
        """The app's open instance in the session, if any."""
        with self._lock:
            for i in self._all.values():
                if i.app == app and i.session_id == session_id and i.state in OPEN_STATES:
                    return i
        return None

    def count(self, app: str) -> int:
        """The app's open instances, across sessions."""
        with self._lock:
            return sum(1 for i in self._all.values() if i.app == app and i.state in OPEN_STATES)

    def get(self, instance_id: str, session: str | None = None) -> Instance:
        """404 for an unknown instance, or one of another session than ``session``."""
        with self._lock:
            inst = self._all.get(instance_id)
        if inst is None or (session is not None and inst.session_id != session):
            raise NotFound(
                f"no instance {instance_id!r}" + (f" in session {session}" if session else "")
            )
        return inst

    # ------------------------------------------------------------ changes

    def open(self, app: str, session_id: str, parent: Instance | None = None) -> Instance:
        """Create or raise the app's instance in the session, in the foreground."""
        with self._lock:
            inst = self.current(app, session_id)
            if inst is None:
                if self.quotas is not None:
                    self.quotas.check("instances", app, self.count(app))
                inst = Instance(
                    instance_id=new_id("inst"),
                    app=app,
                    session_id=session_id,
                    parent_instance_id=parent.instance_id if parent else None,
                    started_at=self._clock(),
                )
                self._all[inst.instance_id] = inst
            elif parent is not None and inst.parent_instance_id is None:
                inst.parent_instance_id = parent.instance_id
            self._to_front(inst)
        return inst

    def focus(self, instance_id: str, session: str | None = None) -> Instance:
        inst = self.get(instance_id, session)
        with self._lock:
            if inst.state not in OPEN_STATES:
                raise NotFound(f"instance {instance_id} is {inst.state}")
            self._to_front(inst)
        return inst

    def close(self, instance_id: str, session: str | None = None) -> Instance:
        """The user closed the window: the instance stops; a waiting parent learns it."""
        inst = self.get(instance_id, session)
        self._stop(inst, "stopped", outcome={"result": None, "closed_by_user": True})
        return inst

    def fail(self, app: str, error: str) -> None:
        """The app crashed or failed: each of its open instances fails, parents learn it."""
        with self._lock:
            hit = [i for i in self._all.values() if i.app == app and i.state in OPEN_STATES]
        for inst in hit:
            inst.error = error
            self._stop(inst, "failed", outcome={"error": error})

    def reply(self, app: str, session_id: str, response: dict[str, Any]) -> None:
        """An app answered in the session: a ``result`` ends it as an awaited child."""
        if "result" not in response:
            return
        inst = self.current(app, session_id)
        if inst is not None and inst.awaited:
            self._stop(
                inst, "stopped", outcome={"result": response["result"], "closed_by_user": False}
            )

    def await_child(
        self, child: Instance, cancel: threading.Event, deadline: float
    ) -> dict[str, Any] | str:
        """Block until the child ends: its outcome, or ``expired`` / ``cancelled``."""
        while not child.done.wait(WAIT_SLICE):
            if cancel.is_set():
                self._stop(child, "stopped", outcome=None)
                return "cancelled"
            if self._clock() >= deadline:
                self._stop(child, "stopped", outcome=None)
                return "expired"
        return child.outcome or {"result": None, "closed_by_user": True}

    def _stop(self, inst: Instance, state: str, outcome: dict[str, Any] | None) -> None:
        with self._lock:
            if inst.state not in OPEN_STATES:
                return
            inst.state, inst.stopped_at = state, self._clock()
            if inst.outcome is None:
                inst.outcome = outcome
            stack = self._stacks.get(inst.session_id, [])
            if inst.instance_id in stack:
                stack.remove(inst.instance_id)
            self._announce(inst)
            back = self._all.get(inst.parent_instance_id or "")
            if back is None or back.state not in OPEN_STATES:
                back = self._all.get(stack[-1]) if stack else None
            if back is not None:
                self._to_front(back)
        inst.done.set()

    def _to_front(self, inst: Instance) -> None:
        stack = self._stacks.setdefault(inst.session_id, [])
        if stack and stack[-1] == inst.instance_id and inst.state == "foreground":
            return
        for other_id in stack:
            other = self._all[other_id]
            if other is not inst and other.state == "foreground":
                other.state = "background"
                self._announce(other)
        if inst.instance_id in stack:
            stack.remove(inst.instance_id)
        stack.append(inst.instance_id)
        inst.state = "foreground"
        self._announce(inst)
        self._bus.emit(
            "focus",
            {"session_id": inst.session_id, "instance_id": inst.instance_id, "app": inst.app},
        )

    def _announce(self, inst: Instance) -> None:
        self._bus.emit("instance", inst.public())
