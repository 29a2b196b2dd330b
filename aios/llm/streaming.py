"""A streamed chat completion, read chunk by chunk and put back together (issue 26).

The client (:mod:`aios.llm.client`) asks the provider with ``stream=True`` when a caller
gives it a :class:`StreamSink`: the text deltas go to the sink as they arrive, a tool
call's first fragment tells the sink the answer is no text for a person, and
:class:`Assembly` rebuilds the same assistant message, finish reason, model and usage a
whole completion would have given (``stream_options.include_usage`` asks for the usage
in a last chunk; a server that does not send it gets an estimate, so budgets and
Settings' usage still count the call).

:func:`read` stops between two chunks when the caller's ``cancel`` event is set or its
``deadline`` passes (:class:`Stopped`); a provider that stalls between two chunks is
bounded by the read timeout of the request.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Assembly", "StreamSink", "Stopped", "read"]

CHARS_PER_TOKEN = 3.0
"""For estimating the tokens of a streamed call whose server sent no usage."""


class StreamSink(Protocol):
    """Where a streamed answer's text goes while it is generated (the conversation panel)."""

    @property
    def shown(self) -> bool:
        """Whether any of the text has reached the user (then no retry, no failover)."""
        ...

    def delta(self, text: str) -> None:
        """The next piece of the answer's text."""

    def tool_call(self) -> None:
        """The answer calls a tool: it is not text for the user."""

    def restart(self) -> None:
        """A new attempt starts (a retry, the fallback): forget what came before."""


class Stopped(Exception):  # noqa: N818 - a signal, not a failure
    """Internal: the stream was closed because the caller cancelled (``user``) or its
    deadline passed."""

    def __init__(self, by_user: bool):
        super().__init__("cancelled" if by_user else "deadline")
        self.by_user = by_user


@dataclass
class Assembly:
    """The pieces of one streamed answer, put together."""

    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    model: str | None = None
    usage: Any = None
    first_delta_ms: float | None = None
    """Milliseconds from the request to the first piece of text (None: no text)."""

    def feed(self, chunk: Any, sink: StreamSink, start: float) -> None:
        self.model = getattr(chunk, "model", None) or self.model
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(choice, "delta", None)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = str(choice.finish_reason)
            if delta is None:
                continue
            for call in getattr(delta, "tool_calls", None) or []:
                self._call(call, sink)
            text = getattr(delta, "content", None)
            if text:
                if self.first_delta_ms is None:
                    self.first_delta_ms = (time.monotonic() - start) * 1000
                self.content.append(text)
                sink.delta(text)

    def _call(self, call: Any, sink: StreamSink) -> None:
        if not self.calls:
            sink.tool_call()
        index = int(getattr(call, "index", 0) or 0)
        slot = self.calls.setdefault(
            index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
        )
        if getattr(call, "id", None):
            slot["id"] = call.id
        fn = getattr(call, "function", None)
        if fn is not None:
            slot["function"]["name"] += getattr(fn, "name", None) or ""
            slot["function"]["arguments"] += getattr(fn, "arguments", None) or ""

    def message(self) -> dict[str, Any]:
        """The assistant message, as a whole completion gives it (client._message_dict)."""
        out: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.calls:
            out["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return out

    def usage_dict(self, messages: Any, cached: int) -> dict[str, int]:
        """Prompt, completion, total and cached tokens: the server's, else estimated."""
        u = self.usage
        if u is not None:
            prompt = int(getattr(u, "prompt_tokens", 0) or 0)
            completion = int(getattr(u, "completion_tokens", 0) or 0)
            total = int(getattr(u, "total_tokens", 0) or 0) or prompt + completion
            return {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": total,
                "cached_tokens": cached,
            }
        prompt = int(len(json.dumps(messages, ensure_ascii=False)) / CHARS_PER_TOKEN)
        answer = json.dumps(self.message(), ensure_ascii=False)
        completion = max(1, int(len(answer) / CHARS_PER_TOKEN))
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "cached_tokens": 0,
        }


def read(
    stream: Any,
    sink: StreamSink,
    *,
    start: float,
    cancel: threading.Event | None,
    deadline: float | None,
) -> Assembly:
    """Every chunk of ``stream`` into an :class:`Assembly`, the text to ``sink`` as it
    comes; :class:`Stopped` (the stream closed) when ``cancel`` is set or ``deadline``
    (``time.monotonic()``) passes between two chunks."""
    got = Assembly()
    try:
        for chunk in stream:
            if cancel is not None and cancel.is_set():
                raise Stopped(by_user=True)
            if deadline is not None and time.monotonic() >= deadline:
                raise Stopped(by_user=False)
            got.feed(chunk, sink, start)
    finally:
        stream.close()
    return got
