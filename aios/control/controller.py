# Longer than ~500 lines on purpose: the instruction → plan → dispatch → steps loop reads top to
# bottom; dispatch slots are in aios/control/dispatch.py.
"""The controller (DESIGN §9): intent → task DAG → context → steps loop → summary.

It never interprets an app's ``data``; it validates replies, runs their
``steps`` through the executor in the app's sandbox, feeds the results back
(``context.tool_results``), and keeps the session memory (§4.4) in the store.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, TimeoutError as FutureTimeout, wait
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import requests
from requests.adapters import HTTPAdapter

from aios.apphost.permissions import CONVERSATION_READ
from aios.control import intents, owners
from aios.control.dispatch import AppSlots, run_in_thread
from aios.control.planner import Plan, Task, own_turns, plan_instruction, summarize_history
from aios.control.router import AppProfile, OfflineRouter, manifest_examples, routed_as
from aios.errors import (
    AppError,
    AppNotFound,
    AppReplyInvalid,
    AppTimeout,
    AppUnavailable,
    ProtocolError,
)
from aios.protocol import (
    ATOMIC_TOOLS,
    ActionRequest,
    Step,
    app_secret,
    error_response,
    forwardable_reply,
    jsondepth,
    parse_steps,
)
from aios.protocol.outbound import read_of
from aios.runs.gate import ask_step, gate, recheck
from aios.runs.rights import Acting, LaunchLimits, check_launch
from aios.runs.runs import Run, waiting_view
from aios.tools.executor import ASK_TOOL, LAUNCH_TOOL, Executor, stopped

if TYPE_CHECKING:
    from aios.apphost.registry import AppRecord, Launcher
    from aios.config import Config
    from aios.desktop.instances import Instances
    from aios.events import EventBus
    from aios.llm.client import LLMClient
    from aios.protocol import ToolResult
    from aios.runs.approvals import Approvals
    from aios.runs.approved import Approval
    from aios.runs.runs import Runs
    from aios.store import Store
    from aios.tools.base import ToolContext

log = logging.getLogger(__name__)

T = TypeVar("T")
ROUTE_CHOICES = "route_choices"
"""Session variable: which app the user chose when the router could not tell (rivals -> app)."""
STOP_WORDS = frozenset({"停止", "取消", "stop", "cancel", "停"})
"""A typed or spoken instruction that is one of these cancels the session's active runs."""

CWD_FILES_MAX = 50
HISTORY_WINDOW = 40
"""History entries a summary is made from."""
SUMMARY_CACHE = 256
"""Sessions whose summary is kept in memory."""
HISTORY_DATA_MAX = 20_000
"""Bytes of a reply's ``data`` kept in the session history (the message is always kept)."""
CLARIFY_ECHO_CHARS = 80
"""Characters of a task's instruction quoted in "which app did you mean?"."""


@dataclass
class Outcome:
    """An app's final reply for one call, and what happened on the way."""

    app: str
    response: dict[str, Any]
    rounds: int = 1
    notes: list[str] | None = None


class Controller:
    def __init__(
        self,
        *,
        config: Config,
        store: Store,
        launcher: Launcher,
        bus: EventBus,
        llm: LLMClient | None,
        tool_context: Callable[[str, str | None], ToolContext],
        custom_tools: Callable[[str], list[str]],
        runs: Runs,
        approvals: Approvals,
        instances: Instances,
    ):
        self.config = config
        self.store = store
        self.launcher = launcher
        self.bus = bus
        self.llm = llm
        self.executor = Executor(mount=launcher.mount)
        self.runs = runs
        self.approvals = approvals
        self.instances = instances
        self._tool_context = tool_context
        self._custom_tools = custom_tools
        self._http = requests.Session()
        self._http.trust_env = False
        self._http.mount("http://", HTTPAdapter(pool_connections=32, pool_maxsize=32))
        launcher.mount(self._http, pool_connections=32, pool_maxsize=32)
        self._summaries: dict[str, tuple[int, str]] = {}
        self._deadlines: dict[str, dict[int, float]] = {}
        """Per app, the ``time.monotonic()`` deadline of each call in flight (part 15-L)."""
        self._deadline_ids = itertools.count()
        self._deadline_lock = threading.Lock()
        self.slots = AppSlots()
        """Per-app call slots: a hung app holds its own, never another app's."""
        self.acting: Acting[Run] = Acting()
        """Which app acts for whom, in which session, right now (DESIGN §14.4)."""

    def reconfigure(self, config: Config, *, llm: LLMClient | None) -> None:
        """Use new settings (and the LLM client built for them) from the next call on."""
        self.config = config
        self.llm = llm

    def close(self) -> None:
        self._http.close()

    # ------------------------------------------------------------ entry points

    def open_app(
        self, app_id: str, session_id: str | None = None, *, locale: str | None = None
    ) -> tuple[str, Outcome]:
        """The app's reply to an empty instruction (its home view); ``locale`` overrides
        ``config.language`` for this request."""
        record = self._record(app_id)
        sid = self.store.ensure_session(session_id)
        self.store.add_history(sid, "user", {"open": app_id}, app=app_id)
        self.instances.open(app_id, sid)
        request = {"kind": "open", "app": app_id, **({"locale": locale} if locale else {})}
        run = self.runs.start("open", app_id, sid, request=request)
        return sid, self._app_run(run, record, "", None, locale=locale)

    def action(
        self,
        app_id: str,
        request: ActionRequest,
        session_id: str | None = None,
        *,
        locale: str | None = None,
    ) -> tuple[str, Outcome]:
        """Forward a control's payload to its app (docs/protocol.md §3); ``locale`` as for open."""
        record = self._record(app_id)
        sid = self.store.ensure_session(session_id)
        self.store.add_history(
            sid, "user", {"action": request.model_dump(exclude_none=True)}, app=app_id
        )
        run = self.runs.start(
            "action",
            app_id,
            sid,
            text=request.action_id,
            request={
                "kind": "action",
                "app": app_id,
                "action": request.model_dump(exclude_none=True),
                **({"locale": locale} if locale else {}),
            },
        )
        return sid, self._app_run(run, record, None, request, locale=locale)

    def _app_run(
        self,
        run: Run,
        record: AppRecord,
        instruction: str | None,
        action: ActionRequest | None,
        locale: str | None = None,
    ) -> Outcome:
        """One app's call as a run: its final outcome, or a "waiting" one when it pauses."""

        def work() -> Outcome:
            outcome = self.call_app(
                record, instruction, action, run.session_id, run=run, locale=locale
            )
            self._remember(run.session_id, outcome)
            self.instances.reply(record.id, run.session_id, outcome.response)
            return outcome

        done = self._settle(run, work, lambda o: [o])
        if done is None:
            return Outcome(record.id, waiting_view(run))
        done.response = {**done.response, "run_id": run.run_id}
        return done

    def _settle(
        self, run: Run, work: Callable[[], T], outcomes: Callable[[T], list[Outcome]]
    ) -> T | None:
        """Run ``work`` on its own thread: its result, or None once the run waits for the user.

        When it waited, its final views go to the desktop as ``view`` events
        (with the ``run_id``) as it ends.
        """

        def body() -> T:
            try:
                result = work()
            except BaseException as e:
                self.runs.finish(run, error_response(str(e)), failed=True)
                if run.paused:
                    self.bus.emit(
                        "view",
                        {
                            "app": run.app,
                            "session_id": run.session_id,
                            "run_id": run.run_id,
                            "response": error_response(str(e), title=run.app),
                        },
                    )
                raise
            finals = outcomes(result)
            failed = any(o.response.get("status") != "ok" for o in finals)
            self.runs.finish(run, finals[0].response if finals else None, failed=failed)
            if run.paused:
                for o in finals:
                    self.bus.emit(
                        "view",
                        {
                            "app": o.app,
                            "session_id": run.session_id,
                            "run_id": run.run_id,
                            "response": {**o.response, "run_id": run.run_id},
                        },
                    )
            return result

        fut = run_in_thread(body, name=f"aios-run-{run.app or 'plan'}")
        if not run.wait_settled():
            return None
        return fut.result()

    def instruction(
        self,
        text: str,
        session_id: str | None = None,
        *,
        spoken: bool = False,
        locale: str | None = None,
    ) -> dict[str, Any]:
        """Route a typed or spoken instruction and run its task DAG.

        System intents (help, open / close / switch to an app, Settings, the
        time, small talk, undo / reset of the desktop: aios/control/intents.py) are
        answered first, the same with and without an LLM. ``locale`` overrides
        ``config.language`` for this request: the answer and the apps' context.
        """
        sid = self.store.ensure_session(session_id)
        lang = intents.lang_of(locale or self.config.language)
        self.store.add_history(sid, "user", {"text": text, **({"spoken": True} if spoken else {})})
        if text.strip().casefold() in STOP_WORDS:
            stopped_runs = self.runs.cancel_session(sid)
            message = (
                intents.say("stopped", lang, n=len(stopped_runs))
                if stopped_runs
                else intents.say("nothing_running", lang)
            )
            return {
                "session_id": sid,
                "plan": [],
                "results": [],
                "message": message,
                "source": "stop",
                "intent": "stop",
                "notes": [],
                "cancelled": stopped_runs,
            }
        apps = self._intent_apps()
        intent = intents.recognise(text, apps)
        if intent is not None:
            return self._system_intent(intent, text, sid, lang, apps)
        profiles = self.profiles()
        last_app = self.store.context_vars(sid).get("last_app")
        plan = plan_instruction(
            text,
            profiles,
            llm=self.llm,
            router=OfflineRouter(profiles, prefer=last_app),
            history_summary=self.history_summary(sid),
        )
        for note in plan.notes:
            log.warning("planner (plan from %s): %s", plan.source, note)
        if not plan.notes:
            log.info("planner: plan from %s", plan.source)
        if not plan.tasks and not plan.reply:
            return self._no_match(text, sid, lang, profiles, apps, plan.notes)
        if not plan.tasks:
            message = plan.reply or ""
            self.store.add_history(sid, "system", {"message": message, "plan": plan.source})
            return {
                "session_id": sid,
                "plan": [],
                "results": [],
                "message": message,
                "source": plan.source,
                "notes": plan.notes,
            }
        return self._dispatch(plan, text, sid, lang)

    def _dispatch(
        self, plan: Plan, text: str, sid: str, lang: str, extra: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run a plan's tasks as one run: the reply with every task's result (``extra`` on top)."""
        extra = extra or {}
        run = self.runs.start(
            "instruction",
            ",".join(dict.fromkeys(t.app for t in plan.tasks)),
            sid,
            text=text,
            request={"kind": "instruction", "text": text, "locale": lang},
        )
        done = self._settle(run, lambda: self._run_plan(plan, text, sid, run, lang), lambda r: r)
        if done is None:
            return {
                "session_id": sid,
                "plan": [t.model_dump() for t in plan.tasks],
                "results": [],
                "message": waiting_view(run)["message"],
                "source": plan.source,
                "notes": plan.notes,
                "run_id": run.run_id,
                "state": "waiting",
                "pending": list(run.pending),
                **extra,
            }
        results = done
        message = "；".join(
            r.response.get("message") or "" for r in results if r.response.get("message")
        ) or intents.say("done", lang)
        self.store.set_context_var(sid, "last_instruction", text)
        return {
            "session_id": sid,
            "plan": [t.model_dump() for t in plan.tasks],
            "results": [
                {"app": r.app, "task": t.id, "response": r.response}
                for t, r in zip(plan.tasks, results, strict=True)
            ],
            "message": message,
            "source": plan.source,
            "notes": plan.notes,
            "run_id": run.run_id,
            **extra,
        }

    # ------------------------------------------------------- system intents

    def _intent_apps(self) -> list[intents.AppInfo]:
        """The apps an intent may name: those the router may route to, installed first first."""
        records = sorted(
            (
                r
                for r in self.launcher.apps()
                if r.manifest is not None and r.status in ("running", "starting", "restarting")
            ),
            key=lambda r: r.installed,
        )
        return [intents.app_info(r) for r in records]

    def _system_intent(
        self,
        intent: intents.Intent,
        text: str,
        sid: str,
        lang: str,
        apps: list[intents.AppInfo],
    ) -> dict[str, Any]:
        """The controller's own answer to a system intent (DESIGN §9, docs/protocol.md)."""
        if intent.kind == "ui_reset":
            record = self.launcher.get(intents.SYSTEM_AGENT)
            if record is not None and record.status == "running":
                plan = Plan(
                    tasks=[
                        Task(
                            id="t1",
                            app=intents.SYSTEM_AGENT,
                            instruction=text,
                            routed=routed_as(text, "system"),
                        )
                    ],
                    source="offline",
                )
                return self._dispatch(
                    plan, text, sid, lang, {"source": "system", "intent": "ui_reset"}
                )
            answer = intents.Answer("ui_reset", intents.say("reset_unavailable", lang))
        else:
            answer = intents.answer(intent, apps, lang, datetime.now().astimezone())
        self._remember_answer(sid, answer)
        results: list[dict[str, Any]] = []
        if intent.kind == "open_app" and intent.app:
            outcome = self._open_for_intent(intent.app, sid, lang)
            if outcome is not None:
                results.append({"app": outcome.app, "task": "open", "response": outcome.response})
        return {
            "session_id": sid,
            "plan": [],
            "results": results,
            "message": answer.message,
            "notes": [],
            **answer.fields(),
        }

    def _open_for_intent(self, app_id: str, sid: str, lang: str) -> Outcome | None:
        """ "打开音乐": the app's reply to an empty instruction, as a click on its icon.

        None while the app is not running yet: the desktop opens the window,
        which fills itself once the app runs.
        """
        record = self.launcher.get(app_id)
        if record is None or record.status != "running":
            return None
        self.instances.open(app_id, sid)
        run = self.runs.start("open", app_id, sid, request={"kind": "open", "app": app_id})
        try:
            return self._app_run(run, record, "", None, locale=lang)
        except AppError as e:
            return Outcome(app_id, error_response(str(e), title=app_id))

    def _no_match(
        self,
        text: str,
        sid: str,
        lang: str,
        profiles: list[AppProfile],
        apps: list[intents.AppInfo],
        notes: list[str],
    ) -> dict[str, Any]:
        """Nothing understood ``text``: the closest apps by the router's scores, and a
        start-menu search for it."""
        by_id = {a.id: a for a in apps}
        scored = [by_id[a] for a, _ in OfflineRouter(profiles).score(text) if a in by_id]
        answer = intents.no_match(text, scored or apps, lang)
        self._remember_answer(sid, answer)
        return {
            "session_id": sid,
            "plan": [],
            "results": [],
            "message": answer.message,
            "notes": notes,
            **answer.fields(),
        }

    def _remember_answer(self, sid: str, answer: intents.Answer) -> None:
        fields = answer.fields()
        entry = {"message": answer.message, "plan": fields.pop("source"), **fields}
        entry.pop("desktop", None)
        self.store.add_history(sid, "system", entry)

    # ----------------------------------------------------------------- the DAG

    def _reroute(self, task: Task, app_id: str) -> None:
        """Give ``task`` to ``app_id`` (the user's choice): its ``routed`` is that app's."""
        if app_id != task.app:
            task.app = app_id
            task.routed = OfflineRouter(self.profiles()).routed_info(
                app_id, task.instruction, [task.instruction]
            )

    def _clarify(self, plan: Plan, sid: str, run: Run, lang: str) -> bool:
        """Ask the user which app a task is for when the router could not tell (DESIGN §13).

        The answer routes the task and is remembered for the session: the same
        rivals are not asked about again. False when the run was cancelled.
        """
        remembered: dict[str, str] = dict(self.store.context_vars(sid).get(ROUTE_CHOICES) or {})
        names = {p.id: p.name for p in self.profiles()}
        for task in plan.tasks:
            if not task.alternatives:
                continue
            rivals = [task.app, *task.alternatives]
            key = "|".join(sorted(rivals))
            if remembered.get(key) in rivals:
                self._reroute(task, remembered[key])
                continue
            shown = [names.get(a, a) for a in rivals]
            prompt = intents.say(
                "choose_app",
                lang,
                apps=intents.say("choose_or", lang).join(shown),
                text=task.instruction[:CLARIFY_ECHO_CHARS],
            )
            options = [{"value": a, "label": names.get(a, a)} for a in rivals]
            result = ask_step(
                self.approvals,
                self.runs,
                run,
                "",
                f"route_{task.id}",
                {"kind": "choice", "prompt": prompt, "options": options},
            )
            if run.cancel.is_set():
                return False
            chosen = (result.result or {}).get("value") if result.status == "ok" else None
            if chosen in rivals:
                self._reroute(task, str(chosen))
                remembered[key] = task.app
                self.store.set_context_var(sid, ROUTE_CHOICES, remembered)
            # expired or unanswered: the router's best guess stands
        run.app = ",".join(dict.fromkeys(t.app for t in plan.tasks))
        return True

    def _ask_owners(self, plan: Plan, text: str, run: Run, lang: str) -> bool:
        """A task routed to an app that takes words an earlier app owns asks the user first
        (DESIGN §14.7); the answer is remembered in the store. False when cancelled.

        Asked before any task runs: nothing reaches the later app until the user
        says so. Unanswered (expired), the task goes to the owner.
        """
        profiles = self.profiles()
        if len({p.installed for p in profiles}) < 2:
            return True  # every app installed at once: no app came after another
        router = OfflineRouter(profiles)
        names = {p.id: p.name for p in profiles}

        def label(app_id: str) -> str:
            name = names.get(app_id, app_id)
            return name if name.endswith(f"({app_id})") else f"{name} ({app_id})"

        for task in plan.tasks:
            if task.alternatives:
                continue  # the user picks among the close rivals (_clarify)
            said = task.instruction if len(plan.tasks) > 1 else f"{text}\n{task.instruction}"
            found = owners.contest(router, task.app, said)
            if found is None:
                continue
            remembered = self.store.route_owner_choices(task.app)
            refused = [o for o in found.owners if remembered.get(o) == o]
            if refused:
                self._reroute(task, refused[0])
                continue
            open_owners = [o for o in found.owners if remembered.get(o) != task.app]
            if not open_owners:
                continue  # the user let this app take these owners' words
            rivals = [*open_owners, task.app]
            prompt = intents.say(
                "owned_words",
                lang,
                text=task.instruction[:CLARIFY_ECHO_CHARS],
                owners=intents.say("choose_or", lang).join(label(o) for o in open_owners),
                words="、".join(found.words[:4]),
                newcomer=label(task.app),
            )
            options = [{"value": a, "label": label(a)} for a in rivals]
            result = ask_step(
                self.approvals,
                self.runs,
                run,
                "",
                f"owner_{task.id}",
                {"kind": "choice", "prompt": prompt, "options": options},
            )
            if run.cancel.is_set():
                return False
            chosen = (result.result or {}).get("value") if result.status == "ok" else None
            if chosen in rivals:
                self.store.set_route_owner_choice(open_owners, task.app, str(chosen))
                self._reroute(task, str(chosen))
            else:  # expired or unanswered: the owner keeps its words, nothing remembered
                self._reroute(task, open_owners[0])
        run.app = ",".join(dict.fromkeys(t.app for t in plan.tasks))
        return True

    def _run_plan(self, plan: Plan, text: str, sid: str, run: Run, lang: str) -> list[Outcome]:
        if not self._clarify(plan, sid, run, lang) or not self._ask_owners(plan, text, run, lang):
            return [
                Outcome(t.app, error_response("cancelled by the user", title=t.app))
                for t in plan.tasks
            ]
        tasks = {t.id: t for t in plan.tasks}
        key = uuid.uuid4().hex[:8]  # plan ids restart at t1: the store keys tasks per plan
        for t in plan.tasks:
            self.store.upsert_task(
                sid,
                f"{key}-{t.id}",
                app=t.app,
                instruction=t.instruction,
                depends_on=list(t.depends_on),
                status="pending",
            )
        done: dict[str, Outcome] = {}
        running: dict[Future[Outcome], str] = {}
        failed: set[str] = set()
        while len(done) < len(tasks):
            for tid, task in tasks.items():
                if tid in done or tid in running.values():
                    continue
                if any(d in failed or d not in tasks for d in task.depends_on):
                    done[tid] = self._skipped(task)
                    failed.add(tid)
                    continue
                if all(d in done for d in task.depends_on):
                    upstream = {d: _upstream_entry(done[d]) for d in task.depends_on}
                    for d in task.depends_on:  # another app's result: not typed by the user
                        run.taint.add(f"the result of {done[d].app}")
                    running[
                        run_in_thread(
                            self._run_task,
                            task,
                            sid,
                            upstream,
                            f"{key}-{tid}",
                            run,
                            lang,
                            name=f"aios-task-{task.app}",
                        )
                    ] = tid
            if not running:
                # nothing can start: the rest wait on each other (a cycle the planner
                # should have refused); skip them rather than spin
                for tid, task in tasks.items():
                    if tid not in done:
                        done[tid] = self._skipped(task)
                        failed.add(tid)
                break
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in finished:
                tid = running.pop(fut)
                done[tid] = fut.result()
                if done[tid].response.get("status") != "ok":
                    failed.add(tid)
        return [done[t.id] for t in plan.tasks]

    def _run_task(
        self, task: Task, sid: str, upstream: dict[str, Any], key: str, run: Run, lang: str
    ) -> Outcome:
        self.store.upsert_task(
            sid,
            key,
            app=task.app,
            instruction=task.instruction,
            depends_on=list(task.depends_on),
            status="running",
        )
        try:
            record = self._record(task.app)
            self.instances.open(task.app, sid)
            outcome = self.call_app(
                record,
                task.instruction,
                None,
                sid,
                upstream=upstream,
                run=run,
                locale=lang,
                routed=task.routed or routed_as(task.instruction, "llm"),
            )
        except AppError as e:
            outcome = Outcome(task.app, error_response(str(e), title=task.app))
        status = "done" if outcome.response.get("status") == "ok" else "error"
        self.store.upsert_task(
            sid,
            key,
            app=task.app,
            instruction=task.instruction,
            depends_on=list(task.depends_on),
            status=status,
            result={
                "message": outcome.response.get("message"),
                "view_type": outcome.response.get("view_type"),
            },
        )
        self._remember(sid, outcome)
        return outcome

    def _skipped(self, task: Task) -> Outcome:
        return Outcome(
            task.app,
            error_response(
                f"skipped: a task it depends on ({', '.join(task.depends_on)}) failed",
                title=task.app,
            ),
        )

    # ------------------------------------------------------- one app, all rounds

    def call_app(
        self,
        record: AppRecord,
        instruction: str | None,
        action: ActionRequest | None,
        sid: str,
        upstream: dict[str, Any] | None = None,
        run: Run | None = None,
        locale: str | None = None,
        routed: dict[str, Any] | None = None,
        launchers: tuple[str, ...] = (),
    ) -> Outcome:
        """Call an app, run its steps, call again with tool_results, until a final view.

        ``launchers``: the apps whose work this is (outermost first; DESIGN §14.4),
        empty when the app acts for the user. For the whole call the app is
        *acting* (:class:`~aios.runs.rights.Acting`): what it asks the system for
        meanwhile is tied to this session, this run and this chain.

        Within a ``run`` each plan is reviewed first and may wait for the
        user (DESIGN §12); once the run is cancelled, the app is called once
        more with the results so far (``code: "cancelled"``) for a final view,
        and steps it returns then are not run.

        Raises AppUnavailable / AppTimeout when the app cannot be reached;
        a reply that is reached but unusable becomes an error view.
        """
        with self.acting.frame(record.id, sid, run, launchers):
            return self._call_app(
                record, instruction, action, sid, upstream, run, locale, routed, launchers
            )

    def _call_app(
        self,
        record: AppRecord,
        instruction: str | None,
        action: ActionRequest | None,
        sid: str,
        upstream: dict[str, Any] | None,
        run: Run | None,
        locale: str | None,
        routed: dict[str, Any] | None,
        launchers: tuple[str, ...],
    ) -> Outcome:
        context = self.build_context(record, sid, upstream, locale=locale, routed=routed)
        tool_results: dict[str, Any] = {}
        previous_steps: list[dict[str, Any]] | None = None
        notes: list[str] = []
        reply: dict[str, Any] = {}
        max_rounds = self.config.max_rounds
        round_no = 0
        for round_no in range(1, max_rounds + 1):
            body = {
                "instruction": instruction,
                "context": {**context, "tool_results": tool_results},
                "action_request": action.model_dump(exclude_none=True) if action else None,
                "session_id": sid,
            }
            try:
                reply = self._post(record, body, run.run_id if run is not None else None)
            except AppReplyInvalid as e:
                return Outcome(record.id, error_response(str(e), title=record.id), round_no)
            steps = reply.get("steps") or []
            if not steps:
                return Outcome(record.id, reply, round_no, notes or None)
            if run is not None and run.cancel.is_set():
                notes.append("the run was cancelled; the app's last steps were not run")
                break
            if steps == previous_steps:
                notes.append(
                    "no progress: the app repeated its previous steps; they were not run again"
                )
                break
            if round_no == max_rounds:
                notes.append(f"stopped after max_rounds={max_rounds}; the last steps were not run")
                break
            self.bus.emit(
                "view", {"app": record.id, "session_id": sid, "response": reply, "interim": True}
            )
            # Asked for only now that the app answered: a context exists only for
            # an app that is running (it is rebuilt when the settings change).
            ctx = self._tool_context(record.id, sid)
            if run is None:
                tool_results = self.executor.run(steps, ctx, on_step=None)
            else:
                tool_results = self._run_steps(run, record.id, steps, ctx, launchers)
            previous_steps = steps
        final = {**reply, "steps": [], "notes": notes}
        return Outcome(record.id, final, round_no, notes)

    def _run_steps(
        self,
        run: Run,
        app: str,
        steps: list[dict[str, Any]],
        ctx: ToolContext,
        launchers: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """One plan within a run: reviewed (maybe waiting for the user), then run, announced.

        ``launchers``: work another app started runs with the chain's rights (§14.4)."""
        try:
            parsed: list[Step] | list[dict[str, Any]] = parse_steps(steps)  # once, for both
        except ProtocolError:
            parsed = steps  # the executor reports what is wrong with it
        approved: dict[str, Approval] = {}
        presets, decisions = gate(
            self.approvals,
            self.runs,
            run,
            app,
            parsed,
            ctx.policy,
            chain=launchers,
            approved=approved,
        )
        parsed_steps = [s for s in parsed if isinstance(s, Step)]
        current: dict[str, str] = {}
        args_of = {s.key: s.args for s in parsed_steps}
        if ctx.destinations is None and (
            self.runs.reads_for(run, app) or any(read_of(s.tool, s.args) for s in parsed_steps)
        ):
            # tainted (even in auto): its requests' redirects stay on granted destinations
            ctx = replace(ctx, destinations=self.approvals.destinations(app))

        def before(key: str, tool: str) -> None:
            current["key"] = key
            self.runs.step(run, {"step_id": key, "tool": tool, "status": "started"})

        def progress(report: dict[str, Any]) -> None:
            self.runs.progress(run, current.get("key", ""), report)

        def after(key: str, result: ToolResult) -> None:
            entry: dict[str, Any] = {
                "step_id": key,
                "tool": result.tool,
                "status": result.status,
                "duration_ms": result.duration_ms,
            }
            if result.code is not None:
                entry["code"] = result.code
            if result.error is not None:
                entry["error"] = result.error
            self.runs.step(run, entry)
            self.runs.note_read(run, app, result.tool, args_of.get(key), result)  # §14.5

        in_run = ctx.for_run(
            run.run_id,
            run.cancel,
            decisions,
            progress,
            lambda key, args: ask_step(self.approvals, self.runs, run, app, key, args),
            lambda key, args: self._launch(run, (*launchers, app), args),
        )
        in_run = replace(
            in_run,
            recheck=lambda key, tool, args: recheck(
                self.approvals,
                self.runs,
                run,
                app,
                ctx.policy,
                approved,
                in_run.decisions,
                (key, tool, args),
                chain=launchers,
            ),
        )
        try:
            return self.executor.run(
                parsed,
                in_run,
                on_step=after,
                before_step=before,
                presets=presets,
            )
        finally:
            self.runs.flush(run)

    def _launch(self, run: Run, chain: tuple[str, ...], args: dict[str, Any]) -> ToolResult:
        """A plan's ``launch`` step (DESIGN §13): open another app as a child instance.

        ``chain`` is the launching app (last) and the apps whose work it does. The
        child's window comes to the front with its reply to ``instruction``;
        with ``await_result`` the plan waits until the child's reply carries
        ``result``, the user closes its window, or it fails; then the focus
        returns to the parent. The wait expires like an approval. The child works
        with the chain's rights (DESIGN §14.4); a cycle, a chain deeper than
        ``apps.launch_max_depth`` or more than ``apps.launch_max_per_run`` launches
        in the run are step errors.
        """
        from aios.protocol import ToolResult

        def error(message: str) -> ToolResult:
            return ToolResult(tool=LAUNCH_TOOL, status="error", error=message)

        parent_app = chain[-1]
        target = args.get("app")
        if not isinstance(target, str) or not target:
            return error("launch: give the app to open (its id)")
        limits = LaunchLimits(
            self.config.apps.launch_max_depth, self.config.apps.launch_max_per_run
        )
        with self.runs.lock:
            refused = check_launch(chain, target, run.launches, limits)
            if refused is None:
                run.launches += 1
        if refused is not None:
            log.info("run %s: %s", run.run_id, refused)
            return error(refused)
        record = self.launcher.get(target)
        if record is None:
            return error(f"launch: no app {target!r}")
        if record.status != "running":
            return error(
                f"launch: app {target!r} is {record.status}"
                + (f": {record.error}" if record.error else "")
            )
        instruction = args.get("instruction", "")
        if not isinstance(instruction, str):
            return error("launch: instruction must be text")
        sid = run.session_id
        parent = self.instances.current(parent_app, sid) or self.instances.open(parent_app, sid)
        child = self.instances.open(target, sid, parent=parent)
        child.awaited = bool(args.get("await_result"))
        try:
            outcome = self.call_app(record, instruction, None, sid, run=run, launchers=chain)
        except AppError as e:
            self.instances.fail(target, str(e))
            return error(f"launch: {target} failed: {e}")
        self.bus.emit(
            "view",
            {
                "app": target,
                "session_id": sid,
                "run_id": run.run_id,
                "response": outcome.response,
                "launched_by": parent_app,
            },
        )
        if not child.awaited:
            return ToolResult(
                tool=LAUNCH_TOOL,
                status="ok",
                result={"instance_id": child.instance_id, "app": target},
            )
        self.instances.reply(target, sid, outcome.response)
        with self.runs.lock:
            run.waits += 1
            if run.waits == 1:
                self.runs.set_state(run, "waiting")
        try:
            got = self.instances.await_child(
                child, run.cancel, time.time() + self.config.approvals.timeout
            )
        finally:
            with self.runs.lock:
                run.waits -= 1
                if run.waits == 0 and not run.cancel.is_set():
                    self.runs.set_state(run, "running")
        if got == "expired":
            return stopped(LAUNCH_TOOL, "expired")
        if isinstance(got, str):
            return stopped(LAUNCH_TOOL, "cancelled")
        if "error" in got:
            return error(f"launch: {target} failed: {got['error']}")
        return ToolResult(tool=LAUNCH_TOOL, status="ok", result=got)

    def app_deadline(self, app_id: str) -> float | None:
        """When the latest call in flight to ``app_id`` times out (``time.monotonic()``),
        or None: an LLM call the app makes for it is closed then (/api/sys/llm)."""
        with self._deadline_lock:
            pending = self._deadlines.get(app_id)
            return max(pending.values()) if pending else None

    def handle_timeout(self) -> float:
        """``handle_timeout``, raised to what a measured local LLM needs (aios/llm/client.py)."""
        configured = self.config.handle_timeout
        return self.llm.handle_timeout(configured) if self.llm is not None else configured

    def _post(
        self, record: AppRecord, body: dict[str, Any], run_id: str | None = None
    ) -> dict[str, Any]:
        if record.status != "running" or record.port is None or record.manifest is None:
            raise AppUnavailable(
                f"app {record.id!r} is not running (status: {record.status})"
                + (f": {record.error}" if record.error else "")
            )
        url = self.launcher.url(record.id) + record.manifest.handle_endpoint
        limit = self.config.max_reply_bytes
        with self.slots.slot(record.id, self.config.apps):
            try:
                resp, raw = self._exchange(record, url, body, limit)
            except AppTimeout as e:
                log.warning("%s (run %s)", e, run_id or "-")
                self.launcher.note_handle(record.id, timed_out=True)
                raise
        self.launcher.note_handle(record.id, timed_out=False)
        if raw is None:
            raise AppReplyInvalid(
                f"app {record.id!r} replied with more than {limit} bytes; the reply was discarded"
            )
        if resp.status_code >= 400 and not raw.strip().startswith(b"{"):
            raise AppReplyInvalid(
                f"app {record.id!r} answered HTTP {resp.status_code}: "
                f"{raw[:200].decode('utf-8', 'replace')}"
            )
        try:
            payload = jsondepth.loads(raw, self.config.web.max_json_depth)
        except jsondepth.TooDeep as e:
            raise AppReplyInvalid(f"app {record.id!r} replied with invalid JSON: {e}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AppReplyInvalid(f"app {record.id!r} replied with invalid JSON: {e}") from e
        try:
            return forwardable_reply(payload)
        except ProtocolError as e:
            raise AppReplyInvalid(f"app {record.id!r}: {e}") from e

    def _exchange(
        self, record: AppRecord, url: str, body: dict[str, Any], limit: int
    ) -> tuple[requests.Response, bytes | None]:
        """POST ``body`` and read the reply, within ``handle_timeout``...

        ...except while one of the app's own tool calls waits for the user
        (DESIGN §12: "the system does not time an app out while one of its
        calls waits for the user"): the call is made on its own thread with a
        socket timeout that covers the longest wait, and the deadline here
        moves on for as long as the app waits on a decision.
        """
        timeout = self.handle_timeout()
        fut = run_in_thread(
            self._exchange_now,
            record,
            url,
            body,
            limit,
            timeout + self.config.approvals.timeout,
            name=f"aios-call-{record.id}",
        )
        deadline = time.monotonic() + timeout
        key = next(self._deadline_ids)
        with self._deadline_lock:
            self._deadlines.setdefault(record.id, {})[key] = deadline
        try:
            while True:
                try:
                    return fut.result(timeout=max(0.0, deadline - time.monotonic()))
                except FutureTimeout:
                    if self.approvals.waits_for(record.id):
                        deadline = time.monotonic() + timeout
                        with self._deadline_lock:
                            self._deadlines[record.id][key] = deadline
                        continue
                    raise AppTimeout(
                        f"app {record.id!r} did not answer within {timeout:g} s"
                    ) from None
        finally:
            with self._deadline_lock:
                pending = self._deadlines.get(record.id, {})
                pending.pop(key, None)
                if not pending:
                    self._deadlines.pop(record.id, None)

    def _exchange_now(
        self, record: AppRecord, url: str, body: dict[str, Any], limit: int, timeout: float
    ) -> tuple[requests.Response, bytes | None]:
        """POST ``body`` and read the reply (None when larger than ``limit`` bytes)."""
        try:
            resp = self._session().post(
                url,
                json=body,
                timeout=(self.config.handle_timeout, timeout),
                headers=app_secret.headers(record.launch_secret),
                stream=True,
            )
        except requests.Timeout as e:
            raise AppTimeout(
                f"app {record.id!r} did not answer within {self.config.handle_timeout:g} s"
            ) from e
        except requests.ConnectionError as e:
            raise AppUnavailable(f"app {record.id!r} is not reachable on port {record.port}") from e
        try:
            return resp, _read_capped(resp, limit)
        except requests.Timeout as e:
            raise AppTimeout(
                f"app {record.id!r} did not finish its reply within "
                f"{self.config.handle_timeout:g} s"
            ) from e
        finally:
            resp.close()

    def _session(self) -> requests.Session:
        # One session for all request threads (the HTTP server makes a thread per
        # request): its connection pool keeps connections to the apps alive.
        return self._http

    # ----------------------------------------------------------------- context

    def build_context(
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
        return {
            "app": record.id,
            "role": record.role_prompt,
            "workdir": str(record.workdir),
            "cwd_state": {
                "files": _list_files(record.workdir),
                **(state if isinstance(state, dict) else {"state": state}),
            },
            "available_tools": [
                *ATOMIC_TOOLS,
                ASK_TOOL,
                LAUNCH_TOOL,
                *self._custom_tools(record.id),
            ],
            "session_id": sid,
            "history_summary": self.history_summary(sid, self._reader(record.id)),
            "tool_results": {},
            "upstream": upstream or {},
            "locale": locale or self.config.language,
            "routed": routed,
        }

    def history_summary(self, sid: str, app: str | None = None) -> str:
        """§4.3 ``history_summary``; recomputed only when the session gained entries.

        ``app``: the summary sent to that app holds only the turns routed to it (DESIGN
        §14.8, :func:`aios.control.planner.own_turns`); None: the whole conversation (the planner's,
        and an app's granted ``conversation.read``)."""
        history = self.store.history(sid, limit=HISTORY_WINDOW)
        if app is not None:
            history = own_turns(history, app)
        newest = history[-1]["id"] if history else 0
        key = f"{sid}\n{app or ''}"
        cached = self._summaries.get(key)
        if cached and cached[0] == newest:
            return cached[1]
        summary = summarize_history(history, self.llm, self.config.history_summary_chars)
        self._summaries[key] = (newest, summary)
        while len(self._summaries) > SUMMARY_CACHE:
            self._summaries.pop(next(iter(self._summaries)))
        return summary

    def _reader(self, app_id: str) -> str | None:
        """Whose turns ``app_id`` may see in ``history_summary``: None (everyone's) with
        ``conversation.read`` granted, else only its own."""
        try:
            granted = self._tool_context(app_id, None).permissions
        except KeyError:  # not running: it sees its own turns
            return app_id
        return None if CONVERSATION_READ in granted else app_id

    def _remember(self, sid: str, outcome: Outcome) -> None:
        resp = outcome.response
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
        if outcome.notes:
            entry["notes"] = outcome.notes
        self.store.add_history(sid, "app", entry, app=outcome.app)
        state = resp.get("state")
        if state is not None:
            self.store.set_agent_state(sid, outcome.app, state)
        self.store.set_context_var(sid, "last_app", outcome.app)

    # ----------------------------------------------------------------- helpers

    def _record(self, app_id: str) -> AppRecord:
        record = self.launcher.get(app_id)
        if record is None:
            raise AppNotFound(f"no app named {app_id!r}")
        return record

    def profiles(self) -> list[AppProfile]:
        return [
            AppProfile(
                id=r.id,
                name=r.shown_name,
                description=r.manifest.description,
                keywords=list(r.manifest.keywords),
                role_prompt=r.role_prompt,
                installed=r.installed,
                other_names=tuple(r.display_names.values()),
                other_descriptions=tuple(r.manifest.descriptions.values()),
                examples=manifest_examples(r.manifest),
            )
            for r in self.launcher.apps()
            if r.manifest is not None and r.status in ("running", "starting", "restarting")
        ]


def _upstream_entry(outcome: Outcome) -> dict[str, Any]:
    r = outcome.response
    return {
        "app": outcome.app,
        "status": r.get("status"),
        "view_type": r.get("view_type"),
        "data": r.get("data"),
        "message": r.get("message"),
    }


def _read_capped(resp: requests.Response, limit: int) -> bytes | None:
    chunks, total = [], 0
    for chunk in resp.iter_content(65536):
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _list_files(workdir: Path | None) -> list[str]:
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
