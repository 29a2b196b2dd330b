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
5. Cold start of ten minimal SDK apps (``System.start()``) against floor 1b.
6. The whole desktop (``desktop_app.py --headless``) with the bundled apps,
   to the "AIOS ready" line and to ``/api/health`` ready.
7. RSS of the desktop's process tree after that start.
8. Ten concurrent clients doing actions against the echo app.

Ends with a Markdown table (metric, value, floor, ratio, target, met?).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import requests  # noqa: E402

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

# The smallest SDK app: what "an app" costs at start and in memory.
MINIMAL_APP = """\
from aios_sdk import AIOSAgent


class Minimal(AIOSAgent):
    name = "Minimal"

    def handle(self, instruction, context, action_request=None):
        return {"status": "ok", "view_type": "text", "data": {"content": "hi"}}


if __name__ == "__main__":
    Minimal().run()
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


def build_system(apps_dir: Path, data_dir: Path) -> Inproc:
    """A System behind its real HTTP server, as tests/integration/conftest.py builds one."""
    from aios.config import validate_config
    from aios.system import System
    from aios.web import ServerThread, create_app

    config = validate_config(
        {"apps_dir": str(apps_dir), "data_dir": str(data_dir), "llm": {"api_key": ""}}
    )
    server = ServerThread(0)
    system = System(config, port=server.port, token=TOKEN)
    server.attach(create_app(system))
    server.start()
    return Inproc(system, server, new_http())


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


def bench_steps(sys_: Inproc, n: int, tmp_store: Path) -> dict[str, Any]:
    from aios.protocol import ActionRequest
    from aios.store import Store

    system = sys_.system
    sid = sys_.post("/api/action", {"app": "bench", "action_id": "zero"}).json()["session_id"]
    sys_.post("/api/action", {"app": "bench", "action_id": "three", "session_id": sid})
    kinds = ["zero", "one_cache", "one_read", "ten_cache"]
    http: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(10):
        for k in kinds:
            sys_.post("/api/action", {"app": "bench", "action_id": k, "session_id": sid})
    # Interleaved, so drift on a shared machine lands on every kind alike.
    for _ in range(n):
        for k in kinds:
            ms, r = timed_ms(
                lambda k=k: sys_.post(
                    "/api/action", {"app": "bench", "action_id": k, "session_id": sid}
                )
            )
            data = r.json()["response"]["data"]
            if data.get("failed"):
                raise RuntimeError(f"step {k} failed: {data}")
            http[k].append(ms)

    # The same through Controller.call_app in-process: no desktop HTTP hop.
    record = system.launcher.get("bench")
    ctl = system.controller
    call: dict[str, list[float]] = {k: [] for k in kinds}
    reqs = {k: ActionRequest.model_validate({"action_id": k}) for k in kinds}
    for _ in range(n):
        for k in kinds:
            ms, _ = timed_ms(lambda k=k: ctl.call_app(record, None, reqs[k], sid))
            call[k].append(ms)

    # Direct operations: the system's own store and a plain read of the same file.
    workdir = record.workdir
    target = Path(workdir) / "small.txt"
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

    direct = {
        "cache_get": per_op(lambda: store.cache_get("bench", "k")),
        "file_read": per_op(lambda: target.read_text(encoding="utf-8")),
    }
    store.close()

    res: dict[str, Any] = {"direct_ms": direct}
    for label, series in (("http", http), ("call_app", call)):
        st = {k: Stats.of(v) for k, v in series.items()}
        res[label] = {k: vars(v) for k, v in st.items()}
        for k in kinds:
            out(f"  {label:<8} {k:<10} {st[k].fmt()}")
        one_c = st["one_cache"].p50 - st["zero"].p50 - direct["cache_get"]
        one_r = st["one_read"].p50 - st["zero"].p50 - direct["file_read"]
        marginal = (st["ten_cache"].p50 - st["one_cache"].p50) / 9 - direct["cache_get"]
        res[label]["step_overhead_cache_ms"] = one_c
        res[label]["step_overhead_read_ms"] = one_r
        res[label]["marginal_step_ms"] = marginal
        out(
            f"  {label:<8} mediated step over direct: cache_get {one_c:6.2f} ms, "
            f"file_read {one_r:6.2f} ms; each further step in the same plan "
            f"{marginal:6.3f} ms"
        )
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


# --------------------------------------------------------------- 4. action


def bench_action(sys_: Inproc, n: int) -> Stats:
    sid = sys_.post("/api/action", {"app": "echo", "action_id": "again"}).json()["session_id"]
    for _ in range(20):
        sys_.post("/api/action", {"app": "echo", "action_id": "again", "session_id": sid})
    times = []
    for _ in range(n):
        ms, r = timed_ms(
            lambda: sys_.post(
                "/api/action", {"app": "echo", "action_id": "again", "session_id": sid}
            )
        )
        if r.status_code != 200 or r.json()["response"].get("status") != "ok":
            raise RuntimeError(f"echo action failed: {r.status_code} {r.text[:300]}")
        times.append(ms)
    st = Stats.of(times)
    out(f"  action -> echo {st.fmt()}")
    return st


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


def bench_cold_start(tmp: Path, count: int, repeats: int) -> dict[str, Any]:
    apps_dir = tmp / "apps_cold"
    for i in range(count):
        folder = apps_dir / f"app_{i:02d}"
        write_app(
            folder,
            MINIMAL_APP,
            {"name": f"Minimal {i}", "entry": "main.py", "role_prompt": "You say hi."},
        )
    floors, starts, builds, stops, per_app, app_rss = [], [], [], [], [], []
    for r in range(repeats):
        floors.append(floor_spawn(tmp, count))
        data_dir = tmp / f"data_cold_{r}"
        build_ms, sys_ = timed_ms(lambda d=data_dir: build_system(apps_dir, d))
        try:
            start_ms, _ = timed_ms(sys_.system.start)
            recs = sys_.system.launcher.apps()
            running = [x for x in recs if str(x.status) == "running"]
            if len(running) != count:
                raise RuntimeError(
                    f"only {len(running)}/{count} apps running: "
                    f"{[(x.id, str(x.status), x.error) for x in recs]}"
                )
            per_app += [
                (x.ready_at - x.spawned_at) * 1000 for x in running if x.ready_at and x.spawned_at
            ]
            if r == 0:
                for x in running:
                    try:
                        p = psutil.Process(x.pid)
                        app_rss.append((p.memory_info().rss, p.memory_full_info().uss))
                    except psutil.Error:
                        pass
        finally:
            stop_ms, _ = timed_ms(sys_.stop)
        builds.append(build_ms)
        starts.append(start_ms / 1000)
        stops.append(stop_ms)
        out(
            f"  run {r + 1}: floor {floors[-1]:.3f} s, System.start() {starts[-1]:.3f} s "
            f"(System() {build_ms:.0f} ms, stop {stop_ms:.0f} ms)"
        )
    res = {
        "apps": count,
        "floor_s": statistics.median(floors),
        "start_s": statistics.median(starts),
        "build_ms": statistics.median(builds),
        "stop_ms": statistics.median(stops),
        "per_app_spawn_to_ready_ms": Stats.of(per_app).p50,
        "minimal_app_rss_mb": statistics.median(a for a, _ in app_rss) / 2**20 if app_rss else None,
        "minimal_app_uss_mb": statistics.median(b for _, b in app_rss) / 2**20 if app_rss else None,
    }
    res["ratio"] = res["start_s"] / res["floor_s"]
    out(
        f"  median: System.start() {res['start_s']:.3f} s vs floor {res['floor_s']:.3f} s "
        f"= {res['ratio']:.2f}x; one app spawn->ready p50 "
        f"{res['per_app_spawn_to_ready_ms']:.0f} ms; minimal SDK app RSS "
        f"{res['minimal_app_rss_mb'] or 0:.1f} MB (USS {res['minimal_app_uss_mb'] or 0:.1f} MB)"
    )
    return res


# ------------------------------------------------- 6 + 7. the whole desktop


def _describe(p: psutil.Process, root_pid: int) -> str:
    if p.pid == root_pid:
        return "system (desktop_app.py)"
    try:
        cwd = Path(p.cwd()).name
        return (
            f"app {cwd}"
            if p.cmdline()[-1:] and p.cmdline()[-1].endswith(".py")
            else f"{p.name()} ({cwd})"
        )
    except psutil.Error:
        return "?"


def bench_desktop(tmp: Path) -> dict[str, Any]:
    apps_dir = tmp / "bundled_apps"
    shutil.copytree(ROOT / "apps", apps_dir, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    n_apps = sum(1 for d in apps_dir.iterdir() if (d / "manifest.json").is_file())
    out(
        f"  bundled apps in apps/: {n_apps} "
        f"({', '.join(sorted(d.name for d in apps_dir.iterdir() if d.is_dir()))})"
    )
    data_dir = tmp / "desktop_data"
    env = {**clean_env(), "AIOS_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    stderr_path = tmp / "desktop.stderr"
    res: dict[str, Any] = {"apps": n_apps}
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
                url = line.split()[2].split("/?")[0]
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
        http.close()
        statuses = health.get("apps", {})
        res["app_status"] = statuses
        res["apps_running"] = sum(v == "running" for v in statuses.values())
        out(
            f"  'AIOS ready' line after {res['ready_line_s']:.3f} s; /api/health ready after "
            f"{res.get('health_ready_s', float('nan')):.3f} s"
        )
        out(
            f"  {res['apps_running']} app(s) running; status: "
            + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items()))
        )

        time.sleep(0.5)  # let the apps finish their post-listen imports before weighing them
        root = psutil.Process(proc.pid)
        tree = [root, *root.children(recursive=True)]
        per = []
        for p in tree:
            try:
                mem = p.memory_full_info()
                per.append(
                    {
                        "pid": p.pid,
                        "what": _describe(p, proc.pid),
                        "rss_mb": mem.rss / 2**20,
                        "pss_mb": mem.pss / 2**20,
                        "uss_mb": mem.uss / 2**20,
                    }
                )
            except psutil.Error:
                pass
        for row in per:
            out(
                f"    {row['what']:<34} pid {row['pid']:>7}  RSS {row['rss_mb']:6.1f} MB  "
                f"PSS {row['pss_mb']:6.1f} MB  USS {row['uss_mb']:6.1f} MB"
            )
        res["processes"] = per
        res["rss_mb"] = sum(r["rss_mb"] for r in per)
        res["pss_mb"] = sum(r["pss_mb"] for r in per)
        res["system_rss_mb"] = per[0]["rss_mb"] if per else float("nan")
        apps_rss = [r["rss_mb"] for r in per[1:] if r["what"].startswith("app ")]
        res["app_rss_mb_median"] = statistics.median(apps_rss) if apps_rss else None
        out(
            f"  total over {len(per)} processes: RSS {res['rss_mb']:.1f} MB "
            f"(PSS {res['pss_mb']:.1f} MB: shared pages counted once)"
        )
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
        leftovers = [p for p in tree[1:] if p.is_running() and p.status() != "zombie"]
        for p in leftovers:
            p.kill()
        res["leftover_processes"] = len(leftovers)
        out(
            f"  shutdown (SIGTERM) {res['shutdown_s']:.2f} s, processes left behind: "
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

        apps_dir = tmp / "apps_main"
        make_main_apps(apps_dir)
        sys_ = build_system(apps_dir, tmp / "data_main")
        fake = FakeOpenAI(
            api_key="sk-bench",
            default=tool_call(
                "dispatch_tasks",
                {"tasks": [{"id": "t1", "app": "bench", "instruction": "three", "depends_on": []}]},
            ),
        )
        fake.start()
        try:
            sys_.system.start()
            section(f"2. instruction, one app, three-step plan (n={n})")
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

            section(f"3. one tool step mediated by the system (n={n_steps} per kind)")
            r["steps"] = bench_steps(sys_, n_steps, tmp / "direct.db")

            section(f"4. action round trip to the echo app (n={n})")
            r["action_ms"] = vars(bench_action(sys_, n))

            section(f"8. throughput: 10 concurrent clients, {total_actions} actions (echo)")
            r["throughput"] = bench_throughput(sys_, total_actions, 10)
        finally:
            fake.stop()
            sys_.stop()

        section(
            f"1b + 5. cold start of 10 minimal SDK apps vs 10 bare Flask processes "
            f"({repeats} run(s))"
        )
        r["cold_start"] = bench_cold_start(tmp, 10, repeats)

        section("6 + 7. whole desktop with the bundled apps: ready time and memory")
        r["desktop"] = bench_desktop(tmp)

    r["elapsed_s"] = time.perf_counter() - t_all
    summarize(rep)
    return r


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
            over = st[via][f"step_overhead_{kind}_ms"]
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
        "further step in the same plan (cache_get), p50", f"{st['http']['marginal_step_ms']:.3f} ms"
    )
    act = r["action_ms"]
    rep.row(
        "action round trip (echo) p50 / p95",
        f"{act['p50']:.1f} / {act['p95']:.1f} ms",
        f"{2 * fl:.1f} ms (2 bare HTTP hops)",
        f"{act['p50'] / (2 * fl):.1f}x",
    )
    cs = r["cold_start"]
    rep.row(
        "cold start, 10 minimal apps (System.start)",
        f"{cs['start_s']:.3f} s",
        f"{cs['floor_s']:.3f} s (10 bare Flask)",
        f"{cs['ratio']:.2f}x",
        f"≤ {TARGET_COLD_START_S:g} s and ≤ {TARGET_COLD_START_RATIO:g}x",
        cs["start_s"] <= TARGET_COLD_START_S and cs["ratio"] <= TARGET_COLD_START_RATIO,
    )
    dk = r["desktop"]
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
        per_app = dk.get("app_rss_mb_median") or cs.get("minimal_app_rss_mb") or 0
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
    rep.row(
        "floor: bare Flask round trip p50 / p95", f"{fl:.2f} / {r['floor_http_ms']['p95']:.2f} ms"
    )

    section(
        f"summary ({r['machine']['cpus']} CPUs, load average "
        f"{r['machine']['loadavg_1min']:.1f} at start, run took {r['elapsed_s']:.0f} s)"
    )
    out("| metric | value | floor | ratio | target | met? |")
    out("|---|---|---|---|---|---|")
    for row in rep.rows:
        out("| " + " | ".join(row) + " |")
    r["summary"] = [
        dict(zip(("metric", "value", "floor", "ratio", "target", "met"), row, strict=True))
        for row in rep.rows
    ]


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--load-client":
        url, total, clients, app = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        print(json.dumps(load_client(url, total, clients, app)), flush=True)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    opts = parser.parse_args()
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
