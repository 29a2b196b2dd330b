"""What the generic app checks in a view's ``data`` before showing it (docs/protocol.md §2)."""

from __future__ import annotations

import re
from typing import Any

from aios.protocol import VIEW_TYPES

__all__ = ["view_data_problems"]

_CHART_KINDS = ("bar", "line", "pie", "doughnut")
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def view_data_problems(view_type: str, data: Any) -> list[str]:
    """What is wrong with ``data`` for ``view_type`` (docs/protocol.md §2); [] when it is usable.

    The system never interprets ``data``; this check is the
    generic app's own, so that an LLM gets told why its view would render
    badly instead of the user seeing a broken window.
    """
    if not isinstance(data, dict):
        return [f"data must be an object for a {view_type} view"]
    check = _SHAPE_CHECKS.get(view_type)
    return check(data) if check else []


def _need_list(data: dict[str, Any], key: str, view: str, *, items: str = "") -> list[str]:
    value = data.get(key)
    if not isinstance(value, list):
        return [f"{view} view: data.{key} must be a list{items}"]
    return []


def _check_text(d: dict[str, Any]) -> list[str]:
    return [] if isinstance(d.get("content"), str) else ["text view: data.content must be a string"]


def _check_list(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "items", "list", items=" of {title, sub}")
    if not problems and not all(isinstance(i, dict | str) for i in d["items"]):
        problems.append("list view: each item must be an object {title, sub} or a string")
    return problems


def _check_card(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "cards", "card", items=" of {title, image?, desc}")
    if not problems and not all(isinstance(c, dict) for c in d["cards"]):
        problems.append("card view: each card must be an object {title, image?, desc}")
    return problems


def _check_table(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "columns", "table") + _need_list(d, "rows", "table", items=" of rows")
    if not problems and not all(isinstance(r, list | dict) for r in d["rows"]):
        problems.append("table view: each row must be a list of cells")
    return problems


def _check_form(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "fields", "form", items=" of {name, label, type}")
    if not problems and not all(
        isinstance(f, dict) and isinstance(f.get("name"), str) and f["name"] for f in d["fields"]
    ):
        problems.append("form view: each field must be an object with a name")
    return problems


def _check_url(d: dict[str, Any], view: str, *, images: bool) -> list[str]:
    url = d.get("url")
    if not isinstance(url, str) or not url.strip():
        return [f"{view} view: data.url must be a non-empty string"]
    scheme = _URL_SCHEME.match(url.strip())
    if scheme is None:
        return []  # /apps/<id>/files/… or a path in the workdir
    name = scheme.group(1).lower()
    if name in ("http", "https") or (images and url.strip().lower().startswith("data:image/")):
        return []
    return [
        f"{view} view: data.url must be http(s)"
        + (", data:image/…" if images else "")
        + " or /apps/<app>/files/<path>"
    ]


def _check_media(d: dict[str, Any]) -> list[str]:
    problems = _check_url(d, "media", images=False)
    if d.get("type") not in ("audio", "video"):
        problems.append("media view: data.type must be audio or video")
    return problems


def _check_image(d: dict[str, Any]) -> list[str]:
    return _check_url(d, "image", images=True)


def _check_chart(d: dict[str, Any], kind_key: str = "type") -> list[str]:
    problems = []
    if d.get(kind_key) not in _CHART_KINDS:
        problems.append(f"chart: data.{kind_key} must be one of {', '.join(_CHART_KINDS)}")
    problems += _need_list(d, "labels", "chart")
    values, datasets = d.get("values"), d.get("datasets")
    if isinstance(datasets, list):
        if not all(isinstance(s, dict) and isinstance(s.get("values"), list) for s in datasets):
            problems.append("chart: each dataset must be {label, values: [numbers]}")
    elif not isinstance(values, list):
        problems.append("chart: data.values (a list of numbers) or data.datasets is needed")
    elif isinstance(d.get("labels"), list) and len(values) != len(d["labels"]):
        problems.append(f"chart: {len(d['labels'])} labels but {len(values)} values")
    return problems


def _check_code(d: dict[str, Any]) -> list[str]:
    return [] if isinstance(d.get("code"), str) else ["code view: data.code must be a string"]


def _check_dashboard(d: dict[str, Any]) -> list[str]:
    problems = _need_list(d, "widgets", "dashboard", items=" of {type, title?, ...}")
    if problems:
        return problems
    for i, w in enumerate(d["widgets"]):
        if (
            not isinstance(w, dict)
            or w.get("type") not in VIEW_TYPES
            or w.get("type") == "dashboard"
        ):
            problems.append(
                f"dashboard: widget {i} needs a type among "
                f"{', '.join(v for v in VIEW_TYPES if v != 'dashboard')}"
            )
            continue
        inner = w["data"] if isinstance(w.get("data"), dict) else w
        if w["type"] == "chart":
            key = "kind" if "kind" in inner and "chart_type" not in inner else "chart_type"
            found = [f"widget {i} {p}" for p in _check_chart(inner, key)]
        elif w["type"] == "media":
            found = [f"widget {i}: {p}" for p in _check_url(inner, "media", images=False)]
        else:
            found = [f"widget {i}: {p}" for p in view_data_problems(w["type"], inner)]
        problems += [f"dashboard: {p}" for p in found]
    return problems


_SHAPE_CHECKS = {
    "text": _check_text,
    "list": _check_list,
    "card": _check_card,
    "table": _check_table,
    "form": _check_form,
    "media": _check_media,
    "image": _check_image,
    "chart": _check_chart,
    "code": _check_code,
    "dashboard": _check_dashboard,
}
