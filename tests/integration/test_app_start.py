"""How apps start (issue 27): readiness is signalled, not polled.

Real parts: the real system starts real app processes — an SDK app, the spec's raw
Flask template and a server that listens from native code (``_socket``, which
Python's ``socket.socket.listen`` never sees) — confined in bubblewrap where it
works and unconfined; the desktop's own API reaches them.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from aios.host import os_sandbox
from tests.integration.conftest import FIXTURES, Running, copy_apps
from tests.util import ROOT, wait_for

SDK_APP = """\
from aios_sdk import AIOSAgent


class Minimal(AIOSAgent):
    name = "Minimal"

    def handle(self, instruction, context, action_request=None):
        return {"status": "ok", "view_type": "text", "data": {"content": "sdk says hi"}}


if __name__ == "__main__":
    Minimal().run()
"""

NATIVE_APP = """\
import _socket
import json
import os

# A server whose listen() Python's socket module never sees (as a C server's).
server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
server.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(os.environ["APP_PORT"])))
server.listen(16)
body = json.dumps({"status": "ok", "view_type": "text", "data": {"content": "native"}}).encode()
while True:
    fd = server._accept()[0]
    conn = _socket.socket(fileno=fd)
    data = b""
    while b"\\r\\n\\r\\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\\r\\n\\r\\n")
    length = 0
    for line in head.split(b"\\r\\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(rest) < length:
        rest += conn.recv(65536)
    conn.sendall(
        b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nConnection: close\\r\\n"
        + b"Content-Length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body
    )
    conn.close()
"""

CONFINEMENTS = [
    "off",
    pytest.param(
        "auto",
        marks=pytest.mark.skipif(
            os_sandbox.detect().bwrap is None, reason="bubblewrap cannot run here"
        ),
    ),
]


def write_app(apps: Path, app_id: str, source: str) -> None:
    folder = apps / app_id
    folder.mkdir(parents=True)
    (folder / "main.py").write_text(source, encoding="utf-8")
    manifest = {"name": app_id.title(), "entry": "main.py", "role_prompt": "You answer."}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def ready_lines(running: Running, app_id: str) -> list[str]:
    log = (running.data_dir / "logs" / f"{app_id}.log").read_text(encoding="utf-8")
    return [line for line in log.splitlines() if line.startswith("=====") and " ready " in line]


@pytest.mark.parametrize("confinement", CONFINEMENTS)
def test_every_kind_of_app_signals_that_it_listens_and_then_answers(
    tmp_path: Path, make_system: Callable[..., Running], confinement: str
) -> None:
    apps = tmp_path / "apps"
    write_app(apps, "sdk", SDK_APP)
    write_app(apps, "native", NATIVE_APP)
    (apps / "raw").mkdir(parents=True)
    shutil.copy(FIXTURES / "apps_launcher" / "flask_app.py", apps / "raw" / "main.py")
    (apps / "raw" / "manifest.json").write_text(
        json.dumps({"name": "Raw", "entry": "main.py", "role_prompt": "You echo."})
    )

    running = make_system(apps_dir=apps, apps_config={"confinement": confinement})

    listed = {a["id"]: a for a in running.get("/api/apps").json()}
    assert {k: (a["status"], a["confined"]) for k, a in listed.items()} == {
        k: ("running", confinement == "auto") for k in ("sdk", "raw", "native")
    }
    for app_id in ("sdk", "raw", "native"):
        # the launcher waited on the app's word, never on a probe of its port
        (line,) = ready_lines(running, app_id)
        assert line.endswith("it signalled that it listens =====")
    assert running.act("sdk", {"action_id": "x"})["data"]["content"] == "sdk says hi"
    assert running.act("raw", {"action_id": "x"})["view_type"] == "text"
    assert running.act("native", {"action_id": "x"})["data"]["content"] == "native"


# ------------------------------------------------------------------ apps on demand


def statuses(running: Running) -> dict[str, str]:
    return {a["id"]: a["status"] for a in running.get("/api/apps").json()}


def test_an_app_not_in_autostart_starts_on_its_first_instruction(
    tmp_path: Path, make_system: Callable[..., Running]
) -> None:
    apps = copy_apps(tmp_path / "apps", ["hello", "notes"], source=ROOT / "apps")
    running = make_system(apps_dir=apps, apps_config={"autostart": "recent"})

    # a fresh desktop has used nothing: it is ready with neither app running
    assert running.get("/api/health").json()["status"] == "ready"
    assert statuses(running) == {"hello": "idle", "notes": "idle"}
    assert running.system.launcher.get("hello").pid is None  # type: ignore[union-attr]

    reply = running.instruct("跟我打个招呼")
    (result,) = reply["results"]
    assert result["app"] == "hello"
    assert result["response"]["view_type"] not in ("error", "loading")
    assert statuses(running) == {"hello": "running", "notes": "idle"}
    running.stop()

    # the next boot starts what the last sessions used
    again = make_system(
        apps_dir=apps, data_dir=running.data_dir, apps_config={"autostart": "recent"}
    )
    # a warm-up the desktop does not wait on (test below): it runs soon after ready
    wait_for(lambda: statuses(again)["hello"] == "running", "hello started at boot", 30)
    assert statuses(again) == {"hello": "running", "notes": "idle"}


GATED_APP = """\
import os
import time

from aios_sdk import AIOSAgent


class Gated(AIOSAgent):
    name = "Gated"

    def handle(self, instruction, context, action_request=None):
        return {"status": "ok", "view_type": "text", "data": {"content": "gated says hi"}}


if __name__ == "__main__":
    while not os.path.exists("workspace/open"):  # the test opens the gate: then it listens
        time.sleep(0.02)
    Gated().run()
"""


def test_with_apps_on_demand_the_desktop_is_ready_before_its_warm_up_apps_listen(
    tmp_path: Path, make_system: Callable[..., Running]
) -> None:
    apps = tmp_path / "apps"
    write_app(apps, "gated", GATED_APP)
    (apps / "gated" / "workspace").mkdir()
    running = make_system(apps_dir=apps, apps_config={"autostart": ["gated"]})

    # the first paint needs no app: ready while the app chosen for boot still starts
    assert running.get("/api/health").json()["status"] == "ready"
    assert statuses(running) == {"gated": "starting"}

    # a use meanwhile waits for that start (as for a start on demand), it does not fail
    got: dict[str, object] = {}
    use = threading.Thread(target=lambda: got.update(running.act("gated", {"action_id": "x"})))
    use.start()
    launcher = running.system.launcher
    wait_for(lambda: "gated" in launcher._last_used, "the use reached the launcher", 30)
    (apps / "gated" / "workspace" / "open").touch()
    use.join(60)
    assert got.get("data") == {"content": "gated says hi"}, got
    assert statuses(running) == {"gated": "running"}


def test_an_unused_app_stops_but_never_while_its_window_is_open_or_a_card_waits(
    tmp_path: Path, make_system: Callable[..., Running]
) -> None:
    apps = copy_apps(tmp_path / "apps", ["hello", "notes"], source=ROOT / "apps")
    copy_apps(apps, ["planner"], source=FIXTURES / "apps_runs")
    running = make_system(
        apps_dir=apps,
        apps_config={"autostart": "all", "idle_stop_s": 1},
        approvals={"mode": "smart"},
    )
    opened = running.open("hello")  # its window is open from now on
    assert opened["response"]["view_type"] != "error"
    shell = [{"step_id": 1, "tool": "shell_exec", "args": {"command": "echo hi"}}]
    waiting = running.post(
        "/api/action", {"app": "planner", "action_id": "plan", "params": {"steps": shell}}
    ).json()
    (card,) = waiting["pending"]  # the planner's run waits for the user's answer

    wait_for(lambda: statuses(running)["notes"] == "idle", "notes stopped when unused", 20)
    # used again, notes comes back; unused again, it stops again — by then hello and the
    # planner have been unused longer than idle_stop_s: the window and the card kept them
    assert running.act("notes", {"action_id": "x"})["view_type"]
    assert statuses(running)["notes"] == "running"
    wait_for(lambda: statuses(running)["notes"] == "idle", "notes stopped a second time", 20)
    assert statuses(running)["hello"] == statuses(running)["planner"] == "running"

    (instance,) = [i for i in running.get("/api/instances").json() if i["app"] == "hello"]
    assert running.post(f"/api/instances/{instance['instance_id']}/close", {}).status_code == 200
    wait_for(lambda: statuses(running)["hello"] == "idle", "hello stopped once closed", 20)
    assert running.post(f"/api/interactions/{card['id']}", {"decision": "deny"}).status_code == 200
    wait_for(lambda: statuses(running)["planner"] == "idle", "planner stopped once answered", 20)
    # and the next use brings it back
    assert running.act("hello", {"action_id": "again"})["view_type"]
    assert statuses(running)["hello"] == "running"
