"""``Memory``: the memories, the self files and the extraction, as the system uses them.

One object the composition root builds (``system.memory``) and every other part asks:

- the desktop's API (``/api/memories``, ``/api/self/<name>``): list, add, edit, pin,
  delete, accept, reject; the self files read and written (MEMORY.md parsed back, the
  user's edit wins);
- the controller: :meth:`prompt_block` (SOUL, USER, AGENTS and the memories relevant to
  an instruction, quoted as data) and :meth:`for_app` (``context.memory``);
- the memory tools (:class:`~aios.tools.base.MemoryPort`): :meth:`store` and
  :meth:`search`, scoped to the calling app — what an app writes to the user's scope is
  only proposed;
- the conversation: :meth:`turn_added` and :meth:`new_conversation` schedule the
  extraction, which runs on its own thread, never in a request.

Every change rewrites ``MEMORY.md`` (generated from the active memories) and tells the
desktop (a ``memory`` event with the number of proposals waiting, for the badge).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aios.errors import BadRequest
from aios.memory.extract import Extractor, Fact
from aios.memory.selfdoc import DOC_NAMES, SelfFiles, fold_sections
from aios.memory.store import MemoryStore, is_scope
from aios.memory.vectors import EndpointEmbedder

if TYPE_CHECKING:
    from aios.config import Config
    from aios.llm.client import LLMClient
    from aios.store import Store

log = logging.getLogger(__name__)

USER = "user"
"""The user's scope: what the system knows about the user."""
MEMORY_FILE = "MEMORY"
PINNED_MAX = 50
"""Pinned memories of a scope considered for a prompt (the budget cuts them further)."""
PAGE = 1000
"""Memories read per listing query (the store's largest page)."""
RECENT_TURNS = 400
"""History entries of a session read for its new user turns (the extraction reads each once)."""


class Memory:
    """The memory of one system (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        data_dir: Path,
        config: Callable[[], Config],
        llm: Callable[[], LLMClient | None],
        emit: Callable[[str, dict[str, Any]], object],
    ):
        self._db = store
        self.config = config
        self._emit = emit
        self.memories = MemoryStore(store, embedder=self._embedder(config()))
        self.files = SelfFiles(data_dir)
        self.files.ensure()
        self._file_lock = threading.RLock()
        self.extractor = Extractor(
            turns_of=self._user_turns,
            propose=self._propose,
            llm=lambda: llm() if self.config().llm_enabled else None,
            lang=lambda: self.config().language,
            idle_s=config().memory.extract_idle_s,
        )
        self._pinned_cache: dict[str, list[dict[str, Any]]] = {}
        self._seen_sessions: set[str] = set()
        self._last_turn_before_start = self._db.last_history_id()
        with self._file_lock:  # edited while the system was off: the user's edit wins
            self._parse_back(self.files.read(MEMORY_FILE))
            self.files.changed()

    @staticmethod
    def _embedder(config: Config) -> EndpointEmbedder | None:
        if not (config.memory.embeddings and config.llm_enabled):
            return None
        return EndpointEmbedder(
            config.llm.base_url,
            config.llm_api_key,
            config.memory.embeddings_model or config.llm.model,
        )

    def start(self) -> None:
        if self.config().memory.enabled:
            self.extractor.start()

    def close(self) -> None:
        self.extractor.stop()

    def reconfigure(self, config: Config) -> None:
        self.memories.embedder = self._embedder(config)
        self.extractor.idle_s = config.memory.extract_idle_s
        if config.memory.enabled:
            self.extractor.start()

    # ------------------------------------------------------------ the desktop's

    def listing(self, **filters: Any) -> list[dict[str, Any]]:
        self.sync_file()
        return self.memories.list(**filters)

    def add(self, text: str, *, tags: list[str] | None = None, scope: str = USER) -> dict[str, Any]:
        """The user says what to keep: active at once (the user needs no one's yes)."""
        out = self.memories.add(text, scope=scope, tags=tags or [], source="user")
        self._changed()
        return out

    def update(self, memory_id: str, **fields: Any) -> dict[str, Any]:
        out = self.memories.update(memory_id, **fields)
        self._changed()
        return out

    def delete(self, memory_id: str) -> dict[str, Any]:
        out = self.memories.delete(memory_id)
        self._changed()
        return out

    def accept(self, memory_id: str) -> dict[str, Any]:
        out = self.memories.accept(memory_id)
        self._changed()
        return out

    def reject(self, memory_id: str) -> dict[str, Any]:
        out = self.memories.reject(memory_id)
        self._changed()
        return out

    def status(self) -> dict[str, Any]:
        return {"proposed": self.memories.proposed_count()}

    def read_self(self, name: str) -> str:
        if name == MEMORY_FILE:
            self.sync_file()
        return self.files.read(name)

    def write_self(self, name: str, text: str) -> None:
        """The user saved a self file in Settings; MEMORY.md is parsed back at once."""
        with self._file_lock:
            self.files.write(name, text)
            if name == MEMORY_FILE:
                self._parse_back(text)
        self._emit("memory", self.status())

    # ------------------------------------------------------------ MEMORY.md

    def sync_file(self) -> None:
        """MEMORY.md edited outside (any editor): its entries replace the active ones."""
        with self._file_lock:
            if MEMORY_FILE in self.files.changed():
                self._parse_back(self.files.read(MEMORY_FILE))

    def _parse_back(self, text: str) -> None:
        self._pinned_cache = {}
        parsed, folded = fold_sections(self.files.parse_memory(text), is_scope)
        for name in folded:  # said once: the file now shows them under user, tagged
            log.info(
                "MEMORY.md: section %r names no scope: its entries are the user's, #%s", name, name
            )
        kept = {m["scope"] for m in self._all_active()}
        changed: dict[str, dict[str, int]] = {}
        for scope in sorted(set(parsed) | kept):  # a section deleted: its memories too
            try:
                counts = self.memories.replace_active(scope, parsed.get(scope, []))
            except BadRequest as e:  # an entry the store refuses (too long, too many tags)
                log.warning("MEMORY.md: section %r skipped: %s", scope, e)
                continue
            if any(counts.values()):
                changed[scope] = counts
        if changed:
            log.info("MEMORY.md edited by the user: %s", changed)
        self._write_file()

    def _write_file(self) -> None:
        """Rewrite MEMORY.md from the store (the truth); a failed write (a full disk)
        leaves the old file whole, says so in one line and is made good by the next."""
        active = self._all_active()
        try:
            self.files.write(MEMORY_FILE, self.files.render_memory(active))
        except OSError as e:
            log.warning("%s was not rewritten: %s", MEMORY_FILE, e.strerror or e)
            return
        self.files.changed()  # our own write is not the user's edit

    def _all_active(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            page = self.memories.list(state="active", limit=PAGE, offset=len(out))
            out += page
            if len(page) < PAGE:
                return out

    def _changed(self) -> None:
        with self._file_lock:
            self._pinned_cache.clear()
            self._write_file()
        self._emit("memory", self.status())

    # ------------------------------------------------------------ prompts and context

    def prompt_block(self, instruction: str, lang: str) -> str:
        """SOUL, USER, AGENTS and the user's memories relevant to ``instruction``, quoted
        as data within ``memory.prompt_tokens`` ("" when memory is off or empty)."""
        cfg = self.config().memory
        if not cfg.enabled or cfg.prompt_tokens <= 0:
            return ""
        self.sync_file()
        found = self._relevant(instruction, [USER], cfg.context_k)
        return self.files.prompt_block(found, cfg.prompt_tokens, lang)

    def for_app(self, app_id: str, may_read_user: bool, instruction: str) -> list[dict[str, Any]]:
        """``context.memory``: the app's own memories for ``instruction`` (and the user's
        with ``memory.read``), each ``{id, text, tags, scope}``."""
        cfg = self.config().memory
        if not cfg.enabled or cfg.context_k <= 0:
            return []
        scopes = [app_id, USER] if may_read_user else [app_id]
        found = self._relevant(instruction, scopes, cfg.context_k, touch=False)
        return [_public(m) for m in found]

    def _relevant(
        self, instruction: str, scopes: list[str], k: int, *, touch: bool = True
    ) -> list[dict[str, Any]]:
        """Matches first, then pinned memories to fill ``k`` (those the user wants in every
        prompt). ``touch``: count this as a use of what is returned (the ranking's)."""
        found = (
            self.memories.search(instruction, scopes=scopes, k=k, touch=touch)
            if instruction.strip()
            else []
        )
        seen = {m["id"] for m in found}
        for scope in scopes:
            for m in self._pinned(scope, k):
                if len(found) >= k:
                    break
                if m["id"] not in seen:
                    found.append(m)
                    seen.add(m["id"])
        return found

    def _pinned(self, scope: str, k: int) -> list[dict[str, Any]]:
        """The scope's pinned memories (kept until the next change: read on every prompt)."""
        with self._file_lock:
            cached = self._pinned_cache.get(scope)
            if cached is None:
                cached = [m for m in self.memories.active(scope, PINNED_MAX) if m.get("pinned")]
                self._pinned_cache[scope] = cached
            return cached[:k]

    # ------------------------------------------------------------ the tools (MemoryPort)

    def store(self, app_id: str, text: str, tags: list[str], *, user: bool) -> dict[str, Any]:
        if user:  # an app never writes the user's memory: it proposes
            out = self.memories.add(
                text, scope=USER, tags=tags, source=f"app:{app_id}", state="proposed"
            )
        else:
            out = self.memories.add(text, scope=app_id, tags=tags, source=f"app:{app_id}")
        self._changed()
        return _public(out) | {"state": out["state"]}

    def search(self, app_id: str, query: str, k: int, *, user: bool) -> list[dict[str, Any]]:
        scopes = [app_id, USER] if user else [app_id]
        return [
            _public(m) | {"score": m.get("score")}
            for m in self.memories.search(query, scopes=scopes, k=k)
        ]

    def kept_by(self, app_id: str) -> int:
        return self.memories.kept_by(app_id)

    def forget_app(self, app_id: str) -> int:
        n = self.memories.forget_app(app_id)
        if n:
            self._changed()
        return n

    # ------------------------------------------------------------ extraction

    def turn_added(self, session_id: str) -> None:
        """The user said something in ``session_id``: read it once the session is quiet."""
        if not self.config().memory.enabled:
            return
        if session_id not in self._seen_sessions:
            # turns said before this start were read then (or are past reading): a
            # restart never proposes again what the user rejected
            self._seen_sessions.add(session_id)
            self.extractor.mark_read(session_id, self._last_turn_before_start)
        self.extractor.schedule(session_id)

    def new_conversation(self) -> None:
        """The user starts over: what the conversations so far said is read now."""
        if self.config().memory.enabled:
            for session_id in sorted(self._seen_sessions):
                self.extractor.flush(session_id)

    def _user_turns(self, session_id: str, since: int) -> list[tuple[int, str]]:
        rows = self._db.history(session_id, limit=RECENT_TURNS)
        out: list[tuple[int, str]] = []
        for row in rows:
            content = row.get("content")
            if (
                row.get("role") != "user"
                or int(row["id"]) <= since
                or not isinstance(content, dict)
            ):
                continue
            text = content.get("text")
            if isinstance(text, str) and text.strip():
                out.append((int(row["id"]), text))
        return out

    def propose(self, session_id: str, fact: Fact) -> dict[str, Any]:
        """A fact the user just stated ("我叫小林"), proposed from their last turn; that
        turn is not read again by the extraction."""
        turns = self._user_turns(session_id, self._last_turn_before_start)
        turn = turns[-1][0] if turns else None
        out = self._add_fact(session_id, turn, fact)
        if turn is not None:
            self.extractor.mark_read(session_id, turn)
        return out

    def _propose(self, session_id: str, turn: int, fact: Fact) -> None:
        self._add_fact(session_id, turn, fact)

    def _add_fact(self, session_id: str, turn: int | None, fact: Fact) -> dict[str, Any]:
        auto = self.config().memory.auto_accept
        out = self.memories.add(
            fact.text,
            scope=USER,
            tags=fact.tags,
            source=f"extracted:{session_id}",
            state="active" if auto else "proposed",
            session_id=session_id,
            turn=turn,
            key=fact.key,
        )
        self._changed()
        return out


def _public(memory: dict[str, Any]) -> dict[str, Any]:
    """What an app or a prompt is given of a memory."""
    return {k: memory[k] for k in ("id", "text", "tags", "scope") if k in memory}


__all__ = ["DOC_NAMES", "MEMORY_FILE", "USER", "Memory"]
