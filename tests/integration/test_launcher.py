"""The launcher with real app processes on real loopback ports (spec §3.4, §5.3, §11, §14.2).

Apps are built in a tmp apps dir from ``tests/fixtures/apps_launcher/``:
``steered_app.py`` misbehaves on demand through ``behave.json`` in its
folder, ``flask_app.py`` has the spec's §13.3 Flask shape.
"""

from __future__ import annotations

import json
import logging
import resource
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import requests

from aios.apphost.registry import AppRecord, AppStatus, Launcher, RestartPolicy
from aios.config import PROJECT_ROOT, Config
from aios.errors import AppNotFound
from tests.util import wait_for

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "apps_launcher"
FAST = RestartPolicy(restart_limit=2, stable_start_time=10, backoff_initial=0.05, backoff_max=0.2)
SYSTEM_URL = "http://127.0.0.1:9"


# ------------------------------------------------------------------- helpers


def make_app(
    apps: Path,
    app_id: str,
    *,
    manifest: dict[str, Any] | None = None,
    behave: dict[str, Any] | None = None,
    script: str = "steered_app.py",
    role_md: str | None = None,
    raw_manifest: str | None = None,
) -> Path:
    """An app folder; ``manifest`` entries set to None are removed from the default."""
    d = apps / app_id
    d.mkdir(parents=True)
    shutil.copy(FIXTURES / script, d / "main.py")
    if behave is not None:
        (d / "behave.json").write_text(json.dumps(behave))
    if role_md is not None:
        (d / "role.md").write_text(role_md, encoding="utf-8")
    m: dict[str, Any] = {
        "name": app_id.replace("_", " ").title(),
        "entry": "main.py",
        "role_prompt": f"You are the {app_id} app.",
    }
    for k, v in (manifest or {}).items():
        if v is None:
            m.pop(k, None)
        else:
            m[k] = v
    (d / "manifest.json").write_text(
        raw_manifest if raw_manifest is not None else json.dumps(m, ensure_ascii=False),
        encoding="utf-8",
    )
    return d


def write_manifest(d: Path, **fields: Any) -> None:
    m = json.loads((d / "manifest.json").read_text())
    m.update(fields)
    m = {k: v for k, v in m.items() if v is not None}
    (d / "manifest.json").write_text(json.dumps(m))


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@contextmanager
def no_file_descriptors() -> Iterator[None]:
    """Every open() of this process fails with EMFILE meanwhile (as under a busy machine)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (0, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def launches(d: Path) -> list[int]:
    f = d / "workspace" / "launches.txt"
    return [int(x) for x in f.read_text().split()] if f.exists() else []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(port: int, path: str = "/") -> Any:
    return requests.get(f"http://127.0.0.1:{port}{path}", timeout=5).json()


class Events:
    """What the launcher reported through its callbacks."""

    def __init__(self) -> None:
        self.status: list[tuple[str, AppStatus]] = []
        self.stopped: list[str] = []

    def on_status(self, rec: AppRecord) -> None:
        self.status.append((rec.id, rec.status))

    def of(self, app_id: str) -> list[AppStatus]:
        return [s for i, s in self.status if i == app_id]


@pytest.fixture
def apps(tmp_path: Path) -> Path:
    d = tmp_path / "apps"
    d.mkdir()
    return d


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def make_launcher(tmp_path: Path, apps: Path, events: Events) -> Iterator[Callable[..., Launcher]]:
    made: list[Launcher] = []

    def make(
        *,
        start_timeout: float = 15,
        policy: RestartPolicy = FAST,
        grace: float = 1.0,
        watch_interval: float = 3600,
        confinement: str = "off",
    ) -> Launcher:
        # The launcher's mechanics (restarts, reloads, stops) are the same either
        # way; "off" lets the fixture apps write their pids into their own folder
        # (read-only when confined) as host pids. Confined launches are tested in
        # test_confinement.py, test_orphans.py and test_app_limits.py.
        launcher = Launcher(
            apps,
            tmp_path / "data",
            Config(app_start_timeout=start_timeout, apps={"confinement": confinement}),
            system_url=SYSTEM_URL,
            port_map_path=tmp_path / "data" / "port_map.json",
            on_status=events.on_status,
            on_stop=events.stopped.append,
            restart_policy=policy,
            stop_grace=grace,
            watch_interval=watch_interval,
        )
        made.append(launcher)
        return launcher

    yield make
    for launcher in made:
        launcher.stop()


# ------------------------------------------------------------------ discovery


def test_every_folder_is_listed_and_invalid_ones_say_exactly_why(
    tmp_path: Path, apps: Path, make_launcher: Callable[..., Launcher]
) -> None:
    make_app(apps, "good")
    make_app(apps, "bad_json", raw_manifest='{ "name": "x",, }')
    make_app(apps, "not_object", raw_manifest="[1, 2]")
    make_app(apps, "no_entry_field", manifest={"entry": None})
    make_app(apps, "entry_missing", manifest={"entry": "nope.py"})
    make_app(apps, "workdir_dotdot", manifest={"workdir": "../elsewhere"})
    outside = tmp_path / "outside"
    outside.mkdir()
    link_app = make_app(apps, "workdir_link", manifest={"workdir": "data/ws"})
    (link_app / "data").symlink_to(outside)
    make_app(apps, "no_role", manifest={"role_prompt": None})
    (apps / "no_manifest").mkdir()
    make_app(apps, "Bad Name")
    make_app(apps, ".hidden")
    make_app(apps, "_private")
    (apps / "stray_file.txt").write_text("not an app")

    launcher = make_launcher()
    launcher.start()

    by_id = {r.id: r for r in launcher.apps()}
    assert sorted(by_id) == sorted(
        [
            "good",
            "bad_json",
            "not_object",
            "no_entry_field",
            "entry_missing",
            "workdir_dotdot",
            "workdir_link",
            "no_role",
            "no_manifest",
            "Bad Name",
        ]
    )
    errors = {i: r.error for i, r in by_id.items() if r.status == AppStatus.INVALID}
    assert errors == {
        "bad_json": "manifest.json is not valid JSON: line 1 column 15: "
        "Expecting property name enclosed in double quotes",
        "not_object": "manifest.json must hold a JSON object, not list",
        "no_entry_field": "invalid manifest: entry: Field required",
        "entry_missing": "entry file 'nope.py' not found in the app folder",
        "workdir_dotdot": "invalid manifest: workdir: Value error, must be a path inside the "
        "app folder (got '../elsewhere')",
        "workdir_link": "workdir 'data/ws' is or passes through a symbolic link; "
        "the workdir must be a plain subfolder of the app folder",
        "no_role": 'no role prompt: set "role_prompt" in manifest.json or add a non-empty role.md',
        "no_manifest": "no manifest.json in the app folder",
        "Bad Name": "folder name 'Bad Name' is not a valid app id: it must match "
        "[a-z0-9_][a-z0-9_-]* (lowercase letters, digits, '_' and '-')",
    }
    # Invalid apps got no process, no port, no log; nothing was created through the symlink.
    assert all(r.pid is None and r.port is None for i, r in by_id.items() if i in errors)
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "data" / "logs").iterdir()) == ["good.log"]
    good = by_id["good"]
    assert good.status == AppStatus.RUNNING and alive(good.pid)
    assert get_json(good.port)["app"] == "good"
    assert launcher.ready()
    # What the desktop sees: the reason, never a token.
    pub = {p["id"]: p for p in (r.public() for r in launcher.apps())}
    assert pub["no_role"]["status"] == "invalid" and pub["no_role"]["error"] == errors["no_role"]
    assert "error" not in pub["good"] and good.token and good.token not in json.dumps(pub)
    assert good.launch_secret and good.launch_secret not in json.dumps(pub)
    assert set(pub["good"]) == {
        "id",
        "name",
        "names",
        "icon",
        "description",
        "descriptions",
        "examples",
        "status",
        "port",
        "endpoint",
        "keywords",
        "permissions",
        "confined",
    }
    assert pub["good"]["confined"] is False
    assert launcher.route_table() == {
        "good": {"name": "Good", "port": good.port, "endpoint": "/handle"}
    }


def test_role_prompt_comes_from_manifest_else_role_md_and_workdir_is_created(
    apps: Path, make_launcher: Callable[..., Launcher]
) -> None:
    make_app(
        apps,
        "from_md",
        manifest={"role_prompt": None, "workdir": "state/ws"},
        role_md="  你是一个音乐小AI。\n",
    )
    make_app(apps, "both", role_md="ignored: the manifest wins")
    make_app(apps, "blank_md", manifest={"role_prompt": ""}, role_md=" \n\n")

    launcher = make_launcher()
    launcher.start()

    from_md, both, blank = (launcher.get(i) for i in ("from_md", "both", "blank_md"))
    assert from_md.role_prompt == "你是一个音乐小AI。"
    assert from_md.workdir == (apps / "from_md" / "state" / "ws").resolve()
    assert from_md.workdir.is_dir() and from_md.status == AppStatus.RUNNING
    assert both.role_prompt == "You are the both app."
    assert blank.status == AppStatus.INVALID
    assert blank.error == (
        'no role prompt: set "role_prompt" in manifest.json or add a non-empty role.md'
    )


# ---------------------------------------------------------------------- ports


def test_ports_come_from_manifest_then_previous_port_map_then_free(
    tmp_path: Path,
    apps: Path,
    make_launcher: Callable[..., Launcher],
    caplog: pytest.LogCaptureFixture,
) -> None:
    wanted, remembered, remembered_gone = free_port(), free_port(), free_port()
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    busy_port = busy.getsockname()[1]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "port_map.json").write_text(
        json.dumps({"c_previous": remembered, "uninstalled": remembered_gone})
    )
    make_app(apps, "a_manifest", manifest={"port": wanted})
    make_app(apps, "b_same_port", manifest={"port": wanted})
    make_app(apps, "c_previous")
    make_app(apps, "d_busy", manifest={"port": busy_port})
    make_app(apps, "e_any")
    make_app(apps, "f_flask", script="flask_app.py", manifest={"name": "Flask 应用"})

    launcher = make_launcher()
    try:
        with caplog.at_level(logging.WARNING, logger="aios.apphost.registry"):
            launcher.start()
    finally:
        busy.close()

    port = {r.id: r.port for r in launcher.apps()}
    assert port["a_manifest"] == wanted
    assert port["c_previous"] == remembered
    assert len(set(port.values())) == len(port)
    assert port["b_same_port"] != wanted and port["d_busy"] != busy_port
    assert (
        f"app b_same_port: port {wanted} (manifest) is already assigned to a_manifest"
        in caplog.text
    )
    assert f"app d_busy: port {busy_port} (manifest) is in use by another program" in caplog.text
    assert all(r.status == AppStatus.RUNNING for r in launcher.apps())
    # Each app really serves on the port the launcher gave it.
    for app_id in ("a_manifest", "b_same_port", "c_previous", "d_busy", "e_any"):
        assert get_json(port[app_id])["app"] == app_id
    reply = requests.post(
        launcher.url("f_flask") + "/handle", json={"instruction": "hi"}, timeout=5
    ).json()
    assert reply["data"]["text"] == "echo: hi"
    # port_map.json is the spec's flat map (§14.2); routes.json is the route table.
    assert json.loads((tmp_path / "data" / "port_map.json").read_text()) == port
    routes = json.loads((tmp_path / "data" / "routes.json").read_text())
    assert routes == launcher.route_table()
    assert routes["f_flask"] == {
        "name": "Flask 应用",
        "port": port["f_flask"],
        "endpoint": "/handle",
    }
    assert launcher.ports() == set(port.values())
    assert launcher.url("e_any") == f"http://127.0.0.1:{port['e_any']}"
    with pytest.raises(AppNotFound, match="no app 'nope'"):
        launcher.url("nope")


def test_apps_start_in_parallel(apps: Path, make_launcher: Callable[..., Launcher]) -> None:
    for i in range(10):
        make_app(apps, f"app{i}", behave={"listen_delay": 1.0})
    launcher = make_launcher()
    launcher.start()

    recs = launcher.apps()
    assert [r.status for r in recs] == [AppStatus.RUNNING] * 10
    assert launcher.ready()
    # Had they started one after another, app N+1 would spawn after app N was ready.
    assert max(r.spawned_at for r in recs) < min(r.ready_at for r in recs)


def test_app_env_has_its_settings_and_none_of_the_system_secrets(
    apps: Path, make_launcher: Callable[..., Launcher], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "DEEPSEEK_API_KEY": "sk-deepseek",
        "AIOS_LLM_API_KEY": "sk-llm",
        "AIOS_LLM_BASE_URL": "https://llm.example",
        "AIOS_TOKEN": "desk-token",
        "GITHUB_TOKEN": "ghp-x",
        "MY_DB_PASSWORD": "hunter2",
        "LAUNCHER_TEST_VISIBLE": "yes",
    }.items():
        monkeypatch.setenv(name, value)
    d = make_app(apps, "envy", behave={"env_dump": "env.json"})
    launcher = make_launcher()
    launcher.start()

    rec = launcher.get("envy")
    env = json.loads((d / "workspace" / "env.json").read_text())
    assert env["APP_PORT"] == str(rec.port)
    assert env["AIOS_APP_ID"] == "envy"
    assert env["AIOS_SYSTEM_URL"] == SYSTEM_URL
    assert env["AIOS_APP_TOKEN"] == rec.token and len(rec.token) >= 32
    assert env["AIOS_WORKDIR"] == str((d / "workspace").resolve())
    assert env["PYTHONUNBUFFERED"] == "1"
    assert str(PROJECT_ROOT) in env["PYTHONPATH"].split(":")
    assert env["__aios_importable"] == "True"
    assert env["LAUNCHER_TEST_VISIBLE"] == "yes"
    leaked = {
        "DEEPSEEK_API_KEY",
        "AIOS_LLM_API_KEY",
        "AIOS_LLM_BASE_URL",
        "AIOS_TOKEN",
        "GITHUB_TOKEN",
        "MY_DB_PASSWORD",
    } & set(env)
    assert leaked == set()
    assert not {"sk-deepseek", "sk-llm", "desk-token", "ghp-x", "hunter2"} & set(env.values())

    # The token identifies the app, and only for this launch.
    old_token, old_pid = rec.token, rec.pid
    assert launcher.by_token(old_token) is rec
    assert launcher.by_token(old_token + "x") is None and launcher.by_token("") is None
    launcher.restart("envy")
    assert rec.status == AppStatus.RUNNING and rec.pid != old_pid and not alive(old_pid)
    assert rec.token != old_token and launcher.by_token(old_token) is None
    assert json.loads((d / "workspace" / "env.json").read_text())["AIOS_APP_TOKEN"] == rec.token
    with pytest.raises(AppNotFound):
        launcher.restart("nope")

    # Stopping one app ends its process and its token; restart brings it back.
    pid, token = rec.pid, rec.token
    launcher.stop_app("envy")
    assert rec.status == AppStatus.STOPPED and not alive(pid)
    assert launcher.by_token(token) is None and rec.pid is None
    launcher.restart("envy")
    assert rec.status == AppStatus.RUNNING and alive(rec.pid)


# ---------------------------------------------------------------- supervision


def test_app_crashing_at_start_is_retried_then_failed_with_its_log_tail(
    tmp_path: Path, apps: Path, make_launcher: Callable[..., Launcher], events: Events
) -> None:
    d = make_app(apps, "crashy", behave={"exit_at_start": 7})
    make_app(apps, "fine")
    launcher = make_launcher()
    launcher.start()

    rec = launcher.get("crashy")
    assert rec.status == AppStatus.FAILED and launcher.ready()
    assert rec.error.startswith("crashed 3 times; last log lines:\n")
    assert "boom: deliberate crash at start (launch 3)" in rec.error
    assert "exited with code 7" in rec.error
    assert len(launches(d)) == 3 and rec.restarts == 2
    assert events.of("crashy") == [AppStatus.STARTING, AppStatus.RESTARTING, AppStatus.FAILED]
    assert "crashy" in events.stopped  # the system can drop its background processes
    assert rec.pid is None and rec.token == "" and not any(alive(p) for p in launches(d))
    assert launcher.get("fine").status == AppStatus.RUNNING
    log_text = (tmp_path / "data" / "logs" / "crashy.log").read_text()
    assert log_text.count("launch crashy on port") == 3

    # Once the app is fixed, a restart brings it back.
    (d / "behave.json").write_text("{}")
    launcher.restart("crashy")
    assert rec.status == AppStatus.RUNNING and rec.error is None and rec.restarts == 0
    assert get_json(rec.port)["pid"] == rec.pid


def test_app_crashing_while_running_is_restarted_on_the_same_port(
    tmp_path: Path, apps: Path, make_launcher: Callable[..., Launcher], events: Events
) -> None:
    d = make_app(apps, "flaky", behave={"crash_after": 0.3, "crash_launches": 1})
    launcher = make_launcher()
    launcher.start()
    rec = launcher.get("flaky")
    first_pid, port, first_token = rec.pid, rec.port, rec.token

    wait_for(
        lambda: len(launches(d)) == 2 and rec.status == AppStatus.RUNNING,
        what="restart after the crash",
    )
    assert rec.pid != first_pid and not alive(first_pid)
    assert rec.port == port and rec.restarts == 1 and rec.token != first_token
    assert get_json(port)["pid"] == rec.pid
    assert events.of("flaky") == [
        AppStatus.STARTING,
        AppStatus.RUNNING,
        AppStatus.RESTARTING,
        AppStatus.RUNNING,
    ]
    log_text = (tmp_path / "data" / "logs" / "flaky.log").read_text()
    assert "boom: deliberate crash while running" in log_text
    assert "exited with code 3" in log_text


def test_a_crashed_apps_leftover_processes_die_before_it_restarts(
    apps: Path, make_launcher: Callable[..., Launcher]
) -> None:
    d = make_app(
        apps, "messy", behave={"grandchild": "group", "exit_at_start": 1, "crash_launches": 1}
    )
    launcher = make_launcher()
    launcher.start()

    assert launcher.get("messy").status == AppStatus.RUNNING and len(launches(d)) == 2
    orphan = int((d / "workspace" / "grandchild1.pid").read_text())
    assert not alive(orphan)  # it ignored SIGTERM and outlived its parent, but not the launcher
    assert alive(int((d / "workspace" / "grandchild2.pid").read_text()))


def test_runs_longer_than_stable_start_time_reset_the_crash_count(
    apps: Path, make_launcher: Callable[..., Launcher]
) -> None:
    d = make_app(apps, "periodic", behave={"crash_after": 0.3})
    policy = RestartPolicy(restart_limit=1, stable_start_time=0.2, backoff_initial=0.01)
    launcher = make_launcher(policy=policy)
    launcher.start()

    wait_for(lambda: len(launches(d)) >= 4, what="four launches")
    assert launcher.get("periodic").status != AppStatus.FAILED


def test_restart_policy_backoff_doubles_up_to_the_maximum() -> None:
    p = RestartPolicy()
    assert [p.backoff(n) for n in range(1, 7)] == [0.5, 1, 2, 4, 8, 8]
    assert (p.restart_limit, p.stable_start_time) == (3, 10.0)
    assert p.count_crash(3, run_seconds=11) == 1 and p.count_crash(3, run_seconds=1) == 4
    assert not p.gives_up(3) and p.gives_up(4)
    with pytest.raises(ValueError, match="restart_limit must be >= 0"):
        RestartPolicy(restart_limit=-1)


def test_app_that_never_listens_fails_after_the_start_timeout(
    apps: Path, make_launcher: Callable[..., Launcher]
) -> None:
    d = make_app(apps, "mute", behave={"never_listen": True})
    launcher = make_launcher(start_timeout=1.0)
    launcher.start()

    rec = launcher.get("mute")
    assert rec.status == AppStatus.FAILED
    assert rec.error.startswith(
        f"did not accept connections on port {rec.port} within 1 s; last log lines:\n"
    )
    assert len(launches(d)) == 1 and not alive(launches(d)[0])


# ----------------------------------------------------------------- hot reload


def test_hot_reload_loads_new_unloads_removed_and_restarts_changed(
    tmp_path: Path, apps: Path, make_launcher: Callable[..., Launcher], events: Events
) -> None:
    alpha = make_app(apps, "alpha", manifest={"role_prompt": None}, role_md="Role one.")
    launcher = make_launcher()
    launcher.start()
    port_map = tmp_path / "data" / "port_map.json"
    routes = tmp_path / "data" / "routes.json"
    rec_a = launcher.get("alpha")
    pid_a = rec_a.pid

    # New folder -> started.
    beta = make_app(apps, "beta")
    launcher.rescan()
    rec_b = wait_for(
        lambda: (r := launcher.get("beta")) and r.status == AppStatus.RUNNING and r,
        what="beta running",
    )
    assert json.loads(port_map.read_text()) == {"alpha": rec_a.port, "beta": rec_b.port}
    assert set(json.loads(routes.read_text())) == {"alpha", "beta"}

    # role.md edited -> restarted with the new role (never re-read into a running app).
    (alpha / "role.md").write_text("Role two.")
    launcher.rescan()
    wait_for(lambda: rec_a.status == AppStatus.RUNNING and rec_a.pid != pid_a, what="restart")
    assert rec_a.role_prompt == "Role two." and not alive(pid_a)
    pid_a = rec_a.pid

    # Manifest changed -> restarted with the new manifest.
    write_manifest(alpha, name="Alpha Two")
    launcher.rescan()
    wait_for(lambda: rec_a.status == AppStatus.RUNNING and rec_a.pid != pid_a, what="restart")
    assert not alive(pid_a) and rec_a.manifest.name == "Alpha Two"
    assert json.loads(routes.read_text())["alpha"]["name"] == "Alpha Two"
    assert get_json(rec_a.port)["pid"] == rec_a.pid

    # Manifest broken -> stopped and shown invalid; fixed -> back.
    pid_b = rec_b.pid
    write_manifest(beta, entry=None)
    launcher.rescan()
    assert rec_b.status == AppStatus.INVALID and not alive(pid_b)
    assert rec_b.error == "invalid manifest: entry: Field required"
    assert "beta" not in json.loads(routes.read_text()) and "beta" in events.stopped
    write_manifest(beta, entry="main.py")
    launcher.rescan()
    wait_for(lambda: rec_b.status == AppStatus.RUNNING, what="beta back")
    assert rec_b.error is None and get_json(rec_b.port)["app"] == "beta"

    # Folder removed -> process stopped, record dropped, maps rewritten.
    pid_a = rec_a.pid
    shutil.rmtree(alpha)
    launcher.rescan()
    assert launcher.get("alpha") is None and not alive(pid_a)
    assert events.of("alpha")[-1] == AppStatus.STOPPED
    assert json.loads(port_map.read_text()) == {"beta": rec_b.port}
    assert set(json.loads(routes.read_text())) == {"beta"}

    # A new folder with a broken manifest appears as invalid, nothing started.
    make_app(apps, "gamma", raw_manifest="{")
    launcher.rescan()
    assert launcher.get("gamma").status == AppStatus.INVALID
    assert launcher.get("gamma").error.startswith("manifest.json is not valid JSON")
    assert not (tmp_path / "data" / "logs" / "gamma.log").exists()


def test_watcher_thread_picks_up_changes_by_itself(
    apps: Path, make_launcher: Callable[..., Launcher]
) -> None:
    launcher = make_launcher(watch_interval=0.05)
    launcher.start()
    assert launcher.apps() == [] and launcher.ready()

    make_app(apps, "late")
    rec = wait_for(
        lambda: (r := launcher.get("late")) and r.status == AppStatus.RUNNING and r,
        what="late app running",
    )
    assert get_json(rec.port)["app"] == "late"
    pid = rec.pid
    shutil.rmtree(apps / "late")
    wait_for(lambda: launcher.get("late") is None, what="late app unloaded")
    wait_for(lambda: not alive(pid), what="late app's process gone")


# ------------------------------------------------------------------- shutdown


def test_stop_leaves_no_process_behind(
    tmp_path: Path, apps: Path, make_launcher: Callable[..., Launcher], events: Events
) -> None:
    stubborn = make_app(apps, "stubborn", behave={"ignore_term": True, "grandchild": "group"})
    escaper = make_app(apps, "escaper", behave={"grandchild": "session"})
    make_app(apps, "polite")
    make_app(apps, "broken", raw_manifest="{")
    launcher = make_launcher(grace=0.5)
    launcher.start()
    assert {r.id: r.status for r in launcher.apps()} == {
        "stubborn": AppStatus.RUNNING,
        "escaper": AppStatus.RUNNING,
        "polite": AppStatus.RUNNING,
        "broken": AppStatus.INVALID,
    }
    pids = [r.pid for r in launcher.apps() if r.pid]
    grandchildren = [
        int((d / "workspace" / "grandchild1.pid").read_text()) for d in (stubborn, escaper)
    ]
    assert len(pids) == 3 and all(alive(p) for p in pids + grandchildren)

    launcher.stop()

    assert not any(alive(p) for p in pids + grandchildren)
    assert {r.id: r.status for r in launcher.apps()} == {
        "stubborn": AppStatus.STOPPED,
        "escaper": AppStatus.STOPPED,
        "polite": AppStatus.STOPPED,
        "broken": AppStatus.INVALID,
    }
    assert sorted(events.stopped) == ["escaper", "polite", "stubborn"]
    logs = tmp_path / "data" / "logs"
    assert "stopped: killed" in (logs / "stubborn.log").read_text()
    assert "stopped: killed" in (logs / "escaper.log").read_text()
    assert "stopped: terminated" in (logs / "polite.log").read_text()
    assert all(r.token == "" and r.pid is None for r in launcher.apps())

    n = len(events.status)
    launcher.stop()  # idempotent
    assert len(events.status) == n
    with pytest.raises(RuntimeError, match="already started"):
        launcher.start()


# ------------------------------------------------------- faults: fds, readiness


def test_a_failed_listing_of_the_apps_folder_unloads_nothing(
    apps: Path,
    make_launcher: Callable[..., Launcher],
    events: Events,
    caplog: pytest.LogCaptureFixture,
) -> None:
    make_app(apps, "keep")
    launcher = make_launcher()
    launcher.start()
    pid = launcher.get("keep").pid
    with caplog.at_level(logging.INFO, logger="aios.apphost.registry"):
        with no_file_descriptors():
            launcher.rescan()  # cannot even list the folder: EMFILE
            launcher.rescan()
        launcher.rescan()
    rec = launcher.get("keep")
    assert rec is not None and rec.status == AppStatus.RUNNING and rec.pid == pid and alive(pid)
    assert events.of("keep") == [AppStatus.STARTING, AppStatus.RUNNING]
    messages = [r.getMessage() for r in caplog.records]
    failed = [m for m in messages if m.startswith("cannot read the apps folder")]
    assert len(failed) == 1 and "Too many open files" in failed[0]  # logged once per outage
    assert any("can be read again" in m for m in messages)
    assert not any("unloading" in m or "reloading" in m for m in messages)


def test_stop_kills_every_app_even_when_proc_cannot_be_read(
    apps: Path, make_launcher: Callable[..., Launcher], events: Events
) -> None:
    grouped = make_app(apps, "grouped", behave={"grandchild": "group", "ignore_term": True})
    make_app(apps, "plain")
    launcher = make_launcher(grace=0.5)
    launcher.start()
    pids = [r.pid for r in launcher.apps()] + [
        int((grouped / "workspace" / "grandchild1.pid").read_text())
    ]
    assert all(alive(p) for p in pids)
    with no_file_descriptors():  # psutil cannot read /proc; signals and wait() still work
        launcher.stop()
    assert not [p for p in pids if alive(p)]
    assert {r.id: r.status for r in launcher.apps()} == {
        "grouped": AppStatus.STOPPED,
        "plain": AppStatus.STOPPED,
    }


def test_not_ready_before_every_folder_has_been_discovered(tmp_path: Path, apps: Path) -> None:
    make_app(apps, "aaa_broken", raw_manifest="{")  # reported while discovery is under way
    make_app(apps, "zzz")
    seen: list[tuple[str, str, bool]] = []
    launcher = Launcher(
        apps,
        tmp_path / "data",
        Config(),
        system_url=SYSTEM_URL,
        port_map_path=tmp_path / "data" / "port_map.json",
        on_status=lambda rec: seen.append((rec.id, str(rec.status), launcher.ready())),
        restart_policy=FAST,
    )
    try:
        assert not launcher.ready()
        launcher.start()
        assert seen[0] == ("aaa_broken", "invalid", False)
        assert ("zzz", "starting", False) in seen
        assert launcher.ready()
    finally:
        launcher.stop()


def test_start_waits_at_most_ready_wait_then_the_app_carries_on(
    apps: Path, make_launcher: Callable[..., Launcher]
) -> None:
    make_app(apps, "mute", behave={"never_listen": True})
    make_app(apps, "quick")
    launcher = make_launcher(start_timeout=3)
    began = time.monotonic()
    launcher.start(ready_wait=0.5)
    waited = time.monotonic() - began
    assert waited < 3, f"start waited {waited:.1f} s for an app that never listens"
    # "quick" may still be starting on a busy machine; "mute" certainly is.
    assert launcher.get("mute").status == AppStatus.STARTING and not launcher.ready()
    wait_for(lambda: launcher.get("mute").status == AppStatus.FAILED, "mute failed", 15)
    wait_for(launcher.ready, "ready once every app settled", 15)
    assert launcher.get("quick").status == AppStatus.RUNNING
