"""Process groups: start a program in a session of its own, and stop all of it.

Every process the system starts (an app, a command stage, a background
process) leads a new session, so its process group holds what it spawns.
This module is the one place that knows how such a group is stopped:

* :func:`popen` starts a program as the leader of a new session that dies
  with the system (:mod:`aios.host.orphan_guard`: death signal, spawner thread,
  guard process);
* :func:`stop` escalates SIGTERM → grace → SIGKILL over the whole group and
  the descendants that left it (setsid), reaps, and says which path ran
  (a :class:`Stopped`, like jupyter_client's restarter reports its kills);
  when ``/proc`` cannot be read (EMFILE...) it falls back to
  :func:`force_kill`, which needs no file descriptor;
* :func:`kill_group` clears what a dead leader left in its group;
* :func:`signal_group` and :func:`has_exited` are the two primitives, for
  callers (the command runner) that must signal before they reap.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from enum import StrEnum
from typing import Any, TypeVar

import psutil

from aios.host import orphan_guard

log = logging.getLogger(__name__)

KILL_WAIT = 5.0
"""Seconds to wait for SIGKILLed processes to disappear."""
STOP_POLL = 0.02
"""Seconds between two looks at a group that was asked to terminate."""
REAP_POLL = 0.01
"""Seconds between two looks at SIGKILLed processes."""


class Stopped(StrEnum):
    """Which path a stop took."""

    EXITED = "exited"
    """It had already exited (whatever it left in its group was killed)."""
    TERMINATED = "terminated"
    """SIGTERM sufficed."""
    KILLED = "killed"
    """Something was still alive after the grace period: SIGKILL."""
    FORCE_KILLED = "force-killed"
    """The orderly stop failed (``/proc`` unreadable): SIGKILL to the group and the leader."""


P = TypeVar("P", bound="subprocess.Popen[bytes]")


def popen(argv: list[str], cls: type[P], **kwargs: Any) -> P:
    """Start ``argv`` with ``cls`` (a :class:`subprocess.Popen`) as the leader of a new session.

    Its own session is its own process group, so :func:`stop` reaches what it spawns.
    It gets ``PR_SET_PDEATHSIG(SIGKILL)`` before any of its code runs (a
    ``preexec_fn`` in ``kwargs`` runs after that), it is forked on the
    long-lived spawner thread, and its group is registered with the orphan
    guard until :func:`stop` or :func:`kill_group` clears it: it dies with
    the system, even a SIGKILLed one.
    """
    kwargs["preexec_fn"] = orphan_guard.die_with_parent(kwargs.get("preexec_fn"))
    proc = orphan_guard.spawn(lambda: cls(argv, start_new_session=True, **kwargs))
    orphan_guard.guard.add(proc.pid)
    return proc


def process_tree(pid: int) -> list[psutil.Process]:
    """A process and all its descendants ([] when it is gone)."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except (OSError, psutil.Error):
        return []


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to a process group; a group that is gone (or not ours) is ignored."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` has exited, without reaping it (its pgid stays ours to signal)."""
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _gone(p: psutil.Process) -> bool:
    try:
        return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _group_members(pgid: int) -> list[psutil.Process]:
    """Live processes of a group (orphans included, which ``children()`` cannot see)."""
    members = []
    try:
        candidates = list(psutil.process_iter())
    except OSError as e:  # /proc unreadable (EMFILE...): the group signal still reaches them
        log.warning("cannot list processes to find group %d's members: %s", pgid, e)
        return []
    for p in candidates:
        try:
            if os.getpgid(p.pid) == pgid and not _gone(p):
                members.append(p)
        except (OSError, psutil.Error):
            continue
    return members


def _reap(procs: list[psutil.Process], timeout: float = KILL_WAIT) -> None:
    """SIGKILL ``procs`` and wait until they are gone: a signal is delivered, not awaited."""
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    deadline = time.monotonic() + timeout
    while not all(_gone(p) for p in procs):
        if time.monotonic() >= deadline:
            log.error("processes survived SIGKILL: %s", [p.pid for p in procs if not _gone(p)])
            return
        time.sleep(REAP_POLL)


def forget(pgid: int) -> None:
    """A group the caller has killed and reaped itself: the orphan guard lets it go."""
    orphan_guard.guard.discard(pgid)


def kill_group(pgid: int) -> None:
    """SIGKILL whatever is left in a process group (after its leader died) and wait for it."""
    signal_group(pgid, signal.SIGKILL)
    _reap(_group_members(pgid))
    orphan_guard.guard.discard(pgid)


def force_kill(proc: subprocess.Popen[bytes], timeout: float = KILL_WAIT) -> None:
    """SIGKILL a process and its group without opening a file; wait until it is reaped.

    The last resort when :func:`stop` cannot list processes (``/proc``
    unreadable under EMFILE, say): signals and ``wait()`` need no file descriptor.
    """
    signal_group(proc.pid, signal.SIGKILL)
    try:
        proc.kill()
        proc.wait(timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:  # pragma: no cover - SIGKILL is final
        log.error("process %d did not die after SIGKILL: %s", proc.pid, e)
    orphan_guard.guard.discard(proc.pid)


def _descendants(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """Every descendant and group member of ``proc``, listed while its parent still lives.

    The ones that left the group (setsid) are only findable through their parent.
    """
    try:
        tracked = psutil.Process(proc.pid).children(recursive=True)
    except (OSError, psutil.Error):
        tracked = []
    known = {p.pid for p in tracked}
    tracked += [p for p in _group_members(proc.pid) if p.pid != proc.pid and p.pid not in known]
    return tracked


def _stop(proc: subprocess.Popen[bytes], grace: float, kill_wait: float) -> Stopped:
    tracked = _descendants(proc)
    path = Stopped.EXITED
    if not (proc.poll() is not None and all(_gone(p) for p in tracked)):
        signal_group(proc.pid, signal.SIGTERM)
        for p in tracked:
            try:
                p.terminate()
            except psutil.Error:
                pass
        deadline = time.monotonic() + grace
        path = Stopped.TERMINATED
        while proc.poll() is None or not all(_gone(p) for p in tracked):
            if time.monotonic() >= deadline:
                path = Stopped.KILLED
                break
            time.sleep(STOP_POLL)
    # Always sweep the group: members started during the grace period are not in the list.
    signal_group(proc.pid, signal.SIGKILL)
    known = {p.pid for p in tracked}
    _reap(
        [p for p in tracked if not _gone(p)]
        + [p for p in _group_members(proc.pid) if p.pid not in known and p.pid != proc.pid],
        kill_wait,
    )
    try:
        proc.wait(timeout=kill_wait)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        log.error("process %d did not die after SIGKILL", proc.pid)
    return path


def stop(proc: subprocess.Popen[bytes], grace: float, *, kill_wait: float = KILL_WAIT) -> Stopped:
    """Stop a session leader and everything it started; return the path that ran.

    SIGTERM to the group and to every descendant (listed first: the ones
    that left the group are only findable while their parent lives), up to
    ``grace`` seconds, then SIGKILL to whatever is left and to the group
    (members started meanwhile), and reap. Returns once every one of them is
    gone. When processes cannot be listed or signalled (``/proc`` unreadable
    under EMFILE), the group and the leader are SIGKILLed with
    :func:`force_kill`: a process the system started is never given up on.
    """
    try:
        path = _stop(proc, grace, kill_wait)
        orphan_guard.guard.discard(proc.pid)
        return path
    except (OSError, psutil.Error) as e:
        log.error("process %d: orderly stop failed (%s); killing its process group", proc.pid, e)
        force_kill(proc, kill_wait)
        return Stopped.FORCE_KILLED


__all__ = [
    "KILL_WAIT",
    "Stopped",
    "force_kill",
    "forget",
    "has_exited",
    "kill_group",
    "popen",
    "signal_group",
    "stop",
]
