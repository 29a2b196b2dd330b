#!/usr/bin/env python3
"""Screenshots of the desktop and every bundled app, for docs/screenshots/.

    python3 scripts/screenshots.py              # all apps, 1024×700 and 1440×900, zh-CN and en
    python3 scripts/screenshots.py --apps notes music --sizes 1024x700

Starts the real desktop headless (``desktop_app.py --headless``) on a throw-away
data dir with the bundled apps, opens each app from its taskbar icon in
Chromium (Debian's ``/usr/bin/chromium``, as the e2e tests use) and saves
``<app>-<lang>-<width>x<height>.jpg``; ``desktop-<lang>-<size>.jpg`` is the
desktop with the start menu open (JPEG: 40 PNGs weighed 18 MB). Needs
``scripts/install --test`` (Playwright).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
SIZES = ("1024x700", "1440x900")
LANGS = ("zh-CN", "en")
READY_TIMEOUT = 60.0
"""Seconds the desktop may take to print its URL (every app starts in its sandbox first)."""
WAIT_MS = 20_000
JPEG_QUALITY = 85


def bundled_apps() -> list[str]:
    return sorted(p.name for p in (ROOT / "apps").iterdir() if (p / "manifest.json").is_file())


def start_desktop(data_dir: Path, lang: str) -> tuple[subprocess.Popen[str], str]:
    """The desktop on a free port with ``lang`` as its UI language; (process, page URL)."""
    config = json.loads((ROOT / "config.json").read_text(encoding="utf-8"))
    config.update({"language": lang, "data_dir": str(data_dir / "data")})
    config.setdefault("voice", {})["welcome"] = False
    config_path = data_dir / "config.json"
    config_path.write_text(json.dumps(config), encoding="utf-8")
    env = {**os.environ, "AIOS_LOG_LEVEL": "WARNING"}
    env.pop("AIOS_LLM_API_KEY", None)
    env.pop("DEEPSEEK_API_KEY", None)
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "desktop_app.py"), "--headless", "--config", str(config_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("AIOS ready: "):
            return proc, line.removeprefix("AIOS ready: ").strip()
    proc.terminate()
    raise SystemExit(f"the desktop did not start within {READY_TIMEOUT:.0f} s")


def open_app(page: Page, app: str) -> None:
    page.locator("html[data-layout=restored]").wait_for(state="attached")
    body = page.locator(f"#winbody_{app}")
    if not body.is_visible():
        page.locator(f"#icon_{app}").click()
    expect(body).to_be_visible()
    expect(body).not_to_have_attribute("data-view-type", "loading")
    page.evaluate("document.fonts.ready")


def shoot(apps: list[str], sizes: list[str], langs: list[str]) -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        for lang in langs:
            with tempfile.TemporaryDirectory(prefix="aios-shots-") as tmp:
                proc, url = start_desktop(Path(tmp), lang)
                try:
                    for size in sizes:
                        width, height = (int(n) for n in size.split("x"))
                        context = browser.new_context(
                            viewport={"width": width, "height": height},
                            locale="zh-CN" if lang == "zh-CN" else "en-US",
                            reduced_motion="reduce",
                        )
                        context.set_default_timeout(WAIT_MS)
                        page = context.new_page()
                        page.goto(url)
                        expect(page.locator("#start_apps > li").first).to_be_attached()
                        page.locator("html[data-layout=restored]").wait_for(state="attached")
                        page.locator("#start_button").click()
                        expect(page.locator("#start_menu")).to_be_visible()
                        path = OUT / f"desktop-{lang}-{size}.jpg"
                        page.screenshot(path=str(path), quality=JPEG_QUALITY)
                        written.append(path)
                        page.keyboard.press("Escape")
                        for app in apps:
                            open_app(page, app)
                            path = OUT / f"{app}-{lang}-{size}.jpg"
                            page.screenshot(path=str(path), quality=JPEG_QUALITY)
                            written.append(path)
                            page.locator(f"#win_{app} [data-win-cmd=close]").click()
                            expect(page.locator(f"#win_{app}")).to_have_count(0)
                        context.close()
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--apps", nargs="*", default=None, help="app ids (default: every bundled app)")
    p.add_argument("--sizes", nargs="*", default=list(SIZES))
    p.add_argument("--langs", nargs="*", default=list(LANGS))
    args = p.parse_args(argv)
    for path in shoot(args.apps or bundled_apps(), args.sizes, args.langs):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
