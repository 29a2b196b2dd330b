"""Hostile data for every view type: what a buggy or malicious app might send.

The desktop renders app data as text and filters URLs (DESIGN §10); its
end-to-end tests push these payloads through every view and control and
assert that nothing runs (``window.__pwned`` stays undefined). Every string
here is inert data for this app: it is returned, never interpreted.
"""

from __future__ import annotations

import base64
from typing import Any

SCRIPT = "<script>window.__pwned=1</script>"
IMG_ONERROR = "<img src=x onerror=window.__pwned=1>"
SVG_ONLOAD = "<svg onload=window.__pwned=1></svg>"
IFRAME = '<iframe src="javascript:window.__pwned=1"></iframe>'
JS_URL = "javascript:window.__pwned=1"
JS_URL_MIXED = " JaVaScRiPt:window.__pwned=1"
JS_URL_TAB = "java\tscript:window.__pwned=1"
DATA_HTML = "data:text/html,<script>window.__pwned=1</script>"
SVG_DOC = (
    "<svg xmlns='http://www.w3.org/2000/svg' onload='window.__pwned=1'>"
    "<script>window.__pwned=1</script></svg>"
)
SVG_DATA_URL = "data:image/svg+xml," + SVG_DOC
SVG_DATA_URL_B64 = "data:image/svg+xml;base64," + base64.b64encode(SVG_DOC.encode()).decode()
CSS_URL = "red;background:url(javascript:window.__pwned=1)"
CSS_EXPRESSION = "expression(window.__pwned=1)"
STYLE_BREAK = "</style><script>window.__pwned=1</script>"
TEMPLATE = "{{constructor.constructor('window.__pwned=1')()}}"
ATTR_BREAK = '" onmouseover="window.__pwned=1" x="'

STRINGS: list[str] = [
    SCRIPT,
    IMG_ONERROR,
    SVG_ONLOAD,
    IFRAME,
    JS_URL,
    DATA_HTML,
    SVG_DATA_URL,
    CSS_URL,
    STYLE_BREAK,
    TEMPLATE,
    ATTR_BREAK,
]
"""Every hostile text, for views that show lists of strings."""
URLS: list[str] = [JS_URL, JS_URL_MIXED, JS_URL_TAB, DATA_HTML, SVG_DATA_URL, SVG_DATA_URL_B64]
"""Every hostile URL, for fields that hold a link or an image source."""


def _pick(seq: list[str], i: int) -> str:
    return seq[i % len(seq)]


def text() -> dict[str, Any]:
    return {"title": SCRIPT, "content": "\n".join(STRINGS), "style": CSS_URL}


def list_() -> dict[str, Any]:
    return {
        "title": IMG_ONERROR,
        "items": [
            {
                "id": f"h{i}",
                "title": s,
                "sub": _pick(STRINGS, i + 1),
                "image": _pick(URLS, i),
                "status": STYLE_BREAK,
            }
            for i, s in enumerate(STRINGS)
        ],
    }


def card() -> dict[str, Any]:
    return {
        "title": STYLE_BREAK,
        "cards": [
            {
                "title": _pick(STRINGS, i),
                "desc": _pick(STRINGS, i + 3),
                "image": url,
                "color": CSS_URL,
                "meta": ATTR_BREAK,
            }
            for i, url in enumerate(URLS)
        ],
    }


def table() -> dict[str, Any]:
    return {
        "title": SCRIPT,
        "columns": [SCRIPT, IMG_ONERROR, STYLE_BREAK, JS_URL],
        "rows": [
            [_pick(STRINGS, i), _pick(STRINGS, i + 1), _pick(URLS, i), _pick(STRINGS, i + 2)]
            for i in range(len(STRINGS))
        ],
    }


def form() -> dict[str, Any]:
    return {
        "title": SCRIPT,
        "description": IMG_ONERROR,
        "fields": [
            {
                "name": "a",
                "label": IMG_ONERROR,
                "type": "text",
                "value": SCRIPT,
                "placeholder": ATTR_BREAK,
            },
            {
                "name": "b",
                "label": SCRIPT,
                "type": "select",
                "options": [{"label": IMG_ONERROR, "value": SCRIPT}, STYLE_BREAK, JS_URL],
                "value": SCRIPT,
            },
            {"name": "c", "label": STYLE_BREAK, "type": "url", "value": JS_URL},
            {"name": "d", "label": TEMPLATE, "type": "textarea", "value": SVG_DOC},
            {"name": "e", "label": ATTR_BREAK, "type": IMG_ONERROR, "value": CSS_URL},
        ],
    }


def media() -> dict[str, Any]:
    return {
        "url": JS_URL,
        "type": "audio",
        "title": SCRIPT,
        "artist": IMG_ONERROR,
        "cover": SVG_DATA_URL,
    }


def image() -> dict[str, Any]:
    return {"url": SVG_DATA_URL, "caption": IMG_ONERROR, "alt": ATTR_BREAK}


def chart() -> dict[str, Any]:
    return {
        "type": "bar",
        "title": SCRIPT,
        "labels": [SCRIPT, IMG_ONERROR, STYLE_BREAK],
        "datasets": [
            {
                "label": IMG_ONERROR,
                "values": [3, 1, 2],
                "color": CSS_URL,
                "backgroundColor": CSS_URL,
                "borderColor": CSS_EXPRESSION,
            }
        ],
    }


def code() -> dict[str, Any]:
    return {
        "language": '"><script>window.__pwned=1</script>',
        "title": IMG_ONERROR,
        "code": "</code></pre>" + SCRIPT + "\n" + IMG_ONERROR + "\n" + STYLE_BREAK,
    }


def dashboard() -> dict[str, Any]:
    return {
        "title": SCRIPT,
        "widgets": [
            {"type": "text", "title": IMG_ONERROR, "content": "\n".join(STRINGS)},
            {"type": "image", "title": SCRIPT, "url": JS_URL, "caption": SCRIPT},
            {"type": "image", "title": STYLE_BREAK, "url": DATA_HTML, "caption": IMG_ONERROR},
            {"type": "image", "title": SVG_ONLOAD, "url": SVG_DATA_URL_B64, "caption": SVG_ONLOAD},
            {"type": "media", "title": IFRAME, "url": DATA_HTML, "media_type": "video"},
            {"type": "list", "title": SCRIPT, "items": list_()["items"][:4]},
            {
                "type": "table",
                "title": STYLE_BREAK,
                **{k: v for k, v in table().items() if k != "title"},
            },
            {
                "type": "chart",
                "title": CSS_URL,
                "chart_type": "pie",
                "labels": [SCRIPT, JS_URL],
                "values": [1, 2],
            },
            {"type": "card", "title": TEMPLATE, "cards": card()["cards"][:2]},
            {"type": IMG_ONERROR, "title": SCRIPT, "content": SCRIPT},
        ],
    }


BUILDERS = {
    "text": text,
    "list": list_,
    "card": card,
    "table": table,
    "form": form,
    "media": media,
    "image": image,
    "chart": chart,
    "code": code,
    "dashboard": dashboard,
}


def actions() -> list[dict[str, Any]]:
    """Controls with hostile labels, options and links; their ids echo like the others."""
    return [
        {
            "type": "button",
            "label": IMG_ONERROR,
            "action_id": "ctl_button",
            "params": {"x": SCRIPT},
        },
        {
            "type": "button",
            "label": SVG_ONLOAD,
            "action_id": "ctl_button",
            "params": {"y": IMG_ONERROR},
            "confirm": SCRIPT,
        },
        {"type": "link", "label": SCRIPT, "action_id": "ctl_link", "href": JS_URL},
        {"type": "link", "label": STYLE_BREAK, "action_id": "ctl_link", "href": DATA_HTML},
        {"type": "link", "label": SVG_ONLOAD, "action_id": "ctl_link", "href": JS_URL_TAB},
        {
            "type": "select",
            "label": SCRIPT,
            "action_id": "ctl_select",
            "options": [{"label": IMG_ONERROR, "value": SCRIPT}, STYLE_BREAK],
        },
        {
            "type": "checkbox",
            "label": STYLE_BREAK,
            "action_id": "ctl_checkbox",
            "options": [IMG_ONERROR, {"label": SCRIPT, "value": JS_URL}],
        },
        {
            "type": "radio",
            "label": ATTR_BREAK,
            "action_id": "ctl_radio",
            "options": [SCRIPT, TEMPLATE],
        },
        {
            "type": "input",
            "label": IMG_ONERROR,
            "action_id": "ctl_input",
            "placeholder": SCRIPT,
            "value": ATTR_BREAK,
        },
        {"type": "toggle", "label": SCRIPT, "action_id": "ctl_toggle"},
        {"type": "slider", "label": IMG_ONERROR, "action_id": "ctl_slider"},
        {"type": "datetime", "label": STYLE_BREAK, "action_id": "ctl_datetime", "value": SCRIPT},
        {
            "type": "submit_form",
            "label": SCRIPT,
            "action_id": "ctl_form",
            "fields": [
                {"name": "x", "label": IMG_ONERROR, "value": SCRIPT},
                {
                    "name": "y",
                    "label": STYLE_BREAK,
                    "type": "select",
                    "options": [JS_URL, {"label": SVG_ONLOAD, "value": 1}],
                },
            ],
        },
    ]
