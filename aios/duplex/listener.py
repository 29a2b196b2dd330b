"""The listener: a draft from the command bar in, a preview out (DESIGN §18).

The page sends its draft over the events WebSocket as the user types (debounced)::

    {"type": "draft", "id": 7, "text": "删除所有 log 文件", "session_id": "s_…" | null,
     "tab": "t_…", "lang": "zh-CN", "paused": false}

and gets one answer per draft on the same socket (no ``seq``: it is not a bus event)::

    {"type": "draft_preview", "id": 7,
     "route": {"apps": ["files"], "tie": [], "system": null} | null,
     "interjection": {id, kind, level, urgency, style, reason, text} | null,
     "pause_after_ms": 1500 | null, "muted": false}

``pause_after_ms`` asks the page to send the same draft again with ``paused: true``
if the user types nothing more for that long: something waits for a natural
break. Besides drafts the page sends ``draft_end`` (sent or emptied),
``duplex_mute`` (``{"muted": true|false}``) and ``duplex_dismiss`` (``{"id"}``).
A message it cannot take is answered ``{"type": "duplex_error", "error": "…"}``.

Nothing of a draft is stored, traced or logged: the route comes from the offline
router and the intent tables (pure), the rest from read-only looks — the
session's last app and route choices, an app's workdir (counted, never opened),
the user's memories (searched without touching them). The model's judgement
(``duplex.llm``) runs on its own thread and, when the draft is still the same,
comes as a second ``draft_preview`` with the same ``id``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aios.control import intents, memory_intents
from aios.control.controller import ROUTE_CHOICES, STOP_WORDS
from aios.control.router import OfflineRouter, tokenize
from aios.duplex import drafts
from aios.duplex.engine import Decision, DraftFacts, InterruptionEngine
from aios.duplex.judge import judge
from aios.llm import wording
from aios.memory import service as memory_service

if TYPE_CHECKING:
    from aios.apphost.registry import Launcher
    from aios.config import Config
    from aios.control.controller import Controller
    from aios.llm.client import LLMClient
    from aios.memory.service import Memory
    from aios.store import Store

log = logging.getLogger(__name__)

Reply = Callable[[dict[str, Any]], None]
ID_MAX_CHARS = 64
"""A ``session_id`` or ``tab`` longer than this is refused."""
MEMORY_K = 3
"""Memories looked at for an association."""
MEMORY_SHARED_TERMS = 2
"""Words (or Chinese bigrams) a memory must share with the draft to be recalled by it."""
RUNNING = ("running", "starting", "restarting")


class Listener:
    """The system's side of draft listening: one per system, shared by every socket."""

    def __init__(
        self,
        *,
        config: Callable[[], Config],
        controller: Controller,
        launcher: Launcher,
        store: Store,
        memory: Memory | None,
        llm: Callable[[], LLMClient | None],
        engine: InterruptionEngine | None = None,
    ):
        self.config = config
        self.controller = controller
        self.launcher = launcher
        self.store = store
        self.memory = memory
        self.llm = llm
        self.engine = engine or InterruptionEngine(lambda: self.config().duplex)
        self.judging: list[threading.Thread] = []
        """The model's judgements under way (daemon threads; tests wait on them)."""

    # ------------------------------------------------------------ messages

    def handle(self, msg: Any, reply: Reply) -> None:
        """One message from the page; every answer goes through ``reply``."""
        try:
            kind, key = self._check(msg)
            if kind == "draft":
                self._draft(msg, key, reply)
            elif kind == "draft_end":
                self.engine.reset(key)
            elif kind == "duplex_mute":
                muted = msg.get("muted", True)
                if not isinstance(muted, bool):
                    raise ValueError("muted must be true or false")
                self.engine.mute(key, muted)
                reply({"type": "duplex_muted", "muted": muted})
            elif kind == "duplex_dismiss":
                self.engine.dismiss(key, str(msg.get("id") or ""))
        except ValueError as e:
            reply({"type": "duplex_error", "error": str(e)})

    def _check(self, msg: Any) -> tuple[str, str]:
        """The message's type and its session key; ValueError naming what is wrong."""
        if not isinstance(msg, dict):
            raise ValueError("a message must be a JSON object")
        kind = msg.get("type")
        if kind not in ("draft", "draft_end", "duplex_mute", "duplex_dismiss"):
            raise ValueError(
                f"unknown message type {kind!r}: draft, draft_end, duplex_mute or duplex_dismiss"
            )
        sid, tab = msg.get("session_id"), msg.get("tab")
        for name, value in (("session_id", sid), ("tab", tab)):
            if value is not None and not (
                isinstance(value, str) and 0 < len(value) <= ID_MAX_CHARS
            ):
                raise ValueError(f"{name} must be a string of 1 to {ID_MAX_CHARS} characters")
        if sid is None and tab is None:
            raise ValueError("a message needs a session_id or a tab")
        if sid is not None and tab is not None:
            self.engine.adopt(f"tab:{tab}", f"session:{sid}")
        return kind, f"session:{sid}" if sid is not None else f"tab:{tab}"

    def _draft(self, msg: dict[str, Any], key: str, reply: Reply) -> None:
        text = msg.get("text")
        limit = self.config().web.instruction_max_chars
        if not isinstance(text, str):
            raise ValueError("a draft's text must be a string")
        if len(text) > limit:
            raise ValueError(f"a draft is at most {limit} characters (web.instruction_max_chars)")
        draft_id = msg.get("id")
        if not (draft_id is None or (isinstance(draft_id, int) and not isinstance(draft_id, bool))):
            raise ValueError("a draft's id must be an integer")
        cfg = self.config()
        lang = wording.reply_lang(text, str(msg.get("lang") or cfg.language))
        if not cfg.duplex.enabled or not text.strip():
            self.engine.reset(key)
            reply(self._preview(draft_id, None, None, key))
            return
        sid = msg.get("session_id") if isinstance(msg.get("session_id"), str) else None
        facts, route = self.facts(text, sid, lang, paused=msg.get("paused") is True)
        decision = self.engine.observe(key, facts)
        answered = threading.Event()  # the model's answer goes out after this preview
        if decision is None and facts.paused:
            self._maybe_judge(key, facts, draft_id, route, reply, answered)
        try:
            reply(self._preview(draft_id, route, decision, key))
        finally:
            answered.set()

    def _preview(
        self, draft_id: int | None, route: dict[str, Any] | None, d: Decision | None, key: str
    ) -> dict[str, Any]:
        state = self.engine.session(key)
        waits = state.waiting and not state.muted
        return {
            "type": "draft_preview",
            "id": draft_id,
            "route": route,
            "interjection": d.public() if d is not None else None,
            "pause_after_ms": round(self.config().duplex.pause_s * 1000) if waits else None,
            "muted": state.muted,
        }

    # ------------------------------------------------------------ facts

    def facts(
        self, text: str, session_id: str | None, lang: str, *, paused: bool = False
    ) -> tuple[DraftFacts, dict[str, Any] | None]:
        """What the draft would do, read-only: its facts for the engine and its route."""
        facts = DraftFacts(text=text, lang=lang, paused=paused)
        route = self._route(text, session_id, facts)
        facts.deletion = drafts.deletion(text)
        if facts.deletion is not None and facts.apps:
            record = self.launcher.get(facts.apps[0])
            if record is not None and record.workdir is not None:
                facts.count = drafts.count_targets(record.workdir, facts.deletion)
        if paused:
            facts.memory = self._recalled(text)
        return facts, route

    def _route(self, text: str, sid: str | None, facts: DraftFacts) -> dict[str, Any] | None:
        """Where Enter would send ``text`` (as the controller decides it without a model)."""
        if text.strip().casefold() in STOP_WORDS:
            return {"apps": [], "tie": [], "system": "stop"}
        if memory_intents.recognise(text) is not None:
            return {"apps": [], "tie": [], "system": "memory"}
        records = sorted(
            (r for r in self.launcher.apps() if r.manifest is not None and r.status in RUNNING),
            key=lambda r: r.installed,
        )
        facts.names = {r.id: r.name_in(facts.lang) for r in records}
        intent = intents.recognise(text, [intents.app_info(r) for r in records])
        if intent is not None:
            if intent.app and intent.kind in ("open_app", "focus_app", "close_app"):
                facts.apps = [intent.app]
                return {"apps": [intent.app], "tie": [], "system": None}
            return {"apps": [], "tie": [], "system": "desktop"}
        context = self.store.context_vars(sid) if sid else {}
        router = OfflineRouter(self.controller.profiles(), prefer=context.get("last_app"))
        tasks = router.route(text)
        if not tasks:
            return None
        facts.apps = list(dict.fromkeys(t.app for t in tasks))
        first = tasks[0]
        if first.alternatives:
            rivals = [first.app, *first.alternatives]
            chosen = (context.get(ROUTE_CHOICES) or {}).get("|".join(sorted(rivals)))
            if chosen in rivals:
                facts.apps[0] = chosen
            else:
                facts.tie = rivals
        return {"apps": facts.apps, "tie": facts.tie, "system": None}

    def _recalled(self, text: str) -> str | None:
        """A memory of the user's that shares enough words with ``text`` (read-only)."""
        if self.memory is None or not self.config().memory.enabled:
            return None
        said = {t for t, w in tokenize(text).items() if w >= 1.0}
        if len(said) < MEMORY_SHARED_TERMS:
            return None
        found = self.memory.memories.search(
            text, scopes=[memory_service.USER], k=MEMORY_K, touch=False
        )
        for m in found:
            mine = {t for t, w in tokenize(str(m.get("text") or "")).items() if w >= 1.0}
            if len(said & mine) >= MEMORY_SHARED_TERMS:
                return str(m["text"])
        return None

    def decision_for(
        self,
        text: str,
        lang: str,
        *,
        key: str,
        before: str | None = None,
        paused: bool = True,
    ) -> Decision | None:
        """What the engine says about ``text`` in a session of its own (``key``), typed
        after ``before`` (heavy deletion): the labelled drafts' measure (bench/bench_duplex.py)."""
        if before is not None:
            self.engine.observe(key, self.facts(before, None, lang)[0])
        return self.engine.observe(key, self.facts(text, None, lang, paused=paused)[0])

    # ------------------------------------------------------------ the model

    def _maybe_judge(
        self,
        key: str,
        facts: DraftFacts,
        draft_id: int | None,
        route: dict[str, Any] | None,
        reply: Reply,
        answered: threading.Event,
    ) -> None:
        """Ask the model about the draft on a thread of its own, when ``duplex.llm`` is on,
        the session's budget has tokens left and the last judgement is far enough back.
        The thread is started (and listed in :attr:`judging`) before this returns."""
        cfg = self.config()
        llm = self.llm()
        if not cfg.duplex.llm or llm is None or not llm.enabled:
            return
        state = self.engine.session(key)
        now = self.engine.clock()
        if (
            state.muted
            or state.llm_text == facts.text
            or state.llm_tokens >= cfg.duplex.llm_budget_tokens
            or (state.llm_at is not None and now - state.llm_at < cfg.duplex.llm_min_interval_s)
        ):
            return
        state.llm_at, state.llm_text = now, facts.text

        def work() -> None:
            try:
                decision, used = judge(llm, facts.text, facts.lang, cfg.duplex.llm_max_tokens)
            except Exception as e:  # noqa: BLE001 - a judgement is optional: one line, no more
                log.warning("duplex: the model's judgement of a draft failed: %s", e)
                return
            self.engine.charge(key, used)
            shown = self.engine.offer(key, decision, facts) if decision is not None else None
            if shown is None:
                return
            answered.wait()
            try:
                reply(self._preview(draft_id, route, shown, key))
            except Exception as e:  # noqa: BLE001 - the page hung up meanwhile: nothing to say
                log.debug("duplex: a judgement came after the page left: %s", e)

        thread = threading.Thread(target=work, name="aios-duplex-judge", daemon=True)
        self.judging = [t for t in self.judging if t.is_alive()] + [thread]
        thread.start()
