# Longer than ~500 lines on purpose: a bundled app is what third-party developers copy: its
# handlers, views and bilingual messages stay in one file they can read at once.
"""系统监控 (system monitor): CPU, memory, disks and the busiest processes, live.

Readings come from one custom tool, ``read_system``, which the reply plans as
a step, so the executor dispatches it to this app and audits it like any
tool. CPU and memory totals come from psutil; the process table and the
disks come from the system (``self.processes()``, ``self.disks()``, which
need the ``system.processes`` permission): the app runs confined, sees only
its sandbox's mounts and never reads other processes' ``/proc`` entries.
The page the user is on (the dashboard, or the list of all processes) is
refreshed live: the first look starts one background thread that pushes a new
view of that same page every few seconds (``self.push``; the desktop keeps the
scroll position when the view type stays) while someone has looked at the
monitor in the last minute, and stops after that. A short history for the
line chart lives in the app's cache (``cache_get``/``cache_set``).

"End task": each row of the process list has a red button; the app asks the
user to confirm (an ``ask`` step) and then asks the system to end the process
(``self.end_process``), which refuses what the system depends on.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from datetime import datetime
from typing import Any

import psutil

from aios_sdk import (
    AIOSAgent,
    AIOSError,
    AppContext,
    AppFailure,
    Messages,
    ToolError,
    action,
    text_view,
    tool,
)

log = logging.getLogger(__name__)

HISTORY_KEY = "history"
SETTINGS_KEY = "settings"
HISTORY_MAX = 30
"""Points on the history line chart."""
IDLE_SECONDS = 60.0
"""Live refresh stops when nobody looked at the monitor for this long."""
CPU_FIRST_SAMPLE = 0.5
"""Seconds the first CPU reading samples for (later readings cover the time since the last)."""
INTERVAL_MIN, INTERVAL_MAX, INTERVAL_DEFAULT = 1, 10, 2
TOP_DEFAULT, TOP_MAX = 10, 50
SORTS = ("cpu", "mem")
READ_STEP = "read"
CONFIRM_STEP = "confirm_end"
PAGES = ("dashboard", "processes")
GB = 1024**3

T: dict[str, tuple[str, str]] = {
    "title": ("系统监控", "System monitor"),
    "overview": ("概览", "Overview"),
    "cpu_cores": ("CPU 每核占用 (%)", "CPU per core (%)"),
    "history": ("最近占用 (%)", "Recent usage (%)"),
    "memory": ("内存 (GB)", "Memory (GB)"),
    "disks": ("磁盘占用 (%)", "Disk usage (%)"),
    "procs": ("进程（按 {sort} 排序）", "Processes (by {sort})"),
    "used": ("已用", "used"),
    "free": ("可用", "free"),
    "cpu": ("CPU", "CPU"),
    "mem": ("内存", "memory"),
    "columns": ("PID|名称|CPU %|内存 %|用户", "PID|Name|CPU %|Memory %|User"),
    "summary": (
        "CPU {cpu:.0f}%（{cores} 核）· 内存 {mem:.0f}%（{used:.1f}/{total:.1f} GB）"
        "· 磁盘 {disk} · {procs} 个进程 · 已运行 {uptime}",
        "CPU {cpu:.0f}% ({cores} cores) · memory {mem:.0f}% ({used:.1f}/{total:.1f} GB)"
        " · disk {disk} · {procs} processes · up {uptime}",
    ),
    "message": (
        "CPU 占用 {cpu:.0f}%，内存占用 {mem:.0f}%。{top}",
        "CPU at {cpu:.0f}%, memory at {mem:.0f}%. {top}",
    ),
    "top": ("占用最高的进程是 {name}。", "The busiest process is {name}."),
    "live": ("实时刷新", "Live refresh"),
    "interval": ("刷新间隔（秒）", "Refresh interval (s)"),
    "sort": ("进程排序", "Sort processes"),
    "refresh": ("立即刷新", "Refresh now"),
    "processes": ("全部进程", "All processes"),
    "dashboard": ("返回仪表盘", "Back to dashboard"),
    "paused": ("已暂停实时刷新。", "Live refresh paused."),
    "resumed": ("已开启实时刷新，每 {n} 秒更新一次。", "Live refresh on, every {n} s."),
    "interval_set": ("刷新间隔已设为 {n} 秒。", "Refresh interval set to {n} s."),
    "sorted": ("进程已按{sort}排序。", "Processes sorted by {sort}."),
    "bad_action": (
        "无法处理操作“{action}”：{error}",
        'Cannot handle the action "{action}": {error}',
    ),
    "read_failed": ("读取系统状态失败：{error}", "Could not read the system status: {error}"),
    "failed": ("出错了：{error}", "Something went wrong: {error}"),
    "proc_title": ("全部进程（按{sort}排序）", "All processes (by {sort})"),
    "proc_count": ("共 {n} 个进程。", "{n} processes."),
    "end": ("结束任务", "End task"),
    "end_prompt": (
        "结束进程 {name}（PID {pid}）？它未保存的数据会丢失。",
        "End the process {name} (PID {pid})? Its unsaved data will be lost.",
    ),
    "end_asking": ("请确认是否结束 {name}（PID {pid}）。", "Confirm ending {name} (PID {pid})."),
    "ended": ("已结束进程 {name}（PID {pid}）。", "Ended the process {name} (PID {pid})."),
    "kept": ("没有结束 {name}（PID {pid}）：{why}。", "Did not end {name} (PID {pid}): {why}."),
    "kept_no": ("你选择了不结束", "you chose not to"),
    "kept_expired": ("确认已过期", "the question expired unanswered"),
    "kept_cancelled": ("已取消", "it was cancelled"),
    "end_failed": (
        "无法结束进程 {pid}：{error}",
        "Could not end the process {pid}: {error}",
    ),
    "bad_pid": (
        "进程号必须是正整数（收到 {pid!r}）",
        "the process id must be a positive whole number (got {pid!r})",
    ),
    "analysis": ("分析", "Analysis"),
}
COLUMNS = ("pid", "name", "cpu", "memory", "user")
"""The process table's columns (keys of each row), labelled by T["columns"]."""


t = Messages(T)


class Monitor(AIOSAgent):
    name = "系统监控"
    description = "CPU、内存、磁盘与进程的实时监控 / live CPU, memory, disk and process monitor"
    icon = "📊"
    messages = t

    def __init__(self) -> None:
        self._lock = threading.Lock()
        """Guards the thread handle, the settings and the last-seen time."""
        self._push_lock = threading.Lock()
        """Held while one live update is built and pushed: pausing waits for it, so no push
        lands after the pause was answered."""
        self._history_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last_seen = 0.0
        self._lang = "zh"
        self._settings: dict[str, Any] | None = None
        self._cpu_primed = False
        self._page = "dashboard"
        """The page the user is on (one of PAGES): what a live update refreshes."""
        self._pushed = 0
        """Live updates pushed so far (changed under ``_push_lock``): a reply's
        ``data.live.pushed`` says how many came before it."""

    # ------------------------------------------------------------ the tool

    @tool(
        name="read_system",
        desc="Read CPU (total and per core), memory, disks and the top processes of this machine "
        "(every process with all_processes=true).",
    )
    def read_system(
        self, top: int = TOP_DEFAULT, sort: str = "cpu", all_processes: bool = False
    ) -> dict[str, Any]:
        if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= TOP_MAX:
            raise ToolError(
                f"read_system: top must be a whole number from 1 to {TOP_MAX}, got {top!r}"
            )
        if sort not in SORTS:
            raise ToolError(f"read_system: sort must be one of {', '.join(SORTS)}, got {sort!r}")
        if not isinstance(all_processes, bool):
            raise ToolError(
                f"read_system: all_processes must be true or false, got {all_processes!r}"
            )
        if self._cpu_primed:
            per_core = psutil.cpu_percent(interval=None, percpu=True)  # since the last reading
        else:
            # psutil measures CPU between two calls and the first call has no "before":
            # sample over a short interval instead (a call right after it would measure
            # almost no time and say 0 %). Processes are primed first so that their
            # figures cover the same interval.
            self.processes()
            per_core = psutil.cpu_percent(interval=CPU_FIRST_SAMPLE, percpu=True)
            self._cpu_primed = True
        mem = psutil.virtual_memory()
        try:
            load = [round(x, 2) for x in psutil.getloadavg()]
        except (AttributeError, OSError):
            load = None
        procs = [_process(p) for p in self.processes()]
        key = "cpu" if sort == "cpu" else "memory"
        procs.sort(key=lambda p: (-p[key], p["pid"]))
        return {
            "time": datetime.now().isoformat(timespec="seconds"),
            "cpu": {
                "percent": round(sum(per_core) / max(1, len(per_core)), 1),
                "per_core": [round(x, 1) for x in per_core],
                "cores": len(per_core),
                "load": load,
            },
            "memory": {
                "total": mem.total,
                "used": mem.total - mem.available,
                "available": mem.available,
                "percent": round(mem.percent, 1),
            },
            "disks": self.disks(),
            "processes": procs if all_processes else procs[:top],
            "process_count": len(procs),
            "boot_time": psutil.boot_time(),
            "sort": sort,
        }

    # ------------------------------------------------------------ handle

    def respond(
        self, instruction: str | None, context: Any, action_request: Any = None
    ) -> dict[str, Any]:
        # the SDK answers an AppFailure; a tool's failure or a bug must still answer a view
        lang = AppContext.of(context).lang
        self._lang = lang
        try:
            return super().respond(instruction, context, action_request)
        except ToolError as e:
            message = t("read_failed", lang, error=e.error)
        except Exception as e:  # noqa: BLE001 - a bug must still answer with a view
            log.exception("monitor failed")
            message = t("failed", lang, error=f"{type(e).__name__}: {e}")
        return _error(message, lang)

    def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
        return _error(message, ctx.lang)

    def handle(
        self,
        instruction: str | None,
        context: AppContext,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        settings = self._load_settings()
        note, page = self._instruction(instruction, settings, context.lang)
        return self._show(context, settings, note, page, instruction)

    def _show(
        self,
        ctx: AppContext,
        settings: dict[str, Any],
        note: str,
        page: str | None,
        instruction: str | None = None,
    ) -> dict[str, Any]:
        """The page (None: the one the user is on), read first when it has not been."""
        lang = ctx.lang
        # (waits for a live update in flight: none of the old page lands after this reply)
        with self._push_lock, self._lock:
            if page is None:  # a setting changed: stay on the page the user is on
                page = self._page
            self._page = page
        self._seen()
        view = page
        reading = self._reading(ctx, settings, view)
        if isinstance(reading, list):  # not read yet: the steps that read it
            return {
                "status": "ok",
                "view_type": "loading",
                "data": {"message": ctx.tr("正在读取系统状态…", "Reading the system status…")},
                "actions": [],
                "steps": reading,
            }
        history = self._add_history(reading)
        if view == "processes":
            return self._process_view(reading, settings, lang, note)
        reply = self.dashboard(reading, history, settings, lang)
        reply["message"] = (note + " " if note else "") + reply["message"]
        if _wants_analysis(instruction):
            reply["message"] = self._analysis(reading, lang) or reply["message"]
        return reply

    def _reading(
        self, ctx: AppContext, settings: dict[str, Any], view: str
    ) -> dict[str, Any] | list[dict[str, Any]]:
        got = ctx.result(READ_STEP)
        args = {"top": TOP_DEFAULT, "sort": settings["sort"], "all_processes": view == "processes"}
        if got is None:
            if ctx.tool_results:  # someone else's results: read directly rather than loop
                return self.read_system(**args)
            return self.plan_steps([{"step_id": READ_STEP, "tool": "read_system", "args": args}])
        if not got.ok or not isinstance(got.value, dict):
            raise AppFailure("read_failed", error=str(got.raw.get("error") or "no result"))
        return got.value

    # ----------------------------------------------------------- controls

    @action("live")
    def set_live(self, ctx: AppContext, on: Any = None) -> dict[str, Any]:
        if not isinstance(on, bool):
            raise AppFailure(
                "bad_action",
                action="live",
                error=ctx.tr(
                    f"on 必须是 true 或 false（收到 {on!r}）",
                    f"on must be true or false (got {on!r})",
                ),
            )
        settings = self._load_settings()
        return self._show(ctx, settings, self._set_live(on, settings, ctx.lang), None)

    @action("interval")
    def set_interval(self, ctx: AppContext, value: Any = None) -> dict[str, Any]:
        settings = self._load_settings()
        return self._show(ctx, settings, self._set_interval(value, settings, ctx.lang), None)

    @action("sort")
    def set_sort(self, ctx: AppContext, selected: Any = None) -> dict[str, Any]:
        settings = self._load_settings()
        return self._show(ctx, settings, self._set_sort(selected, settings, ctx.lang), None)

    @action("refresh")
    def refresh(self, ctx: AppContext) -> dict[str, Any]:
        return self._show(ctx, self._load_settings(), "", None)

    @action("processes")
    def show_processes(self, ctx: AppContext) -> dict[str, Any]:
        return self._show(ctx, self._load_settings(), "", "processes")

    @action("dashboard")
    def show_dashboard(self, ctx: AppContext) -> dict[str, Any]:
        return self._show(ctx, self._load_settings(), "", "dashboard")

    @action("end_task")
    def end_task(self, ctx: AppContext, id: Any = None) -> dict[str, Any]:
        reply = self._end_task(id, ctx, self._load_settings(), ctx.lang)
        self._seen()
        return reply

    def _instruction(
        self, instruction: Any, settings: dict[str, Any], lang: str
    ) -> tuple[str, str | None]:
        """``(note, page)``: page None keeps the page the user is on."""
        text = instruction.strip().lower() if isinstance(instruction, str) else ""
        if not text:
            return "", "dashboard"
        if re.search(r"暂停|停止刷新|别刷新|pause|stop (?:live|refresh|updat)", text):
            return self._set_live(False, settings, lang), None
        if re.search(
            r"继续|恢复|开启实时|开始刷新|resume|start (?:live|refresh|updat)|live on", text
        ):
            return self._set_live(True, settings, lang), None
        m = re.search(r"(\d+)\s*(?:秒|s\b|sec|second)", text)
        if m and re.search(r"刷新|间隔|interval|every|refresh", text):
            return self._set_interval(int(m.group(1)), settings, lang), None
        note = ""
        if re.search(r"按内存|内存排序|by mem|sort.*mem", text):
            note = self._set_sort("mem", settings, lang)
        elif re.search(r"按\s*cpu|cpu\s*排序|by cpu|sort.*cpu", text):
            note = self._set_sort("cpu", settings, lang)
        if re.search(r"进程|process|task", text):
            return note, "processes"
        return note, "dashboard"

    def _end_task(
        self, pid: Any, ctx: AppContext, settings: dict[str, Any], lang: str
    ) -> dict[str, Any]:
        """A row's "End task": the round without an answer asks (a ``confirm`` step), the
        round with it ends the process through the system, or keeps it."""
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            raise AppFailure("bad_pid", pid=pid)
        with self._push_lock, self._lock:
            self._page = "processes"
        answer = ctx.result(CONFIRM_STEP)
        sort = settings["sort"]
        if answer is None:
            reading = self.read_system(top=TOP_DEFAULT, sort=sort, all_processes=True)
            name = _name_of(reading, pid)
            reply = self._process_view(
                reading, settings, lang, t("end_asking", lang, name=name, pid=pid)
            )
            prompt = t("end_prompt", lang, name=name, pid=pid)
            # the yes covers the end call itself: the system, which always asks about
            # ending a process, takes it as the user's answer (one question, not two)
            ending = {"tool": "end_process", "args": {"pid": pid}}
            reply["steps"] = [
                self.ask("confirm", prompt, default=False, step_id=CONFIRM_STEP, covers=[ending])
            ]
            return reply
        status = "ok"
        if answer.answer is True:
            try:
                ended = self.end_process(pid)
                note = t("ended", lang, name=ended.get("name") or "?", pid=pid)
            except ToolError as e:
                note, status = t("end_failed", lang, pid=pid, error=e.error), "error"
            reading = self.read_system(top=TOP_DEFAULT, sort=sort, all_processes=True)
        else:
            reading = self.read_system(top=TOP_DEFAULT, sort=sort, all_processes=True)
            code = answer.code if not answer.ok else "no"
            why = (
                t(f"kept_{code}", lang)
                if code in ("no", "expired", "cancelled")
                else str(answer.raw.get("error") or "?")
            )
            note = t("kept", lang, name=_name_of(reading, pid), pid=pid, why=why)
        reply = self._process_view(reading, settings, lang, note)
        reply["status"] = status
        reply["message"] = note
        return reply

    def _set_live(self, on: bool, settings: dict[str, Any], lang: str) -> str:
        with self._push_lock, self._lock:
            settings["live"] = on
        self._save_settings(settings)
        return t("resumed", lang, n=settings["interval"]) if on else t("paused", lang)

    def _set_interval(self, value: Any, settings: dict[str, Any], lang: str) -> str:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not INTERVAL_MIN <= value <= INTERVAL_MAX
        ):
            zh = f"刷新间隔必须是 {INTERVAL_MIN}-{INTERVAL_MAX} 秒（收到 {value!r}）"
            en = f"the interval must be {INTERVAL_MIN}-{INTERVAL_MAX} seconds (got {value!r})"
            raise AppFailure("bad_action", action="interval", error=zh if lang == "zh" else en)
        with self._lock:
            settings["interval"] = int(round(value))
        self._save_settings(settings)
        return t("interval_set", lang, n=settings["interval"])

    def _set_sort(self, value: Any, settings: dict[str, Any], lang: str) -> str:
        if value not in SORTS:
            raise AppFailure(
                "bad_action",
                action="sort",
                error=f"排序只能是 cpu 或 mem（收到 {value!r}）"
                if lang == "zh"
                else f"sort must be cpu or mem (got {value!r})",
            )
        with self._lock:
            settings["sort"] = value
        self._save_settings(settings)
        return t("sorted", lang, sort=t(value, lang))

    # ----------------------------------------------------------- settings

    def _load_settings(self) -> dict[str, Any]:
        with self._lock:
            if self._settings is not None:
                return self._settings
        stored: Any = None
        try:
            stored = self.call_tool("cache_get", key=SETTINGS_KEY)
        except ToolError as e:
            log.warning("settings not readable, using defaults: %s", e)
        settings = {"live": True, "interval": INTERVAL_DEFAULT, "sort": "cpu"}
        if isinstance(stored, dict):
            if isinstance(stored.get("live"), bool):
                settings["live"] = stored["live"]
            if (
                isinstance(stored.get("interval"), int)
                and INTERVAL_MIN <= stored["interval"] <= INTERVAL_MAX
            ):
                settings["interval"] = stored["interval"]
            if stored.get("sort") in SORTS:
                settings["sort"] = stored["sort"]
        with self._lock:
            if self._settings is None:
                self._settings = settings
            return self._settings

    def _save_settings(self, settings: dict[str, Any]) -> None:
        try:
            self.call_tool("cache_set", key=SETTINGS_KEY, value=dict(settings))
        except ToolError as e:
            log.warning("settings not saved: %s", e)

    # ------------------------------------------------------------ history

    def _add_history(self, reading: dict[str, Any]) -> list[dict[str, Any]]:
        point = {
            "t": reading["time"][11:19],
            "cpu": reading["cpu"]["percent"],
            "mem": reading["memory"]["percent"],
        }
        with self._history_lock:
            try:
                history = self.call_tool("cache_get", key=HISTORY_KEY)
            except ToolError as e:
                log.warning("history not readable: %s", e)
                history = None
            history = (
                [p for p in history if isinstance(p, dict)] if isinstance(history, list) else []
            )
            history = (history + [point])[-HISTORY_MAX:]
            try:
                self.call_tool("cache_set", key=HISTORY_KEY, value=history)
            except ToolError as e:
                log.warning("history not saved: %s", e)
        return history

    # ------------------------------------------------------------- live

    def _seen(self) -> None:
        """Someone looked: (re)start the one live thread if live refresh is on."""
        with self._lock:
            self._last_seen = time.monotonic()
            if not (self._settings or {}).get("live"):
                return
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(
                target=self._live_loop, name="monitor-live", daemon=True
            )
            self._thread.start()
            log.info(
                "live refresh started (every %s s)",
                self._settings.get("interval") if self._settings else INTERVAL_DEFAULT,
            )

    def _live_loop(self) -> None:
        me = threading.current_thread()
        while True:
            with self._lock:
                interval = (self._settings or {}).get("interval", INTERVAL_DEFAULT)
            time.sleep(interval)
            with self._lock:
                settings = self._settings or {}
                if not settings.get("live") or time.monotonic() - self._last_seen > IDLE_SECONDS:
                    if self._thread is me:
                        self._thread = None
                    log.info(
                        "live refresh stopped (%s)",
                        "paused" if not settings.get("live") else "nobody looked for a minute",
                    )
                    return
            try:
                with self._push_lock:
                    if not (self._settings or {}).get("live"):
                        continue
                    self._push_once(dict(self._settings or {}))
            except Exception:  # noqa: BLE001 - one failed update must not end live refresh
                log.exception("live update failed")

    def _push_once(self, settings: dict[str, Any]) -> None:
        """One live update of the page the user is on (the same view type, so the desktop
        keeps its scroll position); the caller holds ``_push_lock``."""
        with self._lock:
            page = self._page
        reading = self.read_system(
            top=TOP_DEFAULT, sort=settings.get("sort", "cpu"), all_processes=page == "processes"
        )
        history = self._add_history(reading)
        self._pushed += 1
        if page == "processes":
            view = self._process_view(reading, settings, self._lang, "")
        else:
            view = self.dashboard(reading, history, settings, self._lang)
        view.pop("message", None)  # a pushed refresh is shown, not spoken
        self.push(view)

    # ------------------------------------------------------------- views

    def dashboard(
        self, r: dict[str, Any], history: list[dict[str, Any]], settings: dict[str, Any], lang: str
    ) -> dict[str, Any]:
        cpu, mem = r["cpu"], r["memory"]
        cores = cpu.get("per_core") or []
        disks = r.get("disks") or []
        procs = r.get("processes") or []
        widgets: list[dict[str, Any]] = [
            {
                "type": "text",
                "title": t("overview", lang),
                "span": "full",
                "content": _summary(r, lang),
            },
            {
                "type": "chart",
                "chart_type": "bar",
                "title": t("cpu_cores", lang),
                "labels": [f"CPU{i}" for i in range(len(cores))],
                "values": cores,
            },
            {
                "type": "chart",
                "chart_type": "line",
                "title": t("history", lang),
                "labels": [p.get("t", "") for p in history],
                "datasets": [
                    {"label": t("cpu", lang), "values": [p.get("cpu") for p in history]},
                    {"label": t("mem", lang), "values": [p.get("mem") for p in history]},
                ],
            },
            {
                "type": "chart",
                "chart_type": "doughnut",
                "title": t("memory", lang),
                "labels": [t("used", lang), t("free", lang)],
                "values": [round(mem["used"] / GB, 2), round(mem["available"] / GB, 2)],
            },
            {
                "type": "chart",
                "chart_type": "bar",
                "title": t("disks", lang),
                "labels": [d["mount"] for d in disks],
                "values": [d["percent"] for d in disks],
            },
            {
                "type": "table",
                "title": t("procs", lang, sort=t(settings["sort"], lang)),
                "span": "full",
                "columns": t("columns", lang).split("|"),
                "rows": [_row(p) for p in procs],
            },
        ]
        busiest = procs[0] if procs else None
        key = "cpu" if settings["sort"] == "cpu" else "memory"
        top = t("top", lang, name=busiest["name"]) if busiest and busiest[key] > 0 else ""
        return {
            "status": "ok",
            "view_type": "dashboard",
            "data": {  # no title: the window's title bar already says 系统监控 / System monitor
                "widgets": widgets,
                "time": r["time"],
                "live": {
                    "on": settings["live"],
                    "interval": settings["interval"],
                    "pushed": self._pushed,
                },
            },
            "actions": self._controls(settings, lang, "dashboard"),
            "message": t("message", lang, cpu=cpu["percent"], mem=mem["percent"], top=top),
        }

    def _process_view(
        self, r: dict[str, Any], settings: dict[str, Any], lang: str, note: str
    ) -> dict[str, Any]:
        procs = r.get("processes") or []
        sort = t(settings["sort"], lang)
        # the title stays the same across refreshes: the desktop then keeps the scroll position
        title = t("proc_title", lang, sort=sort)
        labels = t("columns", lang).split("|")
        end = t("end", lang)
        return {
            "status": "ok",
            "view_type": "table",
            "data": {
                "title": title,
                "columns": [
                    {"key": k, "label": label} for k, label in zip(COLUMNS, labels, strict=True)
                ],
                "rows": [
                    {
                        **{k: p.get(k) for k in COLUMNS},
                        "id": p.get("pid"),
                        "actions": [
                            {
                                "type": "button",
                                "label": end,
                                "action_id": "end_task",
                                "variant": "danger",
                                "params": {"id": p.get("pid")},
                            }
                        ]
                        if p.get("endable")
                        else [],
                    }
                    for p in procs
                ],
                "process_count": r.get("process_count", len(procs)),
                "time": r["time"],
                "live": {
                    "on": settings["live"],
                    "interval": settings["interval"],
                    "pushed": self._pushed,
                },
            },
            "actions": self._controls(settings, lang, "processes"),
            "message": (note + " " if note else "") + t("proc_count", lang, n=len(procs)),
        }

    def _controls(self, settings: dict[str, Any], lang: str, view: str) -> list[dict[str, Any]]:
        back = (
            ("dashboard", t("dashboard", lang))
            if view == "processes"
            else ("processes", t("processes", lang))
        )
        return [
            {
                "type": "toggle",
                "label": t("live", lang),
                "action_id": "live",
                "value": bool(settings["live"]),
            },
            {
                "type": "slider",
                "label": t("interval", lang),
                "action_id": "interval",
                "min": INTERVAL_MIN,
                "max": INTERVAL_MAX,
                "step": 1,
                "value": settings["interval"],
            },
            {
                "type": "select",
                "label": t("sort", lang),
                "action_id": "sort",
                "options": [
                    {"label": t("cpu", lang), "value": "cpu"},
                    {"label": t("mem", lang), "value": "mem"},
                ],
                "value": settings["sort"],
            },
            {"type": "button", "label": t("refresh", lang), "action_id": "refresh"},
            {"type": "button", "label": back[1], "action_id": back[0]},
        ]

    # -------------------------------------------------------------- llm

    def _analysis(self, r: dict[str, Any], lang: str) -> str | None:
        """A short diagnosis from the system's LLM, when one is configured."""
        procs = ", ".join(
            f"{p['name']} (CPU {p['cpu']}%, mem {p['memory']}%)"
            for p in (r.get("processes") or [])[:5]
        )
        question = (
            f"CPU {r['cpu']['percent']}% on {r['cpu']['cores']} cores, load "
            f"{r['cpu'].get('load')}, memory {r['memory']['percent']}%, disks "
            f"{[(d['mount'], d['percent']) for d in r.get('disks') or []]}, top "
            f"processes: {procs}."
        )
        lang_hint = "Answer in English" if lang == "en" else "用中文回答"
        try:
            reply = self.llm(
                [
                    {
                        "role": "system",
                        "content": "You are a concise system "
                        f"administrator. In at most three sentences, say whether this "
                        f"machine is healthy and what to do if not. {lang_hint}.",
                    },
                    {"role": "user", "content": question},
                ]
            )
        except AIOSError as e:
            log.info("no LLM analysis: %s", e)
            return None
        content = reply.get("content") if isinstance(reply, dict) else None
        return content.strip()[:800] if isinstance(content, str) and content.strip() else None


# ------------------------------------------------------------------ helpers


def _process(p: dict[str, Any]) -> dict[str, Any]:
    """One entry of the system's process list, as the dashboard shows it."""
    return {
        "pid": p.get("pid"),
        "name": p.get("name") or "?",
        "cpu": round(p.get("cpu_percent") or 0.0, 1),
        "memory": round(p.get("memory_percent") or 0.0, 1),
        "user": p.get("user") or "",
        "endable": p.get("endable") is not False,  # the system would refuse the others
    }


def _name_of(reading: dict[str, Any], pid: int) -> str:
    """The name of process ``pid`` in a reading ("?" when it is not there)."""
    return next(
        (str(p.get("name")) for p in reading.get("processes") or [] if p.get("pid") == pid), "?"
    )


def _row(p: dict[str, Any]) -> list[Any]:
    return [p.get("pid"), p.get("name"), p.get("cpu"), p.get("memory"), p.get("user")]


def _summary(r: dict[str, Any], lang: str) -> str:
    mem = r["memory"]
    disks = r.get("disks") or []
    disk = ", ".join(f"{d['mount']} {d['percent']:.0f}%" for d in disks[:3]) or "-"
    up = max(0, int(time.time() - float(r.get("boot_time") or time.time())))
    days, rest = divmod(up, 86400)
    uptime = (
        (f"{days} 天 {rest // 3600} 小时" if lang == "zh" else f"{days}d {rest // 3600}h")
        if days
        else (
            f"{rest // 3600} 小时 {rest % 3600 // 60} 分"
            if lang == "zh"
            else f"{rest // 3600}h {rest % 3600 // 60}m"
        )
    )
    return t(
        "summary",
        lang,
        cpu=r["cpu"]["percent"],
        cores=r["cpu"]["cores"],
        mem=mem["percent"],
        used=mem["used"] / GB,
        total=mem["total"] / GB,
        disk=disk,
        procs=r.get("process_count", 0),
        uptime=uptime,
    )


def _wants_analysis(instruction: Any) -> bool:
    return (
        isinstance(instruction, str)
        and re.search(r"分析|诊断|为什么|卡|慢|analy[sz]e|diagnos|why|slow", instruction, re.I)
        is not None
    )


def _error(message: str, lang: str) -> dict[str, Any]:
    return text_view(
        message,
        title=t("title", lang),
        status="error",
        actions=[{"type": "button", "label": t("refresh", lang), "action_id": "refresh"}],
    )


if __name__ == "__main__":
    Monitor().run()
