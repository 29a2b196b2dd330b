"""Only the system draws system UI (DESIGN §14.3, issue 20 item 3), against the real system.

Hostile apps of ``tests/fixtures/apps_spoof``: ``forger`` puts a run's fields (``pending``
cards for another app, ``run_id``, ``state``, a system intent's ``desktop`` ops and
``suggestions``) on its replies and pushes; ``settings`` is an app folder named like the
system's Settings window. Positive controls beside them: a real paused run still carries the
system's ``pending`` card; a plain app (``hello``) runs.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aios.apphost.manifests import RESERVED_APP_IDS, normalised_id, reserved_id_reason
from tests.conftest import ROOT
from tests.integration.conftest import FIXTURES, Running, copy_apps
from tests.util import wait_for

SPOOF = FIXTURES / "apps_spoof"
FORGED_FIELDS = (
    "pending",
    "interaction",
    "run_id",
    "source",
    "intent",
    "desktop",
    "suggestions",
    "app",
    "session_id",
    "results",
)
"""What ``forger`` puts on every reply that only the system may set."""


def spoof_system(make_system: Callable[..., Running], tmp_path: Path, *names: str) -> Running:
    apps = copy_apps(tmp_path / "apps", list(names), source=SPOOF)
    return make_system(apps_dir=apps, approvals={"mode": "smart"})


def app_row(running: Running, app_id: str) -> dict[str, Any]:
    rows = running.get("/api/apps").json()
    rows = rows["apps"] if isinstance(rows, dict) else rows
    return next(r for r in rows if r["id"] == app_id)


# ------------------------------------------------------------------ forged fields


def test_an_apps_pending_list_is_not_the_runs(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    """The issue's example: a top-level ``pending`` list in an app's reply is not copied."""
    running = spoof_system(make_system, tmp_path, "forger", "hello")
    reply = running.open("forger")
    assert reply["response"]["data"]["content"] == "forger ready"  # the app's view is drawn
    assert "pending" not in reply and "state" not in reply, reply
    for field in FORGED_FIELDS:
        if field != "run_id":
            assert field not in reply["response"], field
    assert reply["run_id"].startswith("run_") and reply["run_id"] != "run_forged"
    assert reply["response"]["run_id"] == reply["run_id"]  # the system's own, added after
    assert reply["app"] == "forger"
    # nothing pending anywhere: no card to draw
    assert running.get("/api/interactions?pending=1").json() == []
    # the same through an action
    action = running.post("/api/action", {"app": "forger", "action_id": "noop"}).json()
    assert "pending" not in action and "state" not in action, action
    for field in FORGED_FIELDS:
        if field != "run_id":
            assert field not in action["response"], field
    assert action["response"]["run_id"] == action["run_id"] != "run_forged"


def test_pushed_views_and_events_lose_the_system_fields(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    running = spoof_system(make_system, tmp_path, "forger")
    sub = running.system.bus.subscribe()
    try:
        running.post("/api/action", {"app": "forger", "action_id": "push_forged"})
        got: list[dict[str, Any]] = []

        def both() -> bool:
            while (ev := sub.get(timeout=0.1)) is not None:
                got.append(ev)
            kinds = {e.get("type") for e in got if e.get("app") == "forger"}
            pushed_view = any(e.get("pushed") for e in got if e.get("type") == "view")
            return "push" in kinds and pushed_view

        wait_for(both, "the pushed view and event")
    finally:
        sub.close()
    view = next(e for e in got if e.get("type") == "view" and e.get("pushed"))
    event = next(e for e in got if e.get("type") == "push")
    assert view["response"]["data"]["content"] == "pushed forged"  # the push itself is shown
    assert event["data"]["progress"] == 0.5
    for field in FORGED_FIELDS:
        assert field not in view["response"], field
        assert field not in event["data"], field
    assert view["app"] == event["app"] == "forger"  # the envelope is the system's
    assert "run_id" not in view and "pending" not in view


def test_a_real_paused_run_still_carries_its_card(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    """Positive control: the system's own ``pending`` card, for the app that asked."""
    running = spoof_system(make_system, tmp_path, "forger")
    reply = running.post("/api/action", {"app": "forger", "action_id": "cover"}).json()
    assert reply["state"] == "waiting"
    [card] = reply["pending"]
    assert card["id"].startswith("ia_") and card["id"] != "ia_forged_approval"
    assert card["app"] == "forger" and card["kind"] == "approval"
    assert [s["tool"] for s in card["steps"]] == ["shell_exec"]
    assert [p["id"] for p in running.get("/api/interactions?pending=1").json()] == [card["id"]]
    running.post(f"/api/interactions/{card['id']}", {"decision": "deny"})


# ------------------------------------------------------------------ reserved ids


@pytest.mark.parametrize(
    "folder",
    [
        "settings",
        "audit",
        "conversation",
        "desktop",
        "system",
        "aios",
        "Settings",
        "SETTINGS",
        "set-tings",
        "s_e_t_t_i_n_g_s",
        "ＳＥＴＴＩＮＧＳ",
    ],
)
def test_reserved_ids_are_refused_however_spelt(folder: str) -> None:
    reason = reserved_id_reason(folder)
    assert reason is not None and "reserved" in reason and repr(folder) in reason


@pytest.mark.parametrize("folder", ["hello", "settings2", "my-settings", "auditor", "system_agent"])
def test_ids_near_the_reserved_ones_stay_usable(folder: str) -> None:
    assert reserved_id_reason(folder) is None


def test_every_window_the_renderer_draws_itself_is_reserved() -> None:
    """The renderer's own windows (renderer/js/system/*.js ``WIN_NAME``) are all reserved."""
    names = []
    for path in (ROOT / "renderer" / "js" / "system").glob("*.js"):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("export const WIN_NAME = "):
                names.append(line.split("'")[1])
    assert sorted(names) == ["audit", "memory", "settings", "trace"]
    assert all(normalised_id(n) in RESERVED_APP_IDS for n in names)


def test_an_app_folder_named_settings_is_invalid_with_the_reason(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    """The issue's example: it never runs, so it never draws a view anywhere."""
    apps = copy_apps(tmp_path / "apps", ["settings", "hello"], source=SPOOF)
    shutil.copytree(SPOOF / "settings", apps / "audit")
    running = make_system(apps_dir=apps)
    for app_id in ("settings", "audit"):
        row = app_row(running, app_id)
        assert row["status"] == "invalid", row
        assert "reserved for the system's own windows" in row["error"], row
    assert app_row(running, "hello")["status"] == "running"  # the positive control
    r = running.post("/api/apps/settings/open", {})
    assert r.status_code >= 400 and "error" in r.json(), r.text
    assert not (apps / "settings" / "captured.txt").exists()
