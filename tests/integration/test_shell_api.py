"""The desktop shell's server side (issue 13): an icon's "restart", the About box's version."""

from __future__ import annotations

from collections.abc import Callable

import psutil

from tests.integration.conftest import Running


def test_restart_starts_the_app_afresh_and_health_names_the_version(
    make_system: Callable[..., Running],
) -> None:
    running = make_system(["echo"])
    before = running.system.launcher.get("echo")
    assert before is not None and before.pid
    old_pid = before.pid
    r = running.post("/api/apps/echo/restart", {})
    assert r.status_code == 200, r.text
    assert r.json() == {"app": "echo", "status": "running"}
    after = running.system.launcher.get("echo")
    assert after is not None and after.pid and after.pid != old_pid
    assert not psutil.pid_exists(old_pid) or psutil.Process(old_pid).status() == "zombie"
    assert running.open("echo")["response"]["status"] == "ok"  # the new process answers
    missing = running.post("/api/apps/nope/restart", {})
    assert missing.status_code == 404 and "nope" in missing.json()["error"], missing.text
    version = running.get("/api/health").json()["version"]
    assert version and version[0].isdigit(), version
