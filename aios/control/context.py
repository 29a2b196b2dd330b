"""What an app is told with each call (DESIGN §4.3, §4.4): its context and the session memory.

The context (docs/app-guide.md §2) holds the app's ``cwd_state`` (its files and
the state it kept), the tools it may ask for, and a ``history_summary`` that shows
an app only the turns routed to it unless it holds ``conversation.read``
(DESIGN §14.8). The session memory is what each final reply leaves in the store.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aios.apphost.permissions import CONVERSATION_READ
from aios.control.planner import entry_said, own_turns, summarize_history
from aios.names import MEMORY_READ
from aios.protocol import ATOMIC_TOOLS
from aios.tools.executor import ASK_TOOL, LAUNCH_TOOL

if TYPE_CHECKING:
    from aios.apphost.registry import AppRecord
    from aios.config import Config
    from aios.llm.client import LLMClient
    from aios.memory.service import Memory
    from aios.store import Store
    from aios.tools.base import ToolContext

CWD_FILES_MAX = 50
HISTORY_WINDOW = 40
"""History entries a summary is made from."""
SUMMARY_CACHE = 256
"""Sessions whose history window and summaries are kept in memory."""
HISTORY_DATA_MAX = 20_000
"""Bytes of a reply's ``data`` kept in the session history (the message is always kept)."""


class Contexts:
    """Builds the context sent to an app and keeps the session memory in the store.

    ``settings`` and ``llm`` are asked at every use, so a settings change is in
    force from the next call on.
    """

    def __init__(
        self,
        *,
        store: Store,
        settings: Callable[[], Config],
        llm: Callable[[], LLMClient | None],
        tool_context: Callable[[str, str | None], ToolContext],
        custom_tools: Callable[[str], list[str]],
        memory: Memory | None = None,
    ) -> None:
        self.store = store
        self.memory = memory
        self._settings = settings
        self._llm = llm
        self._tool_context = tool_context
        self._custom_tools = custom_tools
        self._windows: dict[str, _Window] = {}
        self._windows_lock = threading.Lock()
        self.mcp_tools: Callable[[str], dict[str, dict[str, Any]]] = lambda app_id: {}
        """The MCP tools granted to an app (``mcp.<server>.<tool>`` -> description, input
        schema, annotations, risk); set by the system (DESIGN §17)."""

    def build(
        self,
        record: AppRecord,
        sid: str,
        upstream: dict[str, Any] | None = None,
        *,
        locale: str | None = None,
        routed: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Every field of the context (docs/app-guide.md §2), plus upstream results, the locale
        (``config.language`` unless the request named one) and ``routed``: the
        task's part of the instruction and what chose the app (aios/control/router.py),
        None for a call no instruction routed (an action, opening the window)."""
        state = self.store.agent_state(sid, record.id) or {}
        mcp = self.mcp_tools(record.id)
        return {
            "app": record.id,
            "role": record.role_prompt,
            "workdir": str(record.workdir),
            "cwd_state": {
                "files": list_files(record.workdir),
                **(state if isinstance(state, dict) else {"state": state}),
            },
            "available_tools": [
                *ATOMIC_TOOLS,
                ASK_TOOL,
                LAUNCH_TOOL,
                *self._custom_tools(record.id),
                *mcp,
            ],
            "mcp_tools": mcp,
            "session_id": sid,
            "history_summary": self.history_summary(sid, self.reader(record.id)),
            "tool_results": {},
            "upstream": upstream or {},
            "locale": locale or self._settings().language,
            "routed": routed,
            **self._memory_fields(record.id, routed, locale),
        }

    def _memory_fields(
        self, app_id: str, routed: dict[str, Any] | None, locale: str | None
    ) -> dict[str, Any]:
        """``memory`` (the app's memories for its part of the instruction, the user's too
        with ``memory.read``) and, with ``memory.read``, ``self`` (DESIGN §15)."""
        if self.memory is None:
            return {}
        try:
            reads_user = MEMORY_READ in self._tool_context(app_id, None).permissions
        except KeyError:
            reads_user = False
        said = str((routed or {}).get("text") or "")
        out: dict[str, Any] = {"memory": self.memory.for_app(app_id, reads_user, said)}
        if reads_user:
            out["self"] = self.memory.prompt_block(said, locale or self._settings().language)
        return out

    def history_summary(self, sid: str, app: str | None = None) -> str:
        """§4.3 ``history_summary``; recomputed only when the turns it shows changed.

        ``app``: the summary sent to that app holds only the turns routed to it (DESIGN
        §14.8, :func:`aios.control.planner.own_turns`); None: the whole conversation (the
        planner's, and an app's granted ``conversation.read``).

        The session's last HISTORY_WINDOW entries are kept in memory, each reduced to
        the line a summary shows of it; a call reads only the entries added since the
        last one (every call adds at least the user's turn), not the whole window again.
        """
        key = app or ""
        with self._windows_lock:
            window = self._window(sid)
            history = list(window.entries)
        if app is not None:
            history = own_turns(history, app)
        newest = history[-1]["id"] if history else 0
        cached = window.summaries.get(key)
        if cached and cached[0] == newest:
            return cached[1]
        summary = summarize_history(history, self._llm(), self._settings().history_summary_chars)
        window.summaries[key] = (newest, summary)
        return summary

    def _window(self, sid: str) -> _Window:
        """The session's window, brought up to date (under ``_windows_lock``)."""
        epoch = self.store.history_epoch
        window = self._windows.pop(sid, None)  # put back last: the most recently used
        if window is None or window.epoch != epoch:
            window = _Window(epoch)  # new, or entries were deleted since (retention)
        self._windows[sid] = window
        while len(self._windows) > SUMMARY_CACHE:
            self._windows.pop(next(iter(self._windows)))
        for h in self.store.history_since(sid, window.newest, HISTORY_WINDOW):
            window.entries.append(
                {
                    "id": h["id"],
                    "role": h["role"],
                    "app": h["app"],
                    "said": entry_said(h["content"]),
                }
            )
            window.newest = h["id"]
        return window

    def reader(self, app_id: str) -> str | None:
        """Whose turns ``app_id`` may see in ``history_summary``: None (everyone's) with
        ``conversation.read`` granted, else only its own."""
        try:
            granted = self._tool_context(app_id, None).permissions
        except KeyError:  # not running: it sees its own turns
            return app_id
        return None if CONVERSATION_READ in granted else app_id

    def remember(
        self,
        sid: str,
        app: str,
        resp: dict[str, Any],
        notes: list[str] | None = None,
        *,
        run_id: str | None = None,
    ) -> int:
        """Keep an app's final reply in the session: history (with the run it ended, which
        the conversation panel's "why?" opens the trace on), its state, the last app. The
        history id of the reply (a topic's last view, aios/control/topics.py)."""
        entry: dict[str, Any] = {
            "status": resp.get("status"),
            "view_type": resp.get("view_type"),
            "message": resp.get("message"),
        }
        data = json.dumps(resp.get("data"), ensure_ascii=False, default=str)
        entry["data"] = (
            resp.get("data")
            if len(data) <= HISTORY_DATA_MAX
            else {"truncated": True, "bytes": len(data)}
        )
        if notes:
            entry["notes"] = notes
        if run_id:
            entry["run_id"] = run_id
        return self.store.add_reply(
            sid, app, entry, state=resp.get("state"), context_vars={"last_app": app}
        )


class _Window:
    """One session's newest history entries as summaries show them, and its summaries."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        """The store's ``history_epoch`` the entries were read under."""
        self.newest = 0
        """The id of the newest entry read."""
        self.entries: deque[dict[str, Any]] = deque(maxlen=HISTORY_WINDOW)
        self.summaries: dict[str, tuple[int, str]] = {}
        """Reader ("" for everyone's turns) -> (the newest entry id it shows, the summary)."""


def list_files(workdir: Path | None) -> list[str]:
    """``cwd_state.files``: the first names in the app's folder, dot files left out."""
    if workdir is None or not workdir.is_dir():
        return []
    out: list[str] = []
    try:
        for entry in sorted(os.scandir(workdir), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            out.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
            if len(out) >= CWD_FILES_MAX:
                break
    except OSError:
        pass
    return out
