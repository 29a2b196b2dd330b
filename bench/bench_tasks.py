"""Task success measured by outcomes (issue 22): bench/tasks.jsonl against the real system.

    python bench/bench_tasks.py [--modes offline,hybrid,llm] [--endpoint URL --model M]
                                [--baseline REF] [--only ID,...] [--jobs 2] [--json out.json]

Each app group of tasks gets a fresh system in a temporary data dir: the bundled apps as
real processes (confined by bubblewrap as configured), the real HTTP server on 127.0.0.1,
approvals in the default ``smart`` mode. Each task is POSTed to ``/api/instruction`` as the
desktop does, in a new session; approval cards are allowed and confirm cards answered yes,
as a user who says yes would; a choice or input card is answered only when the task
names the answer. Then the outcome is checked against the real state
(bench/task_outcomes.py: the workspace on disk, the Notes SQLite file, the views shown,
the desktop's change log) — a task succeeds only when its outcome holds.

Modes: ``offline`` (no model); ``hybrid`` and ``llm`` (the planner setting) against the
fake OpenAI server (tests/fakes/fake_openai.py) replaying what small models were seen to
answer — an echo of the instruction, a direct reply, broken JSON, an empty plan, an empty
reply (the "bad-model replay", one shape per task in turn); ``--endpoint URL`` plans with
a real OpenAI-compatible server (``hybrid``).

``--baseline REF`` exports the tree at git REF (``git archive``) into a temporary dir and
runs the same tasks and checkers against that tree's system in a subprocess, then prints
both figures and what changed per task.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:  # the system and the fake server; a baseline puts its tree first
    sys.path.append(str(ROOT))

from task_outcomes import Found, check, validate_task  # noqa: E402

TASKS = HERE / "tasks.jsonl"
APPS = [
    "files",
    "code",
    "notes",
    "music",
    "monitor",
    "hello",
    "system_agent",
    "assistant",
    "gallery",
]
MODES = ("offline", "hybrid", "llm")
TOKEN = "bench-tasks-token"
KEY = "sk-bench"
TASK_WAIT = 20.0
"""Seconds a task's run gets to finish after its last answered card."""
POLL = 0.05
MAX_CARDS = 6
"""Cards answered per task at most (a run that keeps asking is a failure)."""
LLM_TIMEOUT = 2.0
"""llm.timeout against the fake: a first token later than this falls back to the router."""
VIEWPORT = {"width": 1280, "height": 800}


def element(id_: str, type_: str, label: str, x: int, y: int, w: int, h: int) -> dict[str, Any]:
    return {"id": id_, "type": type_, "label": label, "x": x, "y": y, "width": w, "height": h,
            "visible": True}  # fmt: skip


DESKTOP = [
    element("taskbar", "taskbar", "taskbar", 0, 752, 1280, 48),
    element("start_button", "button", "开始", 8, 758, 40, 36),
    element("command_input", "input", "输入指令…", 400, 758, 480, 36),
    element("mic_button", "button", "语音输入", 886, 758, 36, 36),
    element("clock", "clock", "14:05", 1200, 758, 72, 36),
]
"""What the desktop reports (renderer/js/desk/snapshot.js), so System Control can act."""


def load_tasks(path: Path = TASKS) -> list[dict[str, Any]]:
    tasks = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                task = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: not JSON ({e.msg})") from None
            validate_task(task)
            tasks.append(task)
    ids = [t["id"] for t in tasks]
    if len(ids) != len(set(ids)):
        raise SystemExit(f"{path}: task ids repeat")
    return tasks


def group_of(task: dict[str, Any]) -> str:
    return task["app"] if task["app"] in APPS else "other"


# ------------------------------------------------------------ the bad-model replay


def replay_shapes(fake_mod: Any) -> list[tuple[str, Any]]:
    """What a 0.5 B model answered (tests/integration/test_planner_real_models.py)."""
    text, tool_call = fake_mod.text, fake_mod.tool_call
    return [
        ("echo", lambda say: text(say)),
        ("direct", lambda say: tool_call("reply_directly", {"text": "好的，我来帮你处理。"})),
        ("bad_json", lambda say: text('{"name": "dispatch_tasks", "argu')),
        ("empty_plan", lambda say: tool_call("dispatch_tasks", {"tasks": []})),
        ("empty_reply", lambda say: tool_call("reply_directly", {"text": ""})),
    ]


# ------------------------------------------------------------ one system


@dataclass
class Bench:
    system: Any
    server: Any
    http: Any
    apps_dir: Path
    fake: Any = None

    @property
    def url(self) -> str:
        return str(self.system.url)

    def post(self, path: str, body: Any = None) -> Any:
        return self.http.post(self.url + path, json=body, timeout=TASK_WAIT)

    def get(self, path: str) -> Any:
        return self.http.get(self.url + path, timeout=TASK_WAIT)


@contextmanager
def started(tree: Path, mode: str, endpoint: str, model: str) -> Iterator[Bench]:
    import requests

    from aios.config import validate_config
    from aios.system import System
    from aios.web import ServerThread, create_app

    tmp = Path(tempfile.mkdtemp(prefix="bench_tasks_"))
    fake = None
    try:
        apps_dir = tmp / "apps"
        for name in APPS:
            shutil.copytree(tree / "apps" / name, apps_dir / name)
        llm: dict[str, Any] = {"api_key": ""}
        if mode != "offline":
            if endpoint:
                base, key = endpoint, os.environ.get("AIOS_LLM_API_KEY", "sk-none")
            else:
                from tests.fakes import fake_openai

                fake = fake_openai.FakeOpenAI(api_key=KEY, json_schema=False).__enter__()
                base, key = fake.url, KEY
            llm = {"api_key": key, "base_url": base, "model": model or "qwen2.5-0.5b",
                   "planner": "llm" if mode == "llm" else "hybrid", "max_retries": 0,
                   "timeout": 30.0 if endpoint else LLM_TIMEOUT}  # fmt: skip
        config = validate_config(
            {"apps_dir": str(apps_dir), "data_dir": str(tmp / "data"), "llm": llm}
        )
        server = ServerThread(0)
        system = System(config, port=server.port, token=TOKEN)
        server.attach(create_app(system))
        server.start()
        http = requests.Session()
        http.trust_env = False
        http.headers["Authorization"] = f"Bearer {TOKEN}"
        bench = Bench(system, server, http, apps_dir, fake)
        try:
            system.start()
            bench.post("/api/ui/snapshot", {"elements": DESKTOP, "viewport": VIEWPORT})
            yield bench
        finally:
            server.shutdown()
            system.stop()
            http.close()
    finally:
        if fake is not None:
            fake.__exit__(None, None, None)
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------ one task


def set_up(bench: Bench, setup: dict[str, Any]) -> None:
    """The state a task starts from: files in a workspace, the apps' own actions."""
    for rel, content in (setup.get("files") or {}).items():
        path = bench.apps_dir / "files" / "workspace" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    for action in setup.get("actions") or []:
        r = bench.post("/api/action", action)
        if r.status_code != 200:
            raise RuntimeError(f"setup action {action} failed: {r.text[:200]}")
    for text in setup.get("memories") or []:
        r = bench.post("/api/memories", {"text": text})
        if r.status_code == 404:
            return  # a tree without memory (a baseline): the task fails on its outcome
        if r.status_code != 201:
            raise RuntimeError(f"setup memory {text!r} failed: {r.text[:200]}")


def kept_memories(bench: Bench) -> list[dict[str, Any]]:
    """Every memory, deleted ones too ([] for a tree without memory: a baseline)."""
    out: list[dict[str, Any]] = []
    for state in ("active", "proposed", "superseded", "deleted"):
        r = bench.get(f"/api/memories?state={state}&limit=1000")
        if r.status_code != 200:
            return []
        out += r.json()["memories"]
    return out


def close_windows(bench: Bench) -> None:
    """Close every open window, as a user does after a task (an app's instances are capped)."""
    r = bench.get("/api/instances")
    for inst in r.json() if r.status_code == 200 else []:
        if inst.get("state") not in ("closed", "stopped"):
            bench.post(f"/api/instances/{inst['instance_id']}/close",
                       {"session_id": inst["session_id"]})  # fmt: skip


ENVELOPE = ("type", "ts", "by", "seq", "epoch")


def drain(sub: Any, run_ids: set[str], found: Found) -> list[tuple[str, dict[str, Any]]]:
    """The views of these runs and every desktop change the desktop was sent."""
    views = []
    while (ev := sub.get(timeout=0)) is not None:
        if ev.get("type") == "view" and ev.get("run_id") in run_ids:
            views.append((str(ev.get("app")), ev["response"]))
        elif ev.get("type") == "ui_op":
            found.ui_ops.append({k: v for k, v in ev.items() if k not in ENVELOPE})
    return views


def run_task(bench: Bench, task: dict[str, Any], shape: Any) -> Found:
    found = Found(bench.apps_dir)
    set_up(bench, task.get("setup") or {})
    if bench.fake is not None and shape is not None:
        bench.fake.reset()
        bench.fake.default = shape(task["say"])
    sub = bench.system.bus.subscribe()
    try:
        r = bench.post("/api/instruction", {"text": task["say"]})
        if r.status_code != 200:
            found.error = f"HTTP {r.status_code}: {r.text[:200]}"
            return found
        reply = found.reply = r.json()
        for then in task.get("then") or []:  # what the user says next, in that conversation
            r = bench.post("/api/instruction", {"text": then, "session_id": reply["session_id"]})
            if r.status_code != 200:
                found.error = f"HTTP {r.status_code}: {r.text[:200]}"
                return found
            reply = found.reply = r.json()
        found.views = [(x["app"], x["response"]) for x in reply.get("results", [])]
        run_ids = {reply["run_id"]} if reply.get("run_id") else set()
        drain(sub, run_ids, found)  # the reply's own views are in found.views already
        answer_cards(bench, task, found, reply.get("pending") or [], run_ids)
        found.views += drain(sub, run_ids, found)
        found.memories = kept_memories(bench)
    except Exception as e:  # a bench reports the failure and goes on with the next task
        found.error = f"{type(e).__name__}: {e}"
    finally:
        sub.close()
        close_windows(bench)
    return found


def answer_cards(
    bench: Bench,
    task: dict[str, Any],
    found: Found,
    pending: list[dict[str, Any]],
    run_ids: set[str],
) -> None:
    seen: set[str] = set()
    for _ in range(MAX_CARDS):
        fresh = [c for c in pending if c["id"] not in seen]
        if not fresh:
            break
        for card in fresh:
            seen.add(card["id"])
            found.cards.append(card)
            run_ids.add(card["run_id"])
            body = user_answer(task, card)
            if body is None:  # asked something only the task could answer: stop here
                for run_id in run_ids:
                    bench.post(f"/api/runs/{run_id}/cancel")
                return
            bench.post(f"/api/interactions/{card['id']}", body)
        pending = wait_run(bench, run_ids, seen)


def user_answer(task: dict[str, Any], card: dict[str, Any]) -> dict[str, Any] | None:
    kind = card.get("kind")
    if kind == "approval":
        return {"decision": "allow"}
    if "asked" in task["expect"]:
        return None
    if kind == "confirm":
        return {"value": True}
    if "answer" in task:
        return {"value": task["answer"]}
    return None


def wait_run(bench: Bench, run_ids: set[str], seen: set[str]) -> list[dict[str, Any]]:
    """Wait until the runs end or ask something new; the new cards."""
    deadline = time.monotonic() + TASK_WAIT
    while time.monotonic() < deadline:
        cards = [
            c
            for c in bench.get("/api/interactions?pending=1").json()
            if c.get("run_id") in run_ids and c["id"] not in seen
        ]
        if cards:
            return list(cards)
        states = [bench.get(f"/api/runs/{r}").json().get("state") for r in run_ids]
        if all(s in ("done", "failed", "cancelled", "interrupted") for s in states):
            return []
        time.sleep(POLL)
    return []


# ------------------------------------------------------------ a whole mode


def run_group(
    tree: Path, mode: str, tasks: list[dict[str, Any]], endpoint: str, model: str
) -> list[dict[str, Any]]:
    shapes: list[tuple[str, Any]] = []
    if mode != "offline" and not endpoint:
        from tests.fakes import fake_openai

        shapes = replay_shapes(fake_openai)
    results = []
    with started(tree, mode, endpoint, model) as bench:
        for task in tasks:
            name, shape = shapes[task["_n"] % len(shapes)] if shapes else ("", None)
            t0 = time.monotonic()
            found = run_task(bench, task, shape)
            problems = check(task["expect"], found, task["lang"])
            results.append(
                {
                    "id": task["id"],
                    "ok": not problems,
                    "problems": problems,
                    "shape": name,
                    "ms": round((time.monotonic() - t0) * 1000),
                }  # fmt: skip
            )
    return results


def run_mode(
    tree: Path, mode: str, tasks: list[dict[str, Any]], jobs: int, endpoint: str, model: str
) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for n, task in enumerate(tasks):
        groups[group_of(task)].append({**task, "_n": n})
    ordered = sorted(groups.values(), key=len, reverse=True)  # longest first: even workers
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        done = pool.map(lambda g: run_group(tree, mode, g, endpoint, model), ordered)
        return {r["id"]: r for rs in done for r in rs}


# ------------------------------------------------------------ report


def share(results: list[dict[str, Any]]) -> str:
    ok = sum(r["ok"] for r in results)
    return f"{ok / len(results):6.1%} ({ok}/{len(results)})" if results else "-"


def report(mode: str, tasks: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> None:
    rows = [(t, results[t["id"]]) for t in tasks if t["id"] in results]
    print(f"\n## {mode}: {share([r for _, r in rows])}")
    held = [r for t, r in rows if not t.get("seen")]
    print(f"  held out (tasks never shown to whoever tuned the apps): {share(held).strip()}")
    for field in ("lang", "app", "kind"):
        by: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t, r in rows:
            by[t[field]].append(r)
        print(
            f"  per {field}: " + "; ".join(f"{k} {share(v).strip()}" for k, v in sorted(by.items()))
        )
    if any(r["shape"] for _, r in rows):
        by = defaultdict(list)
        for _, r in rows:
            by[r["shape"]].append(r)
        print(
            "  per replay shape: "
            + "; ".join(f"{k} {share(v).strip()}" for k, v in sorted(by.items()))
        )
    failed = [(t, r) for t, r in rows if not r["ok"]]
    if failed:
        print(f"  failures ({len(failed)}):")
        for t, r in failed:
            print(f"    {t['id']} [{t['lang']}] {t['say']!r}: {'; '.join(r['problems'])}")


def compare(
    mode: str, tasks: list[dict[str, Any]], now: dict[str, Any], before: dict[str, Any]
) -> None:
    both = [t for t in tasks if t["id"] in now and t["id"] in before]
    a = share([before[t["id"]] for t in both])
    b = share([now[t["id"]] for t in both])
    print(f"\n## {mode}: baseline {a.strip()} -> now {b.strip()}")
    for t in both:
        if now[t["id"]]["ok"] != before[t["id"]]["ok"]:
            sign = "+" if now[t["id"]]["ok"] else "-"
            print(f"  {sign} {t['id']} {t['say']!r}")


def worse_with_model(tasks: list[dict[str, Any]], results: dict[str, dict[str, Any]]) -> None:
    """Issue 22's rule: no task's outcome is worse with a model than without."""
    off = results.get("offline")
    if not off:
        return
    for mode, res in results.items():
        if mode == "offline":
            continue
        worse = [
            t
            for t in tasks
            if off.get(t["id"], {}).get("ok") and not res.get(t["id"], {}).get("ok", True)
        ]
        print(f"\n## worse with the model ({mode}): {len(worse)}")
        for t in worse:
            print(
                f"  {t['id']} {t['say']!r} [{res[t['id']]['shape']}]: "
                + "; ".join(res[t["id"]]["problems"])
            )


def export_tree(ref: str, dest: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
        capture_output=True, check=False,
    )  # fmt: skip
    if archive.returncode != 0:
        raise SystemExit(f"cannot export {ref!r}: {archive.stderr.decode().strip()}")
    tar_path = dest.parent / "tree.tar"
    tar_path.write_bytes(archive.stdout)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="data")


def baseline(args: argparse.Namespace, modes: list[str]) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench_tasks_base_"))
    try:
        tree = tmp / "tree"
        tree.mkdir()
        export_tree(args.baseline, tree)
        out = tmp / "out.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--tree", str(tree),
               "--modes", ",".join(modes), "--jobs", str(args.jobs), "--json", str(out),
               "--tasks", str(args.tasks.resolve()), "--quiet"]  # fmt: skip
        if args.only:
            cmd += ["--only", args.only]
        if args.endpoint:
            cmd += ["--endpoint", args.endpoint, "--model", args.model]
        env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{ROOT}"}
        proc = subprocess.run(cmd, cwd=tree, env=env, check=False)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"the baseline run at {args.baseline} failed")
        data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))["results"]
        return data
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default="offline,hybrid,llm")
    ap.add_argument("--endpoint", default="", help="a real OpenAI-compatible base URL")
    ap.add_argument("--model", default="")
    ap.add_argument("--baseline", default="", help="a git ref to measure in the same run")
    ap.add_argument("--tasks", type=Path, default=TASKS)
    ap.add_argument("--only", default="", help="task ids, comma-separated")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tree", type=Path, default=ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if bad := [m for m in modes if m not in MODES]:
        ap.error(f"unknown mode {bad[0]!r}: choose from {', '.join(MODES)}")
    if args.endpoint:
        modes = ["hybrid"]
    tasks = load_tasks(args.tasks)
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t["id"] in wanted]
    import logging

    logging.disable(logging.WARNING)  # the apps' own refusals are outcomes, not noise
    results: dict[str, dict[str, Any]] = {}
    timing: dict[str, float] = {}
    for mode in modes:
        t0 = time.monotonic()
        results[mode] = run_mode(args.tree, mode, tasks, args.jobs, args.endpoint, args.model)
        timing[mode] = time.monotonic() - t0
    if args.json:
        args.json.write_text(json.dumps({"results": results, "seconds": timing}), encoding="utf-8")
    if args.quiet:
        return 0
    for mode in modes:
        report(mode, tasks, results[mode])
        print(f"  ({timing[mode]:.0f} s, {len(tasks)} tasks)")
    worse_with_model(tasks, results)
    if args.baseline:
        before = baseline(args, modes)
        for mode in modes:
            compare(mode, tasks, results[mode], before.get(mode, {}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
