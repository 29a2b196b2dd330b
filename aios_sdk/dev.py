"""``python -m aios_sdk dev PATH``: run an app standalone, restart it when its files change.

The app runs as ``python -u <entry>`` in its folder, standalone (no
``AIOS_SYSTEM_URL``: its tools run in-process, docs/testing.md), serving on
``127.0.0.1:<port>`` (``--port``, else a free one). Its output is shown line by
line, each prefixed with ``[<app id>]``; the loop's own lines start with
``[dev]``. Every ``POLL_INTERVAL`` seconds the modification times of the
folder's ``*.py``, ``*.json`` and ``*.md`` files are compared (the workdir,
hidden folders and ``__pycache__`` are not watched: the app writes there);
a change stops the app and starts it again. An app that exits is started
again at the next change. Ctrl-C (or SIGTERM) stops the app and everything it
started, then the loop: the app leads a process group of its own that dies
with the loop (aios/host/procgroup.py), so nothing is left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from aios.names import ENV_APP_ID, ENV_APP_TOKEN, ENV_LAUNCH_SECRET, ENV_SYSTEM_URL

POLL_INTERVAL = 0.5
"""Seconds between two looks at the app's files."""
STOP_GRACE = 3.0
"""Seconds the app gets to exit after SIGTERM before it is killed."""
WATCHED_SUFFIXES = frozenset({".py", ".json", ".md"})
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "workspace"})
"""Folders never watched (besides hidden ones and the manifest's workdir)."""
STANDALONE_UNSET = (ENV_SYSTEM_URL, ENV_APP_TOKEN, ENV_LAUNCH_SECRET)
"""Variables removed from the app's environment: it runs standalone, not in a system."""
DEV_PREFIX = "[dev]"


def _workdir_name(folder: Path) -> str | None:
    try:
        raw = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = raw.get("workdir") if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


def _entry(folder: Path) -> Path:
    try:
        raw = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raw = {}
    entry = raw.get("entry") if isinstance(raw, dict) else None
    return folder / (entry if isinstance(entry, str) and entry else "main.py")


def _watched(folder: Path) -> Iterator[Path]:
    skipped = set(SKIPPED_DIRS)
    workdir = _workdir_name(folder)
    if workdir:
        skipped.add(Path(workdir).parts[0] if Path(workdir).parts else workdir)
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skipped]
        for name in files:
            if Path(name).suffix in WATCHED_SUFFIXES:
                yield Path(root) / name


def snapshot(folder: Path) -> dict[Path, int]:
    """``{file: mtime_ns}`` of the watched files."""
    out: dict[Path, int] = {}
    for path in _watched(folder):
        try:
            out[path] = path.stat().st_mtime_ns
        except OSError:
            continue  # removed meanwhile
    return out


def changed(before: dict[Path, int], after: dict[Path, int]) -> list[Path]:
    """Files added, removed or modified between two snapshots."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class DevLoop:
    """One app folder, run and restarted on change until :meth:`stop`."""

    def __init__(
        self,
        folder: Path,
        *,
        port: int | None = None,
        interval: float = POLL_INTERVAL,
        out: IO[str] | None = None,
    ) -> None:
        self.folder = folder.resolve()
        self.app_id = self.folder.name
        self.port = port or free_port()
        self.interval = interval
        self.out = out or sys.stdout
        self.proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._write_lock = threading.Lock()

    def say(self, line: str) -> None:
        with self._write_lock:
            self.out.write(line.rstrip("\n") + "\n")
            self.out.flush()

    # -------------------------------------------------------------- the app

    def start(self) -> None:
        from aios.host import procgroup

        entry = _entry(self.folder)
        env = {k: v for k, v in os.environ.items() if k not in STANDALONE_UNSET}
        env.update({"APP_PORT": str(self.port), "PYTHONUNBUFFERED": "1"})
        env.setdefault(ENV_APP_ID, self.app_id)
        # The app imports this SDK even when it was run from a checkout, not installed.
        sdk_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([sdk_root, *filter(None, [env.get("PYTHONPATH")])])
        self.proc = procgroup.popen(
            [sys.executable, "-u", str(entry)],
            subprocess.Popen,
            cwd=str(self.folder),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.say(
            f"{DEV_PREFIX} started {self.app_id} (pid {self.proc.pid}) on "
            f"http://127.0.0.1:{self.port}; watching {self.folder}"
        )
        threading.Thread(
            target=self._pump, args=(self.proc,), name=f"aios-dev-{self.app_id}", daemon=True
        ).start()

    def _pump(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            self.say(f"[{self.app_id}] {raw.decode('utf-8', 'replace')}")
        proc.stdout.close()

    def stop_app(self) -> None:
        from aios.host import procgroup

        proc, self.proc = self.proc, None
        if proc is not None:
            procgroup.stop(proc, STOP_GRACE)

    # -------------------------------------------------------------- the loop

    def run(self) -> int:
        """Run until :meth:`stop` (or Ctrl-C); always leaves no app process behind."""
        seen = snapshot(self.folder)
        exited_told = False
        try:
            self.start()
            while not self._stopping.wait(self.interval):
                now = snapshot(self.folder)
                edits = changed(seen, now)
                seen = now
                if edits:
                    names = ", ".join(str(p.relative_to(self.folder)) for p in edits[:5])
                    self.say(f"{DEV_PREFIX} {names} changed: restarting {self.app_id}")
                    self.stop_app()
                    self.start()
                    exited_told = False
                elif self.proc is not None and self.proc.poll() is not None and not exited_told:
                    self.say(
                        f"{DEV_PREFIX} {self.app_id} exited with code {self.proc.returncode}; "
                        "it starts again when a file changes"
                    )
                    exited_told = True
        except KeyboardInterrupt:
            pass
        finally:
            self.stop_app()
            self.say(f"{DEV_PREFIX} stopped")
        return 0

    def stop(self) -> None:
        self._stopping.set()


# ------------------------------------------------------------------- CLI


def add_parser(sub: Any) -> None:
    """The ``dev`` subcommand of ``python -m aios_sdk`` (aios_sdk/scaffold.py)."""
    dev = sub.add_parser(
        "dev", help="run an app standalone; restart it when its files change; show its log"
    )
    dev.add_argument("path", help="the app folder")
    dev.add_argument("--port", type=int, help="the app's port (default: a free one)")
    dev.add_argument(
        "--interval",
        type=float,
        default=POLL_INTERVAL,
        help=f"seconds between looks at the files (default: {POLL_INTERVAL})",
    )


def run_from_args(args: argparse.Namespace) -> int:
    folder = Path(args.path)
    if not (folder / "manifest.json").is_file():
        print(f"error: {folder} is not an app folder (no manifest.json)", file=sys.stderr)
        return 2
    if not _entry(folder).is_file():
        print(f"error: the app's entry {_entry(folder)} does not exist", file=sys.stderr)
        return 2
    if args.interval <= 0:
        print(f"error: --interval must be positive, got {args.interval:g}", file=sys.stderr)
        return 2
    loop = DevLoop(folder, port=args.port, interval=args.interval)

    def on_signal(signum: int, frame: Any) -> None:
        loop.stop()

    # Ctrl-C as well as SIGTERM end the loop, also when SIGINT was inherited ignored
    # (a loop started in the background of a script)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    return loop.run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aios_sdk.dev")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run_from_args(parser.parse_args(["dev", *(argv or sys.argv[1:])]))


if __name__ == "__main__":
    sys.exit(main())
