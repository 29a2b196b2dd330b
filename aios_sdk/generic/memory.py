"""Where a request's conversation lives between rounds (see the package docstring).

The running message list is kept in the app's cache (``cache_set`` /
``cache_get``, the system's SQLite store, namespaced to the app) and mirrored
in process memory, keyed by session and a fingerprint of the request.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from aios.errors import ToolError

log = logging.getLogger(__name__)

CONVERSATION_TTL = 3600.0
"""Seconds a request's conversation is kept in the cache."""
MEMORY_CONVERSATIONS = 64
"""Conversations mirrored in process memory (oldest dropped first)."""


def conversation_key(
    session_id: str, instruction: str | None, action: dict[str, Any] | None
) -> str:
    """The cache key of one request: the system repeats instruction/action every round."""
    raw = json.dumps(
        {"i": instruction, "a": action}, sort_keys=True, ensure_ascii=False, default=str
    )
    return f"generic:{session_id}:{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:20]}"


class ConversationMemory:
    """Conversations by key, in memory and in the app's cache through ``call_tool``."""

    def __init__(self, call_tool: Callable[..., Any]) -> None:
        self._call_tool = call_tool
        self._memory: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def save(self, key: str, conv: dict[str, Any]) -> None:
        with self._lock:
            self._memory[key] = conv
            self._memory.move_to_end(key)
            while len(self._memory) > MEMORY_CONVERSATIONS:
                self._memory.popitem(last=False)
        try:
            self._call_tool("cache_set", key=key, value=conv, ttl=CONVERSATION_TTL)
        except ToolError as e:
            # Memory still holds it; only a restart between rounds would lose it.
            log.warning("could not keep the conversation in the cache: %s", e.error)

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            conv = self._memory.get(key)
        if conv is not None:
            return conv
        try:
            conv = self._call_tool("cache_get", key=key)
        except ToolError as e:
            log.warning("could not read the conversation from the cache: %s", e.error)
            return None
        valid = (
            isinstance(conv, dict)
            and isinstance(conv.get("messages"), list)
            and isinstance(conv.get("pending"), list)
        )
        return conv if valid else None

    def forget(self, key: str) -> None:
        with self._lock:
            self._memory.pop(key, None)
