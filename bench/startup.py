"""Start-up and scale (issue 27), section 11 of ``bench/bench_system.py``.

    python bench/bench_system.py --startup [--baseline /path/to/other/checkout] [--quick]

Every figure is measured for this checkout and, with ``--baseline``, for another one
(``main``) in the same run, alternating, next to the same-run floor (10 bare Flask
processes spawned together until all accept):

a. one minimal SDK app alone, ``System.start()`` until it runs, confined and
   unconfined (p50 / p95): each tree's own ``System`` in a child interpreter;
b. the whole desktop (``desktop_app.py --headless``) with the 9 bundled apps until
   ``/api/health`` says ready, and its host tree's RSS: this tree with its default
   (apps on demand) and with ``apps.autostart: "all"``, the baseline as it is;
c. the same with 10, 25, 50 and 100 installed apps (the bundled ones plus minimal SDK
   apps): how ready time and RSS grow;
d. a cold app's first view after an instruction (``跟我打个招呼`` to Hello, not
   running yet) against the same instruction to the running app;
e. where one app's start goes, layer by layer (CPU and wall time of each layer alone,
   each tree's own SDK): bubblewrap's namespaces and mounts, the interpreter with and
   without ``site``, the SDK's import, Flask's, the app built and listening; and the
   desktop's own import of the system (everything it loads before ``/api/health``).

Both trees are measured as an installed program runs: with their bytecode written
(:func:`precompile`). An environment with ``PYTHONDONTWRITEBYTECODE`` (this development
machine's) otherwise compiles the system's ~130 modules from source at every desktop
start, about 0.3 s of CPU that no user's install pays.

    python bench/bench_system.py --startup --parts e   # only the layers (a minute)
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import requests
from minimal_app import MINIMAL_APP

OUT: Callable[[str], None] = print
TOKEN = "bench-startup-token"
READY_WAIT_S = 120.0
GROWTH = (10, 25, 50, 100)
GREETING = "跟我打个招呼"
PARTS = "abcde"
"""The parts of the section (``--parts``): a, b, c, d, e as in the docstring."""


# Run in a child interpreter with PYTHONPATH set to the tree measured: its own System.
APP_START_DRIVER = """\
import json, sys, tempfile, time
from pathlib import Path
from aios.config import validate_config
from aios.system import System

apps_dir, modes, n = Path(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
out = {m: [] for m in modes}
with tempfile.TemporaryDirectory() as d:
    for i in range(n):
        for mode in modes if i % 2 == 0 else modes[::-1]:
            raw = {"apps_dir": str(apps_dir), "data_dir": f"{d}/data_{mode}_{i}",
                   "llm": {"api_key": ""}, "apps": {"confinement": mode, "autostart": "all"}}
            try:
                config = validate_config(raw)
            except Exception:  # a tree without apps.autostart starts every app anyway
                raw["apps"].pop("autostart")
                config = validate_config(raw)
            system = System(config, port=9, token="t")
            t0 = time.perf_counter()
            system.start()
            ms = (time.perf_counter() - t0) * 1000
            (rec,) = system.launcher.apps()
            ok = str(rec.status) == "running"
            system.stop()
            if not ok:
                raise SystemExit(f"the app did not start: {rec.status} {rec.error}")
            out[mode].append(ms)
print(json.dumps(out))
"""


def stats(values: list[float]) -> dict[str, float]:
    s = sorted(values)
    if not s:
        return {"n": 0, "p50": float("nan"), "p95": float("nan")}
    p95 = s[min(len(s) - 1, max(0, round(0.95 * len(s) + 0.5) - 1))]
    return {"n": len(s), "p50": statistics.median(s), "p95": p95}


def clean_env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIOS_", "DEEPSEEK_"))}
    env.pop("OPENAI_API_KEY", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measured as installed: see precompile()
    return {**env, "PYTHONPATH": str(tree), "AIOS_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}


def precompile(tree: Path) -> None:
    """Write the tree's bytecode, as installing it (or a first run) does."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", "aios", "aios_sdk"],
        cwd=tree,
        check=True,
        capture_output=True,
        timeout=600,
    )


def write_minimal(apps_dir: Path, count: int, prefix: str = "app") -> None:
    for i in range(count):
        folder = apps_dir / f"{prefix}_{i:03d}"
        folder.mkdir(parents=True)
        (folder / "main.py").write_text(MINIMAL_APP, encoding="utf-8")
        manifest = {"name": f"Minimal {i}", "entry": "main.py", "role_prompt": "You say hi."}
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def bundled(tree: Path, dest: Path) -> Path:
    shutil.copytree(
        tree / "apps",
        dest,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "tests"),
    )
    return dest


# ------------------------------------------------------------------ a. one app


def app_start(trees: dict[str, Path], tmp: Path, n: int) -> dict[str, Any]:
    apps_dir = tmp / "one_app"
    write_minimal(apps_dir, 1)
    res: dict[str, Any] = {}
    for i in range(2):  # two rounds per tree, alternating, n/2 starts per mode each
        for name, tree in trees.items() if i == 0 else reversed(trees.items()):
            got = subprocess.run(
                [sys.executable, "-c", APP_START_DRIVER, str(apps_dir), "off,auto", str(n // 2)],
                cwd=tmp,
                env=clean_env(tree),
                capture_output=True,
                text=True,
                timeout=600,
            )
            if got.returncode != 0:
                raise RuntimeError(f"{name}: app start driver failed: {got.stderr[-1500:]}")
            for mode, values in json.loads(got.stdout.strip().splitlines()[-1]).items():
                res.setdefault(name, {}).setdefault(mode, []).extend(values)
    for name in trees:
        for mode in ("off", "auto"):
            st = stats(res[name][mode])
            res[name][mode] = st
            label = "confined" if mode == "auto" else "unconfined"
            OUT(
                f"  {name:<9} {label:<10} System.start() p50 {st['p50']:.1f} ms "
                f"p95 {st['p95']:.1f} ms (n={st['n']})"
            )
        res[name]["cost_ms"] = res[name]["auto"]["p50"] - res[name]["off"]["p50"]
    return res


# --------------------------------------------------------------- b, c. desktop


def tree_rss_mb(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return float("nan")
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


def desktop(
    tree: Path, apps_dir: Path, data_dir: Path, tmp: Path, autostart: str | None
) -> dict[str, Any]:
    """Start ``tree``'s desktop on ``apps_dir``; seconds to ``/api/health`` ready, RSS."""
    raw: dict[str, Any] = {"llm": {"api_key": ""}, "voice": {"welcome": False}}
    if autostart is not None:
        raw["apps"] = {"autostart": autostart}
    config = tmp / f"config_{time.monotonic_ns()}.json"
    config.write_text(json.dumps(raw), encoding="utf-8")
    argv = [
        sys.executable, str(tree / "desktop_app.py"), "--headless", "--port", "0",
        "--apps-dir", str(apps_dir), "--data-dir", str(data_dir), "--config", str(config),
        "--log-level", "WARNING",
    ]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=tree, env=clean_env(tree), stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    watchdog = threading.Timer(READY_WAIT_S + 30, proc.kill)
    watchdog.start()
    res: dict[str, Any] = {}
    try:
        assert proc.stdout is not None
        url = None
        for line in proc.stdout:
            if line.startswith("AIOS ready:"):
                shown = urlsplit(line.split()[2])
                url = f"{shown.scheme}://{shown.netloc}"
                break
        if url is None:
            raise RuntimeError(f"{tree}: the desktop exited before its ready line")
        http = requests.Session()
        http.trust_env = False
        http.headers["Authorization"] = f"Bearer {TOKEN}"
        health: dict[str, Any] = {}
        while time.perf_counter() - t0 < READY_WAIT_S:
            try:
                health = http.get(url + "/api/health", timeout=10).json()
                if health.get("status") == "ready":
                    res["ready_s"] = time.perf_counter() - t0
                    break
            except requests.RequestException:
                pass
            time.sleep(0.005)
        statuses = health.get("apps", {})
        res["running"] = sum(v == "running" for v in statuses.values())
        res["apps"] = len(statuses)
        time.sleep(0.5)  # the apps finish their imports after they listen
        res["rss_mb"] = tree_rss_mb(proc.pid)
        res["url"], res["http"] = url, http
    except BaseException:
        _stop(proc)
        raise
    finally:
        watchdog.cancel()
    res["proc"] = proc
    return res


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def finish(got: dict[str, Any]) -> dict[str, Any]:
    got.pop("http").close()
    _stop(got.pop("proc"))
    got.pop("url", None)
    return got


def variants(trees: dict[str, Path]) -> list[tuple[str, Path, str | None]]:
    """(label, tree, autostart): this tree by default and with every app at boot; the
    baseline as it is."""
    out: list[tuple[str, Path, str | None]] = []
    for name, tree in trees.items():
        if name == "this":
            out += [("this, on demand", tree, None), ("this, all at boot", tree, "all")]
        else:
            out.append((f"{name}, its default", tree, None))
    return out


def desktops(trees: dict[str, Path], tmp: Path, runs: int) -> dict[str, Any]:
    this = trees["this"]
    got: dict[str, list[dict[str, Any]]] = {}
    for r in range(runs):
        order = variants(trees) if r % 2 == 0 else variants(trees)[::-1]
        for label, tree, autostart in order:
            apps = bundled(this, tmp / f"bundled_{r}_{len(got.get(label, []))}_{id(label)}")
            one = finish(desktop(tree, apps, tmp / f"dd_{r}_{id(label)}", tmp, autostart))
            got.setdefault(label, []).append(one)
            shutil.rmtree(apps, ignore_errors=True)
    res = {}
    for label, runs_ in got.items():
        res[label] = {
            "ready_s": statistics.median(g["ready_s"] for g in runs_),
            "rss_mb": statistics.median(g["rss_mb"] for g in runs_),
            "running": runs_[0]["running"],
            "apps": runs_[0]["apps"],
        }
        m = res[label]
        OUT(
            f"  {label:<22} {m['apps']} apps, {m['running']} running at ready: ready "
            f"{m['ready_s']:.2f} s, RSS {m['rss_mb']:.0f} MB (median of {len(runs_)})"
        )
    return res


def growth(trees: dict[str, Path], tmp: Path, sizes: tuple[int, ...]) -> dict[str, Any]:
    this = trees["this"]
    res: dict[str, Any] = {}
    for size in sizes:
        apps = bundled(this, tmp / f"grow_{size}")
        write_minimal(apps, size - 9, prefix="extra")
        for label, tree, autostart in variants(trees):
            if label == "this, all at boot" and size > 50:
                continue  # the baseline shows what all-at-boot costs at 100
            one = finish(desktop(tree, apps, tmp / f"gd_{size}_{id(label)}", tmp, autostart))
            res.setdefault(label, {})[size] = one
            OUT(
                f"  {size:>3} installed, {label:<22} ready {one['ready_s']:.2f} s, "
                f"{one['running']} running, RSS {one['rss_mb']:.0f} MB"
            )
        shutil.rmtree(apps, ignore_errors=True)
    return res


# --------------------------------------------------------------- d. cold first view


def first_view(this: Path, tmp: Path, n: int) -> dict[str, Any]:
    """Hello idle, then the instruction: its reply carries the first view."""
    cold, warm = [], []
    for i in range(n):
        apps = bundled(this, tmp / f"fv_{i}")
        got = desktop(this, apps, tmp / f"fvd_{i}", tmp, None)
        try:
            http, url = got["http"], got["url"]
            status = {a["id"]: a["status"] for a in http.get(url + "/api/apps", timeout=10).json()}
            if status.get("hello") != "idle":
                raise RuntimeError(f"hello should be idle at boot, is {status.get('hello')}")
            for sample in (cold, warm):
                t0 = time.perf_counter()
                r = http.post(url + "/api/instruction", json={"text": GREETING}, timeout=60)
                ms = (time.perf_counter() - t0) * 1000
                results = r.json().get("results") or [{}]
                if results[0].get("app") != "hello" or results[0]["response"].get("view_type") in (
                    None, "error", "loading",
                ):  # fmt: skip
                    raise RuntimeError(f"no view from hello: {r.json()}")
                sample.append(ms)
        finally:
            finish(got)
            shutil.rmtree(apps, ignore_errors=True)
    res = {"cold": stats(cold), "warm": stats(warm)}
    OUT(
        f"  first view, Hello not running: p50 {res['cold']['p50']:.0f} ms "
        f"p95 {res['cold']['p95']:.0f} ms; Hello running: p50 {res['warm']['p50']:.0f} ms "
        f"(n={n})"
    )
    return res


# ------------------------------------------------------------- e. the layers

SITE_PACKAGES_PROBE = "import flask, sys; print(flask.__file__.rsplit('/flask/', 1)[0])"
SDK_APP = (
    "from aios_sdk import AIOSAgent\n"
    "class A(AIOSAgent):\n"
    "    name = 'A'\n"
    "    def handle(self, instruction, context, action_request=None):\n"
    "        return {}\n"
    "A().make_app()\n"
)
DESKTOP_IMPORTS = "import aios.entry.main, aios.system, aios.web"


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one run of ``argv`` (its children's CPU included)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # cwd: not a checkout (``python -c`` imports from its cwd before PYTHONPATH)
    subprocess.run(
        argv, env=env, cwd=tempfile.gettempdir(), check=True, capture_output=True, timeout=120
    )
    wall = (time.perf_counter() - t0) * 1000
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000


def _bwrap_argv(tmp: Path) -> list[str] | None:
    """The options this tree's launcher gives an app's bubblewrap (None: none here)."""
    from aios.apphost import confinement
    from aios.host import os_sandbox

    caps = os_sandbox.detect()
    if caps.bwrap is None:
        return None
    app, run_dir = tmp / "layers_app", tmp / "layers_run"
    (app / "workspace").mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(exist_ok=True)
    opts = confinement._options(
        app_dir=app,
        workdir=app / "workspace",
        runtime_dir=run_dir,
        env={"PATH": os_sandbox.SANE_PATH},
        tmp_bytes=16 * 2**20,
        python=sys.executable,
    )
    return [caps.bwrap, *opts, "--"]


def layer_cases(trees: dict[str, Path], tmp: Path) -> list[tuple[str, list[str], dict[str, str]]]:
    py = sys.executable
    plain = clean_env(trees["this"])
    cases = [
        ("a process (/bin/true)", ["/bin/true"], plain),
        ("the interpreter, no site (-S)", [py, "-S", "-c", "pass"], plain),
        ("the interpreter with site", [py, "-c", "pass"], plain),
    ]
    bw = _bwrap_argv(tmp)
    if bw is not None:
        cases.insert(1, ("bubblewrap's sandbox (/bin/true)", [*bw, "/bin/true"], plain))
        cases.append(("the interpreter with site, in it", [*bw, py, "-c", "pass"], plain))
    cases.append(("import flask (Flask + Werkzeug)", [py, "-c", "import flask"], plain))
    # what serving the SDK's four routes would import without Flask (Jinja2, Click...)
    werkzeug_only = "import werkzeug.serving, werkzeug.wrappers, werkzeug.routing"
    cases.append(("import Werkzeug's server, wrappers, routing", [py, "-c", werkzeug_only], plain))
    for name, tree in trees.items():
        env = clean_env(tree)
        cases += [
            (f"{name}: import aios_sdk", [py, "-c", "import aios_sdk"], env),
            (f"{name}: an SDK app built (make_app)", [py, "-c", SDK_APP], env),
            (f"{name}: the desktop's imports", [py, "-c", DESKTOP_IMPORTS], env),
        ]
    return cases


def layers(trees: dict[str, Path], tmp: Path, n: int) -> dict[str, Any]:
    """Each layer alone, ``n`` runs each, interleaved; p50 of wall and CPU time."""
    cases = layer_cases(trees, tmp)
    walls: dict[str, list[float]] = {c[0]: [] for c in cases}
    cpus: dict[str, list[float]] = {c[0]: [] for c in cases}
    for i in range(n):
        for label, argv, env in cases if i % 2 == 0 else cases[::-1]:
            wall, cpu = _timed(argv, env)
            walls[label].append(wall)
            cpus[label].append(cpu)
    res: dict[str, Any] = {}
    for label, argv, env in cases:
        res[label] = {
            "wall_ms": statistics.median(walls[label]),
            "cpu_ms": statistics.median(cpus[label]),
            "cpu_min_ms": min(cpus[label]),
            "modules": _modules_loaded(argv, env),
        }
        m = res[label]
        mods = f"{m['modules']:>4} modules" if m["modules"] is not None else ""
        OUT(
            f"  {label:<44} CPU p50 {m['cpu_ms']:6.1f} ms, min {m['cpu_min_ms']:6.1f}; "
            f"wall p50 {m['wall_ms']:6.1f} ms  {mods}"
        )
    OUT(f"  (n={n} each; bubblewrap's CPU is not counted: its sandbox reaps its own processes)")
    return res


def _modules_loaded(argv: list[str], env: dict[str, str]) -> int | None:
    """How many modules a ``python -c CODE`` case leaves loaded (None for other cases)."""
    if len(argv) != 3 or argv[1] != "-c":
        return None
    code = argv[2] + "\nimport sys; print(len(sys.modules))"
    got = subprocess.run(
        [argv[0], "-c", code],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return int(got.stdout.split()[-1]) if got.returncode == 0 else None


def run(
    trees: dict[str, Path],
    tmp: Path,
    quick: bool,
    floor: Callable[[], float],
    section: Callable[[str], None],
    parts: str = PARTS,
) -> dict[str, Any]:
    r: dict[str, Any] = {"trees": {k: str(v) for k, v in trees.items()}}
    for tree in trees.values():
        precompile(tree)
    section("11. start-up and scale (issue 27)")
    floors = [floor() for _ in range(1 if quick else 3)]
    r["floor_s"] = statistics.median(floors)
    OUT(f"  floor: 10 bare Flask processes accept after {r['floor_s']:.3f} s (median)")
    if "a" in parts:
        section("11a. one minimal SDK app alone, confined and unconfined")
        r["app_start"] = app_start(trees, tmp, 6 if quick else 20)
    if "b" in parts:
        section("11b. the desktop with the 9 bundled apps")
        r["desktop"] = desktops(trees, tmp, 1 if quick else 3)
    if "c" in parts:
        section("11c. growth with installed apps")
        r["growth"] = growth(trees, tmp, (10, 50) if quick else GROWTH)
    if "d" in parts:
        section("11d. a cold app's first view after an instruction")
        r["first_view"] = first_view(trees["this"], tmp, 2 if quick else 5)
    if "e" in parts:
        section("11e. where one app's start goes: each layer alone")
        r["layers"] = layers(trees, tmp, 6 if quick else 20)
    r["floor_s_end"] = floor()
    OUT(f"  floor again at the end: {r['floor_s_end']:.3f} s")
    return r
