"""A real system for integration tests: real app processes started by the real
launcher from a temporary apps dir, the real HTTP server on 127.0.0.1."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.config import validate_config
from aios.events import Subscription
from aios.system import System
from aios.web import ServerThread, create_app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SYSTEM_APPS = FIXTURES / "apps_system"
TOKEN = "test-launch-token"


@dataclass
class Running:
    system: System
    server: ServerThread
    apps_dir: Path
    data_dir: Path
    http: requests.Session = field(default_factory=requests.Session)

    @property
    def url(self) -> str:
        return self.system.url

    def get(self, path: str, **kw: Any) -> requests.Response:
        return self.http.get(self.url + path, timeout=kw.pop("timeout", 20), **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> requests.Response:
        return self.http.post(self.url + path, json=body, timeout=kw.pop("timeout", 20), **kw)

    def open(self, app: str, session_id: str | None = None) -> dict[str, Any]:
        r = self.post(f"/api/apps/{app}/open", {"session_id": session_id} if session_id else {})
        assert r.status_code == 200, r.text
        return r.json()

    def act(
        self, app: str, payload: dict[str, Any], session_id: str | None = None
    ) -> dict[str, Any]:
        """POST /api/action as the desktop does; the app's (validated) reply."""
        body: dict[str, Any] = {"app": app, **payload}
        if session_id:
            body["session_id"] = session_id
        r = self.post("/api/action", body)
        assert r.status_code == 200, r.text
        return r.json()["response"]

    def instruct(self, text: str, session_id: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"text": text}
        if session_id:
            body["session_id"] = session_id
        r = self.post("/api/instruction", body)
        assert r.status_code == 200, r.text
        return r.json()

    def app_session(self) -> requests.Session:
        """A session that reaches apps as the system does (a confined app over its socket)."""
        session = requests.Session()
        session.trust_env = False
        self.system.launcher.mount(session)
        return session

    def stop(self) -> None:
        self.server.shutdown()
        self.system.stop()
        self.http.close()


FINAL_VIEW_WAIT = 20.0
"""Seconds a test waits for the final view of a run that waited for the user."""


def final_view(
    sub: Subscription, run_id: str, app: str | None = None, wait: float = FINAL_VIEW_WAIT
) -> dict[str, Any]:
    """The ``view`` event a run that waited ends with (DESIGN §12); of ``app`` if given."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        ev = sub.get(timeout=max(0.0, deadline - time.monotonic()))
        if ev and ev.get("type") == "view" and ev.get("run_id") == run_id:
            if app is None or ev.get("app") == app:
                response: dict[str, Any] = ev["response"]
                return response
    raise AssertionError(f"no final view for {run_id} within {wait}s")


def copy_apps(dest: Path, names: list[str], source: Path = SYSTEM_APPS) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copytree(source / name, dest / name)
    return dest


def start_system(apps_dir: Path, data_dir: Path, *, port: int = 0, **overrides: Any) -> Running:
    raw: dict[str, Any] = {
        "apps_dir": str(apps_dir),
        "data_dir": str(data_dir),
        "handle_timeout": 3,
        "app_start_timeout": 20,
        "max_rounds": 4,
        "llm": {"api_key": ""},
        # The apps' own tests see their plans run at once; asking the user (the
        # default "smart" mode) is tested in test_runs.py and the e2e tests.
        "approvals": {"mode": "auto"},
        # Tests talk to the apps they copied as soon as the system is up: every one
        # starts with it (apps started on demand are tested in test_app_start.py).
        "apps": {"autostart": "all"},
    }
    for k, v in overrides.items():
        raw[k] = {**raw[k], **v} if isinstance(v, dict) and isinstance(raw.get(k), dict) else v
    config = validate_config(raw)
    server = ServerThread(port, request_timeout=config.web.request_timeout)
    system = System(config, port=server.port, token=TOKEN)
    server.attach(create_app(system))
    server.start()
    try:
        system.start()
    except BaseException:
        server.shutdown()
        system.stop()
        raise
    running = Running(system, server, apps_dir, data_dir)
    running.http.headers["Authorization"] = f"Bearer {TOKEN}"
    return running


@pytest.fixture
def make_system(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    started: list[Running] = []

    def make(
        apps: list[str] | None = None,
        *,
        apps_dir: Path | None = None,
        data_dir: Path | None = None,
        apps_config: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> Running:
        """``apps_config`` is the config's ``apps`` section (``apps`` names the folders)."""
        if apps_config is not None:
            overrides["apps"] = apps_config
        if apps_dir is None:
            apps_dir = copy_apps(tmp_path / f"apps{len(started)}", apps or [])
        running = start_system(apps_dir, data_dir or tmp_path / "data", **overrides)
        started.append(running)
        return running

    yield make
    for running in started:
        running.stop()


@pytest.fixture
def system_all(make_system: Callable[..., Running]) -> Running:
    return make_system(["echo", "stepper", "slow", "bad"])
