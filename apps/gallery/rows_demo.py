"""The gallery's "rows" and "variants" views: per-item controls and button variants.

``rows`` is a to-do list whose items carry their own controls (a done checkbox,
a star toggle, a red delete button) and ``"done": true`` when ticked; the
desktop sends each with the item's id in ``params.id`` and the control's value
in ``params.value``. ``variants`` shows a plain, a primary and a danger button,
a select whose option values are numbers, and a code input (monospace, Tab
indents). Pure builders: the app keeps the state and echoes what it received.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aios_sdk import Lang, tr

ROW_TASKS = 40
"""Items of the rows view: enough that the list scrolls in a default-sized window."""
ROW_ACTIONS = frozenset({"row_done", "row_star", "row_delete"})
VARIANT_ACTIONS = frozenset({"var_plain", "var_primary", "var_danger", "var_size", "var_code"})
SIZES = ((10, "10 px"), (20, "20 px"), (40, "40 px"))


@dataclass
class RowsState:
    """What the user did to the rows view in this app process."""

    done: set[str] = field(default_factory=set)
    starred: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)

    def apply(self, action_id: str, params: dict[str, Any]) -> None:
        item = params.get("id")
        if not isinstance(item, str):
            return
        on = params.get("value") is True
        if action_id == "row_delete":
            self.deleted.add(item)
            return
        target = self.done if action_id == "row_done" else self.starred
        if on:
            target.add(item)
        else:
            target.discard(item)


def rows_view(state: RowsState, lang: Lang, count: int = ROW_TASKS) -> dict[str, Any]:
    items = []
    for i in range(1, count + 1):
        item_id = f"t{i}"
        if item_id in state.deleted:
            continue
        done = item_id in state.done
        items.append(
            {
                "id": item_id,
                "title": tr(lang, f"任务 {i}", f"Task {i}"),
                "sub": tr(lang, "勾选完成、加星或删除", "Tick, star or delete"),
                "done": done,
                "actions": [
                    {
                        "type": "checkbox",
                        "action_id": "row_done",
                        "label": tr(lang, "完成", "Done"),
                        "value": done,
                    },
                    {
                        "type": "toggle",
                        "action_id": "row_star",
                        "label": tr(lang, "星标", "Star"),
                        "value": item_id in state.starred,
                    },
                    {
                        "type": "button",
                        "action_id": "row_delete",
                        "label": tr(lang, "删除", "Delete"),
                        "variant": "danger",
                    },
                ],
            }
        )
    return {
        "title": tr(lang, "逐行控件", "Row controls"),
        "items": items,
        "empty": tr(lang, "清单是空的，没有要做的事。", "Nothing to do: the list is empty."),
    }


def variant_actions(lang: Lang) -> list[dict[str, Any]]:
    return [
        {"type": "button", "action_id": "var_plain", "label": tr(lang, "普通", "Plain")},
        {
            "type": "button",
            "action_id": "var_primary",
            "label": tr(lang, "保存", "Save"),
            "variant": "primary",
        },
        {
            "type": "button",
            "action_id": "var_danger",
            "label": tr(lang, "删除", "Delete"),
            "variant": "danger",
        },
        {
            "type": "select",
            "action_id": "var_size",
            "label": tr(lang, "字号", "Size"),
            "options": [{"value": v, "label": label} for v, label in SIZES],
            "value": SIZES[0][0],
        },
        {
            "type": "input",
            "action_id": "var_code",
            "label": tr(lang, "代码", "Code"),
            "code": True,
            "rows": 4,
            "value": "",
            "placeholder": "def f():",
        },
    ]
