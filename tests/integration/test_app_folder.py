"""The system never follows an app's links (DESIGN §14.1, issue 20 item 1).

The issue's example, against the real system under real bubblewrap: an app
folder shipping ``role.md -> /proc/self/environ`` (no ``role_prompt``) got the
*system's* environment as its ``context.role``; with ``"workdir": "."`` it could
re-point its own ``role.md`` at run time and the hot reload re-read it within a
second, without a restart. Here such an app is ``invalid`` with a reason naming
the file, ``"."`` is refused, and a change to the folder restarts the app from a
fresh validation. Positive controls beside them: a plain ``role.md`` reaches
``context.role``, a proper workdir works, a legitimate edit restarts the app
with the new role.

Then the variants an attacker tries next, on real files through the real
launcher: a link for each file the system reads (manifest, role.md, icon, entry),
a linked parent folder, a FIFO (bounded: the launcher must not hang), a hard
link, an oversized file, a device node, a socket, and workdirs that hold the
app's own files or pass through a link.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.apphost.app_files import CAPS
from aios.apphost.manifests import load_app
from aios.apphost.registry import AppStatus, Launcher
from aios.config import Config
from aios.host import os_sandbox, safe_open
from tests.integration.conftest import Running, start_system
from tests.util import ROOT, wait_for

READER = ROOT / "tests" / "fixtures" / "apps_folder" / "reader"
ROLE = "你是读者小AI，只回显你的角色。"
SECRET = "sk-folder-test-secret-4711"
"""Stands for a secret in a file outside the app folder."""
ENVIRON_MARK = "PATH="
"""In the system's ``/proc/self/environ`` (the test process's environment at exec time,
where a real system holds its launch token and LLM key)."""
APP_START_TIMEOUT = 30.0
"""Seconds the apps may take to be running (a loaded 2-core machine, bubblewrap)."""
RELOAD_TIMEOUT = 15.0
"""Seconds a change may take to be seen (a watcher pass each second) and the app to restart."""
LINK_REASON = (
    "is a symbolic link or lies in a folder that is one; "
    "the system reads only plain files of an app folder"
)


def make_reader(apps: Path, app_id: str, **manifest: Any) -> Path:
    """A copy of the fixture app; ``manifest`` entries override (None removes)."""
    d = apps / app_id
    shutil.copytree(READER, d)
    m = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
    m.update(manifest)
    m = {k: v for k, v in m.items() if v is not None}
    (d / "manifest.json").write_text(json.dumps(m, ensure_ascii=False), encoding="utf-8")
    return d


def relink(path: Path, target: str) -> None:
    path.unlink()
    path.symlink_to(target)


# ------------------------------------------------------------ the real system

needs_bwrap = pytest.mark.skipif(
    os_sandbox.detect().bwrap is None,
    reason=f"bubblewrap cannot run here ({os_sandbox.detect().bwrap_problem})",
)


@pytest.fixture
def system(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def start(**overrides: Any) -> Running:
        running = start_system(
            tmp_path / "apps", tmp_path / "data", app_start_timeout=30, **overrides
        )
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()


def apps_by_id(running: Running) -> dict[str, dict[str, Any]]:
    r = running.get("/api/apps")
    assert r.status_code == 200, r.text
    body = r.json()
    return {a["id"]: a for a in (body["apps"] if isinstance(body, dict) else body)}


def wait_status(running: Running, app_id: str, status: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def reached() -> bool:
        seen.update(apps_by_id(running).get(app_id, {}))
        return seen.get("status") == status

    try:
        wait_for(reached, f"{app_id} {status}", APP_START_TIMEOUT)
    except AssertionError as e:
        raise AssertionError(f"{e}: {seen.get('status')} {seen.get('error')}") from None
    return seen


def role_seen(running: Running, app_id: str) -> str:
    """The ``context.role`` the app received, as it shows it."""
    reply = running.open(app_id)["response"]
    assert reply["status"] == "ok", reply
    content: str = reply["data"]["content"]
    return content


@needs_bwrap
def test_role_md_linked_to_the_systems_environ_makes_the_app_invalid(
    tmp_path: Path, system: Callable[..., Running]
) -> None:
    apps = tmp_path / "apps"
    apps.mkdir()
    make_reader(apps, "honest")
    leaky = make_reader(apps, "leaky")
    relink(leaky / "role.md", "/proc/self/environ")

    running = system()
    honest = wait_status(running, "honest", "running")
    # Positive control: a plain role.md is read and is the app's context.role (confined).
    assert honest["confined"] is True
    assert role_seen(running, "honest") == ROLE
    # The attack: never read, never started; the reason names the file and the problem.
    seen = apps_by_id(running)
    assert ENVIRON_MARK in Path("/proc/self/environ").read_text(errors="replace")
    if seen["leaky"]["status"] == "running":  # what the issue saw: the system's environment
        assert ENVIRON_MARK not in role_seen(running, "leaky")
    assert seen["leaky"]["status"] == "invalid"
    assert seen["leaky"]["error"] == f"role.md {LINK_REASON}"
    assert ENVIRON_MARK not in json.dumps(seen)
    assert running.system.launcher.get("leaky").pid is None


@needs_bwrap
def test_workdir_dot_is_refused_and_a_confined_app_cannot_repoint_its_role(
    tmp_path: Path, system: Callable[..., Running]
) -> None:
    apps = tmp_path / "apps"
    apps.mkdir()
    make_reader(apps, "selfwriter", workdir=".")
    reader = make_reader(apps, "reader")

    running = system()
    wait_status(running, "reader", "running")
    seen = apps_by_id(running)["selfwriter"]
    assert seen["status"] == "invalid"
    assert seen["error"] == (
        "workdir '.' is not a subfolder of the app folder: the app could then rewrite "
        "its own code and manifest; use a subfolder such as workspace"
    )
    # With a proper workdir, the app's folder is read-only to the app itself: the
    # run-time re-pointing of role.md fails, and its role stays the plain file's.
    for target in ("/proc/self/cmdline", str(running.data_dir / "settings.json")):
        reply = running.act("reader", {"action_id": "repoint", "params": {"target": target}})
        assert reply["data"]["content"].startswith("refused: "), reply
        assert not (reader / "role.md").is_symlink()
        assert role_seen(running, "reader") == ROLE
    assert apps_by_id(running)["reader"]["status"] == "running"


@needs_bwrap
def test_a_change_to_the_folder_restarts_the_app_from_a_fresh_validation(
    tmp_path: Path, system: Callable[..., Running]
) -> None:
    apps = tmp_path / "apps"
    apps.mkdir()
    reader = make_reader(apps, "reader")
    running = system()
    wait_status(running, "reader", "running")
    rec = running.system.launcher.get("reader")
    pid = rec.pid

    # Positive control: a legitimate edit of role.md restarts the app, with the new role.
    (reader / "role.md").write_text("你是新的读者小AI。\n", encoding="utf-8")
    wait_for(lambda: rec.status == AppStatus.RUNNING and rec.pid != pid, "restart", RELOAD_TIMEOUT)
    assert role_seen(running, "reader") == "你是新的读者小AI。"

    # role.md re-pointed from outside while it runs: stopped, shown invalid, never read.
    pid = rec.pid
    relink(reader / "role.md", str(running.data_dir / "settings.json"))
    seen = wait_status(running, "reader", "invalid")
    assert seen["error"] == f"role.md {LINK_REASON}" and rec.pid is None
    # A file added beside the code is a change too; once valid again, the app is back.
    (reader / "role.md").unlink()
    (reader / "role.md").write_text(ROLE + "\n", encoding="utf-8")
    wait_status(running, "reader", "running")
    pid = rec.pid
    (reader / "helper.py").write_text("X = 1\n", encoding="utf-8")
    wait_for(lambda: rec.status == AppStatus.RUNNING and rec.pid != pid, "restart", RELOAD_TIMEOUT)
    # Writing inside its workdir is the app's own business: no restart.
    pid = rec.pid
    (reader / "workspace" / "note.txt").write_text("hi", encoding="utf-8")
    running.system.launcher.rescan()
    assert rec.pid == pid and rec.status == AppStatus.RUNNING
    assert role_seen(running, "reader") == ROLE


def test_unconfined_an_app_that_repoints_its_role_is_stopped_not_read(
    tmp_path: Path, system: Callable[..., Running]
) -> None:
    """Without bubblewrap the app can write its own folder: the change restarts it, and
    the re-validation refuses the link instead of reading it into context.role."""
    apps = tmp_path / "apps"
    apps.mkdir()
    reader = make_reader(apps, "reader")
    running = system(apps={"confinement": "off"})
    assert wait_status(running, "reader", "running")["confined"] is False
    assert role_seen(running, "reader") == ROLE
    reply = running.act(
        "reader", {"action_id": "repoint", "params": {"target": "/proc/self/environ"}}
    )
    assert reply["data"]["content"] == "repointed" and (reader / "role.md").is_symlink()
    seen = wait_status(running, "reader", "invalid")
    assert seen["error"] == f"role.md {LINK_REASON}"
    assert ENVIRON_MARK not in running.system.launcher.get("reader").role_prompt
    assert ENVIRON_MARK not in json.dumps(apps_by_id(running))


@needs_bwrap
def test_the_icon_is_served_as_read_at_validation_never_through_a_link(
    tmp_path: Path, system: Callable[..., Running]
) -> None:
    apps = tmp_path / "apps"
    apps.mkdir()
    pic = make_reader(apps, "pic", icon="icon.png")
    (pic / "icon.png").write_bytes(b"\x89PNG first")
    linked = make_reader(apps, "linked", icon="icon.png")
    (linked / "icon.png").symlink_to("/etc/passwd")
    running = system()
    wait_status(running, "pic", "running")
    grants = running.get("/api/file-grants").json()["grants"]

    def icon(app_id: str) -> Any:
        return running.http.get(f"{running.url}/apps/{app_id}/icon", params=grants[app_id])

    r = icon("pic")  # positive control
    assert r.status_code == 200 and r.content == b"\x89PNG first"
    assert r.headers["Content-Type"] == "image/png"
    assert apps_by_id(running)["linked"]["error"] == f"icon.png {LINK_REASON}"
    r = icon("linked")
    assert r.status_code == 404 and b"root:" not in r.content
    # Swapped for a link while the app runs: the app is stopped and invalid, nothing served.
    relink(pic / "icon.png", "/etc/passwd")
    assert wait_status(running, "pic", "invalid")["error"] == f"icon.png {LINK_REASON}"
    r = icon("pic")
    assert r.status_code == 404 and b"root:" not in r.content


# ------------------------------------------------------------------ variants


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each variant both ways: the kernel's openat2, and the O_NOFOLLOW walk used where
    openat2 is missing (kernels before 5.6, some seccomp filters)."""
    if request.param == "walk":
        monkeypatch.setattr(safe_open, "_openat2_works", False)
    elif not safe_open.openat2_available():
        pytest.skip("openat2 is unavailable here")
    return str(request.param)


def invalid_reason(apps: Path, app_id: str) -> str | None:
    rec = load_app(apps / app_id, apps.parent / "logs")
    return rec.error if rec.status == AppStatus.INVALID else None


def test_a_plain_folder_is_read_once_with_its_icon(tmp_path: Path, resolver: str) -> None:
    d = make_reader(tmp_path, "plain", icon="img/icon.png", workdir="state/ws")
    (d / "img").mkdir()
    (d / "img" / "icon.png").write_bytes(b"\x89PNG fake")
    rec = load_app(d, tmp_path / "logs")
    assert rec.status != AppStatus.INVALID, rec.error
    assert rec.role_prompt == ROLE and rec.icon == b"\x89PNG fake"
    assert rec.workdir == (d / "state" / "ws").resolve() and rec.workdir.is_dir()


@pytest.mark.parametrize(
    ("name", "manifest", "build", "reason"),
    [
        (
            "manifest_link",
            {},
            lambda d, out: relink(d / "manifest.json", str(out / "manifest.json")),
            f"manifest.json {LINK_REASON}",
        ),
        (
            "role_link_beneath",  # a link is refused even when it stays in the folder
            {},
            lambda d, out: (
                (d / "real.md").write_text("x"),
                relink(d / "role.md", "real.md"),
            ),
            f"role.md {LINK_REASON}",
        ),
        (
            "icon_link",
            {"icon": "icon.png"},
            lambda d, out: (d / "icon.png").symlink_to("/etc/passwd"),
            f"icon.png {LINK_REASON}",
        ),
        (
            "entry_link",
            {},
            lambda d, out: relink(d / "main.py", str(out / "main.py")),
            f"main.py {LINK_REASON}",
        ),
        (
            "parent_link",
            {"icon": "img/icon.png"},
            lambda d, out: (
                (out / "icon.png").write_bytes(b"png"),
                (d / "img").symlink_to(out),
            ),
            f"img/icon.png {LINK_REASON}",
        ),
        (
            "hard_link",
            {},
            lambda d, out: (
                (d / "role.md").unlink(),
                os.link(out / "secret.md", d / "role.md"),
            ),
            "role.md has 2 hard links (it may be a file from elsewhere); "
            "an app's files must each have a single name",
        ),
        (
            "oversized",
            {},
            lambda d, out: (d / "role.md").write_bytes(b"a" * (CAPS["role"] + 1)),
            f"role.md is {CAPS['role'] + 1} bytes, over the cap of {CAPS['role']} bytes",
        ),
        (
            "role_folder",
            {},
            lambda d, out: ((d / "role.md").unlink(), (d / "role.md").mkdir()),
            "role.md is a folder, not a regular file",
        ),
        (
            "role_not_utf8",
            {},
            lambda d, out: (d / "role.md").write_bytes(b"\xff\xfe role"),
            "role.md cannot be read: 'utf-8' codec can't decode byte 0xff in position 0: "
            "invalid start byte",
        ),
    ],
)
def test_a_file_the_system_reads_must_be_a_plain_single_capped_file(
    tmp_path: Path,
    name: str,
    manifest: dict[str, Any],
    build: Callable[[Path, Path], object],
    reason: str,
    resolver: str,
) -> None:
    apps, out = tmp_path / "apps", tmp_path / "outside"
    out.mkdir()
    (out / "secret.md").write_text(SECRET)
    (out / "manifest.json").write_text(json.dumps({"name": "X", "entry": "main.py"}))
    (out / "main.py").write_text("print('outside')\n")
    d = make_reader(apps, name, **manifest)
    build(d, out)
    assert invalid_reason(apps, name) == reason
    assert SECRET not in reason


def test_a_fifo_role_md_cannot_block_the_launcher(tmp_path: Path) -> None:
    apps = tmp_path / "apps"
    d = make_reader(apps, "fifo")
    (d / "role.md").unlink()
    os.mkfifo(d / "role.md")
    make_reader(apps, "plain")
    launcher = Launcher(
        apps,
        tmp_path / "data",
        Config(apps={"confinement": "off"}),
        system_url="http://127.0.0.1:9",
        port_map_path=tmp_path / "data" / "port_map.json",
        watch_interval=3600,
    )
    # Opened without O_NONBLOCK, a FIFO with no writer never opens: start() would hang.
    started = threading.Thread(target=launcher.start, daemon=True)
    started.start()
    try:
        wait_for(lambda: not started.is_alive(), "the launcher to start", APP_START_TIMEOUT)
        fifo = launcher.get("fifo")
        assert fifo.status == AppStatus.INVALID
        assert fifo.error == "role.md is a FIFO (named pipe), not a regular file"
        assert launcher.get("plain").status == AppStatus.RUNNING
    finally:
        launcher.stop()


def test_a_device_or_socket_role_md_is_refused(tmp_path: Path, resolver: str) -> None:
    apps = tmp_path / "apps"
    dev = make_reader(apps, "device")
    (dev / "role.md").unlink()
    try:
        os.mknod(dev / "role.md", stat.S_IFCHR | 0o644, os.makedev(1, 5))  # /dev/zero
    except PermissionError:
        pytest.skip("device nodes cannot be made here (not root)")
    sock_app = make_reader(apps, "sock")
    (sock_app / "role.md").unlink()
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_app / "role.md"))
        assert invalid_reason(apps, "device") == (
            "role.md is a character device, not a regular file"
        )
        assert invalid_reason(apps, "sock") == "role.md is a socket, not a regular file"


WORKDIR_NOT_SUB = (
    "workdir {!r} is not a subfolder of the app folder: the app could then rewrite "
    "its own code and manifest; use a subfolder such as workspace"
)


@pytest.mark.parametrize(
    ("manifest", "build", "reason"),
    [
        ({"workdir": "."}, None, WORKDIR_NOT_SUB.format(".")),
        ({"workdir": ""}, None, WORKDIR_NOT_SUB.format("")),
        ({"workdir": "./"}, None, WORKDIR_NOT_SUB.format("./")),
        (
            {"workdir": "code", "entry": "code/main.py"},
            lambda d, out: ((d / "code").mkdir(), (d / "main.py").rename(d / "code/main.py")),
            "workdir 'code' holds the app's own file 'code/main.py': the app could "
            "rewrite it; keep the workdir apart from the app's files",
        ),
        (
            {"workdir": "assets", "icon": "assets/icon.png"},
            lambda d, out: ((d / "assets").mkdir(), (d / "assets/icon.png").write_bytes(b"p")),
            "workdir 'assets' holds the app's own file 'assets/icon.png': the app could "
            "rewrite it; keep the workdir apart from the app's files",
        ),
        (
            {"workdir": "data/ws"},
            lambda d, out: (d / "data").symlink_to(out),
            "workdir 'data/ws' is or passes through a symbolic link; "
            "the workdir must be a plain subfolder of the app folder",
        ),
        (
            {"workdir": "ws"},
            lambda d, out: (d / "ws").symlink_to(out),
            "workdir 'ws' is or passes through a symbolic link; "
            "the workdir must be a plain subfolder of the app folder",
        ),
        (
            {"workdir": "notes.txt"},
            lambda d, out: (d / "notes.txt").write_text("x"),
            "workdir 'notes.txt' exists and is not a folder",
        ),
    ],
)
def test_the_workdir_is_a_strict_subfolder_holding_none_of_the_apps_files(
    tmp_path: Path,
    manifest: dict[str, Any],
    build: Callable[[Path, Path], object] | None,
    reason: str,
    resolver: str,
) -> None:
    apps, out = tmp_path / "apps", tmp_path / "outside"
    out.mkdir()
    d = make_reader(apps, "app", **manifest)
    if build is not None:
        build(d, out)
    assert invalid_reason(apps, "app") == reason
    assert list(out.iterdir()) == []  # nothing was created through a link
