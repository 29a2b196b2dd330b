"""aios.host.procgroup: one way to stop a process group, and it says which path ran.

Real processes: a leader started in its own session, children in its group
and one that left it (setsid). ``stop`` returns only once all of them are
gone, so the tests look right after it returns, without waiting.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys

import psutil
import pytest

from aios.host import procgroup
from aios.host.procgroup import Stopped
from tests.util import wait_for

FAMILY = """
import signal, subprocess, sys, time
if sys.argv[1] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
in_group = subprocess.Popen(sleeper)
left_group = subprocess.Popen(sleeper, start_new_session=True)
print(in_group.pid, left_group.pid, flush=True)
if sys.argv[1] != "exits":
    time.sleep(600)
"""
"""A leader with one child in its group and one that left it; ``stubborn`` ignores SIGTERM.
With ``exits`` the leader exits at once, leaving both behind."""


def _family(kind: str) -> tuple[subprocess.Popen[bytes], list[int]]:
    proc = procgroup.popen(
        [sys.executable, "-c", FAMILY, kind], subprocess.Popen, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until both children exist
    proc.stdout.close()
    return proc, [int(pid) for pid in line.split()]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_leader_has_a_session_of_its_own() -> None:
    proc, children = _family("polite")
    try:
        assert os.getsid(proc.pid) == proc.pid != os.getsid(0)
        assert os.getpgid(children[0]) == proc.pid
        assert os.getsid(children[1]) == children[1]
    finally:
        procgroup.stop(proc, grace=procgroup.KILL_WAIT)


def test_sigterm_stops_the_group_and_the_child_that_left_it() -> None:
    proc, children = _family("polite")
    assert procgroup.stop(proc, grace=procgroup.KILL_WAIT) == Stopped.TERMINATED
    assert proc.returncode == -signal.SIGTERM
    assert [pid for pid in children if _alive(pid)] == []


def test_a_leader_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    proc, children = _family("stubborn")
    assert procgroup.stop(proc, grace=0.2) == "killed"
    assert proc.returncode == -signal.SIGKILL
    assert [pid for pid in children if _alive(pid)] == []


def test_a_leader_that_exited_alone_is_reaped() -> None:
    proc = procgroup.popen([sys.executable, "-c", "pass"], subprocess.Popen)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    assert procgroup.has_exited(proc) and proc.returncode is None
    assert procgroup.stop(proc, grace=procgroup.KILL_WAIT) == Stopped.EXITED
    assert proc.returncode == 0


def test_what_an_exited_leader_left_in_its_group_is_stopped() -> None:
    proc, leftovers = _family("exits")
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    assert procgroup.stop(proc, grace=procgroup.KILL_WAIT) == Stopped.TERMINATED
    assert proc.returncode == 0
    assert not _alive(leftovers[0])
    # The child that left the group cannot be found once its parent is gone
    # (the reason stop() lists descendants first): the test cleans it up.
    os.kill(leftovers[1], signal.SIGKILL)


def test_when_proc_cannot_be_read_the_group_is_still_killed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proc, children = _family("polite")

    def emfile(self: psutil.Process) -> str:
        raise OSError(errno.EMFILE, "Too many open files")  # what reading /proc/PID/stat meets

    monkeypatch.setattr(psutil.Process, "status", emfile)
    assert procgroup.stop(proc, grace=procgroup.KILL_WAIT) == Stopped.FORCE_KILLED
    monkeypatch.undo()
    assert proc.returncode is not None
    # The group goes with the leader; the child that left the group is out of reach
    # of signals alone (the same as before procgroup), so the test cleans it up.
    # SIGKILL to the group is final but not instant: the leader is reaped, its group
    # child dies a moment later (a loaded machine showed it still running here).
    wait_for(lambda: not _alive(children[0]), timeout=10, what="the group's child to die")
    os.kill(children[1], signal.SIGKILL)
