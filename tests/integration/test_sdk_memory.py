"""``self.remember`` / ``self.recall`` (aios_sdk/agent.py) through the real system: real app
processes, ``memory_store`` / ``memory_search`` over ``/api/sys/tool``, the real store.

An app keeps to its own scope; the user's scope needs ``memory.read`` / ``memory.write``,
a refusal names the permission, and what an app writes there is only proposed until the
user accepts it (docs/app-guide.md §15, DESIGN §15).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Running, start_system

MEMO_APP = """
from aios_sdk import AIOSAgent, ToolError


class Memo(AIOSAgent):
    def handle(self, instruction, context, action_request=None):
        request = action_request or {}
        params = request.get("params") or {}
        out = {"memory": context.memory}
        try:
            if request.get("action_id") == "remember":
                out["kept"] = self.remember(
                    params["text"], params.get("tags", ()), user=params.get("user", False)
                )
            elif request.get("action_id") == "recall":
                out["found"] = self.recall(params["query"], user=params.get("user", False))
        except ToolError as e:
            out["error"] = [type(e).__name__, e.error]
        return {"status": "ok", "view_type": "text", "data": out, "actions": []}


if __name__ == "__main__":
    Memo().run()
"""


def _app(apps: Path, app_id: str, permissions: list[str]) -> None:
    folder = apps / app_id
    (folder / "workspace").mkdir(parents=True)
    (folder / "main.py").write_text(MEMO_APP, encoding="utf-8")
    manifest = {
        "name": app_id.title(),
        "entry": "main.py",
        "role_prompt": "keeps facts",
        "keywords": [app_id],
        "permissions": permissions,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    root = tmp_path_factory.mktemp("sdk_memory")
    _app(root / "apps", "keeper", [])
    _app(root / "apps", "scribe", ["memory.read", "memory.write"])
    r = start_system(root / "apps", root / "data")
    yield r
    r.stop()


def _call(running: Running, app: str, action: str, **params: Any) -> dict[str, Any]:
    data: dict[str, Any] = running.act(app, {"action_id": action, "params": params})["data"]
    return data


def test_an_app_remembers_and_recalls_in_its_own_scope(running: Running) -> None:
    due = "The weekly report is due on Friday"
    kept = _call(running, "keeper", "remember", text=due, tags=["work"])["kept"]
    assert kept["scope"] == "keeper" and kept["state"] == "active" and kept["tags"] == ["work"]
    _call(running, "scribe", "remember", text="The weekly report goes to Ana")

    found = _call(running, "keeper", "recall", query="weekly report")["found"]
    assert [(m["id"], m["scope"]) for m in found] == [(kept["id"], "keeper")]  # not scribe's
    assert found[0]["text"] == due and found[0]["score"] > 0
    again = _call(running, "keeper", "remember", text=due)
    assert again["kept"]["id"] == kept["id"]  # the same text is one memory

    # context.memory: the app's memories for its part of the instruction
    said = running.instruct("keeper weekly report")
    [result] = said["results"]
    assert [m["id"] for m in result["response"]["data"]["memory"]] == [kept["id"]]

    stored = running.get("/api/memories?scope=keeper").json()["memories"]
    assert [(m["source"], m["state"]) for m in stored] == [("app:keeper", "active")]


def test_the_users_scope_without_the_permission_is_refused_naming_it(running: Running) -> None:
    wrote = _call(running, "keeper", "remember", text="The user likes jazz", user=True)
    assert wrote["error"][0] == "ToolFailed"
    assert "'memory.write' is not granted to keeper" in wrote["error"][1]
    read = _call(running, "keeper", "recall", query="jazz", user=True)
    assert "'memory.read' is not granted to keeper" in read["error"][1]
    # requested in the manifest is not granted: the user decides
    asked = _call(running, "scribe", "recall", query="jazz", user=True)
    assert "'memory.read' is not granted to scribe" in asked["error"][1]

    assert running.get("/api/memories?scope=user").json()["memories"] == []
    audit = running.system.store.audit_rows(app="keeper")
    assert {r["tool"] for r in audit if r["status"] == "denied"} == {
        "memory_store",
        "memory_search",
    }


def test_with_the_permissions_an_apps_user_memory_is_only_proposed(running: Running) -> None:
    granted = running.post(
        "/api/apps/scribe/permissions", {"grant": ["memory.read", "memory.write"]}
    )
    assert granted.status_code == 200, granted.text

    kept = _call(running, "scribe", "remember", text="The user drinks green tea", user=True)
    assert kept["kept"]["scope"] == "user" and kept["kept"]["state"] == "proposed"
    waiting = running.get("/api/memories?state=proposed").json()
    assert waiting["proposed"] == 1
    assert [m["source"] for m in waiting["memories"]] == ["app:scribe"]
    assert _call(running, "scribe", "recall", query="green tea", user=True)["found"] == []

    accepted = running.post(f"/api/memories/{kept['kept']['id']}/accept")
    assert accepted.status_code == 200 and accepted.json()["state"] == "active"
    found = _call(running, "scribe", "recall", query="green tea", user=True)["found"]
    assert [(m["text"], m["scope"]) for m in found] == [("The user drinks green tea", "user")]
    assert _call(running, "scribe", "recall", query="green tea")["found"] == []  # own only
    assert _call(running, "keeper", "recall", query="green tea")["found"] == []
