"""The request path's kept connections (issue 27 item 4) never reach the wrong process.

The system keeps its connections to each app alive between calls, one pool per app
launch (aios/control/app_client.py). A restarted app must be reached in its new
process, never the old one; two apps never share a connection; a grant revoked
takes effect on the very next call made over a kept connection.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.integration.conftest import Running

WHO_APP = """\
import os
import secrets

from aios_sdk import AIOSAgent

BOOT = secrets.token_hex(8)  # one value per process


class Who(AIOSAgent):
    name = "Who"

    def handle(self, instruction, context, action_request=None):
        data = {"app": os.environ["AIOS_APP_ID"], "boot": BOOT}
        if action_request and action_request.get("action_id") == "procs":
            try:
                data["procs"] = len(self.processes())
            except Exception as e:
                data["procs"] = type(e).__name__
        return {"status": "ok", "view_type": "text", "data": data}


if __name__ == "__main__":
    Who().run()
"""


def who_apps(root: Path, *ids: str) -> Path:
    for app_id in ids:
        folder = root / app_id
        (folder / "workspace").mkdir(parents=True)
        (folder / "main.py").write_text(WHO_APP, encoding="utf-8")
        manifest = {
            "name": app_id,
            "entry": "main.py",
            "description": "says which process answers",
            "role_prompt": "You say who you are.",
            "permissions": ["system.processes"],
        }
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def who(running: Running, app: str, action: str = "who") -> dict[str, Any]:
    r = running.post("/api/action", {"app": app, "action_id": action})
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()["response"]["data"]
    return data


def test_a_restarted_app_is_reached_in_its_new_process_and_apps_never_mix(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    running = make_system(apps_dir=who_apps(tmp_path / "apps", "one", "two"))
    first = {app: who(running, app) for app in ("one", "two")}
    for _ in range(3):  # interleaved over kept connections: each app answers for itself
        for app in ("one", "two"):
            assert who(running, app) == first[app]
    assert first["one"]["boot"] != first["two"]["boot"]

    running.system.launcher.restart("one")
    again = who(running, "one")
    assert again["app"] == "one"
    assert again["boot"] != first["one"]["boot"]  # the new process, not a kept connection
    assert who(running, "two") == first["two"]  # the other app's connection is untouched


def test_a_revoked_grant_holds_on_the_next_call_over_a_kept_connection(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    running = make_system(apps_dir=who_apps(tmp_path / "apps", "one"))
    r = running.post("/api/apps/one/permissions", {"grant": ["system.processes"]})
    assert r.status_code == 200, r.text
    assert isinstance(who(running, "one", "procs")["procs"], int)
    assert isinstance(who(running, "one", "procs")["procs"], int)  # kept connections now
    r = running.post("/api/apps/one/permissions", {"revoke": ["system.processes"]})
    assert r.status_code == 200, r.text
    assert who(running, "one", "procs")["procs"] == "ToolRefused"
