"""Hostile: swapping a folder for a symlink while a tool works must never reach outside.

DESIGN §11 item 9. Real files, real threads, a real HTTP server on
127.0.0.1 and the real app-files route; each test runs with ``openat2`` and
with the component walk that replaces it where the kernel lacks it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from werkzeug.serving import make_server

from aios.host import safe_open
from aios.protocol import ToolResult
from aios.store import Store
from aios.tools import ToolContext, invoke
from aios.web import pages
from aios.web.request import EXTENSION
from tests.conftest import make_ctx

MARKER = "OUTSIDE-MARKER-7f3a"
SWAPS = 300
"""Iterations of the swapping loop (bounded, as the issue asks)."""
WAIT = 10.0
"""Deadline for an event the test waits on."""


@pytest.fixture(params=["openat2", "walk"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setattr(safe_open, "_openat2_works", False)
    elif not safe_open.openat2_available():
        pytest.skip("openat2 is not available on this kernel")
    return str(request.param)


@pytest.fixture
def ctx(workdir: Path, store: Store) -> ToolContext:
    return make_ctx(workdir, store)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the workdir with a marked file and a marked database."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(MARKER)
    with sqlite3.connect(out / "x.db") as c:
        c.execute("CREATE TABLE outside_marker(a)")
    c.close()
    return out


def run(ctx: ToolContext, tool: str, **args: Any) -> ToolResult:
    return invoke(tool, args, ctx)


def outside_state(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


# ------------------------------------------------------- the deterministic race


class _Gate(BaseHTTPRequestHandler):
    """Says when the request arrived, answers only when the test lets it."""

    arrived: threading.Event
    release: threading.Event

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:
        type(self).arrived.set()
        type(self).release.wait(WAIT)
        body = b"downloaded body"
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def gate() -> Iterator[tuple[str, type[_Gate]]]:
    handler = type("Gate", (_Gate,), {"arrived": threading.Event(), "release": threading.Event()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/slow", handler
    finally:
        handler.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def test_save_to_after_a_folder_swap_creates_nothing_outside(
    mode: str, ctx: ToolContext, workdir: Path, outside: Path, gate: tuple[str, type[_Gate]]
) -> None:
    url, handler = gate
    assert run(ctx, "file_write", path="d/x", content="x").status == "ok"
    before = outside_state(outside)
    results: list[ToolResult] = []
    worker = threading.Thread(
        target=lambda: results.append(run(ctx, "http_request", url=url, save_to="d/owned.txt"))
    )
    worker.start()
    assert handler.arrived.wait(WAIT), "the request never reached the server"
    # The path was checked when the step started; now the folder becomes a link out.
    os.rename(workdir / "d", workdir / "d_moved")
    (workdir / "d").symlink_to(outside)
    handler.release.set()
    worker.join(WAIT)
    assert not worker.is_alive()
    assert outside_state(outside) == before, "a file was created outside the workdir"
    [r] = results
    assert r.status == "error", r.error
    assert "resolves outside the app's workdir" in (r.error or "")


# ------------------------------------------------------------ the swapping loop


def _flipper(workdir: Path, stop: threading.Event) -> threading.Thread:
    """``d`` is, in turn, a real folder and a symlink to the outside folder."""
    (workdir / "d_dir").mkdir()
    (workdir / "d_dir" / "secret.txt").write_text("inside")
    with sqlite3.connect(workdir / "d_dir" / "x.db") as c:
        c.execute("CREATE TABLE inside_table(a)")
    c.close()
    (workdir / "d_link").symlink_to(workdir.parent.parent.parent / "outside")

    def flip() -> None:
        try:
            for _ in range(SWAPS):
                for held in ("d_dir", "d_link"):
                    _into_place(workdir / held, workdir / "d")
                    os.rename(workdir / "d", workdir / held)
        finally:
            stop.set()

    return threading.Thread(target=flip, daemon=True)


def _into_place(src: Path, dst: Path) -> None:
    """Rename ``src`` to ``dst``; a folder db_query created there in the gap (holding the
    empty database it opened) is removed first: it is a plain folder of the workdir, never
    the link to the outside, which is not a directory entry rmtree follows."""
    for _ in range(SWAPS):
        try:
            os.rename(src, dst)
            return
        except OSError:
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst, ignore_errors=True)
    raise AssertionError(f"could not put {src.name} in place")


@pytest.fixture
def files_url(ctx: ToolContext) -> Iterator[str]:
    """The real app-files route on 127.0.0.1, serving the app ``demo``."""

    class OneApp:
        config: Any = None

        def tool_context(self, app_id: str) -> ToolContext:
            if app_id != ctx.app_id:
                raise KeyError(app_id)
            return ctx

    app = Flask(__name__)
    app.extensions[EXTENSION] = OneApp()
    app.register_blueprint(pages.bp)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/apps/{ctx.app_id}/files/"
    finally:
        server.shutdown()
        thread.join()


def test_a_swapping_loop_never_lets_a_tool_read_or_open_outside(
    mode: str, ctx: ToolContext, workdir: Path, outside: Path, files_url: str
) -> None:
    assert workdir.parent.parent.parent / "outside" == outside
    before = outside_state(outside)
    stop = threading.Event()
    flipper = _flipper(workdir, stop)
    seen: list[str] = []
    ok = 0
    flipper.start()
    with requests.Session() as http:
        while not stop.is_set():
            r = run(ctx, "file_read", path="d/secret.txt")
            seen.append(str(r.result))
            q = run(ctx, "db_query", dsn="d/x.db", sql="SELECT name FROM sqlite_master")
            seen.append(str(q.result))
            got = http.get(files_url + "d/secret.txt", timeout=WAIT)
            seen.append(got.text)
            ok += (r.status == "ok") + (q.status == "ok") + (got.status_code == 200)
    flipper.join(WAIT)
    assert not any(MARKER in s or "outside_marker" in s for s in seen)
    assert outside_state(outside) == before, "the outside folder was written to"
    assert ok > 0, "no call went through at all: the positive control failed"


# ---------------------------------------------------------------- hard links


def test_a_hard_link_to_an_outside_file_is_refused(
    mode: str, ctx: ToolContext, workdir: Path, outside: Path, files_url: str
) -> None:
    os.link(outside / "secret.txt", workdir / "hl.txt")
    r = run(ctx, "file_read", path="hl.txt")
    assert r.status == "error" and "hard link" in (r.error or "")
    w = run(ctx, "file_write", path="hl.txt", content="y", mode="append")
    assert w.status == "error" and "hard link" in (w.error or "")
    got = requests.get(files_url + "hl.txt", timeout=WAIT)
    assert got.status_code == 403 and "hard link" in got.json()["error"]
    os.link(outside / "x.db", workdir / "hl.db")
    q = run(ctx, "db_query", dsn="hl.db", sql="SELECT name FROM sqlite_master")
    assert q.status == "error" and "hard link" in (q.error or "")
    assert (outside / "secret.txt").read_text() == MARKER


# ------------------------------------------------------------ positive controls


def test_inside_the_workdir_everything_still_works(
    mode: str, ctx: ToolContext, workdir: Path, files_url: str
) -> None:
    assert run(ctx, "file_write", path="sub/deeper/real.txt", content="hello").status == "ok"
    (workdir / "alias").symlink_to("sub/deeper/real.txt")
    (workdir / "dirlink").symlink_to("sub")
    assert run(ctx, "file_read", path="alias").result == "hello"
    assert run(ctx, "file_read", path="dirlink/deeper/../deeper/real.txt").result == "hello"
    assert run(ctx, "file_write", path="dirlink/deeper/new.txt", content="n").status == "ok"
    assert (workdir / "sub" / "deeper" / "new.txt").read_text() == "n"
    listing = run(ctx, "file_list", path="dirlink/deeper")
    assert [e["name"] for e in listing.result["entries"]] == ["new.txt", "real.txt"]
    assert run(ctx, "db_query", dsn="dirlink/n.db", sql="CREATE TABLE t(a)").status == "ok"
    assert run(ctx, "db_query", dsn="dirlink/n.db", sql="INSERT INTO t VALUES (1)").status == "ok"
    q = run(ctx, "db_query", dsn="sub/n.db", sql="SELECT a FROM t")
    assert q.result["rows"] == [[1]]
    assert not list((workdir / "sub").glob("n.db-*")), "a journal was left behind"
    got = requests.get(files_url + "alias", timeout=WAIT)
    assert got.status_code == 200 and got.text == "hello"
