"""Hostile app data through every view type and control (DESIGN §10): nothing executes,
nothing is injected, the strings are shown as text, and the page runs under a strict CSP.

The payloads are the gallery's own (``apps/gallery/hostile_views.py``), loaded from the
app's folder so that the test and the app can never drift apart.
"""

from __future__ import annotations

import importlib.util
import json
import re
from types import ModuleType
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from tests.conftest import ROOT
from tests.e2e.conftest import Desk

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery", "e2e_control"]
VIEW_TYPES = [
    "text",
    "list",
    "card",
    "table",
    "form",
    "media",
    "image",
    "chart",
    "code",
    "dashboard",
]


def _load_hostile() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gallery_hostile_views", ROOT / "apps" / "gallery" / "hostile_views.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


H = _load_hostile()

# Everything a payload could have added or changed, read from the live page.
INJECTION_PROBE = r"""win => {
  const bad = [];
  const urlAttrs = ['href', 'src', 'action', 'formaction', 'xlink:href', 'poster', 'data',
                    'srcdoc'];
  const badUrl = /^(javascript|vbscript|data:text)/;
  for (const el of win.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    if (['script', 'iframe', 'object', 'embed', 'frame', 'frameset', 'base', 'meta', 'link',
         'style', 'template', 'foreignobject'].includes(tag)) bad.push(`element <${tag}>`);
    for (const a of el.attributes) {
      if (/^on/i.test(a.name)) bad.push(`${tag}[${a.name}]`);
      // Styles are set through the CSSOM by the renderer; none may carry the app's CSS.
      if (a.name === 'style' && /url\(|expression|javascript|__pwned/i.test(a.value)) {
        bad.push(`${tag}[style="${a.value}"]`);
      }
      const v = a.value.replace(/[\u0000-\u0020]/g, '').toLowerCase();
      if (urlAttrs.includes(a.name.toLowerCase()) && badUrl.test(v)) {
        bad.push(`${tag}[${a.name}=${a.value}]`);
      }
    }
  }
  for (const a of document.querySelectorAll('a')) {
    if (a.protocol === 'javascript:' || /^\s*javascript:/i.test(a.getAttribute('href') || '')) {
      bad.push(`<a href=${a.getAttribute('href')}>`);
    }
  }
  if (window.__pwned !== undefined) bad.push(`window.__pwned = ${window.__pwned}`);
  return bad;
}"""

LOOKS = """() => {
  const pick = (el) => { const s = getComputedStyle(el);
    return [s.backgroundColor, s.backgroundImage, s.color, s.fontFamily, s.display].join(' | '); };
  return {body: pick(document.body), desktop: pick(document.getElementById('desktop')),
          taskbar: pick(document.getElementById('taskbar')),
          sheets: document.styleSheets.length,
          scripts: document.scripts.length};
}"""

SETTLED = """async win => {
  // Every image in the window has loaded or failed (an onerror payload would have fired),
  // and two frames have been drawn since.
  await Promise.all([...win.querySelectorAll('img')].map((img) => img.complete ? null
    : new Promise((resolve) => { img.addEventListener('load', resolve);
                                 img.addEventListener('error', resolve); })));
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""


def show_hostile(desk: Desk, view: str) -> Locator:
    desk.gallery_show("hostile")
    expect(desk.body("gallery").locator(".view-title")).to_have_text("Hostile data")
    desk.item_button("gallery", f"Hostile data → {view.capitalize()}", "Show").click()
    body = desk.wait_view("gallery", view)
    expect(body.locator(".win-message")).to_have_text("Hostile data: " + H.IMG_ONERROR)
    desk.win("gallery").evaluate(SETTLED)
    return body


def texts(loc: Locator) -> list[str]:
    return loc.all_text_contents()


def assert_nothing_ran(desk: Desk, baseline: dict[str, Any]) -> None:
    assert desk.win("gallery").evaluate(INJECTION_PROBE) == []
    assert desk.page.evaluate("() => window.__pwned") is None
    assert desk.page.evaluate(LOOKS) == baseline, "hostile data changed the desktop's styles"
    assert desk.dialogs == []


def check_text(body: Locator) -> None:
    expect(body.locator(".view-title")).to_have_text(H.SCRIPT)
    assert body.locator(".text-content").text_content() == "\n".join(H.STRINGS)


def check_list(body: Locator) -> None:
    expect(body.locator(".view-title")).to_have_text(H.IMG_ONERROR)
    assert texts(body.locator(".list-title")) == H.STRINGS
    assert set(texts(body.locator(".list-meta"))) == {H.STYLE_BREAK}
    # Only images may be data: URLs, and only data:image/…; the other URLs are refused.
    for src in [i.get_attribute("src") or "" for i in body.locator("img.list-thumb").all()]:
        assert src.startswith("data:image/svg+xml"), src
    expect(body.locator(".list-thumb-blocked").first).to_be_visible()


def check_card(body: Locator) -> None:
    expect(body.locator(".view-title")).to_have_text(H.STYLE_BREAK)
    expect(body.locator(".card")).to_have_count(len(H.URLS))
    assert texts(body.locator(".card-meta")) == [H.ATTR_BREAK] * len(H.URLS)
    expect(body.locator(".card .blocked-url")).to_have_count(4)  # javascript: ×3, data:text/html
    expect(body.locator("img.card-img")).to_have_count(2)  # the two data:image/svg+xml


def check_table(body: Locator) -> None:
    expect(body.locator(".view-title")).to_have_text(H.SCRIPT)
    assert texts(body.locator("thead th")) == [H.SCRIPT, H.IMG_ONERROR, H.STYLE_BREAK, H.JS_URL]
    expect(body.locator("tbody tr")).to_have_count(len(H.STRINGS))
    assert texts(body.locator("tbody tr").first.locator("td")) == [
        H.STRINGS[0],
        H.STRINGS[1],
        H.URLS[0],
        H.STRINGS[2],
    ]


def check_form(body: Locator) -> None:
    expect(body.locator(".view-title")).to_have_text(H.SCRIPT)
    labels = texts(body.locator("form.view-form .field-label"))
    assert labels == [H.IMG_ONERROR, H.SCRIPT, H.STYLE_BREAK, H.TEMPLATE, H.ATTR_BREAK]
    fields = body.locator("form.view-form [data-field-name]")
    expect(fields.nth(0)).to_have_value(H.SCRIPT)
    expect(fields.nth(0)).to_have_attribute("placeholder", H.ATTR_BREAK)
    assert texts(fields.nth(1).locator("option")) == [H.IMG_ONERROR, H.STYLE_BREAK, H.JS_URL]
    expect(fields.nth(2)).to_have_value(H.JS_URL)
    expect(fields.nth(3)).to_have_value(H.SVG_DOC)
    expect(fields.nth(4)).to_have_attribute("type", "text")  # the unknown type <img …>
    expect(fields.nth(4)).to_have_value(H.CSS_URL)


def check_media(body: Locator) -> None:
    expect(body.locator(".media-title")).to_have_text(H.SCRIPT)
    expect(body.locator(".media-sub")).to_have_text(H.IMG_ONERROR)
    expect(body.locator("audio, video")).to_have_count(0)
    expect(body.locator(".view-media .blocked-url")).to_be_visible()


def check_image(body: Locator) -> None:
    expect(body.locator(".image-caption")).to_have_text(H.IMG_ONERROR)
    img = body.locator("img.image-main")
    expect(img).to_have_attribute("alt", H.ATTR_BREAK)
    assert (img.get_attribute("src") or "").startswith("data:image/svg+xml,")


def check_chart(body: Locator) -> None:
    expect(body.locator(".view-title")).to_have_text(H.SCRIPT)
    chart = body.locator("canvas").evaluate("""c => { const ch = Chart.getChart(c);
        return {labels: ch.data.labels, label: ch.data.datasets[0].label,
                color: ch.data.datasets[0].backgroundColor}; }""")
    assert chart["labels"] == [H.SCRIPT, H.IMG_ONERROR, H.STYLE_BREAK]
    assert chart["label"] == H.IMG_ONERROR
    assert H.CSS_URL not in json.dumps(chart["color"])  # the app's "colours" are not used


def check_code(body: Locator) -> None:
    expect(body.locator(".code-lang")).to_have_text(H.IMG_ONERROR)
    code = body.locator("pre code")
    assert code.text_content() == H.code()["code"]
    expect(code.locator("*")).to_have_count(0)  # not a language highlight.js knows: plain text


def check_dashboard(body: Locator) -> None:
    expect(body.locator(".view-title").first).to_have_text(H.SCRIPT)
    widgets = H.dashboard()["widgets"]
    expect(body.locator(".dash-widget")).to_have_count(len(widgets))
    assert texts(body.locator(".dash-title")) == [w["title"] for w in widgets]
    expect(body.locator(".dash-widget").last.locator(".view-json")).to_contain_text(H.SCRIPT)
    expect(body.locator("audio, video")).to_have_count(0)


CHECKS = {
    "text": check_text,
    "list": check_list,
    "card": check_card,
    "table": check_table,
    "form": check_form,
    "media": check_media,
    "image": check_image,
    "chart": check_chart,
    "code": check_code,
    "dashboard": check_dashboard,
}


def test_the_page_has_a_strict_content_security_policy(desk: Desk) -> None:
    csp = desk.headers.get("content-security-policy", "")
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";") if d.strip())
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-src"] == "'none'"
    assert directives["base-uri"] == "'none'"
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    # The page itself runs under it without a single violation (checked at teardown too).
    desk.open_app("gallery")


def test_hostile_data_in_every_view_is_shown_as_text_and_nothing_runs(
    desk: Desk, subtests: pytest.Subtests
) -> None:
    baseline = desk.page.evaluate(LOOKS)
    for view in VIEW_TYPES:
        with subtests.test(view):
            body = show_hostile(desk, view)
            CHECKS[view](body)
            assert_nothing_ran(desk, baseline)
            desk.shot(f"hostile_{view}")


def test_hostile_controls_show_labels_as_text_and_refuse_bad_links(desk: Desk) -> None:
    baseline = desk.page.evaluate(LOOKS)
    show_hostile(desk, "text")
    page, win = desk.page, desk.win("gallery")
    expect(desk.control("gallery", "ctl_button")).to_have_text(H.IMG_ONERROR)
    expect(desk.control("gallery", "ctl_button_2")).to_have_text(H.SVG_ONLOAD)
    # javascript:, data:text/html and "java\tscript:" links are not links at all.
    for data_id in ("ctl_link", "ctl_link_2", "ctl_link_3"):
        link = desk.control("gallery", data_id)
        expect(link).to_have_class(re.compile(r"\bctl-link-blocked\b"))
        expect(link.locator("a")).to_have_count(0)
    expect(desk.control("gallery", "ctl_link").locator(".ui-label")).to_have_text(H.SCRIPT)
    assert texts(desk.control("gallery", "ctl_select").locator("option")) == [
        "—",
        H.IMG_ONERROR,
        H.STYLE_BREAK,
    ]
    expect(desk.control("gallery", "ctl_input").locator("input")).to_have_value(H.ATTR_BREAK)
    expect(desk.control("gallery", "ctl_input").locator("input")).to_have_attribute(
        "placeholder", H.SCRIPT
    )
    expect(desk.control("gallery", "ctl_form").get_by_role("button")).to_have_text(H.SCRIPT)
    assert_nothing_ran(desk, baseline)
    desk.shot("hostile_controls")

    # The confirm question is shown as text in the desktop's own dialog, not window.confirm.
    desk.control("gallery", "ctl_button_2").click()
    expect(page.locator(".modal .modal-text")).to_have_text(H.SCRIPT)
    page.locator("#modal_ok").click()
    assert desk.echo("ctl_button") == {"action_id": "ctl_button", "params": {"y": H.IMG_ONERROR}}
    assert win.evaluate(INJECTION_PROBE) == []
    assert desk.dialogs == []


def test_hostile_notifications_and_ui_texts_stay_text(desk: Desk) -> None:
    baseline = desk.page.evaluate(LOOKS)
    desk.open_app("gallery")
    desk.running.system.bus.emit(
        "notify",
        {"app": "gallery", "title": H.SCRIPT, "body": H.IMG_ONERROR, "level": H.ATTR_BREAK},
    )
    toast = desk.page.locator("#toasts .toast").last
    # titled with the sender's name (an app cannot pose as the system); its title follows
    expect(toast.locator(".toast-title")).to_have_text("Gallery")
    expect(toast.locator(".toast-body")).to_have_text(f"{H.SCRIPT}: {H.IMG_ONERROR}")
    expect(toast).to_have_class(re.compile(r"\btoast-info\b"))  # unknown level → info

    record = desk.running.system.launcher.get("e2e_control")
    assert record is not None
    resp = desk.running.http.post(
        desk.running.url + "/api/sys/ui",
        timeout=10,
        headers={"Authorization": f"Bearer {record.token}"},
        json={"op": "change_text", "id": "win_gallery", "text": H.SVG_ONLOAD},
    )
    assert resp.status_code == 200, resp.text
    expect(desk.win("gallery").locator(".win-title")).to_have_text(H.SVG_ONLOAD)
    assert desk.page.locator("#toasts").evaluate(INJECTION_PROBE) == []
    assert_nothing_ran(desk, baseline)
    desk.shot("hostile_toast")


def test_app_files_are_served_sandboxed(desk: Desk) -> None:
    """An app may write HTML into its workspace: served from our origin, it must not run."""
    record = desk.running.system.launcher.get("gallery")
    assert record is not None and record.workdir is not None
    (record.workdir / "evil.html").write_text(
        "<html><body><h1>evil</h1><script>window.__pwned=1</script></body></html>"
    )
    grant = desk.api("GET", "/api/file-grants")["grants"]["gallery"]  # no cookie: signed
    url = desk.running.url + f"/apps/gallery/files/evil.html?exp={grant['exp']}&sig={grant['sig']}"
    resp = desk.page.request.get(url)
    assert resp.status == 200
    assert "sandbox" in resp.headers["content-security-policy"]
    assert resp.headers["x-content-type-options"] == "nosniff"

    other = desk.page.context.new_page()
    try:
        other.goto(url)
        expect(other.locator("h1")).to_have_text("evil")
        assert other.evaluate("() => window.__pwned") is None
    finally:
        other.close()
    # Nor can a window's view point at it: a document is not an image or media.
    desk.open_app("gallery")
    desk.running.system.bus.emit(
        "view",
        {
            "app": "gallery",
            "response": {"view_type": "image", "data": {"url": "evil.html", "caption": "evil"}},
        },
    )
    body = desk.wait_view("gallery", "image")
    body.evaluate(SETTLED)
    assert desk.page.evaluate("() => window.__pwned") is None
    expect(desk.page.locator("iframe, object, embed")).to_have_count(0)
