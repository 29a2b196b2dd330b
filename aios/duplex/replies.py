"""A reply the model is writing, on its way to the conversation panel (DESIGN §18, issue 26).

When an app asks the model on behalf of the user's instruction and says the answer is
for the user (the SDK's ``self.llm(..., stream_to_user=True)``), ``/api/sys/llm`` streams
the call (aios/llm/streaming.py) through a :class:`ReplyStream`, which publishes the text
as ``reply_stream`` events of the instruction's session and run: the panel shows a
typing bubble that grows, and the app's final view replaces it.

What reaches the user is only words for a person:

- nothing is shown before :data:`GATE_CHARS` characters (or the end of a shorter
  answer) say what kind of answer it is: JSON, a fenced block, tool-call markup or
  the planner's own words are held back for the whole answer;
- an answer that turns out to call a tool (a native tool call, or markup written in
  the text) after some of it was shown is taken back (``retract``);
- deltas are sent at most every ``duplex.stream_flush_ms`` (what arrives between two
  sends goes out together), so a fast model does not flood the event bus.

Events (``type: "reply_stream"``): ``session_id``, ``run_id``, ``app``, ``stream`` (one
id per LLM call), ``phase``: ``delta`` (``text``: the next piece), ``end``, ``error``
(``error``: one line), ``cancelled``, ``retract``. Only a stream that showed something
sends ``end``, ``error`` or ``cancelled``.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from aios.llm.toolcalls import holds_call_markup, looks_like_code
from aios.llm.wording import planner_words

__all__ = ["GATE_CHARS", "ReplyStream", "internal"]

GATE_CHARS = 12
"""Characters of an answer (spaces aside) read before any is shown: enough to tell words
from JSON, a code fence or tool-call markup."""
ERROR_CHARS = 200
"""The one line an error shows in the bubble, at most."""
OVERLAP_CHARS = 64
"""Characters before a new piece looked at again for markup (a tag or a planner's word cut
between two pieces); only the new text and these are searched, not the whole answer."""

_ids = itertools.count(1)


def internal(text: str) -> bool:
    """Whether ``text`` (the start of an answer) is not words for a person: JSON, a
    fenced block or markup, or the planner's own words."""
    s = text.strip()
    return looks_like_code(s) or s.startswith(("<", "`")) or planner_words(s) is not None


class ReplyStream:
    """A :class:`~aios.llm.streaming.StreamSink` that publishes the words of one answer."""

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], object],
        *,
        session_id: str,
        run_id: str | None,
        app: str,
        flush_s: float,
    ):
        self._emit = emit
        self._base = {
            "session_id": session_id,
            "run_id": run_id,
            "app": app,
            "stream": f"s{next(_ids)}",
        }
        self._flush_s = flush_s
        self._lock = threading.Lock()
        self._text = ""
        self._sent = 0
        """How much of ``_text`` went out."""
        self._state = "gating"
        """``gating`` (not known yet), ``showing`` or ``withheld`` (never shown)."""
        self._shown = False
        self._timer: threading.Timer | None = None
        self._closed = False

    # ------------------------------------------------------------- the sink

    @property
    def shown(self) -> bool:
        with self._lock:
            return self._shown

    def delta(self, text: str) -> None:
        with self._lock:
            if self._closed or self._state == "withheld":
                return
            seen = len(self._text)
            self._text += text
            if self._state == "gating":
                if len("".join(self._text.split())) < GATE_CHARS:
                    return
                self._state = "withheld" if internal(self._text) else "showing"
                if self._state == "withheld":
                    return
            fresh = self._text[max(0, seen - OVERLAP_CHARS) :]
            if holds_call_markup(fresh) or planner_words(fresh):
                self._take_back()
                return
            self._schedule()

    def tool_call(self) -> None:
        with self._lock:
            self._take_back()

    def restart(self) -> None:
        with self._lock:
            if not self._shown:
                self._text, self._sent, self._state = "", 0, "gating"

    # ------------------------------------------------------------ the outcome

    def end(self) -> None:
        """The answer is complete: what is left goes out (a short answer is judged whole)."""
        with self._lock:
            if self._state == "gating" and self._text.strip():
                self._state = "withheld" if internal(self._text) else "showing"
            if self._state == "showing":
                self._send_pending()
            self._close("end")

    def error(self, message: str) -> None:
        """The call failed: a bubble that showed something says so in one line."""
        line = " ".join(message.split())[:ERROR_CHARS]
        with self._lock:
            self._close("error", error=line)

    def cancelled(self) -> None:
        with self._lock:
            self._close("cancelled")

    # --------------------------------------------------------------- inside

    def _schedule(self) -> None:
        """Send what is pending now, or at the end of the current flush interval."""
        if self._flush_s <= 0 or not self._shown:
            self._send_pending()  # the first words go out at once
            return
        if self._timer is None:
            self._timer = threading.Timer(self._flush_s, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            self._timer = None
            if not self._closed and self._state == "showing":
                self._send_pending()

    def _send_pending(self) -> None:
        piece = self._text[self._sent :]
        if not piece:
            return
        self._sent = len(self._text)
        self._shown = True
        self._emit({**self._base, "phase": "delta", "text": piece})

    def _take_back(self) -> None:
        if self._shown and self._state != "withheld":
            self._emit({**self._base, "phase": "retract"})
        self._state = "withheld"
        self._cancel_timer()

    def _close(self, phase: str, **extra: Any) -> None:
        if self._closed:
            return
        self._closed = True
        self._cancel_timer()
        if self._shown and self._state == "showing":
            self._send_pending()  # the words that came before the end are shown too
            self._emit({**self._base, "phase": phase, **extra})

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
