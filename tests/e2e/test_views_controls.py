"""Every view type and every action control in a real browser (DESIGN §5, §10).

Views come from the bundled gallery app; what a control sent is asserted at the app's
side: the gallery echoes the action_request it received, and the window re-renders with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from tests.e2e.conftest import Desk
from tests.integration.conftest import Running

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery", "e2e_slow"]


def chart_of(canvas: Locator) -> dict[str, Any] | None:
    """The Chart.js instance drawn on a canvas: its type and data sizes."""
    return canvas.evaluate("""c => {
        const chart = window.Chart && window.Chart.getChart(c);
        return chart ? {type: chart.config.type, labels: chart.data.labels.length,
                        datasets: chart.data.datasets.length,
                        points: chart.data.datasets[0].data.length} : null;
    }""")


def release(running: Running, app: str = "e2e_slow") -> None:
    """Let the e2e_slow app's pending request finish (it waits for this file)."""
    record = running.system.launcher.get(app)
    assert record is not None and record.workdir is not None
    (record.workdir / "release").write_text("go")


# ------------------------------------------------------------------------------ views


SIGNED = r"^/apps/gallery/files/{}\?exp=\d+&sig=[0-9a-f]{{64}}$"
"""An app file's URL in a view: signed, since no cookie carries the token (DESIGN §11)."""


def signed_url(desk: Desk, name: str) -> str:
    grant = desk.api("GET", "/api/file-grants")["grants"]["gallery"]
    return f"/apps/gallery/files/{name}?exp={grant['exp']}&sig={grant['sig']}"


def test_text_view_keeps_lines_and_shows_markup_as_text(desk: Desk) -> None:
    body = desk.gallery_show("text")
    desk.wait_view("gallery", "text")
    content = body.locator(".text-content")
    expect(body.locator(".view-title")).to_have_text("文本 Text")
    expect(content).to_contain_text("欢迎来到组件展示！")
    expect(content).to_contain_text('<b>不是粗体</b> & "引号"')
    expect(content.locator("b")).to_have_count(0)
    assert "\n\n• 中文" in (content.text_content() or "")
    desk.shot("text")


def test_list_view_shows_a_hundred_items(desk: Desk) -> None:
    body = desk.gallery_show("list", "100 items")
    desk.wait_view("gallery", "list")
    items = body.locator(".list-item")
    expect(items).to_have_count(100)
    expect(items.first.locator(".list-title")).to_have_text("1. 回复邮件")
    expect(items.first.locator(".list-sub")).to_contain_text("截止 2026-01-01")
    items.last.scroll_into_view_if_needed()
    expect(items.last.locator(".list-title")).to_have_text("100. 学习 SQLite")
    expect(items.last).to_be_in_viewport()
    desk.shot("list")


def test_card_view_shows_every_card(desk: Desk) -> None:
    body = desk.gallery_show("card")
    desk.wait_view("gallery", "card")
    cards = body.locator(".card")
    expect(cards).to_have_count(4)
    expect(cards.first.locator(".card-title")).to_have_text("黄山 Huangshan")
    expect(cards.nth(3).locator(".card-desc")).to_contain_text("Bavaria")
    desk.shot("card")


def test_table_of_a_thousand_rows_is_usable(desk: Desk) -> None:
    body = desk.gallery_show("table", "1,000 rows")
    desk.wait_view("gallery", "table")
    rows = body.locator("tbody tr")
    expect(rows).to_have_count(1000)
    expect(body.locator(".table-count")).to_have_text("1000 rows")
    expect(body.locator("thead th")).to_have_count(7)
    last = rows.last
    last.scroll_into_view_if_needed()
    expect(last).to_be_in_viewport()
    expect(last.locator("td").first).to_have_text("SO-11000")
    desk.shot("table_1000_bottom")
    # Sorting by a header reorders the rows: descending order number puts the last first.
    header = body.locator("thead button", has_text="订单号 Order")
    header.click()
    header.click()
    expect(body.locator("thead th").first).to_have_attribute("aria-sort", "descending")
    expect(rows.first.locator("td").first).to_have_text("SO-11000")


def test_chart_view_draws_chartjs_bar_line_and_pie_charts(
    desk: Desk, subtests: pytest.Subtests
) -> None:
    for label, kind, points in [("Show", "bar", 7), ("Line", "line", 12), ("Pie", "pie", 5)]:
        with subtests.test(kind):
            body = desk.gallery_show("chart", label)
            desk.wait_view("gallery", "chart")
            canvas = body.locator(".chart-box canvas")
            expect(canvas).to_be_visible()
            expect(body.locator(".view-title")).to_have_text(
                "渠道占比 Channels"
                if kind == "pie"
                else {"bar": "月销售额 Monthly sales", "line": "访问量趋势 Visits"}[kind]
            )
            assert chart_of(canvas) == {
                "type": kind,
                "labels": points,
                "datasets": 1,
                "points": points,
            }
            size = canvas.bounding_box()
            assert size is not None and size["width"] > 100 and size["height"] > 100
            desk.shot(f"chart_{kind}")


def test_code_view_is_highlighted_by_highlightjs(desk: Desk) -> None:
    body = desk.gallery_show("code")
    desk.wait_view("gallery", "code")
    code = body.locator("pre code")
    expect(code).to_have_class(re.compile(r"\blanguage-python\b"))
    expect(code.locator("span.hljs-keyword").first).to_be_visible()
    keywords = code.locator("span.hljs-keyword").all_text_contents()
    assert {"def", "return", "from", "import"} <= set(keywords)
    expect(code.locator("span.hljs-string").first).to_be_visible()
    assert "def fib_iter(n: int) -> int:" in (code.text_content() or "")
    expect(body.locator(".code-lang")).to_have_text("fibonacci.py")
    desk.shot("code")


def test_media_view_plays_a_file_the_app_made(desk: Desk) -> None:
    body = desk.gallery_show("media")
    desk.wait_view("gallery", "media")
    audio = body.locator("audio.media-player")
    expect(audio).to_have_attribute("src", re.compile(SIGNED.format(re.escape("tone.wav"))))
    expect(body.locator(".media-title")).to_have_text("440 Hz sine tone")
    # The browser loaded the file's metadata (1.5 s of sound) from the app's files URL.
    desk.page.wait_for_function(
        "el => el.readyState >= 1 && Math.abs(el.duration - 1.5) < 0.05", arg=audio.element_handle()
    )
    resp = desk.page.request.get(desk.running.url + signed_url(desk, "tone.wav"))
    assert resp.status == 200 and resp.headers["content-type"].startswith("audio/")
    expect(body.locator(".media-error")).to_be_hidden()
    desk.shot("media_audio")


def test_media_view_as_video(desk: Desk) -> None:
    desk.gallery_show("media")
    desk.wait_view("gallery", "media")  # makes sure tone.wav exists
    desk.running.system.bus.emit(
        "view",
        {
            "app": "gallery",
            "response": {
                "status": "ok",
                "view_type": "media",
                "data": {
                    "url": "/apps/gallery/files/tone.wav",
                    "type": "video",
                    "title": "A video",
                },
            },
        },
    )
    body = desk.body("gallery")
    video = body.locator("video.media-player")
    expect(video).to_have_attribute("src", re.compile(SIGNED.format(re.escape("tone.wav"))))
    desk.page.wait_for_function("el => el.readyState >= 1", arg=video.element_handle())
    expect(body.locator(".media-error")).to_be_hidden()
    desk.shot("media_video")


def test_image_view_loads_the_apps_picture(desk: Desk) -> None:
    body = desk.gallery_show("image")
    desk.wait_view("gallery", "image")
    img = body.locator("img.image-main")
    expect(img).to_have_attribute("src", re.compile(SIGNED.format(re.escape("sample.png"))))
    desk.page.wait_for_function(
        "el => el.complete && el.naturalWidth > 0", arg=img.element_handle()
    )
    expect(body.locator(".image-caption")).to_have_text("A PNG made by the gallery")
    resp = desk.page.request.get(desk.running.url + signed_url(desk, "sample.png"))
    assert resp.status == 200 and resp.headers["content-type"] == "image/png"
    desk.shot("image")


def test_form_view_fields_and_submit(desk: Desk) -> None:
    body = desk.gallery_show("form")
    desk.wait_view("gallery", "form")
    form = body.locator("form.view-form")
    expect(form.get_by_label("姓名 Name")).to_have_value("张三")
    expect(form.get_by_label("邮箱 Email")).to_have_attribute("type", "email")
    expect(form.get_by_label("年龄 Age")).to_have_value("30")
    expect(form.get_by_label("生日 Birthday")).to_have_value("1995-06-18")
    expect(form.get_by_label("简介 Bio")).to_have_value("喜欢爬山和写代码。")
    expect(form.get_by_label("订阅新闻 Newsletter")).to_be_checked()
    expect(form.get_by_label("城市 City").locator("option:checked")).to_have_text("杭州")
    desk.shot("form")

    form.get_by_label("姓名 Name").fill("王五")
    form.get_by_label("年龄 Age").fill("41")
    form.get_by_label("城市 City").select_option(label="上海")
    form.get_by_label("订阅新闻 Newsletter").uncheck()
    desk.control("gallery", "form_submit").get_by_role("button").click()
    assert desk.echo("form_submit") == {
        "action_id": "form_submit",
        "form_values": {
            "name": "王五",
            "email": "",
            "age": 41,
            "city": "上海",
            "birthday": "1995-06-18",
            "bio": "喜欢爬山和写代码。",
            "newsletter": False,
        },
    }


def test_dashboard_composes_widgets_of_other_views(desk: Desk) -> None:
    body = desk.gallery_show("dashboard")
    desk.wait_view("gallery", "dashboard")
    widgets = body.locator(".dash-widget")
    expect(widgets).to_have_count(4)
    expect(widgets.nth(0).locator(".view-text")).to_contain_text("订单 128")
    assert chart_of(widgets.nth(1).locator("canvas"))["type"] == "line"  # type: ignore[index]
    expect(widgets.nth(2).locator("tbody tr")).to_have_count(5)
    expect(widgets.nth(3).locator(".list-item")).to_have_count(3)
    expect(widgets.locator(".dash-title")).to_have_text(
        ["今日概况 Today", "访问量趋势 Visits", "最新订单 Latest orders", "待办 To-do"]
    )
    desk.shot("dashboard")


def test_loading_placeholder_shows_while_a_step_plan_runs(desk: Desk) -> None:
    body = desk.open_app("e2e_slow")
    desk.control("e2e_slow", "plan").click()
    desk.wait_view("e2e_slow", "loading")
    expect(body.locator(".loading-text")).to_have_text("Working on it…")
    expect(body.locator(".spinner")).to_be_visible()
    desk.shot("loading")
    release(desk.running)
    desk.wait_view("e2e_slow", "text")
    expect(body.locator(".text-content")).to_have_text("plan done")


def test_error_view_shows_the_apps_error(desk: Desk) -> None:
    body = desk.gallery_show("error")
    desk.wait_view("gallery", "error")
    expect(body.locator(".error-title")).to_have_text("Sample error")
    expect(body.locator(".error-message")).to_contain_text("missing.txt")
    expect(body.locator(".win-message.is-error")).to_contain_text("missing.txt")
    expect(desk.win("gallery")).to_have_class(re.compile(r"\bhas-error\b"))
    desk.shot("error")


FALLBACKS: list[tuple[str, dict[str, Any], str]] = [
    ("table", {"nope": 1, "rows": "not a list"}, 'cannot be shown as "table"'),
    ("chart", {"type": "radar", "values": [1, 2]}, 'cannot be shown as "chart"'),
    ("hologram", {"nope": 1}, 'Unknown view type "hologram"'),
]


def test_unknown_or_mismatched_data_shows_a_json_tree(
    desk: Desk, subtests: pytest.Subtests
) -> None:
    desk.open_app("gallery")
    for view_type, data, note in FALLBACKS:
        with subtests.test(view_type):
            # Straight onto the event bus: the server would refuse such a reply from an app.
            desk.running.system.bus.emit(
                "view",
                {
                    "app": "gallery",
                    "response": {"status": "ok", "view_type": view_type, "data": data},
                },
            )
            body = desk.wait_view("gallery", view_type)
            expect(body.locator(".view-json .view-note")).to_contain_text(note)
            keys = [k.rstrip(": ") for k in body.locator(".view-json .jt-key").all_text_contents()]
            assert set(data) <= set(keys)
            expect(body.locator(".view-json")).to_contain_text(str(list(data.values())[0]))
            desk.shot(f"fallback_{view_type}")


# ---------------------------------------------------------------------------- controls


def _open_controls(desk: Desk) -> None:
    desk.gallery_show("controls")
    expect(desk.body("gallery").locator(".view-title")).to_have_text("All ten action controls")


def _link(desk: Desk, ctl: Locator) -> None:
    # The link opens in a new tab; the outside site is stubbed (no internet here).
    desk.page.context.route(
        "https://example.com/**",
        lambda route: route.fulfill(body="example", content_type="text/plain"),
    )
    expect(ctl).to_have_attribute("href", "https://example.com/")
    expect(ctl).to_have_attribute("rel", "noopener noreferrer")
    with desk.page.expect_popup() as popup:
        ctl.click()
    popup.value.close()


def _submit_form(desk: Desk, ctl: Locator) -> None:
    ctl.get_by_label("姓名 name").fill("李四")
    ctl.get_by_label("年龄 age").fill("31")
    ctl.get_by_label("颜色 color").select_option(label="blue")
    ctl.get_by_role("button", name="提交 submit_form").click()


# Checkbox and radio are clicked, not check()ed: check() re-checks the state after its
# click, and when the app's reply has already re-rendered the window, it finds a new,
# unchecked control and clicks again, sending the action twice.
CONTROLS: dict[str, tuple[Callable[[Desk, Locator], None], dict[str, Any]]] = {
    "button": (lambda d, c: c.click(), {"params": {"n": 1, "who": "gallery"}}),
    "form": (_submit_form, {"form_values": {"name": "李四", "age": 31, "color": "blue"}}),
    "select": (
        lambda d, c: c.locator("select").select_option(label="香蕉 banana"),
        {"selected": "banana"},
    ),
    "checkbox": (lambda d, c: c.get_by_label("c", exact=True).click(), {"checked": ["a", "c"]}),
    "radio": (lambda d, c: c.get_by_label("large").click(), {"selected": "large"}),
    "input": (
        lambda d, c: (c.locator("input").fill("hello 世界"), c.locator("input").press("Enter")),
        {"value": "hello 世界"},
    ),
    "link": (_link, {"href": "https://example.com"}),
    "toggle": (lambda d, c: c.click(), {"on": True}),
    "slider": (lambda d, c: c.locator("input[type=range]").fill("75"), {"value": 75}),
    "datetime": (
        lambda d, c: c.locator("input").fill("2026-02-03T10:30"),
        {"value": "2026-02-03T10:30"},
    ),
}


def test_each_control_sends_exactly_its_payload(desk: Desk, subtests: pytest.Subtests) -> None:
    _open_controls(desk)
    sessions: set[str] = set()
    desk.page.on(
        "response",
        lambda r: r.url.endswith("/api/action") and r.ok and sessions.add(r.json()["session_id"]),
    )
    sent = []
    for kind, (operate, payload) in CONTROLS.items():
        with subtests.test(kind):
            action_id = f"ctl_{kind}"
            ctl = desk.control("gallery", action_id)
            expect(ctl).to_be_visible()
            operate(desk, ctl)
            assert desk.echo(action_id) == {"action_id": action_id, **payload}
            sent.append({"action_id": action_id, **payload})
            # The window re-rendered with the reply: the echo view, the controls again.
            message = desk.body("gallery").locator(".win-message")
            expect(message).to_have_text(f"Received {action_id}")
            desk.shot(f"control_{kind}")
    # The desktop kept one session, whose memory holds the same actions in order.
    assert len(sessions) == 1
    history = desk.api("GET", f"/api/sessions/{sessions.pop()}")["history"]
    actions = [
        h["content"]["action"] for h in history if h["role"] == "user" and "action" in h["content"]
    ]
    assert [a for a in actions if a["action_id"].startswith("ctl_")] == sent


def test_a_control_is_disabled_while_its_request_runs(desk: Desk) -> None:
    desk.open_app("e2e_slow")
    button = desk.control("e2e_slow", "wait")
    expect(button).to_be_enabled()
    button.click()
    expect(button).to_be_disabled()
    expect(button).to_have_attribute("aria-busy", "true")
    expect(desk.win("e2e_slow")).to_have_class(re.compile(r"\bis-busy\b"))
    desk.shot("busy")
    release(desk.running)
    expect(desk.body("e2e_slow").locator(".text-content")).to_have_text("released")
    expect(desk.control("e2e_slow", "wait")).to_be_enabled()
    expect(desk.win("e2e_slow")).not_to_have_class(re.compile(r"\bis-busy\b"))


def test_an_error_reply_shows_in_the_window(desk: Desk) -> None:
    body = desk.open_app("e2e_slow")
    desk.control("e2e_slow", "fail").click()
    desk.wait_view("e2e_slow", "error")
    expect(body.locator(".error-title")).to_have_text("Slow E2E failed")
    expect(body.locator(".error-message")).to_have_text("failed on purpose (E2E)")
    expect(body.locator(".win-message.is-error")).to_have_text("failed on purpose (E2E)")
    expect(desk.win("e2e_slow")).to_have_class(re.compile(r"\bhas-error\b"))
    expect(desk.control("e2e_slow", "back")).to_be_enabled()
    desk.shot("error_reply")
