"""Settings for approvals through the API (DESIGN §12 "Policy"): the mode round-trips
through GET/POST /api/config, takes effect on the next plan and survives a restart;
bad modes, tools and rules are JSON 400s naming what is allowed.

Real system, real app process (``tests/fixtures/apps_runs/planner``), real SQLite.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from aios.config import load_config
from aios.protocol import ATOMIC_TOOLS
from tests.integration.conftest import FIXTURES, Running, copy_apps, start_system

APP = "planner"
WRITE = [{"step_id": "w", "tool": "file_write", "args": {"path": "out.txt", "content": "x"}}]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[[], Running]]:
    """Starts the system as the desktop does: config.json, then the saved settings.json
    layered over it (:func:`load_config`); the data dir is kept between starts."""
    started: list[Running] = []
    apps = copy_apps(tmp_path / "apps", [APP], source=FIXTURES / "apps_runs")
    config_file = tmp_path / "config.json"
    config_file.write_text(
        json.dumps(
            {
                "apps_dir": str(apps),
                "data_dir": str(tmp_path / "data"),
                "approvals": {"mode": "smart", "timeout": 600},
            }
        ),
        encoding="utf-8",
    )

    def start() -> Running:
        loaded = load_config(config_file, env={})
        running = start_system(
            apps, loaded.data_path, approvals=loaded.approvals.model_dump(mode="json")
        )
        started.append(running)
        return running

    yield start
    for r in started:
        r.stop()


def approvals(running: Running) -> dict[str, Any]:
    r = running.get("/api/config")
    assert r.status_code == 200, r.text
    section: dict[str, Any] = r.json()["config"]["approvals"]
    return section


def plan(running: Running, steps: list[dict[str, Any]]) -> dict[str, Any]:
    r = running.post("/api/action", {"app": APP, "action_id": "plan", "params": {"steps": steps}})
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    return reply


def assert_json_400(r: Any, *needles: str) -> str:
    assert r.status_code == 400, r.text
    assert r.headers["Content-Type"].startswith("application/json")
    error: str = r.json()["error"]
    assert "\n" not in error and "Traceback" not in error
    for needle in needles:
        assert needle in error, error
    return error


def test_the_mode_round_trips_takes_effect_and_survives_a_restart(
    make: Callable[[], Running],
) -> None:
    running = make()
    assert approvals(running)["mode"] == "smart"
    assert "state" not in plan(running, WRITE)  # smart: a write runs without asking

    r = running.post("/api/config", {"updates": {"approvals": {"mode": "manual"}}})
    assert r.status_code == 200, r.text
    assert r.json()["config"]["approvals"]["mode"] == "manual"
    section = approvals(running)
    assert section["mode"] == "manual"
    assert section["timeout"] == 600  # the rest of the section is untouched
    assert plan(running, WRITE)["state"] == "waiting"  # manual: the next write asks

    running.stop()
    again = make()
    assert approvals(again)["mode"] == "manual"
    assert plan(again, WRITE)["state"] == "waiting"


def test_a_bad_mode_or_timeout_is_a_400_naming_the_allowed_values(
    make: Callable[[], Running],
) -> None:
    running = make()
    r = running.post("/api/config", {"updates": {"approvals": {"mode": "paranoid"}}})
    assert_json_400(r, "approvals.mode", "auto", "smart", "manual")
    r = running.post("/api/config", {"updates": {"approvals": {"timeout": 0}}})
    assert_json_400(r, "approvals.timeout", "greater than 0")
    r = running.post("/api/config", {"updates": {"approvals": "manual"}})
    assert_json_400(r, "approvals")
    assert approvals(running)["mode"] == "smart"  # nothing of a refused update was kept


def test_policies_round_trip_and_bad_entries_are_400s_naming_them(
    make: Callable[[], Running],
) -> None:
    running = make()
    url = f"/api/apps/{APP}/policy"
    assert running.get(url).json() == {}
    r = running.post(url, {"shell_exec": "never", "file_write": "allow"})
    assert r.status_code == 200 and r.json() == {"shell_exec": "never", "file_write": "allow"}
    assert running.get(url).json() == {"shell_exec": "never", "file_write": "allow"}

    error = assert_json_400(running.post(url, {"rm_rf": "allow"}), "unknown tool 'rm_rf'")
    assert all(tool in error for tool in ATOMIC_TOOLS)
    assert_json_400(
        running.post(url, {"shell_exec": "sometimes"}),
        "policy for shell_exec",
        "allow, ask, never",
        "'sometimes'",
    )
    assert_json_400(running.post(url, {}), "allow")
    # a refused body changes nothing, even its valid entries
    assert_json_400(running.post(url, {"file_write": None, "bogus": "ask"}), "'bogus'")
    assert running.get(url).json() == {"shell_exec": "never", "file_write": "allow"}

    r = running.post(url, {"file_write": None})  # null clears ("default")
    assert r.status_code == 200 and r.json() == {"shell_exec": "never"}

    r = running.get("/api/apps/no_such_app/policy")
    assert r.status_code == 404 and "no app 'no_such_app'" in r.json()["error"]
    r = running.post("/api/apps/no_such_app/policy", {"shell_exec": "never"})
    assert r.status_code == 404

    running.stop()
    assert make().get(url).json() == {"shell_exec": "never"}


def test_the_catalog_serves_each_tools_risks_and_the_modes_levels_to_the_desktop(
    make: Callable[[], Running],
) -> None:
    running = make()
    r = running.get("/api/approvals/catalog")
    assert r.status_code == 200, r.text
    served = r.json()
    assert served["modes"] == {"auto": [], "smart": ["high"], "manual": ["medium", "high"]}
    risks = {t["tool"]: t["risks"] for t in served["tools"]}
    assert set(risks) == set(ATOMIC_TOOLS)
    assert risks["shell_exec"] == ["high"] and risks["db_query"] == ["safe", "medium"]
    assert requests.get(running.url + "/api/approvals/catalog", timeout=10).status_code == 401
