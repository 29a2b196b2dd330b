"""Permissions are granted, not taken (DESIGN §11.7): the real system, the real bundled
system_agent and monitor processes, real HTTP, a real SQLite store across restarts."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.events import Subscription
from tests.conftest import ROOT
from tests.integration.conftest import Running, copy_apps

HIDE_CLOCK = {"ops": [{"op": "hide", "id": "clock"}]}
REFUSAL = (
    "permission 'desktop.control' is not granted to system_agent; "
    "grant it in Settings → App permissions"
)


@pytest.fixture
def apps_dir(tmp_path: Path) -> Path:
    return copy_apps(tmp_path / "apps", ["system_agent", "monitor"], source=ROOT / "apps")


@pytest.fixture
def running(make_system: Callable[..., Running], apps_dir: Path) -> Running:
    return make_system(apps_dir=apps_dir)


@pytest.fixture
def events(running: Running) -> Iterator[Subscription]:
    sub = running.system.bus.subscribe()
    yield sub
    sub.close()


def as_app(
    running: Running, app: str, method: str, path: str, body: Any = None
) -> requests.Response:
    """Call the app-facing API with the app's own token, as its SDK does."""
    record = running.system.launcher.get(app)
    assert record is not None and record.token
    return requests.request(
        method,
        running.url + path,
        json=body,
        timeout=20,
        headers={"Authorization": f"Bearer {record.token}"},
    )


def permissions(running: Running, app: str) -> dict[str, list[str]]:
    listed = {a["id"]: a for a in running.get("/api/apps").json()}
    perms: dict[str, list[str]] = listed[app]["permissions"]
    return perms


def change(running: Running, app: str, **body: list[str]) -> requests.Response:
    return running.post(f"/api/apps/{app}/permissions", body)


def drain(sub: Subscription) -> list[dict[str, Any]]:
    """Events already emitted (emit is synchronous: they are queued before a reply leaves)."""
    out = []
    while (event := sub.get(timeout=0)) is not None:
        out.append(event)
    return out


def test_apps_list_requested_and_granted_from_the_shipped_defaults(running: Running) -> None:
    assert permissions(running, "system_agent") == {
        "requested": ["desktop.control"],
        "granted": ["desktop.control"],
    }
    assert permissions(running, "monitor") == {
        "requested": ["system.processes"],
        "granted": ["system.processes"],
    }


def test_a_revoked_ui_permission_is_refused_at_once_and_the_user_told_once(
    running: Running, events: Subscription
) -> None:
    assert as_app(running, "system_agent", "POST", "/api/sys/ui", HIDE_CLOCK).status_code == 200
    r = change(running, "system_agent", revoke=["desktop.control"])
    assert r.status_code == 200, r.text
    assert r.json()["permissions"] == {"requested": ["desktop.control"], "granted": []}
    drain(events)
    for _ in range(3):
        refused = as_app(running, "system_agent", "POST", "/api/sys/ui", HIDE_CLOCK)
        assert refused.status_code == 403 and refused.json()["error"] == REFUSAL
    seen = drain(events)
    notices = [e for e in seen if e["type"] == "notify"]
    assert len(notices) == 1, notices
    assert notices[0]["permission"] == {"app": "system_agent", "name": "desktop.control"}
    # in the UI language (zh-CN by default), naming the app, the permission and the page
    assert (notices[0]["app_name"], notices[0]["title"]) == ("系统", "需要权限")
    assert notices[0]["body"] == (
        "system_agent 需要“desktop.control”权限：请在 设置 → 应用权限 里授予"
    )
    assert not [e for e in seen if e["type"] == "ui_op"]  # nothing reached the desktop

    # reading the desktop's snapshot is refused the same way, at once
    snapshot = as_app(
        running,
        "system_agent",
        "POST",
        "/api/sys/tool",
        {"tool": "cache_get", "args": {"key": "desktop:ui_snapshot"}},
    ).json()
    assert snapshot["status"] == "error" and REFUSAL in snapshot["error"]

    assert change(running, "system_agent", grant=["desktop.control"]).status_code == 200
    again = as_app(running, "system_agent", "POST", "/api/sys/ui", HIDE_CLOCK)
    assert again.status_code == 200 and again.json()["applied"] == 1


def test_bad_changes_are_400_naming_the_problem_and_an_unknown_app_404(running: Running) -> None:
    r = change(running, "system_agent", grant=["network"])
    assert r.status_code == 400
    assert "'network' cannot be granted to system_agent" in r.json()["error"]
    r = change(running, "system_agent", grant=["root"])
    assert r.status_code == 400
    assert r.json()["error"] == (
        "unknown permission 'root' (permissions: conversation.read, desktop.control, network, "
        "system.processes, memory.read, memory.write, or domain:<host> for a destination)"
    )
    r = change(running, "nobody", revoke=["desktop.control"])
    assert r.status_code == 404 and "nobody" in r.json()["error"]
    r = running.post("/api/apps/system_agent/permissions", {"grant": "desktop.control"})
    assert r.status_code == 400 and "'grant' must be a list" in r.json()["error"]
    assert permissions(running, "system_agent")["granted"] == ["desktop.control"]
    # the desktop's token is needed: the app's own token does not do
    r = as_app(
        running,
        "system_agent",
        "POST",
        "/api/apps/system_agent/permissions",
        {"grant": ["desktop.control"]},
    )
    assert r.status_code == 401


def test_a_change_is_audited_as_the_users_decision(running: Running) -> None:
    assert change(running, "monitor", revoke=["system.processes"]).status_code == 200
    rows = [r for r in running.get("/api/audit?app=monitor").json() if r["tool"] == "permissions"]
    assert len(rows) == 1 and rows[0]["status"] == "ok"
    args = json.loads(rows[0]["args"]) if isinstance(rows[0]["args"], str) else rows[0]["args"]
    assert args == {"grant": [], "revoke": ["system.processes"], "decision": "user"}
    # no change, no audit row
    assert change(running, "monitor", revoke=["system.processes"]).status_code == 200
    assert (
        len([r for r in running.get("/api/audit?app=monitor").json() if r["tool"] == "permissions"])
        == 1
    )


def test_a_revocation_persists_across_a_restart(
    make_system: Callable[..., Running], apps_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    first = make_system(apps_dir=apps_dir, data_dir=data)
    assert change(first, "system_agent", revoke=["desktop.control"]).status_code == 200
    first.stop()
    second = make_system(apps_dir=apps_dir, data_dir=data)
    assert permissions(second, "system_agent") == {"requested": ["desktop.control"], "granted": []}
    assert permissions(second, "monitor")["granted"] == ["system.processes"]
    refused = as_app(second, "system_agent", "POST", "/api/sys/ui", HIDE_CLOCK)
    assert refused.status_code == 403 and refused.json()["error"] == REFUSAL


def test_the_process_list_needs_system_processes_and_hides_cmdline_and_environ(
    running: Running,
) -> None:
    r = as_app(running, "monitor", "GET", "/api/sys/processes")
    assert r.status_code == 200, r.text
    procs = r.json()["processes"]
    mine = [p for p in procs if p["pid"] == os.getpid()]
    assert len(mine) == 1 and mine[0]["memory_rss"] > 0
    assert set(mine[0]) == {
        "pid",
        "name",
        "user",
        "cpu_percent",
        "memory_rss",
        "memory_percent",
        "started",
        "endable",
    }
    assert mine[0]["endable"] is False  # the system's own process ("end task" refuses it)
    assert "cmdline" not in r.text and "environ" not in r.text

    refused = as_app(running, "system_agent", "GET", "/api/sys/processes")
    assert refused.status_code == 403
    assert refused.json()["error"] == (
        "permission 'system.processes' is not granted to "
        "system_agent; grant it in Settings → App permissions"
    )
    assert change(running, "monitor", revoke=["system.processes"]).status_code == 200
    r = as_app(running, "monitor", "GET", "/api/sys/processes")
    assert r.status_code == 403 and "'system.processes' is not granted to monitor" in r.text
    # the monitor's own dashboard says so instead of listing processes
    reply = running.open("monitor")["response"]
    assert reply["status"] == "error" and "system.processes" in reply["message"]
