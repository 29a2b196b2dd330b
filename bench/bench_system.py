"""What the system costs on top of its apps: round trips, start-up, memory, throughput.

    python bench/bench_system.py [--quick] [--json out.json]

Everything runs on 127.0.0.1 in one run, next to its floors measured in the
same run (so a busy machine moves both):

1. Floors: (a) a bare Flask round trip (tiny app in a thread, requests.Session
   POST of a small JSON); (b) ten bare Flask processes spawned in parallel,
   from the first Popen until all ten accept TCP.
2. ``POST /api/instruction`` for a one-app, three-step plan (cache_set,
   cache_get, file_read), with the offline router and with a zero-latency
   fake LLM planning it. Split into app time (the app times its own
   ``handle`` and reports it in ``data.app_ms``), tool time (``duration_ms``
   of the tool results), LLM time (the LLM client's own latency record) and
   the rest: the system's overhead.
3. One tool step mediated by the system (app reply → executor → result back
   to the app) against the same operation done directly.
4. ``POST /api/action`` round trip to the echo app.
5. Start of one minimal SDK app, and cold start of ten (``System.start()``)
   against floor 1b.
6. The whole desktop (``desktop_app.py --headless``) with the bundled apps,
   to the "AIOS ready" line and to ``/api/health`` ready.
7. RSS of the desktop's process tree after that start (bubblewrap's own
   processes included).
8. Ten concurrent clients doing actions against the echo app.
9. Event replay: 1,000 events emitted while a client was away, from its
   ``/api/events?since=&epoch=`` handshake to the last one received.
10. Runs (DESIGN §12), on a system with the planner fixture app in
    ``approvals.mode`` "smart": (a) the decision machinery on a 10-step plan of
    safe steps that asks nothing, against the bare ``Executor.run`` of the same
    steps with the same ToolContext, and where its time goes; (b) Allow on a
    waiting command to its ``step`` event "started"; (c) cancel of a running
    ``time.sleep(30)`` command to its processes gone, against a direct kill.

11. Start-up and scale (issue 27, ``--startup [--baseline TREE]``, bench/startup.py):
    one app's start confined and unconfined, the desktop with the bundled apps on
    demand and all at boot, growth with 10/25/50/100 installed apps, a cold app's
    first view after an instruction; another checkout measured in the same run.
12. The request path (issue 27 items 4 and 5, ``--request-path [--baseline TREE]``,
    bench/request_path.py): the mediated step (a plan's step and an app's own
    ``call_tool``) over the direct call, actions/s at 10 and 50 clients.

Confinement (DESIGN §11): 3, 4, 5, 6 and 7 run twice in the same run, with
``apps.confinement`` "auto" (apps inside bubblewrap where it works: what a
user gets) and "off" (unconfined), interleaved where the measurement allows
it, so drift on a shared machine lands on both alike. 2 and 8 run on the
default ("auto") system only.

Ends with three Markdown tables: the figures against their floors (metric,
value, floor, ratio, target, met?), confined next to unconfined (metric,
unconfined, confined, cost, target, met?), and the runs (metric, value, floor,
target, met?).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import psutil  # noqa: E402
import requests  # noqa: E402
from minimal_app import MINIMAL_APP  # noqa: E402

TOKEN = "bench-launch-token"
ECHO_APP = ROOT / "tests" / "fixtures" / "apps_system" / "echo"
LLM_ENV = (
    "DEEPSEEK_API_KEY",
    "AIOS_LLM_API_KEY",
    "AIOS_LLM_BASE_URL",
    "AIOS_LLM_MODEL",
    "OPENAI_API_KEY",
)

TARGET_INSTRUCTION_OVERHEAD_MS = 10.0
TARGET_STEP_OVERHEAD_MS = 2.0
TARGET_COLD_START_S = 1.0
TARGET_COLD_START_RATIO = 1.5
TARGET_DESKTOP_READY_S = 1.5
TARGET_RSS_MB = 400.0
TARGET_RSS_APPS = 8
TARGET_THROUGHPUT = 200.0
TARGET_EVENT_REPLAY_MS = 100.0
EVENT_REPLAY_COUNT = 1000
REPLAY_WAIT_S = 30.0
"""Seconds the replay client waits for one message before it calls the replay stalled."""
# Runs (DESIGN §12, issue 11).
TARGET_DECISION_STEP_MS = 0.1
"""What the run engine may add per step over the bare executor when nothing asks."""
TARGET_ALLOW_TO_STEP_MS = 20.0
TARGET_CANCEL_MS = 200.0
PLANNER_APP = ROOT / "tests" / "fixtures" / "apps_runs" / "planner"
RUN_STEPS = 10
SAFE_PLAN = [
    {"step_id": i, "tool": "cache_get", "args": {"key": "k"}}
    if i % 2
    else {"step_id": i, "tool": "file_read", "args": {"path": "small.txt"}}
    for i in range(1, RUN_STEPS + 1)
]
SEED_PLAN = [{"step_id": 1, "tool": "cache_set", "args": {"key": "k", "value": {"n": 1}}}]
DECISION_SERIES = ("executor", "engine", "call_app", "call_app_run", "http")
DECISION_LABEL = {
    "executor": "bare Executor.run, 10 steps",
    "engine": "run engine (Controller._run_steps), 10 steps",
    "call_app": "call_app without a run (two app rounds)",
    "call_app_run": "call_app within a run (two app rounds)",
    "http": "POST /api/action, the whole run",
}
SLEEPER = "import time; time.sleep(30)"
RUN_WAIT_S = 30.0
"""Seconds a run, its event or its command may take to reach what the bench waits for."""
GONE_POLL_S = 0.001
"""Seconds between two looks at whether a killed command has gone (the latency's grain)."""
# What confinement may add (DESIGN §11, issue 10), confined minus unconfined, same run.
TARGET_CONFINED_START_MS = 50.0
TARGET_CONFINED_STEP_MS = 0.3
TARGET_CONFINED_ACTION_MS = 0.3

CONFINED, UNCONFINED = "auto", "off"
"""Values of ``apps.confinement``: "auto" confines every app where bubblewrap works."""
MODES = (UNCONFINED, CONFINED)
MODE_LABEL = {CONFINED: "confined", UNCONFINED: "unconfined"}
DESKTOP_SETTLE_S = 0.5
"""Seconds the desktop's apps get after ready to finish their post-listen imports
before their memory is weighed."""

# A bare Flask server: the floor for one app process (spawn → port open).
BARE_FLASK = """\
import os
from flask import Flask, jsonify, request
app = Flask(__name__)

@app.post("/handle")
def handle():
    return jsonify({"status": "ok", "echo": request.get_json(silent=True)})

app.run(host="127.0.0.1", port=int(os.environ["APP_PORT"]), threaded=True)
"""


# The app that plans steps. It times its own handle() and adds the durations
# of every round of one call (keyed by session), so the final reply carries
# the app's whole compute time; it also sums the tools' duration_ms it saw.
BENCH_APP = """\
import time

from aios_sdk import AIOSAgent

PLANS = {
    "zero": [],
    "one_cache": [{"step_id": 1, "tool": "cache_get", "args": {"key": "k"}}],
    "one_read": [{"step_id": 1, "tool": "file_read", "args": {"path": "small.txt"}}],
    "sys_cache": [],
    "ten_cache": [{"step_id": i, "tool": "cache_get", "args": {"key": "k"}}
                  for i in range(1, 11)],
    "three": [{"step_id": 1, "tool": "cache_set", "args": {"key": "k", "value": {"n": 1}}},
              {"step_id": 2, "tool": "cache_get", "args": {"key": "k"}},
              {"step_id": 3, "tool": "file_read", "args": {"path": "small.txt"}}],
}
_app_ms = {}


class Bench(AIOSAgent):
    name = "Bench"

    def handle(self, instruction, context, action_request=None):
        t0 = time.perf_counter()
        sid = context.get("session_id") or ""
        results = context.get("tool_results") or {}
        if action_request:
            plan = action_request.get("action_id") or "zero"
        else:
            plan = "three" if "three" in (instruction or "") else "zero"
        if not results:
            _app_ms[sid] = 0.0
        if plan == "sys_cache":  # a tool called mid-request, through the system
            self.call_tool("cache_get", key="k")
        if PLANS.get(plan) and not results:
            reply = {"status": "ok", "view_type": "loading", "data": {},
                     "steps": PLANS[plan]}
        else:
            tool_ms = sum(float(r.get("duration_ms") or 0) for r in results.values())
            reply = {"status": "ok", "view_type": "text",
                     "data": {"content": plan, "steps_run": len(results),
                              "tool_ms": tool_ms,
                              "failed": [k for k, r in results.items()
                                         if r.get("status") != "ok"]},
                     "message": "done"}
        _app_ms[sid] = _app_ms.get(sid, 0.0) + (time.perf_counter() - t0) * 1000
        reply["data"]["app_ms"] = _app_ms[sid]
        return reply


if __name__ == "__main__":
    Bench().run()
"""


# ------------------------------------------------------------------ helpers


@dataclass
class Stats:
    n: int
    p50: float
    p95: float
    mean: float

    @classmethod
    def of(cls, values: list[float]) -> Stats:
        s = sorted(values)
        if not s:
            return cls(0, float("nan"), float("nan"), float("nan"))

        def rank(q: float) -> float:
            return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))]

        return cls(len(s), rank(0.50), rank(0.95), statistics.fmean(s))

    def fmt(self, unit: str = "ms") -> str:
        return f"p50 {self.p50:8.2f} {unit}  p95 {self.p95:8.2f} {unit}  (n={self.n})"


@dataclass
class Report:
    results: dict[str, Any] = field(default_factory=dict)
    rows: list[tuple[str, str, str, str, str, str]] = field(default_factory=list)

    def row(
        self,
        metric: str,
        value: str,
        floor: str = "—",
        ratio: str = "—",
        target: str = "—",
        met: bool | None = None,
    ) -> None:
        verdict = "—" if met is None else ("yes" if met else "**no**")
        self.rows.append((metric, value, floor, ratio, target, verdict))


def out(text: str = "") -> None:
    print(text, flush=True)


def section(title: str) -> None:
    out(f"\n== {title} ==")


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):  # held open together so the n ports differ
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.05):
            return True
    except OSError:
        return False


def timed_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return (time.perf_counter() - t0) * 1000, value


def new_http(token: str | None = TOKEN) -> requests.Session:
    s = requests.Session()
    s.trust_env = False  # never a proxy on loopback
    if token:
        s.headers["Authorization"] = f"Bearer {token}"
    return s


def clean_env() -> dict[str, str]:
    """The environment without any LLM key, so nothing here talks to a real model."""
    return {k: v for k, v in os.environ.items() if k not in LLM_ENV}


def stop_procs(procs: list[subprocess.Popen[bytes]], grace: float = 3.0) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


# ------------------------------------------------------------------ 1. floors


def floor_http(n: int) -> Stats:
    from flask import Flask, jsonify, request
    from werkzeug.serving import make_server

    app = Flask("bench_floor")

    @app.post("/echo")
    def echo() -> Any:
        return jsonify({"status": "ok", "echo": request.get_json(silent=True)})

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
    )
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/echo"
    body = {"text": "hello", "n": 1, "items": [1, 2, 3]}
    http = new_http(None)
    try:
        for _ in range(20):
            http.post(url, json=body, timeout=5)
        times = []
        for _ in range(n):
            ms, r = timed_ms(lambda: http.post(url, json=body, timeout=5))
            r.raise_for_status()
            times.append(ms)
    finally:
        http.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    return Stats.of(times)


def floor_spawn(tmp: Path, count: int) -> float:
    """Seconds from the first Popen until ``count`` bare Flask processes accept TCP."""
    script = tmp / "bare_flask.py"
    script.write_text(BARE_FLASK, encoding="utf-8")
    ports = free_ports(count)
    procs: list[subprocess.Popen[bytes]] = []
    env = clean_env()
    try:
        t0 = time.perf_counter()
        for port in ports:
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(script)],
                    cwd=tmp,
                    env={**env, "APP_PORT": str(port)},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        waiting = set(ports)
        deadline = t0 + 60
        while waiting:
            waiting = {p for p in waiting if not accepts(p)}
            if not waiting:
                break
            if time.perf_counter() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError("bare Flask processes did not all start")
            time.sleep(0.005)
        return time.perf_counter() - t0
    finally:
        stop_procs(procs)


# ------------------------------------------------------- in-process systems


@dataclass
class Inproc:
    system: Any
    server: Any
    http: requests.Session

    @property
    def url(self) -> str:
        return str(self.system.url)

    def post(self, path: str, body: dict[str, Any]) -> requests.Response:
        return self.http.post(self.url + path, json=body, timeout=30)

    def stop(self) -> None:
        try:
            self.server.shutdown()
        finally:
            self.system.stop()
            self.http.close()


def build_system(
    apps_dir: Path,
    data_dir: Path,
    confinement: str = CONFINED,
    extra: dict[str, Any] | None = None,
) -> Inproc:
    """A System behind its real HTTP server, as tests/integration/conftest.py builds one;
    ``confinement`` is ``apps.confinement`` ("auto" or "off"), ``extra`` more config
    sections."""
    from aios.config import validate_config
    from aios.system import System
    from aios.web import ServerThread, create_app

    config = validate_config(
        {
            "apps_dir": str(apps_dir),
            "data_dir": str(data_dir),
            "llm": {"api_key": ""},
            "apps": {"confinement": confinement, "autostart": "all"},
            **(extra or {}),
        }
    )
    server = ServerThread(0)
    system = System(config, port=server.port, token=TOKEN)
    server.attach(create_app(system))
    server.start()
    return Inproc(system, server, new_http())


def confined_apps(http: requests.Session, url: str) -> tuple[int, int]:
    """(apps that say ``confined: true``, apps) in ``GET /api/apps``."""
    listed = http.get(url + "/api/apps", timeout=30).json()
    return sum(1 for a in listed if a.get("confined") is True), len(listed)


def say_confined(label: str, counts: tuple[int, int]) -> None:
    out(f"  {label}: {counts[0]}/{counts[1]} app(s) confined")


def write_app(folder: Path, source: str, manifest: dict[str, Any]) -> None:
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(source, encoding="utf-8")
    (folder / "manifest.json").write_text(
        json.dumps(manifest, ensure_ascii=False), encoding="utf-8"
    )


def make_main_apps(apps_dir: Path) -> None:
    shutil.copytree(
        ECHO_APP, apps_dir / "echo", ignore=shutil.ignore_patterns("__pycache__", "workspace")
    )
    write_app(
        apps_dir / "bench",
        BENCH_APP,
        {
            "name": "Bench",
            "entry": "main.py",
            "description": "benchmark planner",
            "keywords": ["bench", "benchmark"],
            "role_prompt": "You plan cheap steps.",
        },
    )
    (apps_dir / "bench" / "workspace").mkdir()
    (apps_dir / "bench" / "workspace" / "small.txt").write_text("hello " * 40, encoding="utf-8")


# ---------------------------------------------------------- 2. instructions


def llm_ms_since(store: Any, last_id: int) -> tuple[float, int, int]:
    rows = [r for r in store.llm_usage(limit=20) if r["id"] > last_id]
    top = max([last_id, *(r["id"] for r in rows)])
    return sum(float(r["latency_ms"] or 0) for r in rows), len(rows), top


def bench_instruction(sys_: Inproc, n: int, label: str) -> dict[str, Stats]:
    store = sys_.system.store
    first = sys_.post("/api/instruction", {"text": "bench three"}).json()
    sid = first["session_id"]
    results = first.get("results") or []
    if (
        not results
        or results[0]["app"] != "bench"
        or results[0]["response"].get("data", {}).get("steps_run") != 3
    ):
        raise RuntimeError(
            f"{label}: the instruction did not run the bench plan: "
            f"{json.dumps(first, ensure_ascii=False)[:600]}"
        )
    out(
        f"plan source: {first.get('source')}, app: {results[0]['app']}, "
        f"steps run: {results[0]['response']['data']['steps_run']}"
    )
    for _ in range(5):
        sys_.post("/api/instruction", {"text": "bench three", "session_id": sid})
    _, _, last_id = llm_ms_since(store, 0)
    totals, apps, tools, llms, over, llm_calls = [], [], [], [], [], []
    for _ in range(n):
        ms, r = timed_ms(
            lambda: sys_.post("/api/instruction", {"text": "bench three", "session_id": sid})
        )
        body = r.json()
        data = body["results"][0]["response"]["data"]
        if data.get("failed") or data.get("steps_run") != 3:
            raise RuntimeError(f"{label}: a step failed: {data}")
        llm_ms, calls, last_id = llm_ms_since(store, last_id)
        totals.append(ms)
        apps.append(float(data["app_ms"]))
        tools.append(float(data["tool_ms"]))
        llms.append(llm_ms)
        llm_calls.append(calls)
        over.append(ms - data["app_ms"] - data["tool_ms"] - llm_ms)
    out(f"LLM requests per instruction: {statistics.fmean(llm_calls):.1f}")
    stats = {
        "total": Stats.of(totals),
        "app": Stats.of(apps),
        "tools": Stats.of(tools),
        "llm": Stats.of(llms),
        "overhead": Stats.of(over),
    }
    for k, v in stats.items():
        out(f"  {label:<8} {k:<9} {v.fmt()}")
    return stats


def enable_fake_llm(sys_: Inproc, base_url: str) -> None:
    sys_.system.update_config(
        {
            "llm": {
                "api_key": "sk-bench",
                "base_url": base_url,
                "model": "fake-model",
                "max_retries": 0,
            }
        }
    )


def disable_llm(sys_: Inproc) -> None:
    # An empty api_key means "keep the current one" in update_config; no base_url disables.
    sys_.system.update_config({"llm": {"base_url": ""}})
    if sys_.system.llm.enabled:
        raise RuntimeError("could not switch the LLM off again")


# ------------------------------------------------------ 3. a mediated step


STEP_KINDS = ("zero", "one_cache", "one_read", "ten_cache")


def bench_steps(systems: dict[str, Inproc], n: int, tmp_store: Path) -> dict[str, Any]:
    """The mediated step on every system in ``systems`` (mode -> system), interleaved."""
    from aios.protocol import ActionRequest

    sids = {}
    for mode, sys_ in systems.items():
        r = sys_.post("/api/action", {"app": "bench", "action_id": "zero"})
        sids[mode] = r.json()["session_id"]
        sys_.post("/api/action", {"app": "bench", "action_id": "three", "session_id": sids[mode]})
    http: dict[str, dict[str, list[float]]] = {m: {k: [] for k in STEP_KINDS} for m in systems}

    def action(mode: str, kind: str) -> requests.Response:
        return systems[mode].post(
            "/api/action", {"app": "bench", "action_id": kind, "session_id": sids[mode]}
        )

    for _ in range(10):
        for mode in systems:
            for k in STEP_KINDS:
                action(mode, k)
    # Interleaved, so drift on a shared machine lands on every kind and mode alike.
    for _ in range(n):
        for mode in systems:
            for k in STEP_KINDS:
                ms, r = timed_ms(lambda m=mode, k=k: action(m, k))
                data = r.json()["response"]["data"]
                if data.get("failed"):
                    raise RuntimeError(f"{MODE_LABEL[mode]}: step {k} failed: {data}")
                http[mode][k].append(ms)

    # The same through Controller.call_app in-process: no desktop HTTP hop.
    reqs = {k: ActionRequest.model_validate({"action_id": k}) for k in STEP_KINDS}
    call: dict[str, dict[str, list[float]]] = {m: {k: [] for k in STEP_KINDS} for m in systems}
    records = {m: s.system.launcher.get("bench") for m, s in systems.items()}
    for _ in range(n):
        for mode, sys_ in systems.items():
            ctl = sys_.system.controller
            for k in STEP_KINDS:
                ms, _ = timed_ms(
                    lambda c=ctl, m=mode, k=k: c.call_app(records[m], None, reqs[k], sids[m])
                )
                call[mode][k].append(ms)

    direct = direct_ops(Path(next(iter(records.values())).workdir) / "small.txt", tmp_store)
    res: dict[str, Any] = {"direct_ms": direct}
    for mode in systems:
        res[mode] = {
            label: step_figures(series, direct, f"{MODE_LABEL[mode]:<10} {label:<8}")
            for label, series in (("http", http[mode]), ("call_app", call[mode]))
        }
    out(
        f"  direct   cache_get {direct['cache_get']:.4f} ms, Path.read_text "
        f"{direct['file_read']:.4f} ms"
    )
    out(
        "  method: overhead = p50(plan of 1 step) - p50(plan of 0 steps) - direct op; the "
        "1-step plan costs one extra app round (the app is called again with the result), "
        "so this is the whole mediation, app -> executor -> app. 'each further step' = "
        "(p50(10 steps) - p50(1 step)) / 9 - direct op."
    )
    return res


def direct_ops(target: Path, tmp_store: Path) -> dict[str, float]:
    """The step's operations done directly: the system's own store, a plain file read."""
    from aios.store import Store

    store = Store(tmp_store)
    store.cache_set("bench", "k", {"n": 1})
    reps = 2000

    def per_op(fn: Callable[[], Any]) -> float:
        best = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            best.append((time.perf_counter() - t0) * 1000 / reps)
        return min(best)

    try:
        return {
            "cache_get": per_op(lambda: store.cache_get("bench", "k")),
            "file_read": per_op(lambda: target.read_text(encoding="utf-8")),
        }
    finally:
        store.close()


def step_figures(
    series: dict[str, list[float]], direct: dict[str, float], tag: str
) -> dict[str, Any]:
    """Percentiles per plan kind, and from them what one mediated step costs."""
    st = {k: Stats.of(v) for k, v in series.items()}
    got: dict[str, Any] = {k: vars(v) for k, v in st.items()}
    for k in STEP_KINDS:
        out(f"  {tag} {k:<10} {st[k].fmt()}")
    one_c = st["one_cache"].p50 - st["zero"].p50 - direct["cache_get"]
    one_r = st["one_read"].p50 - st["zero"].p50 - direct["file_read"]
    marginal = (st["ten_cache"].p50 - st["one_cache"].p50) / 9 - direct["cache_get"]
    got["step_overhead_cache_ms"] = one_c
    got["step_overhead_read_ms"] = one_r
    got["marginal_step_ms"] = marginal
    out(
        f"  {tag} mediated step over direct: cache_get {one_c:6.2f} ms, "
        f"file_read {one_r:6.2f} ms; each further step in the same plan "
        f"{marginal:6.3f} ms"
    )
    return got


# --------------------------------------------------------------- 4. action


def bench_action(systems: dict[str, Inproc], n: int) -> dict[str, dict[str, float]]:
    """Action round trips to the echo app of every system (mode -> system), interleaved."""
    sids = {
        mode: s.post("/api/action", {"app": "echo", "action_id": "again"}).json()["session_id"]
        for mode, s in systems.items()
    }

    def action(mode: str) -> requests.Response:
        return systems[mode].post(
            "/api/action", {"app": "echo", "action_id": "again", "session_id": sids[mode]}
        )

    for _ in range(20):
        for mode in systems:
            action(mode)
    times: dict[str, list[float]] = {m: [] for m in systems}
    for _ in range(n):
        for mode in systems:
            ms, r = timed_ms(lambda m=mode: action(m))
            if r.status_code != 200 or r.json()["response"].get("status") != "ok":
                raise RuntimeError(
                    f"{MODE_LABEL[mode]}: echo action failed: {r.status_code} {r.text[:300]}"
                )
            times[mode].append(ms)
    res = {}
    for mode, series in times.items():
        st = Stats.of(series)
        out(f"  {MODE_LABEL[mode]:<10} action -> echo {st.fmt()}")
        res[mode] = vars(st)
    return res


# ----------------------------------------------------------- 8. throughput


def load_client(url: str, total: int, clients: int, app: str) -> dict[str, Any]:
    """Run in a subprocess so the load's CPU is not charged to the system's GIL."""
    lock = threading.Lock()
    left = [total]
    errors: list[str] = []
    latencies: list[float] = []
    sessions = []
    for _ in range(clients):
        s = new_http()
        r = s.post(url + "/api/action", json={"app": app, "action_id": "again"}, timeout=30)
        sessions.append((s, r.json()["session_id"]))
    start = threading.Barrier(clients + 1)

    def worker(s: requests.Session, sid: str) -> None:
        start.wait()
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            t0 = time.perf_counter()
            try:
                r = s.post(
                    url + "/api/action",
                    json={"app": app, "action_id": "again", "session_id": sid},
                    timeout=30,
                )
                ok = r.status_code == 200 and r.json()["response"].get("status") == "ok"
                err = None if ok else f"HTTP {r.status_code}: {r.text[:200]}"
            except (requests.RequestException, ValueError) as e:
                err = f"{type(e).__name__}: {e}"
            ms = (time.perf_counter() - t0) * 1000
            with lock:
                latencies.append(ms)
                if err:
                    errors.append(err)

    threads = [threading.Thread(target=worker, args=pair) for pair in sessions]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    for s, _ in sessions:
        s.close()
    st = Stats.of(latencies)
    return {
        "total": total,
        "clients": clients,
        "wall_s": wall,
        "per_s": total / wall,
        "errors": len(errors),
        "first_errors": errors[:3],
        "p50_ms": st.p50,
        "p95_ms": st.p95,
    }


def bench_throughput(sys_: Inproc, total: int, clients: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--load-client", sys_.url, str(total), str(clients), "echo"],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"load client failed: {proc.stderr[-1500:]}")
    res: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out(
        f"  {res['clients']} clients, {res['total']} actions in {res['wall_s']:.2f} s: "
        f"{res['per_s']:.0f} actions/s, errors {res['errors']}, latency p50 "
        f"{res['p50_ms']:.1f} ms p95 {res['p95_ms']:.1f} ms"
    )
    for e in res["first_errors"]:
        out(f"    error: {e}")
    return res


# ------------------------------------------------------------ 5. cold start


def bench_event_replay(sys_: Inproc, repeats: int, count: int = EVENT_REPLAY_COUNT) -> Stats:
    """ms from a reconnect's handshake (``?since=&epoch=``) until the last of ``count``
    events emitted while the client was away has arrived (DESIGN §12 "Events")."""
    import simple_websocket

    bus = sys_.system.bus
    url = sys_.url.replace("http", "ws") + f"/api/events?token={TOKEN}"
    origin = {"Origin": sys_.url}
    times: list[float] = []
    for _ in range(repeats):
        since, epoch = bus.seq, bus.epoch
        for i in range(count):
            bus.emit("notify", {"app": "echo", "title": "bench", "body": f"event {i}"})
        last = bus.seq
        t0 = time.perf_counter()
        ws = simple_websocket.Client.connect(f"{url}&since={since}&epoch={epoch}", headers=origin)
        try:
            json.loads(ws.receive(timeout=REPLAY_WAIT_S))  # the hello
            seqs: list[int] = []
            while not seqs or seqs[-1] < last:
                raw = ws.receive(timeout=REPLAY_WAIT_S)
                if raw is None:
                    raise RuntimeError(f"replay stalled after {len(seqs)} of {count} events")
                msg = json.loads(raw)
                if msg.get("type") == "resync":
                    raise RuntimeError("the replay buffer did not hold the events")
                seqs.append(msg["seq"])
            times.append((time.perf_counter() - t0) * 1000)
        finally:
            ws.close()
        if seqs != list(range(since + 1, last + 1)):
            raise RuntimeError(f"replayed {len(seqs)} events, not seq {since + 1}..{last} in order")
    st = Stats.of(times)
    out(f"  replay of {count} events after reconnect {st.fmt()}")
    return st


# ----------------------------------------------------------------- 10. runs


def planner_system(tmp: Path) -> Inproc:
    """A default ("auto" confinement) system with the planner fixture app, in smart mode."""
    apps_dir = tmp / "apps_runs"
    shutil.copytree(
        PLANNER_APP,
        apps_dir / "planner",
        ignore=shutil.ignore_patterns("__pycache__", "workspace"),
    )
    (apps_dir / "planner" / "workspace").mkdir()
    (apps_dir / "planner" / "workspace" / "small.txt").write_text("hello " * 40, encoding="utf-8")
    sys_ = build_system(apps_dir, tmp / "data_runs", CONFINED, {"approvals": {"mode": "smart"}})
    sys_.system.start()
    record = sys_.system.launcher.get("planner")
    if record is None or str(record.status) != "running":
        sys_.stop()
        raise RuntimeError(f"the planner app is not running: {record}")
    return sys_


def plan_body(steps: list[dict[str, Any]], sid: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"app": "planner", "action_id": "plan", "params": {"steps": steps}}
    if sid:
        body["session_id"] = sid
    return body


def all_ok(results: dict[str, Any]) -> bool:
    return len(results) == RUN_STEPS and all(v.get("status") == "ok" for v in results.values())


def per_call_ms(fn: Callable[[], Any], reps: int) -> float:
    """ms per call of ``fn``, best of three batches of ``reps``."""
    best = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best.append((time.perf_counter() - t0) * 1000 / reps)
    return min(best)


def bench_decision_cost(sys_: Inproc, n: int) -> dict[str, Any]:
    """The run engine on a 10-step plan of safe steps that asks nothing, against the bare
    ``Executor.run`` of the same steps with the same ToolContext (DESIGN §12)."""
    from aios.protocol import ActionRequest

    system = sys_.system
    ctl, runs = system.controller, system.runs
    first = sys_.post("/api/action", plan_body(SEED_PLAN)).json()
    sid = first["session_id"]
    reply = sys_.post("/api/action", plan_body(SAFE_PLAN, sid)).json()
    if "state" in reply or not all_ok(reply["response"]["data"].get("results") or {}):
        raise RuntimeError(f"the safe plan did not run at once: {str(reply)[:500]}")
    record = system.launcher.get("planner")
    ctx = system.tool_context("planner", sid)
    action = ActionRequest.model_validate({"action_id": "plan", "params": {"steps": SAFE_PLAN}})

    def bare() -> None:
        if not all_ok(ctl.executor.run(SAFE_PLAN, ctx)):
            raise RuntimeError("bare executor: a safe step failed")

    def engine() -> float:
        run = runs.start("action", "planner", sid, text="plan")
        try:
            ms, results = timed_ms(lambda: ctl.loop.run_steps(run, "planner", SAFE_PLAN, ctx))
        finally:
            runs.finish(run, None)
        if not all_ok(results):
            raise RuntimeError(f"run engine: a safe step failed: {results}")
        return ms

    def app_bare() -> None:
        ctl.call_app(record, None, action, sid)

    def app_run() -> float:
        run = runs.start("action", "planner", sid, text="plan")
        try:
            ms, outcome = timed_ms(lambda: ctl.call_app(record, None, action, sid, run=run))
        finally:
            runs.finish(run, None)
        if not all_ok(outcome.response["data"].get("results") or {}):
            raise RuntimeError(f"call_app in a run: a safe step failed: {outcome.response}")
        return ms

    def http() -> None:
        r = sys_.post("/api/action", plan_body(SAFE_PLAN, sid))
        if r.status_code != 200 or "state" in r.json():
            raise RuntimeError(f"POST /api/action did not finish at once: {r.text[:300]}")

    series: dict[str, list[float]] = {k: [] for k in DECISION_SERIES}
    measure: dict[str, Callable[[], float]] = {
        "executor": lambda: timed_ms(bare)[0],
        "engine": engine,
        "call_app": lambda: timed_ms(app_bare)[0],
        "call_app_run": app_run,
        "http": lambda: timed_ms(http)[0],
    }
    for i in range(10 + n):  # the first 10 rounds warm up; interleaved against drift
        order = DECISION_SERIES if i % 2 == 0 else DECISION_SERIES[::-1]
        got = {k: measure[k]() for k in order}  # neither of a pair always goes first
        if i >= 10:
            for k, v in got.items():
                series[k].append(v)
    st = {k: Stats.of(v) for k, v in series.items()}
    for k in DECISION_SERIES:
        out(f"  {DECISION_LABEL[k]:<46} {st[k].fmt()}")
    res: dict[str, Any] = {k: vars(v) for k, v in st.items()}

    res["per_step_ms"] = paired_per_step(series["engine"], series["executor"])
    res["per_step_call_app_ms"] = paired_per_step(series["call_app_run"], series["call_app"])
    res["per_step_p50_diff_ms"] = (st["engine"].p50 - st["executor"].p50) / RUN_STEPS
    out(
        f"  decision machinery per step (median of paired differences / {RUN_STEPS}): "
        f"{res['per_step_ms']:.3f} ms run engine − bare executor (difference of the p50s "
        f"{res['per_step_p50_diff_ms']:.3f} ms); {res['per_step_call_app_ms']:.3f} ms through "
        "call_app with the app's two rounds"
    )

    res["parts_ms"] = decision_parts(system, sid)
    return res


def paired_per_step(with_run: list[float], without: list[float]) -> float:
    """Median over the rounds of (with − without) / steps: each pair ran back to back,
    so a busy machine's drift cancels out of the difference."""
    return statistics.median((a - b) / RUN_STEPS for a, b in zip(with_run, without, strict=True))


def decision_parts(system: Any, sid: str) -> dict[str, float]:
    """Where the run engine's time per step goes: the parts it adds around each step."""
    from aios.protocol import parse_steps

    runs = system.runs
    reps = 300
    run = runs.start("action", "planner", sid, text="plan")
    try:
        entries = [{"step_id": f"step_{s['step_id']}", "tool": s["tool"]} for s in SAFE_PLAN]
        runs.plan(run, [{**e, "status": "pending"} for e in entries])
        payload = {"run_id": run.run_id, "app": "planner", "session_id": sid, **entries[0]}
        started = {**entries[0], "status": "started"}
        finished = {**entries[0], "status": "ok", "duration_ms": 0.01}
        parsed = parse_steps(SAFE_PLAN)
        parts = {
            "step_started": per_call_ms(lambda: runs.step(run, started), reps),
            "step_done": per_call_ms(lambda: runs.step(run, finished), reps),
            "update_step": per_call_ms(
                lambda: system.runstore.update_step(run.run_id, entries[0]["step_id"], n=1), reps
            ),
            "emit": per_call_ms(lambda: system.bus.emit("step", payload), reps),
            "write_tx": per_call_ms(lambda: one_write(system.store, run.run_id), reps),
            "review_per_step": per_call_ms(
                lambda: system.approvals.review("planner", sid, parsed), reps
            )
            / RUN_STEPS,
            "plan_per_step": per_call_ms(
                lambda: runs.plan(run, [{**e, "status": "pending"} for e in entries]), reps // 10
            )
            / RUN_STEPS,
        }
    finally:
        runs.finish(run, None)
    parts["per_step_sum"] = (
        parts["step_started"]
        + parts["step_done"]
        + parts["review_per_step"]
        + parts["plan_per_step"]
    )
    parts.update(card_review(system, sid))
    out(
        f"  where it goes, per step: Runs.step started {parts['step_started']:.3f} ms + done "
        f"{parts['step_done']:.3f} ms (RunStore.update_step {parts['update_step']:.3f} ms, a "
        f"step event {parts['emit']:.3f} ms), review {parts['review_per_step']:.3f} ms, "
        "storing the plan "
        f"{parts['plan_per_step']:.3f} ms; sum {parts['per_step_sum']:.3f} ms; one SQLite "
        f"write transaction alone (floor of update_step) {parts['write_tx']:.3f} ms"
    )
    return parts


CMD_PLAN = [
    {"step_id": i, "tool": "shell_exec", "args": {"cmd": f"echo hello {i}"}}
    if i % 2
    else {"step_id": i, "tool": "shell_exec", "args": {"cmd": "python3 small.py"}}
    for i in range(1, RUN_STEPS + 1)
]
"""Ten commands, half of them an interpreter running a workdir file (pinned: read, hashed)."""
CARD_REVIEW_MAX_MS = 0.1
HASH_CHECK_MAX_MS = 0.01


def card_review(system: Any, sid: str) -> dict[str, float]:
    """DESIGN §14.2: the review of a 10-step plan with each step's canonical hash, against
    the review's parts of before (risk, rule, text, audit args; no hash) re-enacted in the
    same run; and the check an approved step passes right before it runs."""
    from aios.protocol import parse_steps
    from aios.runs.approvals import Review
    from aios.runs.approved import Approval
    from aios.tools import audit_args
    from aios.tools.risk import classify, describe

    approvals = system.approvals
    policy = system.tool_context("planner", sid).policy
    (policy.workdir / "small.py").write_text("print('hello')\n" * 20, encoding="utf-8")
    reps = 300
    figures: dict[str, float] = {}
    for label, plan in (("safe", SAFE_PLAN), ("cmd", CMD_PLAN)):
        parsed = parse_steps(plan)

        def before(parsed: list[Any] = parsed) -> list[Review]:
            chosen = system.runstore.policy("planner")
            return [
                Review(
                    step_id=s.key,
                    tool=s.tool,
                    risk=(risk := classify(s.tool, s.args)),
                    rule=approvals.rule("planner", sid, s.tool, risk, chosen),
                    text=describe(s.tool, s.args),
                    args=audit_args(s.args),
                )
                for s in parsed
            ]

        figures[f"card_review_before_{label}"] = per_call_ms(before, reps) / RUN_STEPS
        figures[f"card_review_{label}"] = (
            per_call_ms(
                lambda parsed=parsed: approvals.review("planner", sid, parsed, policy), reps
            )
            / RUN_STEPS
        )
    checks: dict[str, tuple[str, dict[str, Any], Approval]] = {}
    for step in (SAFE_PLAN[0], CMD_PLAN[1], CMD_PLAN[0]):
        (r,) = approvals.review("planner", sid, parse_steps([step]), policy)
        checks[f"{step['tool']} {r.text}"] = (str(step["tool"]), dict(step["args"]), r.approval())
    for text, (tool, args, approval) in checks.items():
        if not approval.holds(tool, args, policy):
            raise RuntimeError(f"an approved step does not hold: {text}")
        figures[f"hash_check {text}"] = per_call_ms(
            lambda t=tool, a=args, ap=approval: ap.holds(t, a, policy), reps * 10
        )
    out(
        "  the card is the execution (§14.2), review per step of a 10-step plan: reads "
        f"{figures['card_review_safe']:.4f} ms with the hash (before: "
        f"{figures['card_review_before_safe']:.4f} ms), commands "
        f"{figures['card_review_cmd']:.4f} ms with hashes and 5 pinned files (before: "
        f"{figures['card_review_before_cmd']:.4f} ms); limit {CARD_REVIEW_MAX_MS} ms"
    )
    for text in checks:
        out(
            f"  hash check of an approved step right before it runs, {text}: "
            f"{figures[f'hash_check {text}']:.4f} ms (limit {HASH_CHECK_MAX_MS} ms"
            f"{', the file read and hashed again' if 'small.py' in text else ''})"
        )
    return figures


def one_write(store: Any, run_id: str) -> None:
    """The cheapest write transaction on the system's store: one row's ``updated``."""
    with store._tx() as db:
        db.execute("UPDATE runs SET updated=? WHERE run_id=?", (time.time(), run_id))


def next_event(sub: Any, match: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_WAIT_S
    while time.monotonic() < deadline:
        ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
        if ev is not None and match(ev):
            return dict(ev)
    raise RuntimeError(f"no {what} within {RUN_WAIT_S:g} s")


def bench_allow_to_step(sys_: Inproc, n: int) -> dict[str, Any]:
    """ms from ``POST /api/interactions/<id>`` Allow to the ``step`` event "started" of the
    plan's first step (its emit time), and the answer's own round trip."""
    bus = sys_.system.bus
    steps = [{"step_id": "cmd", "tool": "shell_exec", "args": {"cmd": ["true"]}}]
    sid = sys_.post("/api/action", plan_body([])).json()["session_id"]
    to_step: list[float] = []
    answer: list[float] = []
    for i in range(n + 2):  # two warm-up rounds
        sub = bus.subscribe()
        try:
            reply = sys_.post("/api/action", plan_body(steps, sid)).json()
            if reply.get("state") != "waiting":
                raise RuntimeError(f"the command did not ask first: {str(reply)[:300]}")
            run_id, ia = reply["run_id"], reply["pending"][0]["id"]
            t0 = time.time()
            ms, r = timed_ms(
                lambda ia=ia: sys_.post(f"/api/interactions/{ia}", {"decision": "allow"})
            )
            if r.status_code != 200:
                raise RuntimeError(f"Allow failed: {r.status_code} {r.text[:300]}")
            ev = next_event(
                sub,
                lambda e, rid=run_id: (
                    e.get("type") == "step"
                    and e.get("run_id") == rid
                    and e.get("status") == "started"
                ),
                "step started event",
            )
            next_event(
                sub,
                lambda e, rid=run_id: (
                    e.get("type") == "run"
                    and e.get("run_id") == rid
                    and e.get("state") in ("done", "failed")
                ),
                "end of the run",
            )
        finally:
            sub.close()
        if i >= 2:
            to_step.append((float(ev["ts"]) - t0) * 1000)
            answer.append(ms)
    st, sa = Stats.of(to_step), Stats.of(answer)
    out(f"  Allow → first step started    {st.fmt()}")
    out(f"  POST /api/interactions round trip {sa.fmt()}")
    return {"to_step": vars(st), "answer_http": vars(sa)}


def gone(procs: list[psutil.Process]) -> bool:
    """Every process has exited (a zombie waiting for its parent's wait() has too)."""
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def wait_gone(procs: list[psutil.Process], what: str) -> None:
    deadline = time.monotonic() + RUN_WAIT_S
    while not gone(procs):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} still running after {RUN_WAIT_S:g} s")
        time.sleep(GONE_POLL_S)


def sleepers(code: str) -> list[psutil.Process]:
    """The host processes of a command whose line carries ``code``, once its Python runs."""
    found = []
    for p in psutil.process_iter(["cmdline", "name"]):
        if code in " ".join(p.info["cmdline"] or []):
            found.append(p)
    has_python = any((p.info["name"] or "").startswith("python") for p in found)
    return found if has_python else []


def bench_cancel(sys_: Inproc, n: int) -> dict[str, Any]:
    """ms from ``POST /api/runs/<id>/cancel`` to a running ``time.sleep(30)`` command's
    processes being gone; the floor kills such a process directly."""
    r = sys_.post("/api/apps/planner/policy", {"shell_exec": "allow"})
    if r.status_code != 200:
        raise RuntimeError(f"could not allow shell_exec for the bench: {r.text[:300]}")
    system = sys_.system
    sid = sys_.post("/api/action", plan_body([])).json()["session_id"]
    latency: list[float] = []
    request: list[float] = []
    floor: list[float] = []
    for i in range(n + 1):  # one warm-up round
        code = f"{SLEEPER}  # bench {i}"
        steps = [
            {"step_id": "slow", "tool": "shell_exec", "args": {"cmd": ["python3", "-c", code]}}
        ]
        done: dict[str, Any] = {}
        caller = threading.Thread(
            target=lambda s=steps, d=done: d.update(
                sys_.post("/api/action", plan_body(s, sid)).json()
            )
        )
        caller.start()
        deadline = time.monotonic() + RUN_WAIT_S
        while not (procs := sleepers(code)):
            if time.monotonic() > deadline or not caller.is_alive():
                raise RuntimeError(f"the command did not start: {done}")
            time.sleep(GONE_POLL_S)
        (run,) = [x for x in system.runs.active(sid) if x.app == "planner"]
        t0 = time.perf_counter()
        r = sys_.post(f"/api/runs/{run.run_id}/cancel", {})
        sent = time.perf_counter()
        if r.status_code != 200:
            raise RuntimeError(f"cancel failed: {r.status_code} {r.text[:300]}")
        wait_gone(procs, "the cancelled command")
        t1 = time.perf_counter()
        caller.join(RUN_WAIT_S)
        codes = (done.get("response") or {}).get("data", {}).get("codes")
        if codes != {"step_slow": "cancelled"}:
            raise RuntimeError(f"the cancelled step did not say cancelled: {codes}")
        # The floor: the same command started and killed directly, gone by the same test.
        proc = subprocess.Popen([sys.executable, "-c", code], env=clean_env())
        ps = psutil.Process(proc.pid)
        f0 = time.perf_counter()
        proc.kill()
        wait_gone([ps], "the directly killed command")
        f1 = time.perf_counter()
        proc.wait(timeout=RUN_WAIT_S)
        if i >= 1:
            latency.append((t1 - t0) * 1000)
            request.append((sent - t0) * 1000)
            floor.append((f1 - f0) * 1000)
    st, sr, sf = Stats.of(latency), Stats.of(request), Stats.of(floor)
    out(f"  cancel → command gone         {st.fmt()}")
    out(f"  POST /api/runs/<id>/cancel    {sr.fmt()}")
    out(f"  floor: kill() → process gone  {sf.fmt()}")
    return {"latency": vars(st), "request_http": vars(sr), "floor_kill": vars(sf)}


def bench_runs(tmp: Path, n_plan: int, n_allow: int, n_cancel: int) -> dict[str, Any]:
    sys_ = planner_system(tmp)
    try:
        res: dict[str, Any] = {"confined": confined_apps(sys_.http, sys_.url)}
        say_confined("planner system", res["confined"])
        out(f"(a) a {RUN_STEPS}-step plan of safe steps, asks nothing (n={n_plan}, interleaved)")
        res["decision"] = bench_decision_cost(sys_, n_plan)
        out(f"(b) Allow on a waiting command, to its step starting (n={n_allow})")
        res["allow"] = bench_allow_to_step(sys_, n_allow)
        out(f"(c) cancel of a running python3 -c '{SLEEPER}' (n={n_cancel})")
        res["cancel"] = bench_cancel(sys_, n_cancel)
    finally:
        sys_.stop()
    return res


def write_minimal_apps(apps_dir: Path, count: int) -> None:
    for i in range(count):
        write_app(
            apps_dir / f"app_{i:02d}",
            MINIMAL_APP,
            {"name": f"Minimal {i}", "entry": "main.py", "role_prompt": "You say hi."},
        )


def alternating(modes: tuple[str, ...], i: int) -> tuple[str, ...]:
    """``modes`` in order on even rounds, reversed on odd ones: neither always goes first."""
    return modes if i % 2 == 0 else modes[::-1]


def start_once(apps_dir: Path, data_dir: Path, mode: str, count: int) -> dict[str, Any]:
    """Build a System, time ``start()`` until ``count`` apps run, weigh them, stop it."""
    build_ms, sys_ = timed_ms(lambda: build_system(apps_dir, data_dir, mode))
    try:
        start_ms, _ = timed_ms(sys_.system.start)
        recs = sys_.system.launcher.apps()
        running = [x for x in recs if str(x.status) == "running"]
        if len(running) != count:
            raise RuntimeError(
                f"{MODE_LABEL[mode]}: only {len(running)}/{count} apps running: "
                f"{[(x.id, str(x.status), x.error) for x in recs]}"
            )
        per_app = [
            (x.ready_at - x.spawned_at) * 1000 for x in running if x.ready_at and x.spawned_at
        ]
        confined = confined_apps(sys_.http, sys_.url)
        rss = []
        for x in running:
            try:  # the app's whole host tree: bwrap and what runs inside it, when confined
                root = psutil.Process(x.pid)
                tree = [root, *root.children(recursive=True)]
                rss.append(
                    (
                        sum(q.memory_info().rss for q in tree),
                        sum(q.memory_full_info().uss for q in tree),
                    )
                )
            except psutil.Error:
                pass
    finally:
        stop_ms, _ = timed_ms(sys_.stop)
    return {
        "build_ms": build_ms,
        "start_s": start_ms / 1000,
        "stop_ms": stop_ms,
        "per_app_ms": per_app,
        "confined": confined,
        "rss": rss,
    }


def bench_app_start(tmp: Path, n: int, modes: tuple[str, ...]) -> dict[str, Any]:
    """One minimal SDK app, started alone: ``System.start()`` until it runs, per mode."""
    apps_dir = tmp / "apps_one"
    write_minimal_apps(apps_dir, 1)
    starts: dict[str, list[float]] = {m: [] for m in modes}
    res: dict[str, Any] = {}
    for i in range(n):
        for mode in alternating(modes, i):
            got = start_once(apps_dir, tmp / f"data_one_{mode}_{i}", mode, 1)
            starts[mode].append(got["start_s"] * 1000)
            res.setdefault(mode, {})["confined"] = got["confined"]
    for mode in modes:
        st = Stats.of(starts[mode])
        res[mode].update(vars(st))
        out(
            f"  {MODE_LABEL[mode]:<10} one app, System.start() {st.fmt()}; "
            f"{res[mode]['confined'][0]}/{res[mode]['confined'][1]} confined"
        )
    return res


NETWORK_VARIANTS = ("without network", "network (own netns + pasta)")
"""Section 5c: the same minimal app, once without the ``network`` grant, once with it."""


def network_start_once(apps_dir: Path, data_dir: Path, granted: bool) -> float:
    """``System.start()`` in ms until the one app of ``apps_dir`` runs (confined)."""
    extra = {
        "apps": {
            "confinement": CONFINED,
            "autostart": "all",
            "default_grants": {"app_00": ["network"]},
        }
    }
    sys_ = build_system(apps_dir, data_dir, CONFINED, extra if granted else None)
    try:
        start_ms, _ = timed_ms(sys_.system.start)
        (rec,) = sys_.system.launcher.apps()
        if str(rec.status) != "running":
            raise RuntimeError(f"network start: {rec.id} is {rec.status}: {rec.error}")
        header = (data_dir / "logs" / f"{rec.id}.log").read_text("utf-8").splitlines()[0]
        if granted != ("own network (pasta)" in header):
            raise RuntimeError(f"network start: wrong launch ({header!r})")
    finally:
        sys_.stop()
    return start_ms


def bench_network_start(tmp: Path, n: int) -> dict[str, Any]:
    """One minimal app started alone, granted ``network`` (its own namespace with pasta,
    DESIGN §14.5) or not, alternating in the same run."""
    dirs = {}
    for granted in (False, True):
        dirs[granted] = tmp / f"apps_net_{granted}"
        manifest = {"name": "Minimal 0", "entry": "main.py", "role_prompt": "You say hi."}
        if granted:
            manifest["permissions"] = ["network"]
        write_app(dirs[granted] / "app_00", MINIMAL_APP, manifest)
    starts: dict[bool, list[float]] = {False: [], True: []}
    for i in range(n):
        for granted in (False, True) if i % 2 == 0 else (True, False):
            data = tmp / f"data_net_{granted}_{i}"
            starts[granted].append(network_start_once(dirs[granted], data, granted))
    res: dict[str, Any] = {}
    for granted, label in zip((False, True), NETWORK_VARIANTS, strict=True):
        st = Stats.of(starts[granted])
        res[label] = vars(st)
        out(f"  {label:<28} one app, System.start() {st.fmt()}")
    cost = res[NETWORK_VARIANTS[1]]["p50"] - res[NETWORK_VARIANTS[0]]["p50"]
    res["cost_ms"] = cost
    out(f"  the NAT namespace adds {cost:+.1f} ms (p50)")
    return res


def bench_cold_start(tmp: Path, count: int, repeats: int, modes: tuple[str, ...]) -> dict[str, Any]:
    apps_dir = tmp / "apps_cold"
    write_minimal_apps(apps_dir, count)
    floors = []
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    for r in range(repeats):
        floors.append(floor_spawn(tmp, count))
        line = [f"  run {r + 1}: floor {floors[-1]:.3f} s"]
        for mode in alternating(modes, r):
            got = start_once(apps_dir, tmp / f"data_cold_{mode}_{r}", mode, count)
            runs[mode].append(got)
            line.append(
                f"{MODE_LABEL[mode]} System.start() {got['start_s']:.3f} s "
                f"(System() {got['build_ms']:.0f} ms, stop {got['stop_ms']:.0f} ms, "
                f"{got['confined'][0]}/{got['confined'][1]} confined)"
            )
        out("; ".join(line))
    res: dict[str, Any] = {"apps": count, "floor_s": statistics.median(floors)}
    for mode in modes:
        got_runs = runs[mode]
        rss = got_runs[0]["rss"]
        m: dict[str, Any] = {
            "start_s": statistics.median(g["start_s"] for g in got_runs),
            "build_ms": statistics.median(g["build_ms"] for g in got_runs),
            "stop_ms": statistics.median(g["stop_ms"] for g in got_runs),
            "per_app_spawn_to_ready_ms": Stats.of(
                [ms for g in got_runs for ms in g["per_app_ms"]]
            ).p50,
            "minimal_app_rss_mb": statistics.median(a for a, _ in rss) / 2**20 if rss else None,
            "minimal_app_uss_mb": statistics.median(b for _, b in rss) / 2**20 if rss else None,
            "confined": got_runs[0]["confined"],
        }
        m["ratio"] = m["start_s"] / res["floor_s"]
        res[mode] = m
        out(
            f"  {MODE_LABEL[mode]:<10} median: System.start() {m['start_s']:.3f} s vs floor "
            f"{res['floor_s']:.3f} s = {m['ratio']:.2f}x; one app spawn->ready p50 "
            f"{m['per_app_spawn_to_ready_ms']:.0f} ms; minimal SDK app RSS "
            f"{m['minimal_app_rss_mb'] or 0:.1f} MB (USS {m['minimal_app_uss_mb'] or 0:.1f} MB)"
        )
    return res


# ------------------------------------------------- 6 + 7. the whole desktop


def _app_of(p: psutil.Process) -> str | None:
    try:
        return p.environ().get("AIOS_APP_ID")
    except psutil.Error:
        return None


def label_tree(root: psutil.Process) -> list[tuple[psutil.Process, str]]:
    """The desktop's host process tree, each process labelled with what it is for.

    An app's processes are the subtree under the system's child that started it
    (bwrap and everything inside its namespaces, when confined); they carry
    ``AIOS_APP_ID``, and a process without it in such a subtree (bwrap's own)
    belongs to the app found below or above it.
    """
    labelled = [(root, "system (desktop_app.py)")]
    for top in root.children():
        try:
            sub = [top, *top.children(recursive=True)]
        except psutil.Error:
            continue
        ids = {a for a in map(_app_of, sub) if a}
        owner = next(iter(ids)) if len(ids) == 1 else None
        for q in sub:
            try:
                name = q.name()
            except psutil.Error:
                name = "?"
            app = _app_of(q) or owner
            labelled.append((q, f"app {app} ({name})" if app else f"{name} (system helper)"))
    return labelled


def weigh(labelled: list[tuple[psutil.Process, str]], tag: str, verbose: bool) -> dict[str, Any]:
    """RSS, PSS and USS of every process, and their sums: total, per app, bwrap's own."""
    per = []
    for q, what in labelled:
        try:
            mem = q.memory_full_info()
        except psutil.Error:
            continue
        per.append(
            {
                "pid": q.pid,
                "what": what,
                "rss_mb": mem.rss / 2**20,
                "pss_mb": mem.pss / 2**20,
                "uss_mb": mem.uss / 2**20,
            }
        )
    if verbose:
        for row in per:
            out(
                f"    {row['what']:<40} pid {row['pid']:>7}  RSS {row['rss_mb']:6.1f} MB  "
                f"PSS {row['pss_mb']:6.1f} MB  USS {row['uss_mb']:6.1f} MB"
            )
    by_app: dict[str, float] = {}
    for row in per[1:]:
        if row["what"].startswith("app "):
            app = row["what"].split()[1]
            by_app[app] = by_app.get(app, 0.0) + row["rss_mb"]
    res: dict[str, Any] = {
        "processes": per,
        "rss_mb": sum(r["rss_mb"] for r in per),
        "pss_mb": sum(r["pss_mb"] for r in per),
        "system_rss_mb": per[0]["rss_mb"] if per else float("nan"),
        "app_rss_mb": by_app,
        "app_rss_mb_median": statistics.median(by_app.values()) if by_app else None,
        "bwrap_rss_mb": sum(r["rss_mb"] for r in per if "(bwrap)" in r["what"]),
    }
    out(
        f"  {tag} total over {len(per)} processes: RSS {res['rss_mb']:.1f} MB "
        f"(PSS {res['pss_mb']:.1f} MB: shared pages counted once; bwrap's own "
        f"processes RSS {res['bwrap_rss_mb']:.1f} MB)"
    )
    return res


def desktop_config(tmp: Path, mode: str) -> Path:
    """The project's config.json with ``apps.confinement`` set to ``mode``."""
    source = ROOT / "config.json"
    raw = json.loads(source.read_text(encoding="utf-8")) if source.is_file() else {}
    raw.setdefault("apps", {})["confinement"] = mode
    path = tmp / f"config_{mode}.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def bench_desktop(tmp: Path, mode: str, run_no: int) -> dict[str, Any]:
    apps_dir = tmp / f"bundled_apps_{mode}_{run_no}"
    shutil.copytree(
        ROOT / "apps",
        apps_dir,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "workspace"),
    )
    names = sorted(d.name for d in apps_dir.iterdir() if (d / "manifest.json").is_file())
    n_apps = len(names)
    if run_no == 0:
        out(f"  bundled apps in apps/: {n_apps} ({', '.join(names)})")
    data_dir = tmp / f"desktop_data_{mode}_{run_no}"
    env = {**clean_env(), "AIOS_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    stderr_path = tmp / f"desktop_{mode}_{run_no}.stderr"
    res: dict[str, Any] = {"apps": n_apps, "mode": mode}
    tag = f"{MODE_LABEL[mode]:<10}"
    with stderr_path.open("wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "desktop_app.py"),
                "--headless",
                "--port",
                "0",
                "--apps-dir",
                str(apps_dir),
                "--data-dir",
                str(data_dir),
                "--config",
                str(desktop_config(tmp, mode)),
                "--log-level",
                "WARNING",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    tree: list[psutil.Process] = []
    watchdog = threading.Timer(90, proc.kill)  # a hung start must not hang the benchmark
    watchdog.start()
    try:
        url = None
        assert proc.stdout is not None
        for line in proc.stdout:  # blocks until the line; the process prints nothing else
            if line.startswith("AIOS ready:"):
                res["ready_line_s"] = time.perf_counter() - t0
                shown = urlsplit(line.split()[2])
                url = f"{shown.scheme}://{shown.netloc}"
                break
        if url is None:
            raise RuntimeError(
                "desktop exited before 'AIOS ready': "
                + stderr_path.read_text(errors="replace")[-1500:]
            )
        http = new_http()
        health: dict[str, Any] = {}
        while time.perf_counter() - t0 < 60:
            try:
                health = http.get(url + "/api/health", timeout=5).json()
                if health.get("status") == "ready":
                    res["health_ready_s"] = time.perf_counter() - t0
                    break
            except requests.RequestException:
                pass
            time.sleep(0.005)
        statuses = health.get("apps", {})
        res["app_status"] = statuses
        res["apps_running"] = sum(v == "running" for v in statuses.values())
        res["confined"] = confined_apps(http, url)
        http.close()
        out(
            f"  {tag} 'AIOS ready' line after {res['ready_line_s']:.3f} s; /api/health ready "
            f"after {res.get('health_ready_s', float('nan')):.3f} s; {res['apps_running']} "
            f"app(s) running, {res['confined'][0]}/{res['confined'][1]} confined"
        )
        not_running = {k: v for k, v in statuses.items() if v != "running"}
        if not_running:
            out(f"  {tag} not running: " + ", ".join(f"{k}={v}" for k, v in not_running.items()))

        time.sleep(DESKTOP_SETTLE_S)
        labelled = label_tree(psutil.Process(proc.pid))
        tree = [q for q, _ in labelled]
        res.update(weigh(labelled, tag, verbose=run_no == 0))
    finally:
        watchdog.cancel()
        t_stop = time.perf_counter()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        res["shutdown_s"] = time.perf_counter() - t_stop
        leftovers = []
        for q in tree[1:]:
            try:
                if q.is_running() and q.status() != psutil.STATUS_ZOMBIE:
                    q.kill()
                    leftovers.append(q)
            except psutil.Error:
                pass  # gone meanwhile: not left behind
        res["leftover_processes"] = len(leftovers)
        out(
            f"  {tag} shutdown (SIGTERM) {res['shutdown_s']:.2f} s, processes left behind: "
            f"{len(leftovers)}"
        )
    return res


# ------------------------------------------------------------------- main


def run(opts: argparse.Namespace) -> dict[str, Any]:
    from tests.fakes.fake_openai import FakeOpenAI, tool_call

    # Werkzeug logs every request at INFO; that is I/O the figures should not carry.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    quick = opts.quick
    n = 50 if quick else 300
    n_steps = 30 if quick else 150
    repeats = 1 if quick else 3
    n_one_app = 3 if quick else 10
    desktop_runs = 1 if quick else 3
    total_actions = 400 if quick else 2000
    rep = Report()
    r = rep.results
    r["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "quick": quick}
    load = os.getloadavg()[0]
    r["machine"]["loadavg_1min"] = load
    out(
        f"bench_system: {os.cpu_count()} CPU(s), Python {sys.version.split()[0]}, load average "
        f"{load:.1f} at start{', quick run' if quick else ''}"
    )
    t_all = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="aios-bench-") as d:
        tmp = Path(d)
        section(f"1a. floor: bare Flask round trip on loopback (n={n})")
        fl = floor_http(n)
        r["floor_http_ms"] = vars(fl)
        out(f"  bare Flask POST {fl.fmt()}")

        systems: dict[str, Inproc] = {}
        fake = FakeOpenAI(
            api_key="sk-bench",
            default=tool_call(
                "dispatch_tasks",
                {"tasks": [{"id": "t1", "app": "bench", "instruction": "three", "depends_on": []}]},
            ),
        )
        fake.start()
        try:
            for mode in MODES:
                apps_dir = tmp / f"apps_main_{mode}"
                make_main_apps(apps_dir)
                systems[mode] = build_system(apps_dir, tmp / f"data_main_{mode}", mode)
                systems[mode].system.start()
            section("confinement of the in-process systems")
            r["main_confined"] = {mode: confined_apps(s.http, s.url) for mode, s in systems.items()}
            for mode, counts in r["main_confined"].items():
                say_confined(f"apps.confinement {mode!r} ({MODE_LABEL[mode]})", counts)
            sys_ = systems[CONFINED]
            section(f"2. instruction, one app, three-step plan (n={n}, {CONFINED!r} system)")
            out("offline router:")
            r["instruction_offline"] = {
                k: vars(v) for k, v in bench_instruction(sys_, n, "offline").items()
            }
            out("zero-latency fake LLM (in-process) planning:")
            enable_fake_llm(sys_, fake.url)
            try:
                r["instruction_llm"] = {
                    k: vars(v) for k, v in bench_instruction(sys_, n, "llm").items()
                }
            finally:
                disable_llm(sys_)

            section(
                f"3. one tool step mediated by the system (n={n_steps} per kind and mode, "
                "modes interleaved)"
            )
            r["steps"] = bench_steps(systems, n_steps, tmp / "direct.db")

            section(f"4. action round trip to the echo app (n={n} per mode, interleaved)")
            r["action_ms"] = bench_action(systems, n)

            section(
                f"8. throughput: 10 concurrent clients, {total_actions} actions (echo, "
                f"{CONFINED!r} system)"
            )
            r["throughput"] = bench_throughput(sys_, total_actions, 10)

            section(
                f"9. event replay: {EVENT_REPLAY_COUNT} events missed, then a reconnect "
                f"with ?since= ({repeats * 3} runs, {CONFINED!r} system)"
            )
            r["event_replay_ms"] = vars(bench_event_replay(sys_, repeats * 3))
        finally:
            fake.stop()
            for s in systems.values():
                s.stop()

        n_plan, n_allow, n_cancel = (30, 5, 3) if quick else (150, 20, 10)
        section(
            f"10. runs: what approval and cancel cost ({CONFINED!r} system, approvals.mode 'smart')"
        )
        r["runs"] = bench_runs(tmp, n_plan, n_allow, n_cancel)

        section(f"5a. start of one minimal SDK app, alone ({n_one_app} per mode, alternating)")
        r["app_start"] = bench_app_start(tmp, n_one_app, MODES)

        section(f"5c. start of one app granted network vs one without ({n_one_app} each)")
        r["network_start"] = bench_network_start(tmp, n_one_app)

        section(
            f"1b + 5b. cold start of 10 minimal SDK apps vs 10 bare Flask processes "
            f"({repeats} run(s) per mode)"
        )
        r["cold_start"] = bench_cold_start(tmp, 10, repeats, MODES)

        section(
            f"6 + 7. whole desktop with the bundled apps: ready time and memory "
            f"({desktop_runs} run(s) per mode, alternating)"
        )
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
        for i in range(desktop_runs):
            for mode in alternating(MODES, i):
                runs[mode].append(bench_desktop(tmp, mode, i))
        r["desktop"] = {mode: desktop_summary(got) for mode, got in runs.items()}

    r["elapsed_s"] = time.perf_counter() - t_all
    summarize(rep)
    return r


def run_startup(opts: argparse.Namespace) -> dict[str, Any]:
    """Section 11 (bench/startup.py): this checkout, and ``--baseline`` in the same run."""
    import startup

    startup.OUT = out
    trees = {"this": ROOT}
    if opts.baseline is not None:
        trees["baseline"] = opts.baseline.resolve()
    load = os.getloadavg()[0]
    out(f"bench_system --startup: {os.cpu_count()} CPU(s), load average {load:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="aios-bench-") as d:
        tmp = Path(d)
        res = startup.run(trees, tmp, opts.quick, lambda: floor_spawn(tmp, 10), section, opts.parts)
    res["loadavg_start"] = load
    res["loadavg_end"] = os.getloadavg()[0]
    out(f"load average {res['loadavg_end']:.1f} at the end")
    return res


def run_request_path(opts: argparse.Namespace) -> dict[str, Any]:
    """Section 12 (bench/request_path.py): this checkout, and ``--baseline`` in the same run."""
    import request_path

    request_path.OUT = out
    trees = {"this": ROOT}
    if opts.baseline is not None:
        trees["baseline"] = opts.baseline.resolve()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    out(f"bench_system --request-path: {os.cpu_count()} CPU(s)")
    return request_path.run(trees, ROOT / "bench", opts.quick, lambda: floor_http(300))


def desktop_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first run's details, with the medians over all runs of the figures."""
    res = dict(runs[0])
    res["runs"] = len(runs)
    for key in ("ready_line_s", "health_ready_s", "rss_mb", "pss_mb", "bwrap_rss_mb"):
        values = [g[key] for g in runs if key in g]
        res[key] = statistics.median(values) if values else float("nan")
    res["apps_running"] = min(g["apps_running"] for g in runs)
    return res


def confined_text(counts: tuple[int, int] | list[int]) -> str:
    return f"{counts[0]}/{counts[1]} apps confined"


def summarize(rep: Report) -> None:
    r = rep.results
    fl = r["floor_http_ms"]["p50"]
    for label, key, hops in (
        ("offline router", "instruction_offline", 3),
        ("fake LLM", "instruction_llm", 3),
    ):
        ins = r[key]
        rep.row(
            f"instruction ({label}), total p50 / p95",
            f"{ins['total']['p50']:.1f} / {ins['total']['p95']:.1f} ms",
        )
        ov = ins["overhead"]["p50"]
        rep.row(
            f"instruction ({label}), system overhead p50 (total − app − tools − LLM)",
            f"{ov:.1f} ms",
            f"{hops * fl:.1f} ms ({hops} bare HTTP hops)",
            f"{ov / (hops * fl):.1f}x",
            f"≤ {TARGET_INSTRUCTION_OVERHEAD_MS:g} ms",
            ov <= TARGET_INSTRUCTION_OVERHEAD_MS if key == "instruction_offline" else None,
        )
    st = r["steps"]
    for via in ("http", "call_app"):
        for op, kind in (("cache_get", "cache"), ("file_read", "read")):
            over = st[CONFINED][via][f"step_overhead_{kind}_ms"]
            direct = st["direct_ms"][op]
            rep.row(
                f"mediated step {op} ({'desktop API' if via == 'http' else 'call_app'}), "
                "overhead p50",
                f"{over:.2f} ms",
                f"{direct:.3f} ms (direct)",
                f"{(over + direct) / direct:.0f}x",
                f"≤ {TARGET_STEP_OVERHEAD_MS:g} ms",
                over <= TARGET_STEP_OVERHEAD_MS,
            )
    rep.row(
        "further step in the same plan (cache_get), p50",
        f"{st[CONFINED]['http']['marginal_step_ms']:.3f} ms",
    )
    act = r["action_ms"][CONFINED]
    rep.row(
        "action round trip (echo) p50 / p95",
        f"{act['p50']:.1f} / {act['p95']:.1f} ms",
        f"{2 * fl:.1f} ms (2 bare HTTP hops)",
        f"{act['p50'] / (2 * fl):.1f}x",
    )
    cs = r["cold_start"]
    csc = cs[CONFINED]
    rep.row(
        "cold start, 10 minimal apps (System.start)",
        f"{csc['start_s']:.3f} s",
        f"{cs['floor_s']:.3f} s (10 bare Flask)",
        f"{csc['ratio']:.2f}x",
        f"≤ {TARGET_COLD_START_S:g} s and ≤ {TARGET_COLD_START_RATIO:g}x",
        csc["start_s"] <= TARGET_COLD_START_S and csc["ratio"] <= TARGET_COLD_START_RATIO,
    )
    dk = r["desktop"][CONFINED]
    ready = dk.get("health_ready_s", float("nan"))
    rep.row(
        f"desktop ready, {dk['apps_running']} bundled apps running ('AIOS ready' / health ready)",
        f"{dk['ready_line_s']:.3f} / {ready:.3f} s",
        "—",
        "—",
        f"≤ {TARGET_DESKTOP_READY_S:g} s",
        ready <= TARGET_DESKTOP_READY_S,
    )
    rep.row(
        f"RSS, system + {dk['apps_running']} apps (sum over the tree; PSS)",
        f"{dk['rss_mb']:.0f} MB ({dk['pss_mb']:.0f} MB)",
        "—",
        "—",
        f"≤ {TARGET_RSS_MB:g} MB for {TARGET_RSS_APPS} apps",
        dk["rss_mb"] <= TARGET_RSS_MB if dk["apps_running"] == TARGET_RSS_APPS else None,
    )
    if dk["apps_running"] != TARGET_RSS_APPS:
        per_app = dk.get("app_rss_mb_median") or csc.get("minimal_app_rss_mb") or 0
        projected = dk["system_rss_mb"] + TARGET_RSS_APPS * per_app
        dk["rss_projected_8_mb"] = projected
        rep.row(
            f"RSS scaled to system + {TARGET_RSS_APPS} apps (system + 8 × median app)",
            f"{projected:.0f} MB",
            "—",
            "—",
            f"≤ {TARGET_RSS_MB:g} MB",
            projected <= TARGET_RSS_MB,
        )
    tp = r["throughput"]
    rep.row(
        f"throughput, {tp['clients']} clients × actions (echo)",
        f"{tp['per_s']:.0f} actions/s, {tp['errors']} errors",
        "—",
        "—",
        f"≥ {TARGET_THROUGHPUT:g}/s, 0 errors",
        tp["per_s"] >= TARGET_THROUGHPUT and tp["errors"] == 0,
    )
    ev = r["event_replay_ms"]
    rep.row(
        f"event replay of {EVENT_REPLAY_COUNT} events after reconnect, p50 / p95",
        f"{ev['p50']:.1f} / {ev['p95']:.1f} ms",
        "—",
        "—",
        f"≤ {TARGET_EVENT_REPLAY_MS:g} ms",
        ev["p50"] <= TARGET_EVENT_REPLAY_MS,
    )
    rep.row(
        "floor: bare Flask round trip p50 / p95", f"{fl:.2f} / {r['floor_http_ms']['p95']:.2f} ms"
    )
    compare = confinement_rows(r)
    runs = runs_rows(r)

    section(
        f"summary ({r['machine']['cpus']} CPUs, load average "
        f"{r['machine']['loadavg_1min']:.1f} at start, run took {r['elapsed_s']:.0f} s)"
    )
    out(f"Figures of the default system (apps.confinement {CONFINED!r}):")
    out()
    out("| metric | value | floor | ratio | target | met? |")
    out("|---|---|---|---|---|---|")
    for row in rep.rows:
        out("| " + " | ".join(row) + " |")
    r["summary"] = [
        dict(zip(("metric", "value", "floor", "ratio", "target", "met"), row, strict=True))
        for row in rep.rows
    ]
    out()
    out(
        f"Confinement: apps.confinement {UNCONFINED!r} (unconfined) next to {CONFINED!r} "
        "(confined), same run:"
    )
    out()
    out("| metric | unconfined | confined | cost | target | met? |")
    out("|---|---|---|---|---|---|")
    for row in compare:
        out("| " + " | ".join(row) + " |")
    r["confinement_summary"] = [
        dict(zip(("metric", "unconfined", "confined", "cost", "target", "met"), row, strict=True))
        for row in compare
    ]
    out()
    out("Runs (DESIGN §12), same run:")
    out()
    out("| metric | value | floor | target | met? |")
    out("|---|---|---|---|---|")
    for row in runs:
        out("| " + " | ".join(row) + " |")
    r["runs_summary"] = [
        dict(zip(("metric", "value", "floor", "target", "met"), row, strict=True)) for row in runs
    ]


def runs_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """The Runs table: (metric, value, floor, target, met?)."""
    ru = r["runs"]
    dc, al, ca = ru["decision"], ru["allow"], ru["cancel"]
    parts = dc["parts_ms"]
    fl = r["floor_http_ms"]["p50"]
    ev = r["event_replay_ms"]

    def verdict(met: bool) -> str:
        return "yes" if met else "**no**"

    return [
        (
            f"decision machinery on a {RUN_STEPS}-step safe plan that asks nothing, per step "
            "(run engine − bare executor, median of paired runs)",
            f"{dc['per_step_ms']:.3f} ms",
            f"{dc['executor']['p50'] / RUN_STEPS:.3f} ms/step (bare Executor.run)",
            f"≤ {TARGET_DECISION_STEP_MS:g} ms",
            verdict(dc["per_step_ms"] <= TARGET_DECISION_STEP_MS),
        ),
        (
            "the same through call_app (two app rounds), per step",
            f"{dc['per_step_call_app_ms']:.3f} ms",
            f"{dc['call_app']['p50']:.2f} ms (call_app without a run)",
            "—",
            "—",
        ),
        (
            "of which per step: Runs.step started (an event) + done (RunStore.update_step "
            "+ an event), review, storing the plan",
            f"{parts['step_started']:.3f} + {parts['step_done']:.3f} "
            f"({parts['update_step']:.3f} + {parts['emit']:.3f}) "
            f"+ {parts['review_per_step']:.3f} + {parts['plan_per_step']:.3f} ms",
            f"{parts['write_tx']:.3f} ms (one SQLite write transaction)",
            "—",
            "—",
        ),
        (
            f"POST /api/action, the whole {RUN_STEPS}-step run, p50",
            f"{dc['http']['p50']:.2f} ms",
            f"{fl:.2f} ms (bare Flask round trip)",
            "—",
            "—",
        ),
        (
            "Allow → first step started, p50 / p95",
            f"{al['to_step']['p50']:.1f} / {al['to_step']['p95']:.1f} ms",
            f"{fl:.2f} ms (bare Flask round trip)",
            f"≤ {TARGET_ALLOW_TO_STEP_MS:g} ms",
            verdict(al["to_step"]["p50"] <= TARGET_ALLOW_TO_STEP_MS),
        ),
        (
            "cancel → a running command's processes gone, p50 / p95",
            f"{ca['latency']['p50']:.1f} / {ca['latency']['p95']:.1f} ms",
            f"{ca['floor_kill']['p50']:.1f} ms (kill() → gone, directly)",
            f"≤ {TARGET_CANCEL_MS:g} ms",
            verdict(ca["latency"]["p50"] <= TARGET_CANCEL_MS),
        ),
        (
            f"event replay of {EVENT_REPLAY_COUNT} events after reconnect, p50 / p95",
            f"{ev['p50']:.1f} / {ev['p95']:.1f} ms",
            "—",
            f"≤ {TARGET_EVENT_REPLAY_MS:g} ms",
            verdict(ev["p50"] <= TARGET_EVENT_REPLAY_MS),
        ),
    ]


def confinement_rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """Confined next to unconfined: (metric, unconfined, confined, cost, target, met?)."""
    rows: list[tuple[str, str, str, str, str, str]] = []

    def row(
        metric: str,
        off: float,
        on: float,
        unit: str,
        fmt: str,
        limit: float | None = None,
        absolute: float | None = None,
    ) -> None:
        cost = on - off
        target, met = "—", None
        if limit is not None:
            target, met = f"≤ +{limit:g} {unit}", cost <= limit
        elif absolute is not None:
            target, met = f"confined ≤ {absolute:g} {unit}", on <= absolute
        verdict = "—" if met is None else ("yes" if met else "**no**")
        rows.append(
            (
                metric,
                f"{off:{fmt}} {unit}",
                f"{on:{fmt}} {unit}",
                f"{cost:+{fmt}} {unit}",
                target,
                verdict,
            )
        )

    main = r["main_confined"]
    rows.append(
        (
            "apps confined (in-process systems)",
            confined_text(main[UNCONFINED]),
            confined_text(main[CONFINED]),
            "—",
            "—",
            "—",
        )
    )
    one = r["app_start"]
    row(
        "app start: one minimal SDK app alone, System.start() p50",
        one[UNCONFINED]["p50"],
        one[CONFINED]["p50"],
        "ms",
        ".1f",
        limit=TARGET_CONFINED_START_MS,
    )
    cs = r["cold_start"]
    row(
        "app start: each of 10 minimal apps started together, spawn → ready p50",
        cs[UNCONFINED]["per_app_spawn_to_ready_ms"],
        cs[CONFINED]["per_app_spawn_to_ready_ms"],
        "ms",
        ".0f",
        limit=TARGET_CONFINED_START_MS,
    )
    row(
        "cold start, 10 minimal apps, System.start() median",
        cs[UNCONFINED]["start_s"] * 1000,
        cs[CONFINED]["start_s"] * 1000,
        "ms",
        ".0f",
    )
    dk = r["desktop"]
    row(
        f"desktop ready (/api/health), {dk[CONFINED]['apps_running']} bundled apps, "
        f"median of {dk[CONFINED]['runs']}",
        dk[UNCONFINED]["health_ready_s"],
        dk[CONFINED]["health_ready_s"],
        "s",
        ".3f",
        absolute=TARGET_DESKTOP_READY_S,
    )
    rows.append(
        (
            "apps confined (desktop)",
            confined_text(dk[UNCONFINED]["confined"]),
            confined_text(dk[CONFINED]["confined"]),
            "—",
            "—",
            "—",
        )
    )
    st = r["steps"]
    for via in ("http", "call_app"):
        for op, kind in (("cache_get", "cache"), ("file_read", "read")):
            key = f"step_overhead_{kind}_ms"
            row(
                f"mediated step {op} ({'desktop API' if via == 'http' else 'call_app'}), "
                "overhead p50",
                st[UNCONFINED][via][key],
                st[CONFINED][via][key],
                "ms",
                ".2f",
                limit=TARGET_CONFINED_STEP_MS,
            )
    act = r["action_ms"]
    row(
        "action round trip (echo) p50",
        act[UNCONFINED]["p50"],
        act[CONFINED]["p50"],
        "ms",
        ".2f",
        limit=TARGET_CONFINED_ACTION_MS,
    )
    row(
        f"RSS, system + {dk[CONFINED]['apps_running']} apps (host process tree, bwrap included)",
        dk[UNCONFINED]["rss_mb"],
        dk[CONFINED]["rss_mb"],
        "MB",
        ".0f",
    )
    row("PSS, the same tree", dk[UNCONFINED]["pss_mb"], dk[CONFINED]["pss_mb"], "MB", ".0f")
    row(
        "of which bwrap's own processes, RSS",
        dk[UNCONFINED]["bwrap_rss_mb"],
        dk[CONFINED]["bwrap_rss_mb"],
        "MB",
        ".1f",
    )
    off_app = cs[UNCONFINED].get("minimal_app_rss_mb")
    on_app = cs[CONFINED].get("minimal_app_rss_mb")
    if off_app is not None and on_app is not None:
        row("RSS of one minimal SDK app's host tree", off_app, on_app, "MB", ".1f")
    return rows


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--load-client":
        url, total, clients, app = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        print(json.dumps(load_client(url, total, clients, app)), flush=True)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--network-only",
        action="store_true",
        help="only section 5c: an app's start with its NAT namespace against one without",
    )
    parser.add_argument(
        "--startup",
        action="store_true",
        help="only section 11: start-up and scale (apps on demand, issue 27)",
    )
    parser.add_argument(
        "--request-path",
        action="store_true",
        help="only section 12: the mediated step and actions/s (issue 27 items 4, 5)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="sections 11 and 12 also measures this other checkout (e.g. main) in the same run",
    )
    parser.add_argument(
        "--parts",
        default="abcde",
        help="section 11's parts to run (letters as in bench/startup.py; default all)",
    )
    opts = parser.parse_args()
    if opts.startup:
        results = run_startup(opts)
    elif opts.request_path:
        results = run_request_path(opts)
    elif opts.network_only:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        with tempfile.TemporaryDirectory(prefix="aios-bench-") as d:
            n = 3 if opts.quick else 10
            section(f"5c. start of one app granted network vs one without ({n} each)")
            results = {"network_start": bench_network_start(Path(d), n)}
    else:
        results = run(opts)
    if opts.json:
        opts.json.write_text(
            json.dumps(results, indent=2, ensure_ascii=False, default=str), encoding="utf-8"
        )
        out(f"\nfigures written to {opts.json}")
    leftovers = psutil.Process().children(recursive=True)
    for p in leftovers:  # belt and braces: a benchmark must not leave processes behind
        try:
            p.kill()
        except psutil.Error:
            pass
    if leftovers:
        out(f"warning: killed {len(leftovers)} leftover child process(es)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
