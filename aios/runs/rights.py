"""Whose rights a call runs with (DESIGN §14.4): every app acts with its own, for the user.

An app is reached by the system only: the controller calls its ``/handle`` (and, for
its plan's steps, its ``@tool``s) on behalf of someone, in a session. While such a
call is in flight, the app is *acting* (a :class:`Frame`): for the user (the
``chain`` is the app alone) or for another app that launched it (the ``chain`` is
the launchers, outermost first, then the app). What the app asks the system for
meanwhile (``call_tool``, UI operations, permissions) is tied to that frame, never to
what the app says about itself:

- the session is the frame's (the one the user works in); a session id the app
  writes into its call is only a hint that picks among the app's own frames, so
  "allow for this session" is never borrowed from another session;
- the rights are the intersection of the chain's (:meth:`aios.runs.approvals.Approvals.decide`);
- launch chains are bounded (:func:`check_launch`): depth, cycles and fan-out.

A call made while no frame is in flight (an app's background thread) belongs to no
session: no "allow for this session" applies to it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Run = TypeVar("Run")
"""The run a frame belongs to (:class:`aios.runs.runs.Run`; generic so that this module,
which the approvals import, does not import the runs)."""

ARROW = " → "


@dataclass(frozen=True)
class Frame(Generic[Run]):
    """One call of the system to an app, in flight."""

    app: str
    session_id: str
    run: Run | None
    chain: tuple[str, ...]
    """Launchers, outermost first, then ``app``: ``("app",)`` when it acts for the user."""

    @property
    def launchers(self) -> tuple[str, ...]:
        return self.chain[:-1]


class Acting(Generic[Run]):
    """The frames in flight, per app (one per system, thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frames: dict[str, list[Frame[Run]]] = {}

    @contextmanager
    def frame(
        self, app: str, session_id: str, run: Run | None, launchers: Sequence[str] = ()
    ) -> Iterator[Frame[Run]]:
        """The app acts for ``launchers`` (or the user) in ``session_id`` for the block."""
        frame = Frame(app, session_id, run, (*launchers, app))
        with self._lock:
            self._frames.setdefault(app, []).append(frame)
        try:
            yield frame
        finally:
            with self._lock:
                frames = self._frames.get(app, [])
                if frame in frames:
                    frames.remove(frame)
                if not frames:
                    self._frames.pop(app, None)

    def frame_for(self, app: str, claimed_session: str | None) -> Frame[Run] | None:
        """The frame a call of ``app`` belongs to; None when the app is not acting now.

        Work another app launched comes first (its rights are the narrower ones); the
        app's claimed session only chooses among its own frames.
        """
        with self._lock:
            frames = list(self._frames.get(app, ()))
        if not frames:
            return None
        launched = [f for f in frames if f.launchers]
        pool = launched or frames
        return next((f for f in reversed(pool) if f.session_id == claimed_session), pool[-1])


@dataclass(frozen=True)
class LaunchLimits:
    max_depth: int
    """Launches in one chain: the user's app launching B is 1, B launching C is 2, …"""
    max_per_run: int
    """Launches one run may make in all (fan-out)."""


def check_launch(
    chain: Sequence[str], target: str, launches: int, limits: LaunchLimits
) -> str | None:
    """Why ``chain[-1]`` may not launch ``target`` now (a ``launch:`` error), or None.

    ``launches`` is how many launches the run made before this one.
    """
    parent = chain[-1]
    path = ARROW.join((*chain, target))
    if target == parent:
        return f"launch: {parent} cannot launch itself"
    if target in chain:
        return f"launch: {path} is a cycle: {target} already works in this chain"
    if len(chain) > limits.max_depth:
        return (
            f"launch: {path} is too deep: {len(chain)} launches in one chain, "
            f"at most {limits.max_depth}"
        )
    if launches >= limits.max_per_run:
        return (
            f"launch: {parent} cannot launch {target}: this run launched {launches} "
            f"apps already, at most {limits.max_per_run} per run"
        )
    return None


def asked_by(chain: Sequence[str], name: Callable[[str], str]) -> str:
    """``"Code, asked by Evil"`` (``"C, asked by B for A"`` for longer chains); the app's
    name alone for a chain of one."""
    names = [name(a) for a in chain]
    if len(names) < 2:
        return names[0] if names else ""
    text = f"{names[-1]}, asked by {names[-2]}"
    if len(names) > 2:
        text += " for " + ARROW.join(names[:-2])
    return text


def describe_ui_op(op: dict[str, Any]) -> str:
    """A checked UI operation in plain words: ``hide taskbar``, ``change_text win_hello
    to "系统设置"`` (every field the desktop receives, so the card hides nothing)."""
    fields = {k: v for k, v in dict(op).items() if v is not None}
    name, target = fields.pop("op", "?"), fields.pop("id", "?")
    window = fields.pop("window", None)
    where = f" in window {window}" if window else ""
    if name == "change_text" and set(fields) == {"text"}:
        return f"{name} {target}{where} to {json.dumps(fields['text'], ensure_ascii=False)}"
    rest = ", ".join(f"{k} {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items())
    return f"{name} {target}{where}" + (f" ({rest})" if rest else "")
