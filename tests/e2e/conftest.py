"""End-to-end fixtures: the real system in-process, the real desktop page in Debian's Chromium.

- One browser for the e2e tests, launched by us with plain ``playwright.sync_api`` (never
  ``playwright install``: Debian's ``/usr/bin/chromium``), a new context + page per test.
- The system is the real one (``tests/integration/conftest.py``'s ``start_system``) with
  the bundled ``apps/gallery`` and the small apps of ``tests/fixtures/apps_e2e`` copied to a
  temporary apps dir. A test module names its apps in ``SYSTEM_APPS``; the system is shared
  by the module's tests (``running``) unless a test starts its own (``system_factory``).
- Every page records console errors, page errors, CSP violations and dialogs; the test
  fails at teardown when any is left that it did not announce with ``desk.allow_console``.
- Screenshots go to ``test-results/e2e/<test>/`` (ignored by git), or under
  ``$AIOS_E2E_RESULTS`` when set.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Dialog,
    Locator,
    Page,
    expect,
    sync_playwright,
)

from aios.config import DEFAULT_GRANTS
from tests.conftest import ROOT, children_now, fail_on_leaked_children
from tests.integration.conftest import Running, copy_apps, start_system
from tests.util import wait_for

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
INSTALL_HINT = (
    "Chromium is missing at /usr/bin/chromium: the desktop's end-to-end tests "
    "need it. Install it with `scripts/install --test` (apt-get install chromium); "
    "CI installs it, so these tests run there."
)
BUNDLED_APPS = ROOT / "apps"
E2E_APPS = ROOT / "tests" / "fixtures" / "apps_e2e"
RESULTS = Path(os.environ.get("AIOS_E2E_RESULTS") or ROOT / "test-results" / "e2e")
VIEWPORT = {"width": 1280, "height": 800}
WAIT_MS = 15_000
"""Playwright's waits; generous because the machine is shared (a wait ends as soon as it holds)."""

expect.set_options(timeout=WAIT_MS)

# Installed before any of the page's own scripts run (by Playwright, so the page's CSP does
# not apply to it): records every CSP violation, which the teardown reports.
PAGE_PROBE = """
window.__e2e = {csp: []};
document.addEventListener('securitypolicyviolation', (e) => {
  window.__e2e.csp.push(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'}`);
});
"""

_browser_roots: set[int] = set()
"""Pids of the Playwright driver: Chromium and its per-page processes live below it."""


# ---------------------------------------------------------------------------- processes


def _in_browser_tree(p: psutil.Process) -> bool:
    try:
        return p.pid in _browser_roots or any(a.pid in _browser_roots for a in p.parents())
    except psutil.Error:
        return False


@pytest.fixture(autouse=True)
def no_leaked_children() -> Iterator[None]:
    """tests/conftest.py's leak check, minus the browser's own process tree.

    Chromium starts and ends renderer and utility processes per page on its own schedule;
    they belong to the session's browser, not to the test. App processes, commands and
    everything else the system starts are still checked.
    """
    before = children_now()
    yield
    fail_on_leaked_children(before, ignore=_in_browser_tree)


# ---------------------------------------------------------------------------- browser


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Without Chromium every e2e test skips; say so where nobody can miss it."""
    skipped = terminalreporter.stats.get("skipped", [])
    if any(INSTALL_HINT in str(getattr(r, "longrepr", "")) for r in skipped):
        terminalreporter.write_sep("!", "END-TO-END TESTS DID NOT RUN", red=True, bold=True)
        terminalreporter.write_line(INSTALL_HINT, red=True, bold=True)


@pytest.fixture(scope="package")
def chromium() -> Iterator[Browser]:
    """One browser for all the end-to-end tests.

    Package scope, which is the session of tests/e2e: closed as soon as the last e2e test
    ends, because an idle Chromium still starts utility processes now and then, and the
    rest of the suite's leak check would rightly blame them on whatever test runs then.
    """
    if not CHROMIUM.exists():
        pytest.skip(INSTALL_HINT)
    me = psutil.Process()
    before = {p.pid for p in me.children()}
    pw = sync_playwright().start()
    _browser_roots.update(p.pid for p in me.children() if p.pid not in before)
    try:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
    except Exception:
        pw.stop()
        raise
    yield browser
    browser.close()
    pw.stop()


# ---------------------------------------------------------------------------- system


def make_apps_dir(dest: Path, apps: Sequence[str]) -> Path:
    """Bundled apps by name (``gallery``), e2e fixture apps by their ``e2e_`` names."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in apps:
        source = E2E_APPS if (E2E_APPS / name).is_dir() else BUNDLED_APPS
        copy_apps(dest, [name], source=source)
    return dest


def start_e2e_system(
    tmp: Path, apps: Sequence[str], apps_config: dict[str, Any] | None = None, **overrides: Any
) -> Running:
    """The real system on a free port; English UI (stable text to assert), no welcome line.
    ``apps_config`` is the config's ``apps`` section."""
    settings: dict[str, Any] = {"language": "en", "voice": {"welcome": False}, "handle_timeout": 15}
    # e2e_control's desktop.control is granted as the user would (a request is not a grant)
    grants = {**DEFAULT_GRANTS, "e2e_control": ["desktop.control"]}
    settings.update(overrides)
    settings["apps"] = {"default_grants": grants, **(apps_config or {})}
    return start_system(make_apps_dir(tmp / "apps", apps), tmp / "data", **settings)


@pytest.fixture(scope="module")
def running(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Running]:
    """One system for the module's tests, with the apps the module names in SYSTEM_APPS."""
    apps = getattr(request.module, "SYSTEM_APPS", ["gallery"])
    system = start_e2e_system(tmp_path_factory.mktemp("e2e"), apps)
    yield system
    system.stop()


@pytest.fixture
def system_factory(tmp_path: Path) -> Iterator[Callable[..., Running]]:
    """A system of the test's own, for tests that stop apps or change settings."""
    started: list[Running] = []

    def make(apps: Sequence[str], **overrides: Any) -> Running:
        """``apps_config=`` is the config's ``apps`` section."""
        system = start_e2e_system(tmp_path / f"sys{len(started)}", apps, **overrides)
        started.append(system)
        return system

    yield make
    for system in started:
        system.stop()


wait_until = functools.partial(wait_for, timeout=WAIT_MS / 1000)
"""Poll a server-side condition (the page's own state is waited on with ``expect``)."""


# ---------------------------------------------------------------------------- the page


@dataclass
class Desk:
    """The desktop page of one test, with the helpers its assertions need."""

    page: Page
    running: Running
    out_dir: Path
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    """Response headers of the desktop page itself."""

    # -- recording

    def allow_console(self, pattern: str) -> None:
        """A console error line the test causes on purpose (e.g. a refused request)."""
        self.allowed.append(re.compile(pattern))

    def problems(self) -> list[str]:
        out = [
            f"console error: {m}"
            for m in self.console_errors
            if not any(p.search(m) for p in self.allowed)
        ]
        out += [f"page error: {m}" for m in self.page_errors]
        out += [f"dialog opened: {m}" for m in self.dialogs]
        if not self.page.is_closed():
            out += [
                f"CSP violation: {v}"
                for v in self.page.evaluate("() => (window.__e2e && window.__e2e.csp) || []")
            ]
        return out

    def shot(self, name: str) -> Path:
        # JPEG: a tenth of the time PNG encoding takes, and plenty to see what was drawn.
        path = self.out_dir / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.jpg"
        self.page.screenshot(path=str(path), type="jpeg", quality=85)
        return path

    # -- locating

    def win(self, app: str) -> Locator:
        return self.page.locator(f"#win_{app}")

    def body(self, app: str) -> Locator:
        return self.page.locator(f"#winbody_{app}")

    def control(self, app: str, action_id: str) -> Locator:
        return self.page.locator(f'#win_{app} [data-id="btn_{action_id}"]')

    def item_button(self, app: str, item_title: str, label: str) -> Locator:
        """A button drawn inside the list row (or card) whose title is item_title."""
        title = self.page.locator(".list-title", has_text=re.compile(rf"^{re.escape(item_title)}$"))
        row = self.body(app).locator(".list-item").filter(has=title)
        return row.get_by_role("button", name=label, exact=True)

    # -- doing

    def wait_view(self, app: str, view_type: str) -> Locator:
        body = self.body(app)
        expect(body).to_have_attribute("data-view-type", view_type)
        return body

    def open_app(self, app: str) -> Locator:
        """Open the app from its taskbar icon and wait until its first view is drawn.

        After a reload the saved layout may already have brought the window back
        (DESIGN §13): then it is not clicked again (that would minimise it).
        """
        self.page.locator("html[data-layout=restored]").wait_for(state="attached")
        body = self.body(app)
        if not body.is_visible():
            self.page.locator(f"#icon_{app}").click()
        expect(body).to_be_visible()
        expect(body).not_to_have_attribute("data-view-type", "loading")
        return body

    def gallery_show(self, view: str, label: str = "Show") -> Locator:
        """From the gallery's home list, press a button in the row of ``view``."""
        names = {
            "loading": "Loading",
            "error": "Error",
            "controls": "All controls",
            "hostile": "Hostile data",
            "notify": "Notify",
            "push": "Push",
        }
        row = names.get(view, view.capitalize())
        if not self.win("gallery").count():
            self.open_app("gallery")
        home = self.body("gallery").locator(
            ".view-title", has_text=re.compile(r"^Gallery: every view type$")
        )
        back = self.control("gallery", "home")
        # after a reload the window may still be drawing what it shows: wait for either
        expect(home.or_(back).first).to_be_visible()
        if not home.count():
            back.click()
        expect(home).to_be_visible()
        self.item_button("gallery", row, label).click()
        return self.body("gallery")

    def echo(self, action_id: str, app: str = "gallery") -> dict[str, Any]:
        """The action_request the gallery received, as its echo view shows it."""
        body = self.body(app)
        expect(body.locator(".view-title")).to_have_text("Received action")
        content = body.locator(".text-content")
        expect(content).to_contain_text(f'"action_id": "{action_id}"')
        return json.loads(content.text_content() or "null")

    def api(self, method: str, path: str, body: Any = None) -> Any:
        resp = self.running.http.request(method, self.running.url + path, json=body, timeout=20)
        assert resp.ok, f"{method} {path}: {resp.status_code} {resp.text}"
        return resp.json()


def _out_dir(request: pytest.FixtureRequest) -> Path:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid.split("tests/e2e/")[-1])
    out = RESULTS / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture
def open_desk(chromium: Browser, request: pytest.FixtureRequest) -> Iterator[Callable[..., Desk]]:
    """open_desk(running, muted=True) → a new context + page showing that system's desktop."""
    desks: list[tuple[Desk, BrowserContext]] = []
    out = _out_dir(request)

    def open_(running: Running, *, muted: bool = True, browser: Browser | None = None) -> Desk:
        """``browser``: another one than the package's (e.g. ``mic_chromium``'s)."""
        context = (browser or chromium).new_context(
            viewport=VIEWPORT, reduced_motion="reduce", locale="en-US", timezone_id="UTC"
        )
        context.set_default_timeout(WAIT_MS)
        context.add_init_script(PAGE_PROBE)
        page = context.new_page()
        desk = Desk(page, running, out / f"page{len(desks)}" if desks else out)
        desk.out_dir.mkdir(parents=True, exist_ok=True)
        desks.append((desk, context))
        page.on(
            "console",
            lambda m: (
                m.type == "error"
                and desk.console_errors.append(f"{m.text} ({m.location.get('url', '')})")
            ),
        )
        page.on("pageerror", lambda e: desk.page_errors.append(str(e)))

        def on_dialog(dialog: Dialog) -> None:
            desk.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        response = page.goto(f"{running.url}/?token={running.system.token}")
        assert response is not None and response.ok, "the desktop page did not load"
        desk.headers = response.headers
        expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
        expect(page.locator("#start_apps > li").first).to_be_attached()
        if muted:
            page.locator("#tray_volume").click()
            expect(page.locator("#tray_volume")).to_have_attribute("aria-pressed", "true")
        return desk

    yield open_
    failures: list[str] = []
    for desk, context in desks:
        if not desk.page.is_closed():
            # A screenshot is a courtesy for whoever reads a failure, not a check.
            with contextlib.suppress(Exception):
                desk.shot("final")
            failures += desk.problems()
        context.close()
    if failures:
        pytest.fail("the page reported problems:\n  " + "\n  ".join(failures))


@pytest.fixture
def mic_chromium(chromium: Browser) -> Iterator[Callable[[Path], Browser]]:
    """mic_chromium(wav) → a Chromium whose microphone plays ``wav`` once, then silence
    (its fake capture device; the page gets the microphone without asking)."""
    launched: list[Browser] = []

    def launch(wav: Path) -> Browser:
        browser = chromium.browser_type.launch(
            executable_path=str(CHROMIUM),
            args=[
                *CHROMIUM_ARGS,
                "--use-fake-ui-for-media-stream",
                "--use-fake-device-for-media-stream",
                f"--use-file-for-fake-audio-capture={wav}%noloop",
                "--autoplay-policy=no-user-gesture-required",
            ],
            headless=True,
        )
        launched.append(browser)
        return browser

    yield launch
    for browser in launched:
        browser.close()


@pytest.fixture
def desk(open_desk: Callable[..., Desk], running: Running) -> Desk:
    """The desktop of the module's shared system, muted (replies are not spoken)."""
    return open_desk(running)


TOP_WINDOW = """() => {
  const open = [...document.querySelectorAll('#desktop .window:not(.minimized)')];
  open.sort((a, b) => Number(b.style.zIndex) - Number(a.style.zIndex));
  return open.length ? open[0].dataset.winId : null;
}"""
"""The id of the window drawn on top of the others (highest z-index)."""
ACTIVE = re.compile(r"(^|\s)active(\s|$)")
"""The class list of the window that has the focus."""


def expect_in_front(desk: Desk, app: str) -> None:
    """``app``'s window is the active one and drawn on top of the others."""
    expect(desk.win(app)).to_have_class(ACTIVE)
    desk.page.wait_for_function(f"() => ({TOP_WINDOW})() === {json.dumps(app)}")
