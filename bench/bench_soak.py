"""Soak: does the system leak under steady use? RSS, fds, threads, database size.

    python bench/bench_soak.py [--seconds 300] [--clients 8] [--apps hello,notes,music]
                               [--sample 10] [--json out.json]

Starts the real desktop (``desktop_app.py --headless``) with copies of a few
bundled apps and a temporary data dir, then runs ``--clients`` threads for
``--seconds``: each has its own session and loops over an instruction, an
app open, its session memory and health — requests to 127.0.0.1 only, one
at a time per client. Every ``--sample`` seconds it records the system
process's RSS, open fds and threads and the database size (``aios.db`` plus
its WAL). Prints start and end values, the least-squares slope per minute
over the whole run and over its second half (after the warm-up: allocator
arenas, SQLite page caches, the first WAL), and the request count and errors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import requests  # noqa: E402

TOKEN = "bench-soak-token"
READY_TIMEOUT = 60.0
REQUEST_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
DEFAULT_APPS = "hello,notes,music"
INSTRUCTIONS = ("打招呼", "记一下 买牛奶", "播放音乐", "hello")
LLM_ENV = (
    "DEEPSEEK_API_KEY",
    "AIOS_LLM_API_KEY",
    "AIOS_LLM_BASE_URL",
    "AIOS_LLM_MODEL",
    "OPENAI_API_KEY",
)


@dataclass
class Sample:
    t: float
    rss_mb: float
    fds: int
    threads: int
    db_mb: float


@dataclass
class Tally:
    requests: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, error: str | None) -> None:
        with self.lock:
            self.requests += 1
            if error:
                self.errors[error] = self.errors.get(error, 0) + 1


def db_mb(data: Path) -> float:
    return (
        sum(p.stat().st_size for p in (data / "aios.db", data / "aios.db-wal") if p.exists()) / 1e6
    )


def sample(proc: psutil.Process, data: Path, t0: float) -> Sample:
    return Sample(
        t=time.monotonic() - t0,
        rss_mb=proc.memory_info().rss / 1e6,
        fds=proc.num_fds(),
        threads=proc.num_threads(),
        db_mb=db_mb(data),
    )


def slope_per_minute(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def client(base: str, n: int, stop: threading.Event, tally: Tally, apps: list[str]) -> None:
    http = requests.Session()
    http.trust_env = False
    http.headers["Authorization"] = f"Bearer {TOKEN}"
    sid: str | None = None
    i = 0
    while not stop.is_set():
        i += 1
        calls: list[tuple[str, str, dict[str, Any] | None]] = [
            (
                "POST",
                "/api/instruction",
                {
                    "text": INSTRUCTIONS[(n + i) % len(INSTRUCTIONS)],
                    **({"session_id": sid} if sid else {}),
                },
            ),
            (
                "POST",
                f"/api/apps/{apps[(n + i) % len(apps)]}/open",
                {"session_id": sid} if sid else {},
            ),
            ("GET", f"/api/sessions/{sid}" if sid else "/api/health", None),
            ("GET", "/api/health", None),
        ]
        for method, path, body in calls:
            if stop.is_set():
                break
            try:
                r = http.request(method, base + path, json=body, timeout=REQUEST_TIMEOUT)
                error = None if r.status_code == 200 else f"HTTP {r.status_code} {path}"
                if r.status_code == 200 and sid is None and path == "/api/instruction":
                    sid = r.json().get("session_id")
            except requests.RequestException as e:
                error = type(e).__name__
            tally.add(error)
    http.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--apps", default=DEFAULT_APPS)
    ap.add_argument("--sample", type=float, default=10, help="seconds between samples")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    apps = [a for a in args.apps.split(",") if a]

    tmp = Path(tempfile.mkdtemp(prefix="aios-soak-"))
    for name in apps:
        shutil.copytree(ROOT / "apps" / name, tmp / "apps" / name)
    env = {k: v for k, v in os.environ.items() if k not in LLM_ENV}
    env["AIOS_TOKEN"] = TOKEN
    log = (tmp / "desktop.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "desktop_app.py"),
            "--headless",
            "--port",
            "0",
            "--apps-dir",
            str(tmp / "apps"),
            "--data-dir",
            str(tmp / "data"),
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("AIOS ready: "):
            print(f"the desktop did not start: {line!r}; see {tmp / 'desktop.log'}")
            return 1
        base = line.split(" ", 2)[2].split("/?")[0]
        system = psutil.Process(proc.pid)
        t0 = time.monotonic()
        samples = [sample(system, tmp / "data", t0)]
        stop, tally = threading.Event(), Tally()
        threads = [
            threading.Thread(target=client, args=(base, n, stop, tally, apps))
            for n in range(args.clients)
        ]
        for t in threads:
            t.start()
        end = t0 + args.seconds
        while not stop.wait(min(args.sample, max(0.0, end - time.monotonic()))):
            samples.append(sample(system, tmp / "data", t0))
            if time.monotonic() >= end:
                stop.set()
        for t in threads:
            t.join()
        samples.append(sample(system, tmp / "data", t0))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    report(samples, tally, args, apps)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "samples": [s.__dict__ for s in samples],
                    "requests": tally.requests,
                    "errors": tally.errors,
                },
                indent=2,
            )
        )
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def report(samples: list[Sample], tally: Tally, args: argparse.Namespace, apps: list[str]) -> None:
    """The last sample is taken after the clients stopped: slopes use the loaded ones."""
    loaded = samples[:-1]
    last = loaded[-1]
    ts = [s.t for s in loaded]
    half = [i for i, s in enumerate(loaded) if s.t >= last.t / 2]
    print(
        f"soak: {args.clients} clients, {last.t:.0f} s, apps {', '.join(apps)}; "
        f"{tally.requests} requests ({tally.requests / max(last.t, 1e-9):.0f}/s), "
        f"{sum(tally.errors.values())} errors"
    )
    for error, count in sorted(tally.errors.items()):
        print(f"  {count:6d}  {error}")
    print()
    print(
        "| metric | start (idle) | end (loaded) | after (idle) | slope per minute |"
        " slope per minute, second half |"
    )
    print("|---|---|---|---|---|---|")
    for name, unit, get in (
        ("RSS", " MB", lambda s: s.rss_mb),
        ("open fds", "", lambda s: s.fds),
        ("threads", "", lambda s: s.threads),
        ("database", " MB", lambda s: s.db_mb),
    ):
        ys = [float(get(s)) for s in loaded]
        late = slope_per_minute([ts[i] for i in half], [ys[i] for i in half])
        print(
            f"| {name} | {ys[0]:.1f}{unit} | {ys[-1]:.1f}{unit} | "
            f"{float(get(samples[-1])):.1f}{unit} | {slope_per_minute(ts, ys):+.2f}{unit} | "
            f"{late:+.2f}{unit} |"
        )


if __name__ == "__main__":
    sys.exit(main())
