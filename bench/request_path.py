"""The request path at run time (issue 27 items 4 and 5), section 12 of ``bench/bench_system.py``.

    python bench/bench_system.py --request-path [--baseline /path/to/other/checkout] [--quick]

For this checkout and, with ``--baseline``, another one (``main``) in the same run,
each in a child interpreter with its own ``System`` (confined apps, the real HTTP
server), alternating round by round so drift on a shared machine lands on both:

a. floors: a bare Flask round trip (``requests`` to Werkzeug, as the desktop's clients
   do) and the step's operation done directly (``Store.cache_get``, ``Path.read_text``);
b. the mediated step: ``POST /api/action`` to the bench app whose reply carries a plan
   of one step (``cache_get`` or ``file_read``), against the same action with a plan of
   none; the difference less the direct operation is what the system adds to a step
   (the executor and one more round to the app). Also the app's own mid-request call
   ``self.call_tool("cache_get")`` (app → ``/api/sys/tool`` → executor → back);
c. actions/s with 10 and 50 concurrent clients against the echo app (the load from
   another process, so its CPU is not charged to the system), with errors and
   latency p50 / p95.

The load average is printed at the start and the end: the machine is shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT: Callable[[str], None] = print
KINDS = ("zero", "one_cache", "one_read", "sys_cache")
"""The bench app's actions: a plan of no step, one cache_get, one file_read; and a reply
without a plan whose handle() called ``self.call_tool("cache_get")`` first."""
TARGET_STEP_MS = 1.0
TARGET_ACTIONS_PER_S = 300.0
CLIENTS = (10, 50)

# The child: one tree's System, measured on command (one JSON line in, one out), so two
# trees' systems run side by side and take turns.
DRIVER = """\
import json, logging, sys, tempfile
from pathlib import Path

import psutil

tree, bench = sys.argv[1], sys.argv[2]
sys.path.insert(0, bench)
import bench_system as b
sys.path.insert(0, tree)  # this tree's aios, not the bench's
logging.getLogger("werkzeug").setLevel(logging.WARNING)
with tempfile.TemporaryDirectory(prefix="aios-bench-rp-") as d:
    tmp = Path(d)
    b.make_main_apps(tmp / "apps")
    s = b.build_system(tmp / "apps", tmp / "data", b.CONFINED)
    s.system.start()
    confined = b.confined_apps(s.http, s.url)
    sid = s.post("/api/action", {"app": "bench", "action_id": "zero"}).json()["session_id"]
    workdir = Path(s.system.launcher.get("bench").workdir)

    def action(kind):
        r = s.post("/api/action", {"app": "bench", "action_id": kind, "session_id": sid})
        data = r.json()["response"]["data"]
        if r.status_code != 200 or data.get("failed") or data.get("error"):
            raise SystemExit(f"action {kind} failed: {r.status_code} {r.text[:300]}")

    print(json.dumps({"ready": True, "confined": confined}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["do"] == "steps":
            got = {k: [] for k in cmd["kinds"]}
            for _ in range(cmd["n"]):
                for k in cmd["kinds"]:
                    ms, _ = b.timed_ms(lambda k=k: action(k))
                    got[k].append(ms)
            print(json.dumps(got), flush=True)
        elif cmd["do"] == "cpu":  # CPU ms per action: this process (system and client) + apps
            me = psutil.Process()
            def cpu():
                total = 0.0
                for proc in [me, *me.children(recursive=True)]:
                    try:
                        t = proc.cpu_times()
                        total += t.user + t.system
                    except psutil.Error:
                        pass
                return total
            got = {}
            for k in cmd["kinds"]:
                c0 = cpu()
                for _ in range(cmd["n"]):
                    action(k)
                got[k] = (cpu() - c0) * 1000 / cmd["n"]
            print(json.dumps(got), flush=True)
        elif cmd["do"] == "direct":
            print(json.dumps(b.direct_ops(workdir / "small.txt", tmp / "direct.db")), flush=True)
        elif cmd["do"] == "load":
            print(json.dumps(b.bench_throughput(s, cmd["total"], cmd["clients"])), flush=True)
        else:
            break
    s.stop()
"""


class Child:
    """One tree's system in a child interpreter."""

    def __init__(self, tree: Path, bench_dir: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        self.tree = tree
        self.proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(tree), str(bench_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.hello = self._read()

    def _read(self) -> Any:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the bench child for {self.tree} ended (see its stderr)")
            if line.startswith("{"):
                return json.loads(line)

    def ask(self, **cmd: Any) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"do": "quit"}) + "\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=10)


def p(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))]


def step_overheads(series: dict[str, list[float]], direct: dict[str, float]) -> dict[str, Any]:
    """p50 / p95 of each kind, and the overhead of one mediated step over the direct call."""
    res: dict[str, Any] = {k: {"p50": p(v, 0.5), "p95": p(v, 0.95)} for k, v in series.items()}
    zero = res["zero"]
    for kind, op in (
        ("one_cache", "cache_get"),
        ("one_read", "file_read"),
        ("sys_cache", "cache_get"),
    ):
        if kind in res:
            res[kind]["over_p50"] = res[kind]["p50"] - zero["p50"] - direct[op]
            res[kind]["over_p95"] = res[kind]["p95"] - zero["p95"] - direct[op]
    return res


def run(
    trees: dict[str, Path], bench_dir: Path, quick: bool, floor: Callable[[], Any]
) -> dict[str, Any]:
    """The figures of every tree (label -> checkout), measured side by side."""
    n_rounds, n_per = (3, 20) if quick else (6, 50)
    total = 400 if quick else 2000
    res: dict[str, Any] = {"load_start": os.getloadavg()[0]}
    OUT(f"load average {res['load_start']:.1f} at the start")
    children = {label: Child(tree, bench_dir) for label, tree in trees.items()}
    try:
        for label, c in children.items():
            OUT(
                f"  {label} ({c.tree}): "
                f"{c.hello['confined'][0]}/{c.hello['confined'][1]} apps confined"
            )
        fl = floor()
        res["floor_http_ms"] = vars(fl)
        OUT(f"  floor: bare Flask round trip {fl.fmt()}")
        series: dict[str, dict[str, list[float]]] = {lbl: {k: [] for k in KINDS} for lbl in trees}
        for i in range(n_rounds):
            for label in list(children)[:: 1 if i % 2 == 0 else -1]:
                kinds = list(KINDS) if i % 2 == 0 else list(KINDS)[::-1]
                got = children[label].ask(do="steps", kinds=kinds, n=n_per if i else 10)
                if i:  # the first round warms up
                    for k, v in got.items():
                        series[label][k].extend(v)
        cpu: dict[str, dict[str, list[float]]] = {lbl: {k: [] for k in KINDS} for lbl in trees}
        for i in range(n_rounds):
            for label in list(children)[:: 1 if i % 2 == 0 else -1]:
                got = children[label].ask(do="cpu", kinds=list(KINDS), n=n_per)
                for k, v in got.items():
                    cpu[label][k].append(v)
        direct = next(iter(children.values())).ask(do="direct")
        res["direct_ms"] = direct
        OUT(
            f"  direct: cache_get {direct['cache_get']:.4f} ms, "
            f"read_text {direct['file_read']:.4f} ms"
        )
        for label in trees:
            res[label] = {"steps": step_overheads(series[label], direct)}
            st = res[label]["steps"]
            for k in KINDS:
                st[k]["cpu_ms"] = sorted(cpu[label][k])[len(cpu[label][k]) // 2]
            for k in KINDS:
                over = st[k].get("over_p50")
                OUT(
                    f"  {label:<9} {k:<10} p50 {st[k]['p50']:7.2f} ms p95 {st[k]['p95']:7.2f} ms"
                    + f"  CPU {st[k]['cpu_ms']:5.2f} ms/action"
                    + (
                        f"   overhead p50 {over:5.2f} ms p95 {st[k]['over_p95']:5.2f} ms"
                        if over is not None
                        else ""
                    )
                )
        for clients in CLIENTS:
            for label in list(children)[:: 1 if clients == CLIENTS[0] else -1]:
                got = children[label].ask(do="load", total=total, clients=clients)
                res[label][f"load_{clients}"] = got
                OUT(
                    f"  {label:<9} {clients} clients: {got['per_s']:.0f} actions/s, "
                    f"{got['errors']} errors, p50 {got['p50_ms']:.1f} ms p95 {got['p95_ms']:.1f} ms"
                )
    finally:
        for c in children.values():
            c.close()
    res["load_end"] = os.getloadavg()[0]
    OUT(f"load average {res['load_end']:.1f} at the end")
    table(res, list(trees))
    return res


def table(res: dict[str, Any], labels: list[str]) -> None:
    """The figures as a Markdown table, one column per tree."""
    fl = res["floor_http_ms"]
    OUT("")
    OUT("| metric | " + " | ".join(labels) + " | floor (same run) | target |")
    OUT("|---|" + "---|" * len(labels) + "---|---|")
    direct = res["direct_ms"]
    for kind, what, op in (
        ("one_cache", "a plan's `cache_get` step", "cache_get"),
        ("one_read", "a plan's `file_read` step", "file_read"),
        ("sys_cache", "the app's own `call_tool('cache_get')`", "cache_get"),
    ):
        cells = [
            "{over_p50:.2f} / {over_p95:.2f} ms".format(**res[lb]["steps"][kind]) for lb in labels
        ]
        OUT(
            f"| mediated step, {what}: overhead p50 / p95 | "
            + " | ".join(cells)
            + f" | {direct[op]:.3f} ms (direct) | ≤ {TARGET_STEP_MS:g} ms p50 |"
        )
    for kind, what in (
        ("one_cache", "a plan's `cache_get` step"),
        ("sys_cache", "the app's own `call_tool('cache_get')`"),
    ):
        cells = [
            f"{res[lb]['steps'][kind]['cpu_ms'] - res[lb]['steps']['zero']['cpu_ms']:.2f} ms"
            for lb in labels
        ]
        OUT(
            f"| mediated step, {what}: CPU it adds (system + app + client processes), median | "
            + " | ".join(cells)
            + " | | |"
        )
    cells = [f"{res[lb]['steps']['zero']['cpu_ms']:.2f} ms" for lb in labels]
    OUT(
        "| action with no step: CPU (system + app + client processes), median | "
        + " | ".join(cells)
        + " | | |"
    )
    cells = [
        f"{res[lb]['steps']['zero']['p50']:.2f} / {res[lb]['steps']['zero']['p95']:.2f} ms"
        for lb in labels
    ]
    OUT(
        "| action with no step, p50 / p95 | "
        + " | ".join(cells)
        + f" | {fl['p50']:.2f} / {fl['p95']:.2f} ms (bare Flask round trip) | |"
    )
    for clients in CLIENTS:
        cells = []
        for lb in labels:
            g = res[lb][f"load_{clients}"]
            cells.append(
                f"{g['per_s']:.0f}/s, {g['errors']} errors, "
                f"p50 {g['p50_ms']:.1f} / p95 {g['p95_ms']:.1f} ms"
            )
        OUT(
            f"| {clients} clients: actions/s, errors, latency | "
            + " | ".join(cells)
            + f" | | ≥ {TARGET_ACTIONS_PER_S:g}/s, 0 errors |"
        )
