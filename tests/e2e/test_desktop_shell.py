"""The desktop shell in Chromium (issue 13): the command bar's queue and history, where
messages go, system windows on the taskbar, right-click menus, speech, and progress.

One system for the module (gallery + e2e_slow, whose instruction "snail wait" answers only
when the test releases it), driven as a user drives it: typing, clicks, right-clicks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from playwright.sync_api import WebSocket, expect

from tests.e2e.conftest import WAIT_MS, Desk
from tests.integration.conftest import Running

SYSTEM_APPS = ["gallery", "e2e_slow"]
SMALL = {"width": 1024, "height": 700}
PUSH_EVENTS = 4
"""The gallery's push action sends this many progress events (apps/gallery/main.py)."""
POLL_MS = 50

# Records what the page would say instead of saying it: a fake engine with one voice per
# language, and a recogniser that "hears" window.__say.
SPEECH_SPY = """() => {
  window.__spoken = [];
  window.SpeechSynthesisUtterance = class { constructor(text) { this.text = text; } };
  const voices = [{ lang: 'zh-CN', name: 'zh' }, { lang: 'en-US', name: 'en' }];
  speechSynthesis.getVoices = () => voices;
  speechSynthesis.speak = (u) => window.__spoken.push({ text: u.text, lang: u.lang });
  window.SpeechRecognition = class {
    start() {
      setTimeout(() => {
        this.onresult({ results: [[{ transcript: window.__say }]] });
        if (this.onend) this.onend();
      }, 0);
    }
    abort() {}
  };
}"""

OWNER_AT = """([x, y]) => {
  const node = document.elementFromPoint(x, y);
  return node ? (node.closest('[data-win-cmd], .toast, .window') || node).className : null;
}"""


PLACEHOLDER_FITS = """() => {
  const input = document.getElementById('command_input');
  const style = getComputedStyle(input);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${style.fontSize} ${style.fontFamily}`;
  return [ctx.measureText(input.placeholder).width, input.clientWidth];
}"""


def release(running: Running) -> None:
    workspace = Path(running.apps_dir) / "e2e_slow" / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "release").write_text("go")


def type_instruction(desk: Desk, text: str) -> None:
    box = desk.page.locator("#command_input")
    box.fill(text)
    box.press("Enter")


def watch_pushes(desk: Desk, app: str) -> list[dict[str, object]]:
    """The push events for ``app`` on the page's next event stream, as they arrive."""
    pushes: list[dict[str, object]] = []

    def watch(ws: WebSocket) -> None:
        def frame(payload: str | bytes) -> None:
            try:
                msg = json.loads(payload)
            except ValueError:
                return
            if isinstance(msg, dict) and msg.get("type") == "push" and msg.get("app") == app:
                pushes.append(msg)

        ws.on("framereceived", frame)

    desk.page.on("websocket", watch)
    return pushes


def test_a_second_instruction_waits_its_turn_and_up_recalls_it(desk: Desk) -> None:
    page = desk.page
    bar = page.locator("#command_bar")
    box = page.locator("#command_input")
    type_instruction(desk, "snail wait")
    expect(bar).to_have_class("tb-command is-busy")
    type_instruction(desk, "gallery table 3")
    queue = page.locator("#command_queue")
    expect(queue).to_have_text("+1")  # accepted and waiting, the field free for more
    expect(box).to_have_value("")
    expect(desk.win("gallery")).to_have_count(0)  # nothing runs before the first answers
    release(desk.running)
    body = desk.wait_view("gallery", "table")
    expect(body.locator("tbody tr")).to_have_count(3)
    expect(desk.body("e2e_slow")).to_contain_text("released")
    expect(queue).to_be_hidden()
    expect(bar).not_to_have_class("tb-command is-busy")
    # ↑ / ↓ walk back through what was typed, also after a reload
    pushes = watch_pushes(desk, "gallery")
    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    box.focus()
    box.press("ArrowUp")
    expect(box).to_have_value("gallery table 3")
    box.press("ArrowUp")
    expect(box).to_have_value("snail wait")
    box.press("ArrowDown")
    box.press("ArrowDown")
    expect(box).to_have_value("")

    # a pushed "Progress n %" does not outlive what it tracked, even when the events
    # arrive after the reply
    desk.gallery_show("push")
    expect(desk.body("gallery").locator(".view-title")).to_have_text("Push")
    deadline = time.monotonic() + WAIT_MS / 1000
    while len(pushes) < PUSH_EVENTS:
        assert time.monotonic() < deadline, f"only {len(pushes)} push events arrived"
        page.wait_for_timeout(POLL_MS)  # lets Playwright deliver the frames meanwhile
    page.evaluate("() => new Promise((r) => setTimeout(r))")  # the page handled the last one
    expect(desk.win("gallery").locator(".win-status")).to_have_text("")
    expect(desk.win("gallery").locator(".win-progress")).to_have_count(0)


def test_toasts_system_windows_and_right_click_at_1024(desk: Desk) -> None:
    page = desk.page
    page.set_viewport_size(SMALL)
    # the command bar's placeholder is whole at 1024 px
    text_px, field_px = page.evaluate(PLACEHOLDER_FITS)
    assert text_px <= field_px, f"placeholder {text_px} px in a {field_px} px field"
    # toasts never cover a maximised window's title-bar buttons, nor much of the screen
    desk.open_app("gallery")
    desk.win("gallery").locator(".win-max").click()
    expect(desk.win("gallery")).to_have_class("window active maximized")
    desk.gallery_show("notify")
    toasts = page.locator("#toasts .toast")
    expect(toasts.first).to_be_visible()
    for button in ("close", "max", "min"):
        box = desk.win("gallery").locator(f".win-{button}").bounding_box()
        assert box
        centre = [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]
        assert f"win-{button}" in page.evaluate(OWNER_AT, centre)
    area = page.evaluate(
        "() => [...document.querySelectorAll('#toasts .toast')]"
        ".reduce((sum, t) => sum + t.offsetWidth * t.offsetHeight, 0)"
    )
    assert area < SMALL["width"] * SMALL["height"] / 4, f"toasts cover {area} px²"
    # the gallery's result is in its window: no toast repeats it
    expect(toasts.filter(has_text="Notifications sent")).to_have_count(0)
    desk.win("gallery").locator(".win-max").click()

    # a taskbar icon's menu: close / minimise / restart
    page.locator("#icon_gallery").click(button="right")
    menu = page.locator("#app_menu")
    expect(menu.get_by_role("menuitem")).to_have_text(["Close window", "Minimise", "Restart app"])
    menu.get_by_role("menuitem", name="Minimise").click()
    expect(desk.win("gallery")).to_be_hidden()
    expect(menu).to_be_hidden()
    # on the wallpaper: the desktop's menu, not the browser's; dragging selects nothing
    page.mouse.click(1000, 60, button="right")
    expect(page.locator("#context_menu")).to_be_visible()
    page.keyboard.press("Escape")
    page.mouse.move(900, 60)
    page.mouse.down()
    page.mouse.move(1010, 600)
    page.mouse.up()
    assert page.evaluate("() => String(getSelection())") == ""

    # Settings: a taskbar entry while open (also minimised), Save in view at 1024×700
    page.locator("#start_button").click()
    page.locator("#start_settings").click()
    expect(page.locator("#settings_save")).to_be_in_viewport()
    icon = page.locator("#icon_settings")
    expect(icon).to_be_visible()
    desk.win("settings").locator(".win-min").click()
    expect(desk.win("settings")).to_be_hidden()
    expect(icon).to_have_class("tb-app tb-sys is-open is-minimized")
    icon.click()
    expect(desk.win("settings")).to_be_visible()
    page.locator("#set_speak_replies").select_option("always")
    page.locator("#settings_save").click()
    expect(page.locator("#toasts")).to_contain_text("Settings saved")
    assert desk.api("GET", "/api/config")["config"]["voice"]["speak_replies"] == "always"
    desk.api("POST", "/api/config", {"updates": {"voice": {"speak_replies": "voice"}}})
    desk.win("settings").locator(".win-close").click()
    expect(icon).to_have_count(0)


def test_typed_replies_are_silent_spoken_ones_are_spoken(desk: Desk) -> None:
    page = desk.page
    page.locator("#tray_volume").click()  # the test desk starts muted
    expect(page.locator("#tray_volume")).to_have_attribute("aria-pressed", "false")
    page.evaluate(SPEECH_SPY)
    type_instruction(desk, "gallery table 2")
    desk.wait_view("gallery", "table")
    expect(page.locator("#command_bar")).not_to_have_class("tb-command is-busy")
    page.evaluate("() => { window.__say = 'gallery list 2'; }")
    page.locator("#mic_button").click()
    desk.wait_view("gallery", "list")
    page.wait_for_function("() => window.__spoken.length > 0")
    spoken = page.evaluate("() => window.__spoken")
    assert len(spoken) == 1, spoken  # the answer to the spoken one only
    assert spoken[0]["lang"] == "en-US", spoken
    # Chinese text gets the Chinese voice in the English UI
    page.evaluate("async () => (await import('/static/js/desk/voice.js')).speak('已为你打开音乐')")
    page.wait_for_function("() => window.__spoken.length === 2")
    assert page.evaluate("() => window.__spoken[1].lang") == "zh-CN"
