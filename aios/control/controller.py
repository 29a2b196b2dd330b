"""The controller (DESIGN §9): an instruction, an opened window or an action → a Run → Outcomes.

An instruction is answered by a system intent (aios/control/intents.py) or planned
into a task DAG (aios/control/planner.py) whose tasks run each on their own thread,
after the user said which app was meant where the router could not tell. Each app
call is one :class:`~aios.control.steps.StepsLoop` round trip: HTTP to the app in
aios/control/app_client.py, its context in aios/control/context.py.

It never interprets an app's ``data``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from aios.control import intents, memory_intents, owners
from aios.control.app_client import AppClient, HttpTransport, Transport, run_in_thread
from aios.control.context import Contexts
from aios.control.planner import Plan, Task, plan_instruction
from aios.control.router import AppProfile, OfflineRouter, manifest_examples, routed_as
from aios.control.steps import Outcome as Outcome, StepsLoop
from aios.control.topic_labels import Labeller
from aios.control.topics import Topic, TopicTree, key_terms
from aios.errors import AppError, AppNotFound
from aios.llm import wording
from aios.memory import service as memory_service
from aios.protocol import ActionRequest, error_response
from aios.runs.gate import ask_step
from aios.runs.runs import Run, waiting_view
from aios.store.sessions import new_session_id
from aios.traces.tracer import NO_TRACER, Tracer

if TYPE_CHECKING:
    from aios.apphost.registry import AppRecord, Launcher
    from aios.config import Config
    from aios.desktop.instances import Instances
    from aios.events import EventBus
    from aios.llm.client import LLMClient
    from aios.memory.service import Memory
    from aios.runs.approvals import Approvals
    from aios.runs.runs import Runs
    from aios.store import Store
    from aios.tools.base import ToolContext

log = logging.getLogger(__name__)

ROUTABLE = ("running", "starting", "restarting", "idle")
"""App statuses the router and the intents may name (an idle app starts when asked)."""

T = TypeVar("T")
ROUTE_CHOICES = "route_choices"
"""Session variable: which app the user chose when the router could not tell (rivals -> app)."""
STOP_WORDS = frozenset({"停止", "取消", "stop", "cancel", "停"})
"""A typed or spoken instruction that is one of these cancels the session's active runs."""

CLARIFY_ECHO_CHARS = 80
"""Characters of a task's instruction quoted in "which app did you mean?"."""


PHRASE_INTENTS = frozenset({"help", "time", "date", "small_talk"})
FORGET_PENDING = "forget_pending"
"""Session variable: the memories a "忘掉 …" asked about, until the next thing said."""
FORGET_MAX = 5
"""Memories one "忘掉 …" offers to forget."""
RECALL_SHOWN = 20
"""Memories "what do you know about me" lists (the memory window has them all)."""
"""System intents recognised from a table of phrases, each phrase in one language."""


ROUTE_CANDIDATES = 5
"""The router's best apps (with their scores) a ``route`` trace event lists."""


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
        transport: Transport | None = None,
        memory: Memory | None = None,
        tracer: Tracer = NO_TRACER,
    ):
        """``transport`` sends each request to an app: HTTP unless a test gives a fake."""
        self.config = config
        self.store = store
        self.launcher = launcher
        self.bus = bus
        self.llm = llm
        self.runs = runs
        self.approvals = approvals
        self.instances = instances
        self.memory = memory
        self.tracer = tracer
        self.client = AppClient(
            launcher=launcher,
            approvals=approvals,
            transport=transport if transport is not None else HttpTransport(launcher),
            settings=lambda: self.config,
            handle_timeout=self.handle_timeout,
        )
        self.slots = self.client.slots
        """Per-app call slots: a hung app holds its own, never another app's."""
        self.contexts = Contexts(
            store=store,
            settings=lambda: self.config,
            llm=lambda: self.llm,
            tool_context=tool_context,
            custom_tools=custom_tools,
            memory=memory,
        )
        self.loop = StepsLoop(
            settings=lambda: self.config,
            launcher=launcher,
            bus=bus,
            client=self.client,
            contexts=self.contexts,
            tool_context=tool_context,
            runs=runs,
            approvals=approvals,
            instances=instances,
            tracer=tracer,
        )
        self.executor = self.loop.executor
        self.acting = self.loop.acting
        """Which app acts for whom, in which session, right now (DESIGN §14.4)."""
        self.call_app = self.loop.call_app
        """One app, all rounds: :meth:`aios.control.steps.StepsLoop.call_app`."""
        self.schedule: Callable[[str, str, str], dict[str, Any] | None] | None = None
        """``(text, session id, language) -> reply``: a reminder or an automation said in
        words is scheduled (aios/duplex/automations.py); None: not one."""
        self.build_context = self.contexts.build
        self.topics = TopicTree(store, bus, lambda: self.config)
        """The session's turns as a topic tree (DESIGN §18, aios/control/topics.py)."""
        self.labeller = Labeller(self.topics, store, lambda: self.llm, lambda: self.config)
        """The model's labels for the topics (``duplex.topic_llm``)."""
        self.history_summary = self.contexts.history_summary
        self.app_deadline = self.client.app_deadline

    def reconfigure(self, config: Config, *, llm: LLMClient | None) -> None:
        """Use new settings (and the LLM client built for them) from the next call on."""
        self.config = config
        self.llm = llm

    def handle_timeout(self) -> float:
        """``handle_timeout``, raised to what a measured local LLM needs (aios/llm/client.py)."""
        configured = self.config.handle_timeout
        return self.llm.handle_timeout(configured) if self.llm is not None else configured

    def close(self) -> None:
        self.labeller.close()
        self.client.close()

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
        sid = session_id or new_session_id()  # add_history creates the session
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
            self._remember(run.session_id, outcome, run.run_id)
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

        started = time.monotonic()

        def ended(state: str, **fields: Any) -> None:
            self.tracer.emit(
                "run_end",
                kind=run.kind,
                state=state,
                duration_ms=round((time.monotonic() - started) * 1000, 1),
                **fields,
            )

        def body() -> T:
            try:
                result = work()
            except BaseException as e:
                self.runs.finish(run, error_response(str(e)), failed=True)
                self.tracer.emit("error", where="run", error=str(e))
                ended("failed")
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
            ended("failed" if failed else "done", waited=run.paused)
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

        with self.tracer.bind(run.session_id, run.run_id, run.app or None):
            self.tracer.emit("run_start", kind=run.kind, text=run.text)
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
        via: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`_instruction`, traced (DESIGN §16): ``instruction`` … ``reply``.

        ``via`` names the MCP client that sent it (DESIGN §17): the conversation panel
        shows the turn as coming from that client."""
        sid = self.store.ensure_session(session_id)
        with self.tracer.bind(sid):
            if session_id is None:
                self.tracer.emit("session_start", spoken=spoken, locale=locale)
            self.tracer.emit("instruction", text=text, spoken=spoken, locale=locale)
            try:
                reply = self._instruction(text, sid, spoken=spoken, locale=locale, via=via)
            except Exception as e:
                self.tracer.emit("error", where="instruction", error=str(e))
                raise
            self.tracer.emit(
                "reply",
                run_id=reply.get("run_id"),
                source=reply.get("source"),
                intent=reply.get("intent"),
                state=reply.get("state", "done"),
                message=reply.get("message"),
            )
            return reply

    def _instruction(
        self,
        text: str,
        sid: str,
        *,
        spoken: bool = False,
        locale: str | None = None,
        via: str | None = None,
    ) -> dict[str, Any]:
        """Route a typed or spoken instruction and run its task DAG.

        System intents (help, open / close / switch to an app, Settings, the
        time, small talk, undo / reset of the desktop: aios/control/intents.py) are
        answered first, the same with and without an LLM. ``locale`` overrides
        ``config.language`` for this request; the language ``text`` is clearly written
        in overrides both (aios/llm/wording.py): the answer and the apps' context.
        """
        lang = wording.reply_lang(text, locale or self.config.language)
        turn = self.store.add_history(sid, "user", _turn(text, spoken=spoken, via=via))
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
        if self.schedule is not None and (scheduled := self.schedule(text, sid, lang)):
            self.tracer.emit("intent", kind="automation")
            return scheduled
        if self.memory is not None:
            said_to_memory = self._memory_intent(text, sid, lang)
            if said_to_memory is not None:
                return said_to_memory
            self.memory.turn_added(sid)
        apps = self._intent_apps()
        intent = intents.recognise(text, apps)
        if intent is None and (noted := self._facts_said(text, sid, lang, whole=True)):
            return noted
        if intent is not None:
            return self._intent_reply(intent, text, sid, lang, apps, turn)
        profiles = self.profiles()
        last_app = self.store.context_vars(sid).get("last_app")
        router = OfflineRouter(profiles, prefer=last_app)
        plan = plan_instruction(
            text,
            profiles,
            llm=self.llm,
            router=router,
            history_summary=self.history_summary(sid),
            self_block=lambda: self.memory.prompt_block(text, lang) if self.memory else "",
        )
        self.tracer.emit(
            "route",
            source=plan.source,
            notes=plan.notes,
            tasks=[t.model_dump(exclude_none=True) for t in plan.tasks],
            candidates=(
                [
                    [app, score, router.matched(text, app)]
                    for app, score in router.score(text)[:ROUTE_CANDIDATES]
                ]
                if self.tracer.enabled
                else []
            ),
        )
        for note in plan.notes:
            log.warning("planner (plan from %s): %s", plan.source, note)
        if not plan.notes:
            log.info("planner: plan from %s", plan.source)
        if not plan.tasks and (noted := self._facts_said(text, sid, lang)) is not None:
            return noted
        if not plan.tasks and not plan.reply:
            if wording.text_lang(text) is None:  # "i'm bored": too short to be sure, yet English
                lang = wording.phrase_lang(text) or lang
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
        return self._dispatch(plan, text, sid, lang, turn=turn)

    def _dispatch(
        self,
        plan: Plan,
        text: str,
        sid: str,
        lang: str,
        extra: dict[str, Any] | None = None,
        *,
        turn: int | None = None,
    ) -> dict[str, Any]:
        """Run a plan's tasks as one run: the reply with every task's result (``extra`` on top).
        ``turn``: the user's history id, a turn of the topic tree once each task's app is
        settled."""
        extra = extra or {}
        run = self.runs.start(
            "instruction",
            ",".join(dict.fromkeys(t.app for t in plan.tasks)),
            sid,
            text=text,
            request={"kind": "instruction", "text": text, "locale": lang},
        )
        done = self._settle(
            run, lambda: self._run_plan(plan, text, sid, run, lang, turn), lambda r: r
        )
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

    def instruction_to(
        self,
        app_id: str,
        text: str,
        session_id: str | None = None,
        *,
        locale: str | None = None,
        via: str | None = None,
    ) -> dict[str, Any]:
        """An instruction for one app, not routed (an MCP client's ``app.<id>`` tool,
        DESIGN §17): one task, run like any plan; AppNotFound for an unknown app."""
        self._record(app_id)
        sid = self.store.ensure_session(session_id)
        lang = wording.reply_lang(text, locale or self.config.language)
        with self.tracer.bind(sid):
            self.tracer.emit("instruction", text=text, app=app_id, locale=locale)
            self.store.add_history(sid, "user", _turn(text, via=via))
            plan = Plan(tasks=[Task(id="t1", app=app_id, instruction=text)], source="none")
            reply = self._dispatch(plan, text, sid, lang)
            self.tracer.emit(
                "reply",
                run_id=reply.get("run_id"),
                state=reply.get("state", "done"),
                message=reply.get("message"),
            )
            return reply

    # ------------------------------------------------------- system intents

    def _intent_apps(self) -> list[intents.AppInfo]:
        """The apps an intent may name: those the router may route to, installed first first."""
        records = sorted(
            (r for r in self.launcher.apps() if r.manifest is not None and r.status in ROUTABLE),
            key=lambda r: r.installed,
        )
        return [intents.app_info(r) for r in records]

    def _intent_reply(
        self,
        intent: intents.Intent,
        text: str,
        sid: str,
        lang: str,
        apps: list[intents.AppInfo],
        turn: int,
    ) -> dict[str, Any]:
        """A recognised system intent answered (an open or a switch is a topic's turn)."""
        if intent.kind in PHRASE_INTENTS and wording.text_lang(text) is None:
            # a phrase of the system's tables is in one language: "goodbye" is English
            lang = wording.phrase_lang(text) or lang
        self.tracer.emit("intent", kind=intent.kind)
        if intent.kind == "resume_topic":
            return self._resume_topic(intent, text, sid, lang, apps, turn)
        if intent.kind in ("open_app", "focus_app") and intent.app:
            self._topic_turn(sid, turn, text, intent.app)
        return self._system_intent(intent, text, sid, lang, apps)

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
            record = self.launcher.ensure_running(
                intents.SYSTEM_AGENT, self.config.app_start_timeout
            )
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

    # ------------------------------------------------------- topics (DESIGN §18)

    def _app_words(self, app: str) -> list[str]:
        """Every app's id and names, and ``app``'s keywords: they chose the app, they are no
        topic (another app's keywords may well be one: "album", "memory")."""
        return [
            w
            for p in self.profiles()
            for w in (p.id.replace("_", " "), *p.all_names, *(p.keywords if p.id == app else ()))
        ]

    def _topic_turn(self, sid: str, turn: int, text: str, app: str) -> Topic | None:
        """``text`` (history id ``turn``) went to ``app``: a turn of the session's topic
        tree. A fault is one log line: the instruction goes on without its topic."""
        record = self.launcher.get(app)
        try:
            topic = self.topics.turn(
                sid,
                turn,
                text,
                app,
                fallback_label=record.shown_name if record is not None else app,
                app_words=self._app_words(app),
            )
            self.labeller.want(sid)
            return topic
        except Exception as e:  # noqa: BLE001 - the store's fault: the turn is not kept
            log.warning("topics: turn %s not kept: %s", turn, e)
            return None

    def _topic_name(self, topic: Topic, lang: str) -> str:
        """ "「买牛奶」（记事本）" / "“buy milk” (Notes)": a topic as the desktop says it."""
        app = self._app_name(topic.app, lang)
        if topic.label == app or topic.label == topic.app:
            return app
        if intents.lang_of(lang) == "en":
            return f"“{topic.label}” ({app})"
        return f"「{topic.label}」（{app}）"

    def _app_name(self, app_id: str, lang: str) -> str:
        record = self.launcher.get(app_id)
        if record is None:
            return app_id
        name_in = getattr(record, "name_in", None)
        return str(name_in(intents.lang_of(lang))) if callable(name_in) else record.shown_name

    def _resume_topic(
        self,
        intent: intents.Intent,
        text: str,
        sid: str,
        lang: str,
        apps: list[intents.AppInfo],
        turn: int,
    ) -> dict[str, Any]:
        """ "回到刚才的笔记" / "back to the notes thing": the paused topic its words name
        becomes active, its window comes up with its last view. Two that match alike: the
        user picks one on a card. None: an app named with no topic is switched to; else one
        line listing the paused topics."""
        words = key_terms(intent.topic or "")
        found = self.topics.resolve(sid, words, intent.app)
        if len(found) == 1:
            reply, _ = self._resume(sid, found[0], turn, lang)
            return reply
        if len(found) > 1:
            return self._resume_choice(found, text, sid, lang, turn)
        if intent.app:
            self._topic_turn(sid, turn, text, intent.app)
            focus = intents.Intent("focus_app", app=intent.app)
            return self._system_intent(focus, text, sid, lang, apps)
        paused = self.topics.paused(sid)
        sep = ", " if intents.lang_of(lang) == "en" else "、"
        if not paused:
            message = intents.say("resume_none", lang)
        else:
            shown = paused[: intents.TALK_SUGGESTIONS_MAX]
            names = sep.join(self._topic_name(t, lang) for t in shown)
            message = intents.say("resume_unknown", lang, text=intent.topic or text, topics=names)
        chips = [
            {
                "label": self._topic_name(t, lang),
                "instruction": intents.say("resume_chip", lang, label=t.label),
            }
            for t in paused[: intents.TALK_SUGGESTIONS_MAX]
        ]
        return self._answered(sid, intents.Answer("resume_topic", message, chips))

    def _resume_choice(
        self, found: list[Topic], text: str, sid: str, lang: str, turn: int
    ) -> dict[str, Any]:
        """Two lines of talk match "back to …" alike: a card asks which (as "which app did
        you mean?" does); the one picked is resumed when the user answers."""
        run = self.runs.start(
            "instruction", "", sid, text=text, request={"kind": "instruction", "text": text}
        )
        shown = [self._topic_name(t, lang) for t in found]
        prompt = intents.say(
            "resume_which", lang, topics=intents.say("choose_or", lang).join(shown)
        )
        options = [{"value": t.id, "label": n} for t, n in zip(found, shown, strict=True)]
        picked: dict[str, Any] = {}

        def work() -> list[Outcome]:
            chosen = self._choose(run, "topic", prompt, options)
            topic = next((t for t in found if t.id == chosen), None)
            if topic is None:
                return []
            reply, outcome = self._resume(sid, topic, turn, lang)
            picked.update(reply)
            run.app = topic.app
            return [outcome] if outcome is not None else []

        done = self._settle(run, work, lambda r: r)
        if done is None:
            return {
                "session_id": sid,
                "plan": [],
                "results": [],
                "message": waiting_view(run)["message"],
                "source": "system",
                "intent": "resume_topic",
                "notes": [],
                "run_id": run.run_id,
                "state": "waiting",
                "pending": list(run.pending),
            }
        return picked or {
            "session_id": sid,
            "plan": [],
            "results": [],
            "message": intents.say("done", lang),
            "notes": [],
        }

    def _resume(
        self, sid: str, topic: Topic, turn: int | None, lang: str
    ) -> tuple[dict[str, Any], Outcome | None]:
        """``topic`` becomes active; its app's window comes to the front (opened again if it
        was closed) with the topic's last view (the app's home view when none was kept)."""
        topic = self.topics.resume(sid, topic.id, turn)
        view = self._topic_view(sid, topic)
        outcome: Outcome | None
        if view is not None:
            self.launcher.ensure_running(topic.app, self.config.app_start_timeout)
            self.instances.open(topic.app, sid)
            outcome = Outcome(topic.app, view)
        else:
            outcome = self._open_for_intent(topic.app, sid, lang)
        name = self._app_name(topic.app, lang)
        message = (
            intents.say("resume_app", lang, app=name)
            if topic.label in (name, topic.app)
            else intents.say("resume_topic", lang, label=topic.label, app=name)
        )
        answer = intents.Answer(
            "resume_topic", message, desktop=[{"op": "focus_app", "app": topic.app}]
        )
        self._remember_answer(sid, answer)
        results = (
            [{"app": topic.app, "task": "resume", "response": outcome.response}]
            if outcome is not None
            else []
        )
        reply = {
            "session_id": sid,
            "plan": [],
            "results": results,
            "message": message,
            "notes": [],
            "topic": topic.public(),
            **answer.fields(),
        }
        return reply, outcome

    def resume_topic(self, sid: str, topic_id: str, *, locale: str | None = None) -> dict[str, Any]:
        """The panel's click on a topic: it is resumed as "back to …" would (NotFound for
        a topic the session does not have)."""
        lang = intents.lang_of(locale or self.config.language)
        with self.tracer.bind(sid):
            self.tracer.emit("intent", kind="resume_topic", topic=topic_id)
            topic = self.topics.get(sid, topic_id)
            reply, _ = self._resume(sid, topic, None, lang)
            return reply

    def _topic_view(self, sid: str, topic: Topic) -> dict[str, Any] | None:
        """The topic's last view as its app answered it: the run's final response (its
        controls included) when the run was that app's alone, else the history's copy;
        None when nothing was kept (or its data was too large to keep)."""
        if topic.view is None:
            return None
        rows, _ = self.store.history_page(sid, before=topic.view + 1, limit=1)
        if not rows or rows[0]["id"] != topic.view or not isinstance(rows[0]["content"], dict):
            return None
        kept: dict[str, Any] = rows[0]["content"]
        run = self.runs.stored(str(kept.get("run_id") or "")) if kept.get("run_id") else None
        response = (run or {}).get("response")
        if (
            run is not None
            and run.get("app") == topic.app
            and isinstance(response, dict)
            and response.get("view_type") == kept.get("view_type")
        ):
            return {**response, "run_id": run["run_id"]}
        data = kept.get("data")
        if kept.get("status") != "ok" or (isinstance(data, dict) and data.get("truncated")):
            return None
        return {
            "status": "ok",
            "view_type": kept.get("view_type"),
            "data": data,
            "message": kept.get("message") or "",
        }

    # ------------------------------------------------------- memory (DESIGN §15)

    def _memory_intent(self, text: str, sid: str, lang: str) -> dict[str, Any] | None:
        """ "记住 …", "what do you know about me", "忘掉 …" and its confirmation; None when
        ``text`` is none of them. A forget waits for the very next thing said."""
        assert self.memory is not None
        said = memory_intents.recognise(text)
        pending = self.store.context_vars(sid).get(FORGET_PENDING)
        if pending is not None and (said is None or said.verb != "forget_yes"):
            self.store.set_context_var(sid, FORGET_PENDING, None)
        if said is None:
            return None
        if wording.text_lang(text) is None:  # "forget it": short, yet English
            lang = wording.phrase_lang(text) or lang
        chips: list[dict[str, str]] = []
        desktop: list[dict[str, str]] = []
        if not self.config.memory.enabled:
            message = memory_intents.say("memory_off", lang)
        elif said.verb == "remember":
            kept = self.memory.add(said.text)
            message = memory_intents.say("remembered", lang, text=kept["text"])
        elif said.verb == "recall":
            known = self.memory.memories.active(memory_service.USER, RECALL_SHOWN)
            texts = [str(m["text"]) for m in known]
            message = (
                memory_intents.say("known", lang, items=memory_intents.bullets(texts, lang))
                if texts
                else memory_intents.say("known_none", lang)
            )
            chips.append(self._memory_chip(lang))
        elif said.verb == "forget":
            found = self._to_forget(said.text)
            if not found:
                message = memory_intents.say("forget_none", lang, text=said.text)
            else:
                self.store.set_context_var(sid, FORGET_PENDING, [m["id"] for m in found])
                texts = [str(m["text"]) for m in found]
                message = memory_intents.say(
                    "forget_ask", lang, n=len(found), items=memory_intents.bullets(texts, lang)
                )
                for key in ("forget_yes_chip", "forget_no_chip"):
                    word = memory_intents.say(key, lang)
                    chips.append({"label": word, "instruction": word})
        elif said.verb == "forget_yes" and pending:
            for memory_id in pending:
                self.memory.delete(str(memory_id))
            self.store.set_context_var(sid, FORGET_PENDING, None)
            message = memory_intents.say("forgotten", lang, n=len(pending))
        elif said.verb == "forget_no" and pending:
            message = memory_intents.say("forget_kept", lang)
        elif said.verb in ("forget_yes", "forget_no"):
            if said.verb == "forget_no":
                return None  # "算了" with nothing pending is small talk, not memory
            message = memory_intents.say("forget_nothing_pending", lang)
        return self._answered(sid, intents.Answer(f"memory_{said.verb}", message, chips, desktop))

    def _to_forget(self, what: str) -> list[dict[str, Any]]:
        """The user's memories "忘掉 …" names: those that match it, best first."""
        assert self.memory is not None
        memories = self.memory.memories
        found = memories.search(what, scopes=[memory_service.USER], k=FORGET_MAX, touch=False)
        return found or memories.list(
            scope=memory_service.USER, state="active", q=what, limit=FORGET_MAX
        )

    @staticmethod
    def _memory_chip(lang: str) -> dict[str, str]:
        label = memory_intents.say("open_memory", lang)
        return {"label": label, "instruction": label}

    def _facts_said(
        self, text: str, sid: str, lang: str, *, whole: bool = False
    ) -> dict[str, Any] | None:
        """ "我叫小林", "I prefer window seats": the facts proposed, to accept in the memory
        window. ``whole``: only when every clause states a fact (before any app is asked);
        else when no app took ``text``."""
        if self.memory is None or not self.config.memory.enabled:
            return None
        lg = intents.lang_of(lang)
        facts = (
            memory_intents.only_facts(text, lg) if whole else memory_intents.facts_said(text, lg)
        )
        if not facts:
            return None
        kept = [self.memory.propose(sid, f) for f in facts]
        message = memory_intents.say(
            "proposed", lang, items="；".join(str(m["text"]) for m in kept)
        )
        return self._answered(
            sid, intents.Answer("memory_proposed", message, [self._memory_chip(lang)])
        )

    def _answered(self, sid: str, answer: intents.Answer) -> dict[str, Any]:
        """The reply to what the controller answered itself (no app called), kept in the
        session's history."""
        self._remember_answer(sid, answer)
        return {
            "session_id": sid,
            "plan": [],
            "results": [],
            "message": answer.message,
            "notes": [],
            **answer.fields(),
        }

    def _open_for_intent(self, app_id: str, sid: str, lang: str) -> Outcome | None:
        """ "打开音乐": the app's reply to an empty instruction, as a click on its icon.

        None while the app is not running yet: the desktop opens the window,
        which fills itself once the app runs.
        """
        record = self.launcher.ensure_running(app_id, self.config.app_start_timeout)
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
            chosen = self._choose(run, f"route_{task.id}", prompt, options)
            if run.cancel.is_set():
                return False
            if chosen in rivals:
                self._reroute(task, str(chosen))
                remembered[key] = task.app
                self.store.set_context_var(sid, ROUTE_CHOICES, remembered)
            # expired or unanswered: the router's best guess stands
        run.app = ",".join(dict.fromkeys(t.app for t in plan.tasks))
        return True

    def _choose(
        self, run: Run, step_id: str, prompt: str, options: list[dict[str, str]]
    ) -> str | None:
        """Ask the user to pick one of ``options``; the value picked, or None when the
        question expired, was dismissed or the run was cancelled."""
        result = ask_step(
            self.approvals,
            self.runs,
            run,
            "",
            step_id,
            {"kind": "choice", "prompt": prompt, "options": options},
        )
        value = (result.result or {}).get("value") if result.status == "ok" else None
        return None if value is None else str(value)

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
            chosen = self._choose(run, f"owner_{task.id}", prompt, options)
            if run.cancel.is_set():
                return False
            if chosen in rivals:
                self.store.set_route_owner_choice(open_owners, task.app, str(chosen))
                self._reroute(task, str(chosen))
            else:  # expired or unanswered: the owner keeps its words, nothing remembered
                self._reroute(task, open_owners[0])
        run.app = ",".join(dict.fromkeys(t.app for t in plan.tasks))
        return True

    def _run_plan(
        self, plan: Plan, text: str, sid: str, run: Run, lang: str, turn: int | None = None
    ) -> list[Outcome]:
        if not self._clarify(plan, sid, run, lang) or not self._ask_owners(plan, text, run, lang):
            return [
                Outcome(t.app, error_response("cancelled by the user", title=t.app))
                for t in plan.tasks
            ]
        for t in plan.tasks if turn is not None else []:  # the apps are settled: turns
            said = str((t.routed or {}).get("text") or t.instruction)  # no "打开记事本，"
            self._topic_turn(sid, int(turn or 0), said, t.app)
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
            self.tracer.emit("error", app=task.app, where="app", error=str(e))
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
        self._remember(sid, outcome, run.run_id)
        return outcome

    def _skipped(self, task: Task) -> Outcome:
        return Outcome(
            task.app,
            error_response(
                f"skipped: a task it depends on ({', '.join(task.depends_on)}) failed",
                title=task.app,
            ),
        )

    # ----------------------------------------------------------------- helpers

    def _remember(self, sid: str, outcome: Outcome, run_id: str) -> None:
        view = self.contexts.remember(
            sid, outcome.app, outcome.response, outcome.notes, run_id=run_id
        )
        try:
            inst = self.instances.current(outcome.app, sid)
            self.topics.saw(sid, outcome.app, view, inst.instance_id if inst else None)
        except Exception as e:  # noqa: BLE001 - the reply stands without its topic's view
            log.warning("topics: the view of %s not kept: %s", outcome.app, e)

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
            if r.manifest is not None and r.status in ROUTABLE
        ]


def _turn(text: str, *, spoken: bool = False, via: str | None = None) -> dict[str, Any]:
    """A user's turn as the history keeps it (``via``: the MCP client that sent it)."""
    return {"text": text, **({"spoken": True} if spoken else {}), **({"via": via} if via else {})}


def _upstream_entry(outcome: Outcome) -> dict[str, Any]:
    r = outcome.response
    return {
        "app": outcome.app,
        "status": r.get("status"),
        "view_type": r.get("view_type"),
        "data": r.get("data"),
        "message": r.get("message"),
    }
