"""The scheduler of reminders and automations (DESIGN §18 "Reminders and automations").

One thread for the whole system: it sleeps until the earliest due time (or until an
automation is added or changed), takes each due time with one compare-and-set in the
store (:meth:`~aios.store.automations.AutomationStore.take`) and hands it to ``fire`` on
a thread of its own, so a run that waits for the user never holds the others back.

Why croniter and our own loop rather than APScheduler: the store is the only code that
touches SQLite (APScheduler's job store wants SQLAlchemy and pickles the callables), and
the two rules that matter here are ours to keep either way — a due time is taken at most
once (the marker is written before the run starts: a crash during a run never runs it
again at the next start), and a due time passed by more than ``automations.grace_s``
when the scheduler sees it (the desktop was off or asleep) is reported missed, once, with
how many times it was missed, instead of being run late (APScheduler's ``coalesce`` +
``misfire_grace_time`` would run it once late). croniter only answers "the next time
after t" for a cron expression, in local time.

The clock is injected (``clock``) and :meth:`Scheduler.tick` is the loop's body, so the
never-twice and missed-run rules are tested without waiting.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from aios.config import AutomationsConfig
from aios.duplex.thinker import Thinker, quote, text
from aios.duplex.when import When, parse
from aios.errors import BadRequest, Conflict
from aios.names import new_id
from aios.store.automations import AutomationStore

log = logging.getLogger(__name__)

MISSED_COUNT_MAX = 1000
"""Missed due times of one cron expression counted at most (a minute cron off for a year)."""
IDLE_WAIT_S = 3600.0
"""With nothing scheduled the loop still looks again this often (a clock change)."""
CRON_PROBES = 6
"""Consecutive due times compared to find a cron expression's shortest interval."""

Fire = Callable[[dict[str, Any]], None]
Missed = Callable[[dict[str, Any], int], None]


def next_after(cron: str, after: float) -> float:
    """The first time after ``after`` (epoch seconds) that ``cron`` names, in local time."""
    from croniter import croniter  # with dateutil and pytz: loaded by the first schedule

    start = datetime.fromtimestamp(after).astimezone()
    return float(croniter(cron, start).get_next(float))


def check_cron(cron: str, min_interval_s: float) -> str:
    """``cron`` normalised, or BadRequest naming what is wrong with it."""
    from croniter import croniter

    cron = " ".join(cron.split())
    if len(cron.split(" ")) != 5 or not croniter.is_valid(cron):
        raise BadRequest(f"'cron' must be five fields (minute hour day month weekday): {cron!r}")
    t = time.time()
    times = [t]
    for _ in range(CRON_PROBES):
        times.append(next_after(cron, times[-1]))
    gap = min(b - a for a, b in zip(times[1:], times[2:], strict=False))
    if gap < min_interval_s:
        raise BadRequest(
            f"'cron' {cron!r} fires every {gap:.0f} s: at most once per "
            f"automations.min_interval_s ({min_interval_s:.0f} s)"
        )
    return cron


_ZH_DOW = "日一二三四五六"
_EN_DOW = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")


def describe(row: dict[str, Any], lang: str) -> str:
    """When ``row`` is due, in words: "12月8日 15:00", "每天 08:00", "every Monday at 09:00"."""
    en = lang.lower().startswith("en")
    cron = row.get("cron")
    if not cron:
        at = datetime.fromtimestamp(float(row["at"])).astimezone()
        return at.strftime("%a %d %b %H:%M") if en else f"{at.month}月{at.day}日 {at:%H:%M}"
    minute, hour, dom, month, dow = cron.split(" ")
    if not (minute.isdigit() and hour.isdigit() and month == "*"):
        return f"cron {cron}"
    hm = f"{int(hour):02d}:{int(minute):02d}"
    if dom == "*" and dow == "*":
        return f"every day at {hm}" if en else f"每天 {hm}"
    if dom == "*" and dow == "1-5":
        return f"every weekday at {hm}" if en else f"每个工作日 {hm}"
    if dom == "*" and dow.isdigit() and int(dow) < 7:
        return f"every {_EN_DOW[int(dow)]} at {hm}" if en else f"每周{_ZH_DOW[int(dow)]} {hm}"
    if dow == "*" and dom.isdigit():
        return f"on day {dom} of every month at {hm}" if en else f"每月{dom}号 {hm}"
    return f"cron {cron}"


def confirm(row: dict[str, Any], lang: str) -> str:
    """The reply to a reminder or an automation said in words."""
    when, what = describe(row, lang), quote(row["what"])
    if lang.lower().startswith("en"):
        doing = f"I'll remind you: {what}" if row["kind"] == "reminder" else f"I'll run: {what}"
        return f"OK — {when}, {doing}."
    doing = f"提醒你：{what}" if row["kind"] == "reminder" else f"执行：{what}"
    return f"好的，{when}{doing}。"


def _missed_count(row: dict[str, Any], now: float) -> tuple[int, float, float | None]:
    """How many due times of ``row`` passed by ``now``, the last of them, and the next."""
    due = float(row["next_due"])
    if not row.get("cron"):
        return 1, due, None
    count, last, nxt = 0, due, due
    while nxt <= now and count < MISSED_COUNT_MAX:
        count, last = count + 1, nxt
        nxt = next_after(row["cron"], nxt)
    if nxt <= now:  # counted to the cap: skip to now
        nxt = next_after(row["cron"], now)
    return count, last, nxt


class Scheduler:
    """Reminders and automations: kept in the store, fired when due, reported if missed."""

    def __init__(
        self,
        store: AutomationStore,
        settings: Callable[[], AutomationsConfig],
        *,
        fire: Fire,
        missed: Missed,
        clock: Callable[[], float] = time.time,
    ):
        self.store = store
        self._settings = settings
        self._fire = fire
        self._missed = missed
        self._clock = clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.fired: list[threading.Thread] = []
        """Threads of the fires under way (tests join them; they are daemons: a stopping
        system cancels their runs through :meth:`aios.runs.runs.Runs.shutdown`)."""

    # ------------------------------------------------------------ the user's side

    def create(
        self, session_id: str, when: When, *, said: str | None = None, locale: str | None = None
    ) -> dict[str, Any]:
        """A new automation from what :func:`aios.duplex.when.parse` read (or the API gave)."""
        cfg = self._settings()
        if self.store.count(session_id) >= cfg.max_per_session:
            raise Conflict(
                f"this conversation holds {cfg.max_per_session} automations already "
                "(automations.max_per_session): delete one first"
            )
        at = when.at.timestamp() if when.at is not None else None
        cron = check_cron(when.cron, cfg.min_interval_s) if when.cron else None
        if at is None and cron is None:
            raise BadRequest("an automation needs 'at' (a time) or 'cron' (five fields)")
        if at is not None and at <= self._clock():
            raise BadRequest("'at' is in the past: give a time still to come")
        row = self.store.create(
            {
                "id": new_id("auto"),
                "session_id": session_id,
                "kind": when.kind,
                "what": when.what,
                "said": said,
                "locale": locale,
                "at": at,
                "cron": cron,
                "next_due": at if at is not None else next_after(str(cron), self._clock()),
            }
        )
        self._wake.set()
        return row

    def from_words(self, said: str, session_id: str, lang: str) -> dict[str, Any] | None:
        """The controller's reply to a reminder or an automation said in words (the
        controller's ``schedule`` hook), or None when ``said`` schedules nothing."""
        now = datetime.fromtimestamp(self._clock()).astimezone()
        when = parse(said, now)
        if when is None:
            # "remind me to buy milk" with no time stays with the apps (Notes keeps it)
            return None
        row: dict[str, Any] | None
        try:
            row = self.create(session_id, when, said=said, locale=lang)
            message = confirm(row, lang)
        except (BadRequest, Conflict) as e:  # said, not thrown: "every minute" over the limit
            row, message = None, str(e)
        reply = {"message": message, "intent": "automation"}
        self.store.store.add_history(session_id, "system", reply)
        return {
            "session_id": session_id,
            "plan": [],
            "results": [],
            "message": message,
            "source": "automation",
            "intent": "automation",
            "automation": row,
            "notes": [],
        }

    def edit(self, automation_id: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Pause or resume, change the time (``at`` epoch seconds or ``cron``) or the words."""
        current = self.store.get(automation_id)
        cfg = self._settings()
        fields: dict[str, Any] = {}
        if "what" in patch:
            fields["what"] = patch["what"]
        if patch.get("cron") is not None:
            fields.update(cron=check_cron(str(patch["cron"]), cfg.min_interval_s), at=None)
        elif patch.get("at") is not None:
            at = float(patch["at"])
            if at <= self._clock():
                raise BadRequest("'at' is in the past: give a time still to come")
            fields.update(at=at, cron=None)
        if "paused" in patch:
            fields["paused"] = bool(patch["paused"])
        if "cron" in fields or "at" in fields or fields.get("paused") is False:
            fields["next_due"] = self._next_due(
                fields.get("cron", current["cron"]), fields.get("at", current["at"]), current
            )
        row = self.store.update(automation_id, fields)
        self._wake.set()
        return row

    def _next_due(self, cron: str | None, at: float | None, current: dict[str, Any]) -> Any:
        now = self._clock()
        if cron:
            return next_after(cron, now)
        if at is not None and (at != current["at"] or current["next_due"] is not None):
            return at if at > now else None
        return current["next_due"]

    def delete(self, automation_id: str) -> None:
        self.store.delete(automation_id)
        self._wake.set()

    # ------------------------------------------------------------ the loop

    def tick(self, now: float | None = None) -> list[str]:
        """One pass: every due automation is fired or reported missed; the ids fired."""
        now = self._clock() if now is None else now
        cfg = self._settings()
        fired: list[str] = []
        for row in self.store.due(now):
            late = now - float(row["next_due"])
            if late > cfg.grace_s or not cfg.enabled:
                self._report_missed(row, now)
                continue
            nxt = next_after(row["cron"], now) if row["cron"] else None
            if not self.store.take(row["id"], float(row["next_due"]), nxt):
                continue  # taken already (another pass, a restart) or changed meanwhile
            fired.append(row["id"])
            thread = threading.Thread(
                target=self._run_fire, args=(row,), name=f"automation-{row['id']}", daemon=True
            )
            self.fired = [t for t in self.fired if t.is_alive()] + [thread]
            thread.start()
        return fired

    def _report_missed(self, row: dict[str, Any], now: float) -> None:
        count, last, nxt = _missed_count(row, now)
        if self.store.take(row["id"], float(row["next_due"]), nxt, missed=count):
            log.info("automation %s: %d due time(s) missed (last %.0f)", row["id"], count, last)
            try:
                self._missed(row, count)
            except Exception as e:  # noqa: BLE001 - the marker is written; saying so is best effort
                log.warning("automation %s: could not say it was missed: %s", row["id"], e)

    def _run_fire(self, row: dict[str, Any]) -> None:
        try:
            self._fire(row)
        except Exception as e:  # noqa: BLE001 - one automation's failure stops no other
            log.warning("automation %s failed: %s", row["id"], e)
            try:
                self.store.outcome(row["id"], "failed")
            except Exception as again:  # noqa: BLE001 - a full disk: the log line is all
                log.warning("automation %s: outcome not kept: %s", row["id"], again)

    def start(self) -> None:
        """Report what was missed while the desktop was off, then run the loop."""
        if self._thread is not None:
            return
        try:  # the catch-up pass: missed due times are reported before start returns
            self.tick()
        except Exception as e:  # noqa: BLE001 - a store fault: one line, the loop tries again
            log.warning("automations: %s", e)
        self._thread = threading.Thread(target=self._loop, name="automations", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
                nxt = self.store.next_due()
            except Exception as e:  # noqa: BLE001 - a store fault: one line, try again later
                log.warning("automations: %s", e)
                nxt = None
            wait = IDLE_WAIT_S if nxt is None else max(0.0, nxt - self._clock())
            self._wake.wait(min(wait, IDLE_WAIT_S))
            self._wake.clear()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


Instruction = Callable[[str, str, str | None], dict[str, Any]]
"""``(text, session id, locale) -> reply``: the controller's ``instruction``."""


class Runner:
    """What a due automation does (the scheduler's ``fire``): a reminder is said; a run is
    the instruction sent through the controller, in the automation's conversation, under
    the same approvals as a typed one — a step that needs a decision waits as a card there,
    and the desktop says so."""

    def __init__(
        self,
        store: AutomationStore,
        thinker: Thinker,
        instruction: Instruction,
        language: Callable[[], str],
    ):
        self.store = store
        self.thinker = thinker
        self.instruction = instruction
        self.language = language

    def fire(self, row: dict[str, Any]) -> None:
        sid, what = str(row["session_id"]), str(row["what"])
        lang = str(row.get("locale") or self.language())
        if row["kind"] == "reminder":
            message = text("reminder", lang, what=what) if what else text("reminder_empty", lang)
            self.thinker.say(sid, message, "reminder", reminder=True, automation=row["id"])
            self.store.outcome(row["id"], "said")
            return
        self.thinker.say(sid, text("automation_start", lang, what=quote(what)), "automation")
        with self.thinker.unattended(sid, what):
            reply = self.instruction(what, sid, row.get("locale"))
            run_id = reply.get("run_id")
            state = _state_of(reply)
            if run_id and state != "waiting":
                self.thinker.said_by_runner(str(run_id))
        if state == "waiting" and run_id:
            self.thinker.watch(str(run_id), what)
            message = text("automation_waiting", lang, what=quote(what))
        elif state == "failed":
            message = text("automation_failed", lang, what=quote(what), error=_error_of(reply))
        else:
            done = quote(reply.get("message"))
            message = text("automation_done", lang, what=quote(what), message=done)
        self.thinker.say(sid, message, f"automation_{state}", reminder=True, run_id=run_id)
        self.store.outcome(row["id"], state, str(run_id) if run_id else None)

    def missed(self, row: dict[str, Any], count: int) -> None:
        lang = str(row.get("locale") or self.language())
        what = quote(row["what"] or row.get("said"))
        message = text("missed", lang, what=what, n=count)
        self.thinker.say(str(row["session_id"]), message, "missed", reminder=True, missed=count)


def _state_of(reply: dict[str, Any]) -> str:
    if reply.get("state") == "waiting":
        return "waiting"
    results = reply.get("results") or []
    if any(isinstance(r, dict) and (r.get("response") or {}).get("status") == "error"
           for r in results):  # fmt: skip
        return "failed"
    return "done"


def _error_of(reply: dict[str, Any]) -> str:
    for r in reply.get("results") or []:
        response = r.get("response") or {} if isinstance(r, dict) else {}
        if response.get("status") == "error":
            return quote(response.get("message") or response.get("error"))
    return quote(reply.get("message"))
