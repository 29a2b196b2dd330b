"""``python -m aios_sdk dev PATH``: the app runs, an edit restarts it, Ctrl-C leaves nothing."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import requests

from tests.conftest import ROOT

WAIT = 30.0
"""Seconds a step of the loop may take on a loaded machine (an app start is ~1 s)."""
STARTED = re.compile(r"^\[dev\] started hello \(pid (\d+)\) on http://127\.0\.0\.1:(\d+)")


class Output:
    """The loop's output, line by line, read on a thread."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert proc.stdout is not None
        stream = proc.stdout
        threading.Thread(target=lambda: [self.lines.put(x) for x in stream], daemon=True).start()

    def wait_for(self, pattern: str | re.Pattern[str]) -> re.Match[str]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r}; output so far:\n{''.join(self.seen)}")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def in_folder(folder: Path) -> list[int]:
    """Processes whose working directory is the app folder (what the loop starts)."""
    found = []
    for p in psutil.process_iter(["pid"]):
        try:
            if Path(p.cwd()) == folder:
                found.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return found


def test_dev_runs_the_app_restarts_it_on_an_edit_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    app = tmp_path / "hello"
    shutil.copytree(ROOT / "apps" / "hello", app, ignore=shutil.ignore_patterns("tests"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIOS_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "aios_sdk", "dev", str(app), "--interval", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    out = Output(proc)
    try:
        first = out.wait_for(STARTED)
        pid, port = int(first.group(1)), int(first.group(2))
        out.wait_for(r"^\[hello\] .*Running on http://127\.0\.0\.1:" + str(port))  # bound
        health = requests.get(f"http://127.0.0.1:{port}/health", timeout=WAIT)
        assert health.json() == {"status": "ok", "app": "Hello小AI"}
        # a file the app writes in its workdir is not a change; an edit of main.py is:
        # the loop says so (naming main.py alone) and starts a new process
        (app / "workspace" / "state.json").write_text("{}", encoding="utf-8")
        main = app / "main.py"
        main.write_text(main.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
        stat = main.stat()
        os.utime(main, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        out.wait_for(r"^\[dev\] main\.py changed: restarting hello")
        second = int(out.wait_for(STARTED).group(1))
        assert second != pid and gone(pid)
        out.wait_for(r"^\[hello\] .*Running on http")
        assert not any("state.json" in line for line in out.seen)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        out.wait_for(r"^\[dev\] stopped")
        assert proc.wait(timeout=WAIT) == 0
        assert gone(second) and in_folder(app) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
