"""The trace files' one writer: callers put events on a bounded queue and never wait;
every ``interval`` (0.2 s) a background thread numbers them (``seq``, strictly
increasing per session, carried across restarts by reading the last line), redacts
the fields that hold arguments and prompts (``redact``: the audit log's, secret-named
keys), masks the configured secrets (keys, the launch token) anywhere in the line, caps sizes and
appends them to ``<dir>/<session>.jsonl``. A full queue drops the event; the next
line written says how many were dropped (``"dropped": n``). Retention (``prune``)
deletes files older than ``keep_days`` and then the oldest until the total fits
``max_mb``.
"""

from __future__ import annotations

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
        return [_cap(v) for v in value]
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
                self._busy = bool(batch)
            try:
                if batch:
                    self._write_batch(batch)
            except Exception:  # noqa: BLE001 - a trace must never take the system down
                log.exception("writing %d trace event(s) failed", len(batch))
            finally:
                with self._done:
                    self._busy = False
                    self._done.notify_all()
            if stopping and not self._pending:
                return

    def _write_batch(self, batch: list[dict[str, Any]]) -> None:
        lines: dict[str, list[str]] = {}
        secrets = [s for s in self._secrets() if s and len(s) >= 4]
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
                text = text.replace(json.dumps(secret)[1:-1], REDACTED)
            lines.setdefault(sid, []).append(text)
        for sid, texts in lines.items():
            path = trace_path(self.directory, sid)
            assert path is not None
            with path.open("a", encoding="utf-8") as f:
                f.write("\n".join(texts) + "\n")
            self.written += len(texts)

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
