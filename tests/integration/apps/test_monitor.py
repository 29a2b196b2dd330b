"""系统监控 (monitor) end to end: the real system and app process, readings through the app's
own read_system tool run as a step, live refresh through pushed views on the event bus."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from aios.events import Subscription
from aios.protocol.app_secret import LAUNCH_SECRET_HEADER
from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps, final_view
from tests.util import wait_for

APP = "monitor"
BUSY_CPU_SECONDS = 0.3
"""CPU time the busy child has used before the monitor is opened."""
TOP_MAX = 50
"""The most processes the dashboard's tool lists (the processes page lists all)."""
SLEEPERS = TOP_MAX + 5
"""Extra processes a test starts so that the machine has more than TOP_MAX."""


@pytest.fixture
def running(make_system: Callable[..., Running], tmp_path: Path) -> Running:
    return make_system(apps_dir=copy_apps(tmp_path / "apps", [APP], source=ROOT / "apps"))


@pytest.fixture
def events(running: Running) -> Iterator[Subscription]:
    sub = running.system.bus.subscribe()
    yield sub
    sub.close()


def first_push(sub: Subscription, within: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        event = sub.get(timeout=0.2)
        if event and event["type"] == "view" and event.get("pushed") and event["app"] == APP:
            return event["response"]
    raise AssertionError(f"no live update pushed within {within} s")


def act(running: Running, action_id: str, **payload: Any) -> dict[str, Any]:
    return running.act(APP, {"action_id": action_id, **payload})


def widget(
    reply: dict[str, Any], kind: str, chart_type: str | None = None, index: int = 0
) -> dict[str, Any]:
    found = [
        w
        for w in reply["data"]["widgets"]
        if w["type"] == kind and (chart_type is None or w.get("chart_type") == chart_type)
    ]
    return found[index]


def test_open_shows_a_dashboard_read_through_the_custom_tool(running: Running) -> None:
    reply = running.open(APP)["response"]
    assert reply["status"] == "ok" and reply["view_type"] == "dashboard"
    cores = widget(reply, "chart", "bar")
    assert cores["labels"] == [f"CPU{i}" for i in range(psutil.cpu_count())]
    assert all(0 <= v <= 100 for v in cores["values"])
    memory = widget(reply, "chart", "doughnut")
    total_gb = psutil.virtual_memory().total / 1024**3
    assert abs(sum(memory["values"]) - total_gb) < 0.1
    disks = widget(reply, "chart", "bar", 1)
    assert "/" in disks["labels"]
    history = widget(reply, "chart", "line")
    assert [d["label"] for d in history["datasets"]] == ["CPU", "内存"]
    table = widget(reply, "table")
    assert table["columns"][:2] == ["PID", "名称"] and 1 <= len(table["rows"]) <= 10
    pids = {row[0] for row in table["rows"]}
    assert pids & {p.pid for p in psutil.process_iter()}
    assert "CPU" in reply["message"] and "内存" in reply["message"]
    # the window's title bar says 系统监控; the view does not repeat it
    assert "系统监控" not in json.dumps(reply["data"], ensure_ascii=False)
    kinds = {a["action_id"]: a["type"] for a in reply["actions"]}
    assert kinds == {
        "live": "toggle",
        "interval": "slider",
        "sort": "select",
        "refresh": "button",
        "processes": "button",
    }
    # the reading was a step: the executor called the app's own tool and audited it
    rows = running.get(f"/api/audit?app={APP}").json()
    assert any(r["tool"] == "read_system" and r["status"] == "ok" and r["step_id"] for r in rows)
    # the history for the line chart is in the app's cache
    assert len(running.system.store.cache_get(APP, "history")) >= 1


def live_pushes_until(
    sub: Subscription, done: Callable[[dict[str, Any]], bool], within: float = 20
) -> list[dict[str, Any]]:
    """Pushed views in arrival order, up to and including the first that ``done`` accepts."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        event = sub.get(timeout=0.2)
        if event and event["type"] == "view" and event.get("pushed") and event["app"] == APP:
            out.append(event["response"])
            if done(event["response"]):
                return out
    raise AssertionError(f"no matching live update within {within} s (got {len(out)})")


def pushed_count(view: dict[str, Any]) -> int:
    return int(view["data"]["live"]["pushed"])


def test_live_refresh_pushes_dashboards_and_pauses(running: Running, events: Subscription) -> None:
    running.open(APP)
    one = first_push(events)
    assert one["view_type"] == "dashboard" and "message" not in one  # shown, not spoken
    two = first_push(events)
    # each push adds a point to the history line chart and counts itself
    assert len(widget(two, "chart", "line")["labels"]) > len(widget(one, "chart", "line")["labels"])
    assert pushed_count(two) > pushed_count(one)

    reply = act(running, "interval", value=1)
    assert reply["data"]["live"]["on"] is True and reply["data"]["live"]["interval"] == 1
    assert "1 秒" in reply["message"]
    # opening again and again never starts a second pushing thread
    for _ in range(3):
        running.open(APP)
    seen = pushed_count(live_pushes_until(events, lambda v: True)[-1])
    live_pushes_until(events, lambda v: pushed_count(v) >= seen + 2)
    log = (running.data_dir / "logs" / f"{APP}.log").read_text(encoding="utf-8")
    assert log.count("live refresh started") == 1, log

    reply = act(running, "live", on=False)
    assert reply["message"].startswith("已暂停实时刷新")
    assert reply["data"]["live"]["on"] is False
    assert next(a for a in reply["actions"] if a["action_id"] == "live")["value"] is False
    at_pause = pushed_count(reply)

    # Nothing is pushed while paused: every push still queued from before the pause counts
    # at most at_pause, and the first one above it comes after the resume. (The resume's
    # own reply may already count a push: live is on again while the reply is read.)
    reply = act(running, "live", on=True)
    assert "已开启实时刷新" in reply["message"]
    assert pushed_count(reply) >= at_pause
    after = live_pushes_until(events, lambda v: pushed_count(v) > at_pause)
    assert all(pushed_count(v) <= at_pause for v in after[:-1])
    assert after[-1]["view_type"] == "dashboard"
    # settings survive in the cache (an app restart keeps them)
    assert running.system.store.cache_get(APP, "settings") == {
        "live": True,
        "interval": 1,
        "sort": "cpu",
    }
    act(running, "live", on=False)


def test_first_reading_sees_a_busy_cpu(running: Running) -> None:
    """psutil's first cpu_percent() has nothing to compare with; the first dashboard must
    still show the load a busy process puts on the machine."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        proc = psutil.Process(busy.pid)
        proc.cpu_percent(None)
        wait_for(
            lambda: proc.cpu_times().user >= BUSY_CPU_SECONDS,  # flat out by now
            "the busy loop to get the CPU",
        )
        reply = running.open(APP)["response"]
    finally:
        busy.kill()
        busy.wait()
    cores = widget(reply, "chart", "bar")["values"]
    assert sum(cores) > 0, cores
    assert re.search(r"CPU 占用 [1-9]", reply["message"]), reply["message"]
    # the process table was primed too: the busy loop shows its CPU, not psutil's first 0.0
    rows = {row[0]: row for row in widget(reply, "table")["rows"]}
    assert busy.pid in rows and rows[busy.pid][2] > 0, rows


def test_sort_and_process_list(running: Running) -> None:
    reply = act(running, "sort", selected="mem")
    assert "内存" in reply["message"]
    table = widget(reply, "table")
    mem = [row[3] for row in table["rows"]]
    assert mem == sorted(mem, reverse=True) and mem[0] > 0
    procs = act(running, "processes")
    assert procs["view_type"] == "table"
    assert [a["action_id"] for a in procs["actions"]][-1] == "dashboard"
    back = act(running, "dashboard")
    assert back["view_type"] == "dashboard"
    act(running, "live", on=False)


@pytest.fixture
def sleepers() -> Iterator[list[int]]:
    """More processes than the dashboard's top list holds."""
    procs = [subprocess.Popen(["sleep", "120"]) for _ in range(SLEEPERS)]
    yield [p.pid for p in procs]
    for p in procs:
        p.kill()
        p.wait()


def test_all_processes_are_listed_and_survive_a_live_refresh(
    running: Running, events: Subscription, sleepers: list[int]
) -> None:
    act(running, "interval", value=1)
    outside = detached_sleep()
    try:
        procs = act(running, "processes")
    finally:
        os.kill(outside, signal.SIGKILL)
    assert procs["view_type"] == "table" and procs["status"] == "ok"
    rows = {row["pid"]: row for row in procs["data"]["rows"]}
    assert len(rows) == procs["data"]["process_count"] > TOP_MAX
    assert set(sleepers) <= set(rows)
    assert [c["key"] for c in procs["data"]["columns"]] == ["pid", "name", "cpu", "memory", "user"]
    # a process the user may end has its own red "End task" button naming it
    assert rows[outside]["id"] == outside and rows[outside]["name"] == "sleep"
    [end] = rows[outside]["actions"]
    assert (end["action_id"], end["variant"], end["label"]) == ("end_task", "danger", "结束任务")
    assert end["params"] == {"id": outside}
    # ones the system would refuse have none: pid 1, the system's own children (here the
    # sleepers: the system runs in this test process)
    assert rows[1]["actions"] == [] and rows[sleepers[0]]["actions"] == []
    # the live refresh pushes the page the user is on, not the dashboard
    after = pushed_count(procs)  # pushes counted up to the reply came before it
    pushed = [
        v
        for v in live_pushes_until(events, lambda v: pushed_count(v) > after)
        if pushed_count(v) > after
    ]
    assert all(v["view_type"] == "table" for v in pushed), [v["view_type"] for v in pushed]
    assert len(pushed[-1]["data"]["rows"]) > TOP_MAX
    # changing a setting there stays there too
    assert act(running, "sort", selected="mem")["view_type"] == "table"
    assert act(running, "dashboard")["view_type"] == "dashboard"
    act(running, "live", on=False)


def detached_sleep() -> int:
    """A ``sleep`` outside the system's process tree (the system runs in this test process,
    so a plain child would be one of its own): started by a shell that exits at once."""
    out = subprocess.run(
        ["sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def ask_end(running: Running, pid: int) -> dict[str, Any]:
    r = running.post("/api/action", {"app": APP, "action_id": "end_task", "params": {"id": pid}})
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    assert reply.get("state") == "waiting", reply
    return reply


def answer(running: Running, events: Subscription, waiting: dict[str, Any], value: bool) -> Any:
    (card,) = waiting["pending"]
    assert card["kind"] == "confirm" and "sleep" in card["prompt"], card
    r = running.post(f"/api/interactions/{card['id']}", {"value": value})
    assert r.status_code == 200, r.text
    return final_view(events, waiting["run_id"], APP)


def test_end_task_asks_then_ends_or_keeps_the_process(
    running: Running, events: Subscription
) -> None:
    act(running, "live", on=False)
    pid = detached_sleep()
    try:
        kept = answer(running, events, ask_end(running, pid), False)
        assert kept["view_type"] == "table" and not ended(pid)
        assert kept["message"] == f"没有结束 sleep（PID {pid}）：你选择了不结束。"
        done = answer(running, events, ask_end(running, pid), True)
        assert done["status"] == "ok" and done["message"] == f"已结束进程 sleep（PID {pid}）。"
        assert ended(pid)
        assert pid not in {r["pid"] for r in done["data"]["rows"]} or ended(pid)
        rows = running.get(f"/api/audit?app={APP}").json()
        assert any(r["tool"] == "end_process" and r["status"] == "ok" for r in rows)
    finally:
        if not ended(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_system_refuses_to_end_what_it_depends_on(running: Running) -> None:
    record = running.system.launcher.get(APP)
    assert record is not None
    http = running.app_session()
    http.headers["Authorization"] = f"Bearer {record.token}"

    def end(pid: int) -> tuple[int, str]:
        r = http.post(f"{running.url}/api/sys/processes/{pid}/end", timeout=10)
        return r.status_code, str(r.json().get("error"))

    assert end(1) == (403, "pid 1 (init) cannot be ended: the whole machine depends on it")
    code, why = end(os.getpid())  # the system runs in this test process
    assert code == 403 and "runs the AIOS system itself" in why, why
    child = subprocess.Popen(["sleep", "120"])  # started by the system's process: its own
    try:
        code, why = end(child.pid)
        assert code == 403 and "belongs to the AIOS system" in why, why
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()
    rows = running.get(f"/api/audit?app={APP}").json()
    assert sum(r["tool"] == "end_process" and r["status"] == "denied" for r in rows) == 3


def test_instructions_in_chinese_and_english(running: Running) -> None:
    out = running.instruct("看看CPU和内存占用")
    assert [r["app"] for r in out["results"]] == [APP]
    assert out["results"][0]["response"]["view_type"] == "dashboard"
    sid = out["session_id"]
    reply = running.instruct("监控 按内存排序", sid)["results"][0]["response"]
    assert "已按内存排序" in reply["message"]
    reply = running.instruct("system monitor: refresh every 5 seconds", sid)
    assert reply["results"][0]["response"]["data"]["live"]["interval"] == 5
    reply = running.instruct("show the top processes in the monitor", sid)
    assert reply["results"][0]["response"]["view_type"] == "table"
    reply = running.instruct("暂停系统监控刷新", sid)["results"][0]["response"]
    assert reply["data"]["live"]["on"] is False


GARBAGE: list[dict[str, Any]] = [
    {"action_id": "explode"},
    {"action_id": "live"},
    {"action_id": "live", "on": None, "value": "yes"},
    {"action_id": "interval", "value": 0},
    {"action_id": "interval", "value": 11},
    {"action_id": "interval", "value": "fast"},
    {"action_id": "interval", "value": True},
    {"action_id": "sort", "selected": "name"},
    {"action_id": "sort"},
    {"action_id": "refresh", "params": {"junk": [1, {"a": None}]}},
    {"action_id": "processes", "checked": ["x"], "href": "javascript:alert(1)"},
]


def test_garbage_actions_are_clear_errors_and_the_app_keeps_working(running: Running) -> None:
    for payload in GARBAGE:
        reply = act(running, **payload)
        assert reply["message"], payload
        if payload["action_id"] in ("refresh", "processes"):
            assert reply["status"] == "ok", (payload, reply)
        else:
            assert reply["status"] == "error" and reply["view_type"] == "text", (payload, reply)
    assert "explode" in act(running, "explode")["message"]
    assert "1-10" in act(running, "interval", value=99)["message"]
    # bad settings were not saved
    reply = running.open(APP)["response"]
    assert reply["status"] == "ok"
    assert {k: reply["data"]["live"][k] for k in ("on", "interval")} == {"on": True, "interval": 2}
    act(running, "live", on=False)


def test_read_system_refuses_bad_arguments(running: Running) -> None:
    record = running.system.launcher.get(APP)
    assert record is not None
    url = running.system.launcher.url(APP) + "/tools/read_system"
    http = running.app_session()  # confined, the app has no TCP port
    # as the system calls it: with this launch's secret (the SDK refuses anyone else)
    headers = {"X-AIOS-App-Token": record.token, LAUNCH_SECRET_HEADER: record.launch_secret}
    bad = http.post(url, json={"top": 0}, headers=headers, timeout=10).json()
    assert bad["status"] == "error" and "top must be a whole number from 1 to 50" in bad["error"]
    bad = http.post(url, json={"sort": "name"}, headers=headers, timeout=10).json()
    assert bad["status"] == "error" and "sort must be one of cpu, mem" in bad["error"]
    good = http.post(url, json={"top": 3}, headers=headers, timeout=10).json()
    assert good["status"] == "ok" and len(good["result"]["processes"]) == 3
    # nobody else may call it (no body: the refusal comes before the body would be read)
    refused = http.post(url, timeout=10)
    assert refused.status_code == 401  # no launch secret: refused before the app token


def test_an_app_cannot_end_a_process_without_asking_the_user(
    running: Running, events: Subscription
) -> None:
    """A hostile app with system.processes calls the end endpoint itself, without a
    confirm of its own: the system asks (an approval card, whatever the approvals mode,
    with no "always" answer), and a no keeps the process."""
    record = running.system.launcher.get(APP)
    assert record is not None
    http = running.app_session()
    http.headers["Authorization"] = f"Bearer {record.token}"
    pid = detached_sleep()

    def end_in_background() -> Callable[[], requests.Response]:
        box: list[requests.Response] = []
        worker = threading.Thread(
            target=lambda: box.append(
                http.post(f"{running.url}/api/sys/processes/{pid}/end", json={}, timeout=30)
            )
        )
        worker.start()

        def reply() -> requests.Response:
            worker.join(30)
            return box[0]

        return reply

    def card() -> dict[str, Any]:
        got: dict[str, Any] = {}

        def asked() -> bool:
            ev = events.get(0.5)
            if ev and ev.get("type") == "interaction" and ev.get("app") == APP:
                got.update(ev)
            return bool(got)

        wait_for(asked, timeout=20)
        return got

    try:
        reply = end_in_background()
        ia = card()
        assert ia["kind"] == "approval" and ia["options"] == ["allow", "deny"], ia
        assert [s["tool"] for s in ia["steps"]] == ["end_process"]
        assert f"end process {pid} (sleep)" in ia["steps"][0]["text"]
        always = running.post(f"/api/interactions/{ia['id']}", {"decision": "allow_always"})
        assert always.status_code == 400 and "allow, deny" in always.json()["error"]
        assert running.post(f"/api/interactions/{ia['id']}", {"decision": "deny"}).ok
        refused = reply()
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"] == f"process {pid} (sleep) was not ended: denied by the user"
        assert not ended(pid)
        reply = end_in_background()
        ia = card()
        assert running.post(f"/api/interactions/{ia['id']}", {"decision": "allow"}).ok
        assert reply().json() == {"pid": pid, "name": "sleep", "ended": True}
        assert ended(pid)
    finally:
        if not ended(pid):
            os.kill(pid, signal.SIGKILL)
