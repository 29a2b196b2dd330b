"""An app's log: the launcher's own marked lines, the tail shown in errors, rotation.

:class:`LogPump` copies an app's output (a pipe) into ``data/logs/<app>.log``
while it runs, rotating the file at a size cap with one backup
(``<app>.log.1``); :func:`log_tail` is what a failed app's status shows.
"""

from __future__ import annotations

import logging
import os
import threading
from datetime import datetime
from pathlib import Path

log = logging.getLogger(__name__)

LOG_TAIL_LINES = 20
"""Lines of an app's log quoted when it failed."""
LOG_TAIL_BYTES = 64 * 1024
"""How far back from the end of a log :func:`log_tail` reads."""
LOG_CHUNK = 65536
"""Bytes the log pump reads from an app's output at once."""


def log_line(log_path: Path, text: str) -> None:
    """Append one marked line of the launcher's own to an app's log."""
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    try:
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(f"===== {stamp} {text} =====\n")
    except OSError as e:
        log.warning("cannot write to %s: %s", log_path, e)


def log_tail(log_path: Path | None, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log ('' when there is none)."""
    if log_path is None:
        return ""
    try:
        with open(log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
            data = f.read()
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


def rotate_log(log_path: Path) -> None:
    """Move ``log_path`` to ``<name>.1`` (the one backup kept), replacing the older backup."""
    try:
        os.replace(log_path, log_path.with_name(log_path.name + ".1"))
    except FileNotFoundError:
        pass


class LogPump(threading.Thread):
    """Copies an app's output (a pipe) into its log, rotating at ``max_bytes`` while it runs.

    The log never grows past ``max_bytes`` by the pump's writes: a chunk that
    does not fit is split, the log rotated (one backup) and the rest written to
    the fresh file. When the log cannot be written (disk full), output is read
    and dropped, so the app never blocks on a full pipe; writing resumes once
    the file can be opened again. Ends at end of file (every writer is gone).
    """

    def __init__(self, source: int, log_path: Path, max_bytes: int, name: str):
        super().__init__(name=name, daemon=True)
        self._fd = source
        self._path = log_path
        self._max = max_bytes
        self._out: int | None = None
        self._failing = False

    def run(self) -> None:
        try:
            while chunk := os.read(self._fd, LOG_CHUNK):
                self._write(chunk)
        except OSError as e:
            log.warning("reading the output of %s failed: %s", self._path.stem, e)
        finally:
            os.close(self._fd)
            if self._out is not None:
                os.close(self._out)

    def _write(self, chunk: bytes) -> None:
        try:
            while chunk:
                if self._out is None:
                    self._out = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                room = self._max - os.fstat(self._out).st_size
                if room <= 0:
                    os.close(self._out)
                    self._out = None
                    rotate_log(self._path)
                    continue
                written = os.write(self._out, chunk[:room])
                chunk = chunk[written:]
            self._failing = False
        except OSError as e:
            if self._out is not None:
                os.close(self._out)
                self._out = None
            if not self._failing:
                log.warning(
                    "cannot write the log %s (output dropped until it can): %s", self._path, e
                )
            self._failing = True


__all__ = ["LogPump", "log_line", "log_tail", "rotate_log"]
