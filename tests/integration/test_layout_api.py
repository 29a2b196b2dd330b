"""``/api/sessions/<sid>/layout`` (DESIGN §13 "Layout recovery") on the real system and store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aios.web.layout_api import COORD_LIMIT, MAX_WINDOWS
from tests.integration.conftest import Running

LAYOUT = {
    "windows": [
        {"app": "echo", "x": 120, "y": 64, "w": 701, "h": 433, "z": 1, "minimized": False},
        {
            "app": "settings",
            "x": -40.5,
            "y": 300,
            "w": 600,
            "h": 620,
            "z": 2,
            "minimized": True,
            "maximized": False,
        },
    ]
}


@pytest.fixture
def running(make_system: Callable[..., Running]) -> Running:
    return make_system(["echo"])


def session_of(running: Running) -> str:
    """A session as the desktop gets one: from the reply to opening an app."""
    return str(running.open("echo")["session_id"])


def put(running: Running, sid: str, body: Any) -> Any:
    return running.http.put(f"{running.url}/api/sessions/{sid}/layout", json=body, timeout=20)


def stored(layout: dict[str, Any]) -> list[dict[str, Any]]:
    """The windows as the API gives them back: ``maximized`` filled in when absent."""
    return [{"maximized": False, **w} for w in layout["windows"]]


def test_a_layout_round_trips_and_a_new_session_has_none(running: Running) -> None:
    sid = session_of(running)
    empty = running.get(f"/api/sessions/{sid}/layout")
    assert empty.status_code == 200
    assert empty.json() == {"windows": [], "updated": None}

    saved = put(running, sid, {**LAYOUT, "extra": "ignored"})
    assert saved.status_code == 200, saved.text
    assert saved.json()["windows"] == stored(LAYOUT)
    assert isinstance(saved.json()["updated"], float)

    again = running.get(f"/api/sessions/{sid}/layout").json()
    assert again == saved.json()

    # a later save replaces the whole layout (a closed window is gone)
    one = {"windows": [LAYOUT["windows"][0]]}
    assert put(running, sid, one).status_code == 200
    assert running.get(f"/api/sessions/{sid}/layout").json()["windows"] == stored(one)


def test_the_layout_survives_a_restart_on_the_same_data_dir(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    first = make_system(["echo"], data_dir=tmp_path / "data")
    sid = session_of(first)
    assert put(first, sid, LAYOUT).status_code == 200
    first.stop()
    second = make_system(["echo"], data_dir=tmp_path / "data")
    got = second.get(f"/api/sessions/{sid}/layout")
    assert got.status_code == 200
    assert got.json()["windows"] == stored(LAYOUT)


def window(**change: Any) -> dict[str, Any]:
    return {**LAYOUT["windows"][0], **change}


@pytest.mark.parametrize(
    ("body", "names"),
    [
        ([], "request body must be a JSON object"),
        ({}, "field 'windows' must be a list"),
        ({"windows": "echo"}, "field 'windows' must be a list"),
        (
            {"windows": [window(app=f"a{i}") for i in range(MAX_WINDOWS + 1)]},
            f"at most {MAX_WINDOWS}",
        ),
        ({"windows": ["echo"]}, "windows[0] must be an object"),
        ({"windows": [window(app="../etc")]}, "windows[0].app must be an app id"),
        ({"windows": [window(app="Echo")]}, "windows[0].app must be an app id"),
        ({"windows": [window(), window(x=5)]}, "windows[1].app 'echo' appears twice"),
        ({"windows": [window(x="12")]}, "windows[0].x must be a finite number"),
        ({"windows": [window(y=True)]}, "windows[0].y must be a finite number"),
        (
            {"windows": [window(z=COORD_LIMIT + 1)]},
            f"windows[0].z must be a finite number within ±{COORD_LIMIT}",
        ),
        ({"windows": [window(x=-COORD_LIMIT - 1)]}, "windows[0].x must be a finite number"),
        ({"windows": [window(w=0)]}, "windows[0].w must be greater than 0"),
        (
            {"windows": [{k: v for k, v in window().items() if k != "h"}]},
            "windows[0].h is required",
        ),
        ({"windows": [window(minimized="no")]}, "windows[0].minimized must be true or false"),
        (
            {"windows": [{k: v for k, v in window().items() if k != "minimized"}]},
            "windows[0].minimized must be true or false",
        ),
        ({"windows": [window(maximized=1)]}, "windows[0].maximized must be true or false"),
    ],
)
def test_a_bad_layout_is_refused_naming_the_field(running: Running, body: Any, names: str) -> None:
    sid = session_of(running)
    assert put(running, sid, LAYOUT).status_code == 200
    resp = put(running, sid, body)
    assert resp.status_code == 400
    assert resp.headers["Content-Type"].startswith("application/json")
    assert names in resp.json()["error"]
    # nothing of the refused body was stored
    assert running.get(f"/api/sessions/{sid}/layout").json()["windows"] == stored(LAYOUT)


def test_numbers_that_json_cannot_hold_are_refused(running: Running) -> None:
    sid = session_of(running)
    window = '{"app": "echo", "x": NaN, "y": 0, "w": 1, "h": 1, "z": 1, "minimized": false}'
    raw = f'{{"windows": [{window}]}}'
    resp = running.http.put(
        f"{running.url}/api/sessions/{sid}/layout",
        data=raw,
        headers={"Content-Type": "application/json"},
        timeout=20,
    )
    assert resp.status_code == 400
    assert resp.json()["error"].startswith("windows[0].x must be a finite number")


def test_an_unknown_or_malformed_session_is_refused(running: Running) -> None:
    for method in ("GET", "PUT"):
        resp = running.http.request(
            method, f"{running.url}/api/sessions/sess_nobody/layout", json=LAYOUT, timeout=20
        )
        assert resp.status_code == 404, resp.text
        assert resp.json() == {"error": "no session 'sess_nobody'"}
        bad = running.http.request(
            method, f"{running.url}/api/sessions/no-such!/layout", json=LAYOUT, timeout=20
        )
        assert bad.status_code == 400, bad.text
        assert "session_id must be letters" in bad.json()["error"]
    # a refused PUT does not create the session
    assert running.get("/api/sessions/sess_nobody").status_code == 404
