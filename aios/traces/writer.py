"""The trace files' one writer: callers put events on a bounded queue and never wait;
every ``interval`` (0.2 s) a background thread numbers them (``seq``, strictly
increasing per session, carried across restarts by reading the last line), redacts
the fields that hold arguments, results and prompts (``redact``: the audit log's,
secret-named keys), masks the configured secrets (keys, the launch token) anywhere in the
line, caps sizes (``STRING_MAX`` characters a string, ``LIST_MAX`` items a list) and
appends them to ``<dir>/<session>.jsonl``. A full queue drops the event; the next
line written says how many were dropped (``"dropped": n``). Retention (``prune``)
deletes files older than ``keep_days`` and then the oldest until the total fits
``max_mb``.

A line is appended whole or not at all: when the disk is full the bytes a short write
left are cut off again, the numbered lines are held (up to ``queue_max``, the rest
count as dropped) and written first on the next pass; the log says so in one line
when writing stops and one when it resumes.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STRING_MAX = 8000
"""Characters kept of one string field (a prompt, an answer); the rest is counted."""
LIST_MAX = 200
"""Items kept of one list field (a tool's rows); the rest is counted."""
REDACTED = "***"
REDACT_FIELDS = frozenset({"args", "result", "messages", "tools", "request"})
"""Fields passed through ``redact`` (not the event itself: ``prompt_tokens`` is no secret)."""
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
FLUSH_INTERVAL = 0.2
"""Seconds between two writes of what gathered (``flush`` writes at once)."""


def trace_path(directory: Path, session_id: str) -> Path | None:
    """The file of ``session_id`` in ``directory``; None for a name that is not a plain id."""
    if not _SAFE_ID.match(session_id) or session_id.startswith("."):
        return None
    return directory / f"{session_id}.jsonl"


def _cap(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > STRING_MAX:
            return value[:STRING_MAX] + f"…(+{len(value) - STRING_MAX} chars)"
        return value
    if isinstance(value, dict):
        return {str(k): _cap(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        kept = [_cap(v) for v in value[:LIST_MAX]]
        if len(value) > LIST_MAX:
            kept.append(f"…(+{len(value) - LIST_MAX} items)")
        return kept
    return value


class TraceWriter:
    """One thread appending events to per-session JSONL files (see the module doc)."""

    def __init__(
        self,
        directory: Path,
        *,
        queue_max: int = 10_000,
        secrets: Callable[[], Iterable[str]] = tuple,
        redact: Callable[[Any], Any] = lambda value: value,
        interval: float = FLUSH_INTERVAL,
    ):
        self.directory = directory
        self.queue_max = max(1, queue_max)
        self.interval = interval
        self._pending: deque[dict[str, Any]] = deque()
        self._secrets = secrets
        self._redact = redact
        self._seq: dict[str, int] = {}
        self._dropped = 0
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._busy = False
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._held: dict[str, list[str]] = {}
        """Numbered lines a failed append left, per session, written first next time."""
        self._failing: str | None = None
        """Why appending fails (logged once per outage); None while it works."""
        self.written = 0
        """Lines written since start (the bench's throughput)."""

    # ------------------------------------------------------------ callers

    def write(self, event: dict[str, Any]) -> bool:
        """Queue ``event`` (it must name its ``session_id``); False when it was dropped.

        No lock and no wake-up on this path (an append to a deque): the thread writes
        what gathered every ``interval`` seconds, so a request does not pay for a
        thread switch per event."""
        if len(self._pending) >= self.queue_max:
            with self._lock:
                self._dropped += 1
            return False
        self._pending.append(event)
        return True

    @property
    def dropped(self) -> int:
        """Events dropped and not yet reported in a line."""
        with self._lock:
            return self._dropped

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="aios-traces", daemon=True)
        self._thread.start()

    def flush(self) -> None:
        """Wait until every event queued so far is written (the API, tests, ``stop``)."""
        if self._thread is None or not self._thread.is_alive():
            return
        with self._done:
            while self._pending or self._busy:
                self._wake.set()
                self._done.wait(0.05)

    def stop(self) -> None:
        """Write what is queued, then end the thread."""
        if self._thread is None:
            return
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self._thread = None

    # ------------------------------------------------------------ thread

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            stopping = self._stopping
            with self._lock:
                batch = [self._pending.popleft() for _ in range(len(self._pending))]
                self._busy = bool(batch) or bool(self._held)
            try:
                if self._busy:
                    self._write_batch(batch)
            except Exception:  # noqa: BLE001 - a trace must never take the system down
                log.exception("writing %d trace event(s) failed", len(batch))
            finally:
                with self._done:
                    self._busy = False
                    self._done.notify_all()
            if stopping and not self._pending:
                if self._held:
                    lost = sum(len(t) for t in self._held.values())
                    log.warning("%d trace line(s) were not written: %s", lost, self._failing)
                return

    def _write_batch(self, batch: list[dict[str, Any]]) -> None:
        lines, self._held = self._held, {}
        # as they appear inside a JSON string (escaped once per batch, not per line)
        secrets = [json.dumps(s)[1:-1] for s in self._secrets() if s and len(s) >= 4]
        for event in batch:
            sid = str(event.get("session_id") or "")
            if trace_path(self.directory, sid) is None:
                continue
            seq = self._next_seq(sid)
            fields = {k: self._redact(v) if k in REDACT_FIELDS else v for k, v in event.items()}
            line: dict[str, Any] = {"seq": seq, **_cap(fields)}
            with self._lock:
                dropped, self._dropped = self._dropped, 0
            if dropped:
                line["dropped"] = dropped
            text = json.dumps(line, ensure_ascii=False, default=str)
            for secret in secrets:
                text = text.replace(secret, REDACTED)
            lines.setdefault(sid, []).append(text)
        for sid, texts in lines.items():
            path = trace_path(self.directory, sid)
            assert path is not None
            try:
                _append(path, texts)
            except OSError as e:
                self._hold(sid, texts, e)
                continue
            self.written += len(texts)
        if not self._held and self._failing is not None:
            log.warning("trace files are written again (%s had stopped them)", self._failing)
            self._failing = None

    def _hold(self, sid: str, texts: list[str], error: OSError) -> None:
        """Keep the lines of a failed append for the next pass, within ``queue_max``."""
        held = sum(len(t) for t in self._held.values())
        room = max(0, self.queue_max - held)
        self._held[sid] = texts[len(texts) - room :] if room < len(texts) else texts
        if room < len(texts):
            with self._lock:
                self._dropped += len(texts) - room
        if self._failing is None:
            self._failing = (
                f"the disk holding {self.directory} is full"
                if error.errno in (errno.ENOSPC, errno.EDQUOT)
                else f"{error.strerror or error} ({self.directory})"
            )
            log.warning("trace events are held, not written: %s", self._failing)

    def _next_seq(self, sid: str) -> int:
        last = self._seq.get(sid)
        if last is None:
            last = _last_seq(self.directory / f"{sid}.jsonl")
        self._seq[sid] = last + 1
        return last + 1

    # ------------------------------------------------------------ retention

    def prune(self, *, keep_days: float, max_mb: float, now: float) -> int:
        """Delete files last written before ``keep_days``, then the oldest past ``max_mb``."""
        if not self.directory.is_dir():
            return 0
        files: list[tuple[float, int, Path]] = []
        for p in self.directory.glob("*.jsonl"):
            try:
                st = p.stat()
            except OSError:
                continue
            files.append((st.st_mtime, st.st_size, p))
        files.sort()
        removed = 0
        total = sum(size for _, size, _ in files)
        budget = max_mb * 1024 * 1024
        for mtime, size, path in files:
            if mtime >= now - keep_days * 86400 and total <= budget:
                break
            try:
                path.unlink()
            except OSError as e:
                log.warning("could not remove the trace %s: %s", path.name, e)
                continue
            total -= size
            removed += 1
        return removed


def _append(path: Path, texts: list[str]) -> None:
    """Append ``texts`` as lines, whole or not at all (a short write is cut off again)."""
    data = ("\n".join(texts) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def _last_seq(path: Path) -> int:
    """The ``seq`` of the file's last complete line (0 when there is none)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            end = f.tell()
            f.seek(max(0, end - 65536))
            tail = f.read().splitlines()
    except OSError:
        return 0
    for raw in reversed(tail):
        try:
            return int(json.loads(raw)["seq"])
        except (ValueError, KeyError, TypeError):
            continue
    return 0
