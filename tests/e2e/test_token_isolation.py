"""The launch token never reaches another origin (DESIGN §11, "the page and the API").

Browsers don't isolate cookies by port, and SameSite counts 127.0.0.1 on any port as
same-site: a cookie would go to every loopback server an app view names. The page keeps
the token in memory (and its tab's sessionStorage) and sends it as a header to its own
origin only; the images of an app's own files load through signed URLs.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import expect

from tests.e2e.conftest import Desk
from tests.fakes.http_server import FakeHTTPServer
from tests.integration.conftest import Running

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery", "e2e_control"]
PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def recorder() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as server:
        yield server


def push_view(running: Running, app: str, view: dict[str, Any]) -> None:
    record = running.system.launcher.get(app)
    assert record is not None
    resp = requests.post(
        running.url + "/api/sys/push",
        json={"status": "ok", **view},
        timeout=10,
        headers={"Authorization": f"Bearer {record.token}"},
    )
    assert resp.status_code == 200, resp.text


def image_loaded(desk: Desk, app: str) -> bool:
    return bool(
        desk.body(app)
        .locator("img.image-main")
        .evaluate("img => img.complete && img.naturalWidth > 0")
    )


def test_an_image_on_another_loopback_port_gets_no_token(
    desk: Desk, recorder: FakeHTTPServer
) -> None:
    desk.allow_console(r"Failed to load resource|404")
    running, page = desk.running, desk.page
    desk.open_app("gallery")
    push_view(
        running,
        "gallery",
        {"view_type": "image", "data": {"url": recorder.url("/x.png"), "caption": "bait"}},
    )
    expect(desk.body("gallery").locator(".image-caption")).to_have_text("bait")
    page.wait_for_function(
        "() => document.querySelector('#winbody_gallery img.image-main')"
        " && document.querySelector('#winbody_gallery img.image-main')"
        ".complete"
    )
    assert recorder.paths() == ["/x.png"], "the page did request the image"
    headers = recorder.last().headers
    assert "cookie" not in headers, f"a cookie reached another port: {headers['cookie']}"
    assert "authorization" not in headers
    assert running.system.token not in " ".join(f"{k}: {v}" for k, v in headers.items())
    # the page got no cookie to send in the first place
    assert desk.page.context.cookies() == []

    # Positive control: the app's own file shows (signed URL, no cookie needed) ...
    record = running.system.launcher.get("gallery")
    assert record is not None and record.workdir is not None
    (record.workdir / "own.png").write_bytes(PNG_1PX)
    push_view(
        running,
        "gallery",
        {"view_type": "image", "data": {"url": "own.png", "caption": "own file"}},
    )
    expect(desk.body("gallery").locator(".image-caption")).to_have_text("own file")
    page.wait_for_function(
        "() => { const i = document.querySelector("
        "'#winbody_gallery img.image-main'); return i && i.complete"
        " && i.naturalWidth > 0; }"
    )
    src = desk.body("gallery").locator("img.image-main").get_attribute("src") or ""
    assert src.startswith("/apps/gallery/files/own.png?exp=") and "&sig=" in src
    assert "token" not in src

    # ... and the desktop still works after a reload (the token from sessionStorage).
    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    expect(page.locator("#start_apps > li").first).to_be_attached()
    assert "token=" not in page.url
    desk.open_app("gallery")
    assert page.context.cookies() == []


def test_a_view_may_not_show_another_apps_files(desk: Desk) -> None:
    running = desk.running
    record = running.system.launcher.get("e2e_control")
    assert record is not None and record.workdir is not None
    (record.workdir / "secret.png").write_bytes(PNG_1PX)
    desk.open_app("gallery")
    push_view(
        running,
        "gallery",
        {"view_type": "image", "data": {"url": "/apps/e2e_control/files/secret.png"}},
    )
    expect(desk.body("gallery").locator(".blocked-url")).to_be_visible()
    # the server binds a signature to its app: gallery's grant does not open e2e_control
    grants = desk.api("GET", "/api/file-grants")["grants"]
    g = grants["gallery"]
    r = requests.get(
        f"{running.url}/apps/e2e_control/files/secret.png",
        params={"exp": g["exp"], "sig": g["sig"]},
        timeout=10,
    )
    assert r.status_code == 401 and "signature invalid" in r.json()["error"]
    ok = grants["e2e_control"]
    r = requests.get(
        f"{running.url}/apps/e2e_control/files/secret.png",
        params={"exp": ok["exp"], "sig": ok["sig"]},
        timeout=10,
    )
    assert r.status_code == 200 and r.content == PNG_1PX
