"""The thinker: the desktop speaks first (DESIGN §18 "The thinker", seed 004's Thinker).

One thread for the whole system (not one per session) reads the event bus and says, in
the conversation panel of the session concerned, what the user would want to hear
without asking:

- a run the user is not looking at finished or failed — a run of another session than
  the one the panel shows, any run while the desktop's page is hidden, an instruction
  that ran longer than ``duplex.long_run_s``, or a run the scheduler started (watched);
- an app crashed (it failed, not merely restarted);
- a reminder is due, an automation ran, waits for a decision, or was missed while the
  desktop was off (the scheduler calls :meth:`Thinker.say`);
- when ``duplex.idle_s`` is set (0, off, by default), after that much silence in the
  session the user looks at, once, the topic of its tree it left last (or the one it is
  on: :meth:`aios.control.topics.TopicTree.recent`).

What it says is a history row of role ``desktop`` (the panel shows it as the desktop's
message, a reload shows it again) and a ``said`` event (the page reads it aloud when
voice replies are on). ``duplex.dnd`` (do not disturb, a toggle in the top bar) silences
it: nothing is announced; a due reminder, which the user asked for, still lands in the
panel, marked ``quiet`` (not read aloud).

Who looks where is what the page reports (``POST /api/attention``): until a page has
reported, runs are not announced (nobody is there to be told) except watched ones.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aios.config import Config
from aios.control.topics import Topic
from aios.events import EventBus, Subscription
from aios.store import Store
from aios.store.runs import FINAL, RunStore

log = logging.getLogger(__name__)

ANNOUNCED_STATES = ("done", "failed")
"""Final run states worth a word (cancelled: the user did it; interrupted: a restart)."""
SAY_KINDS = ("instruction",)
"""Run kinds announced (an open or a control click answers at once in its window)."""
WAIT_MAX_S = 3600.0
"""The loop looks at the clock at least this often even when nothing happens."""
TRACKED_MAX = 1000
"""Run start times remembered at most (runs that never end are forgotten, oldest first)."""
QUOTE_MAX_CHARS = 60
"""What the desktop quotes of a turn or a run, at most."""

_TEXTS: dict[str, tuple[str, str]] = {
    "run_done": ("「{what}」做完了。", "“{what}” is done."),
    "run_failed": ("「{what}」没做成：{error}", "“{what}” failed: {error}"),
    "run_elsewhere": ("另一个对话里，", "In another conversation: "),
    "app_crashed": ("「{app}」崩溃了：{error}", "{app} crashed: {error}"),
    "reminder": ("提醒你：{what}", "Reminder: {what}"),
    "reminder_empty": ("到时间了。", "It's time."),
    "automation_start": ("到点了，开始：{what}", "It's time: {what}"),
    "automation_done": (
        "定时任务「{what}」做完了：{message}",
        "Scheduled “{what}” is done: {message}",
    ),
    "automation_waiting": (
        "定时任务「{what}」在等你确认。",
        "Scheduled “{what}” is waiting for your decision.",
    ),
    "automation_failed": (
        "定时任务「{what}」没做成：{error}",
        "Scheduled “{what}” failed: {error}",
    ),
    "missed": (
        "桌面关着的时候错过了「{what}」（{n} 次），没有补做。",
        "While the desktop was off, “{what}” was missed ({n}×); it was not run late.",
    ),
    "idle": ("刚才说到「{what}」——要接着吗？", "Earlier: “{what}” — shall we pick it up again?"),
}


def text(key: str, lang: str, **fields: Any) -> str:
    """The desktop's words for ``key`` in ``lang`` (zh-CN unless it starts with "en")."""
    zh, en = _TEXTS[key]
    return (en if lang.lower().startswith("en") else zh).format(**fields)


def quote(value: Any) -> str:
    s = " ".join(str(value or "").split())
    return s if len(s) <= QUOTE_MAX_CHARS else s[: QUOTE_MAX_CHARS - 1] + "…"


@dataclass
class Attention:
    """What the desktop's page reported last: the session its panel shows, and whether the
    page is visible."""

    session_id: str | None = None
    visible: bool = False
    ts: float = 0.0


class Thinker:
    """Speaks first, into the conversation, on events of the bus (one thread)."""

    def __init__(
        self,
        bus: EventBus,
        store: Store,
        runstore: RunStore,
        settings: Callable[[], Config],
        app_name: Callable[[str], str],
        clock: Callable[[], float] = time.time,
        topic_of: Callable[[str], Topic | None] = lambda sid: None,
    ):
        """``topic_of``: what a session was last about, from its topic tree (the idle
        remark's subject; None: nothing to bring up)."""
        self.bus = bus
        self._topic_of = topic_of
        self.store = store
        self.runstore = runstore
        self._settings = settings
        self._app_name = app_name
        self._clock = clock
        self.attention = Attention()
        self._lock = threading.Lock()
        self._watched: dict[str, str] = {}
        """run id -> what the scheduler ran (announced wherever the user looks)."""
        self._unattended: dict[tuple[str, str], int] = {}
        """(session id, instruction) the scheduler is running now: the runner says how it
        ended, the thinker does not say it again."""
        self._said_by_runner: dict[str, None] = {}
        """Run ids whose end the runner said (the thinker may see their end event later)."""
        self._started: dict[str, float] = {}
        self._app_status: dict[str, str] = {}
        self._idle_said: dict[str, float] = {}
        """session id -> the activity time the idle remark was made for (once per silence)."""
        self.seen = 0
        """The ``seq`` of the last bus event the loop has handled (tests wait on it)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sub: Subscription | None = None

    # ------------------------------------------------------------ saying

    def lang(self) -> str:
        return self._settings().language

    def say(
        self, session_id: str, message: str, about: str, *, reminder: bool = False, **extra: Any
    ) -> dict[str, Any] | None:
        """The desktop says ``message`` in ``session_id``'s conversation (None: do not
        disturb is on and it is no reminder)."""
        dnd = self._settings().duplex.dnd
        if dnd and not reminder:
            log.debug("do not disturb: not said (%s)", about)
            return None
        content = {"message": message, "about": about, "quiet": dnd, **extra}
        hid = self.store.add_history(session_id, "desktop", content)
        event = {"session_id": session_id, "entry": f"h{hid}", **content}
        self.bus.emit("said", event)
        return event

    def watch(self, run_id: str, what: str) -> None:
        """Announce the end of ``run_id`` (started unattended) wherever the user looks."""
        with self._lock:
            self._watched[run_id] = what

    @contextmanager
    def unattended(self, session_id: str, what: str) -> Iterator[None]:
        """While the scheduler runs ``what`` in ``session_id``, its end is the runner's to say."""
        key = (session_id, what)
        with self._lock:
            self._unattended[key] = self._unattended.get(key, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._unattended[key] -= 1
                if not self._unattended[key]:
                    del self._unattended[key]

    def said_by_runner(self, run_id: str) -> None:
        """The runner says how ``run_id`` ended: its end event is not said again. (Called
        inside :meth:`unattended`, so no moment is left where neither guard holds.)"""
        with self._lock:
            self._said_by_runner[run_id] = None
            while len(self._said_by_runner) > TRACKED_MAX:
                self._said_by_runner.pop(next(iter(self._said_by_runner)))

    def set_attention(self, session_id: str | None, visible: bool) -> None:
        self.attention = Attention(session_id, visible, self._clock())

    # ------------------------------------------------------------ events

    def handle(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """What the desktop says about one bus event (None: nothing)."""
        kind = event.get("type")
        if kind == "run":
            return self._on_run(event)
        if kind == "app_status":
            return self._on_app_status(event)
        return None

    def _on_run(self, event: dict[str, Any]) -> dict[str, Any] | None:
        run_id, state = str(event.get("run_id")), str(event.get("state"))
        if state not in FINAL:
            with self._lock:
                self._started.setdefault(run_id, self._clock())
                while len(self._started) > TRACKED_MAX:
                    self._started.pop(next(iter(self._started)))
            return None
        with self._lock:
            started = self._started.pop(run_id, None)
            watched = self._watched.pop(run_id, None)
        if state not in ANNOUNCED_STATES:
            return None
        sid = str(event.get("session_id") or "")
        if watched is not None:
            return self._announce_run(sid, state, watched, event, elsewhere=False)
        if event.get("kind") not in SAY_KINDS or not sid:
            return None
        what = self._run_text(run_id)
        with self._lock:
            runner = run_id in self._said_by_runner
            self._said_by_runner.pop(run_id, None)
            if runner or (sid, what) in self._unattended:
                return None
        seen = self.attention
        if seen.session_id is None:
            return None  # no page has said where it looks: nobody to tell
        took = self._clock() - started if started is not None else 0.0
        long_run = took >= self._settings().duplex.long_run_s
        if seen.session_id == sid and seen.visible and not long_run:
            return None  # the user watched it end
        where = seen.session_id if seen.visible else sid
        what = what or self._app_name(str(event.get("app") or ""))
        return self._announce_run(where, state, what, event, elsewhere=where != sid)

    def _run_text(self, run_id: str) -> str:
        run = self.runstore.run(run_id)
        return str((run or {}).get("text") or "")

    def _run_error(self, run_id: str) -> str:
        response = (self.runstore.run(run_id) or {}).get("response")
        if isinstance(response, dict):
            return quote(response.get("message") or response.get("error") or "?")
        return quote(response or "?")

    def _announce_run(
        self, sid: str, state: str, what: str, event: dict[str, Any], *, elsewhere: bool
    ) -> dict[str, Any] | None:
        lang = self.lang()
        run_id = str(event.get("run_id"))
        if state == "done":
            message = text("run_done", lang, what=quote(what))
        else:
            message = text("run_failed", lang, what=quote(what), error=self._run_error(run_id))
        if elsewhere:
            message = text("run_elsewhere", lang) + message
        return self.say(sid, message, f"run_{state}", run_id=run_id)

    def _on_app_status(self, event: dict[str, Any]) -> dict[str, Any] | None:
        app, status = str(event.get("app")), str(event.get("status"))
        before = self._app_status.get(app)
        self._app_status[app] = status
        if status != "failed" or before == "failed":
            return None
        sid = self.attention.session_id
        if sid is None:
            return None
        error = quote(event.get("error") or status)
        message = text("app_crashed", self.lang(), app=self._app_name(app), error=error)
        return self.say(sid, message, "app_crashed", app=app)

    # ------------------------------------------------------------ silence

    def idle_due(self) -> float | None:
        """When the idle remark of the session looked at is due (None: not at all)."""
        idle_s = self._settings().duplex.idle_s
        sid = self.attention.session_id
        if idle_s <= 0 or sid is None or not self.attention.visible:
            return None
        last = self._last_activity(sid)
        if self._idle_said.get(sid) == last:
            return None
        return last + idle_s

    def _last_activity(self, sid: str) -> float:
        rows = self.store.history(sid, limit=1)
        last = float(rows[-1]["ts"]) if rows else 0.0
        return max(last, self.attention.ts)

    def idle_check(self) -> dict[str, Any] | None:
        """The idle remark, if it is due now."""
        due = self.idle_due()
        sid = self.attention.session_id
        if due is None or sid is None or self._clock() < due:
            return None
        self._idle_said[sid] = self._last_activity(sid)
        topic = self._topic_of(sid)
        if topic is None:
            return None
        said = self.say(
            sid, text("idle", self.lang(), what=quote(topic.label)), "idle", topic=topic.id
        )
        if said is not None:  # the remark is activity too: the next one waits for the user
            self._idle_said[sid] = self._last_activity(sid)
        return said

    # ------------------------------------------------------------ the loop

    def start(self) -> None:
        if self._thread is not None:
            return
        self._sub = self.bus.reader()
        self._thread = threading.Thread(target=self._loop, name="thinker", daemon=True)
        self._thread.start()

    def _timeout(self) -> float:
        due = self.idle_due()
        if due is None:
            return WAIT_MAX_S
        # at most idle_s: the page may look at another session meanwhile (a new silence)
        idle_s = self._settings().duplex.idle_s
        return min(WAIT_MAX_S, idle_s, max(0.0, due - self._clock()))

    def _loop(self) -> None:
        while not self._stop.is_set() and not self.bus.closed.is_set():
            sub = self._sub
            if sub is None or sub.ended:
                sub = self._sub = self.bus.reader()
            try:
                for event in sub.get_many(self._timeout(), TRACKED_MAX):
                    self.handle(event)
                    self.seen = int(event.get("seq") or self.seen)
                self.idle_check()
            except Exception as e:  # noqa: BLE001 - a store fault: one line, the loop goes on
                log.warning("thinker: %s", e)

    def stop(self) -> None:
        """End the loop (the system closes the bus first, which ends the wait at once)."""
        self._stop.set()
        if self._sub is not None:
            self._sub.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
