"""The files app's views that need no I/O: the per-call context, the forms, buttons.

The handlers in ``main.py`` read and write through the system's tools and build
their replies from these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import files_lib as fl
from files_lib import BadPath

from aios_sdk import locale_of, tr


class Problem(Exception):
    """Something the user should read (not a bug); becomes an error view, or with
    ``inline`` the list of ``folder`` with the message as its error line."""

    def __init__(self, zh: str, en: str, folder: str = "", *, inline: bool = False):
        super().__init__(zh)
        self.zh, self.en, self.folder, self.inline = zh, en, folder, inline


class Ctx:
    """The per-call facts the handlers need: locale, app id, workdir name, state."""

    def __init__(self, context: dict[str, Any]):
        self.lang = locale_of(context)
        self.en = self.lang == "en"
        self.app = str(context.get("app") or "files")
        workdir = context.get("workdir")
        self.wd = Path(workdir).name if isinstance(workdir, str) and workdir else "workspace"
        state = context.get("cwd_state")
        folder = state.get("folder") if isinstance(state, dict) else None
        try:
            self.folder = fl.clean_rel(folder, allow_root=True)
        except BadPath:
            self.folder = ""
        results = context.get("tool_results")
        self.results: dict[str, Any] = results if isinstance(results, dict) else {}

    def t(self, zh: str, en: str) -> str:
        return tr(self.lang, zh, en)

    def tool_path(self, rel: str) -> str:
        # Always prefixed with the workdir's own name: the sandbox reads a leading
        # "workspace/" as the workdir itself, so a folder that happens to be called
        # "workspace" inside it still resolves to the right place.
        return f"{self.wd}/{rel}" if rel else self.wd


def btn(label: str, action_id: str, path: str, variant: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "label": label,
        "action_id": action_id,
        "params": {"path": path},
    }
    if variant:
        button["variant"] = variant
    return button


def view(
    view_type: str, data: dict[str, Any], actions: list[dict[str, Any]], message: str
) -> dict[str, Any]:
    return {
        "status": "ok",
        "view_type": view_type,
        "data": data,
        "actions": actions,
        "message": message,
    }


def rename_form(c: Ctx, rel: str) -> dict[str, Any]:
    return view(
        "form",
        {
            "title": c.t(f"重命名「{rel}」", f"Rename {rel!r}"),
            "fields": [
                {
                    "name": "new_name",
                    "label": c.t("新名称", "New name"),
                    "type": "text",
                    "value": fl.base_of(rel),
                    "required": True,
                },
                {"name": "path", "type": "hidden", "value": rel},
            ],
        },
        [
            {
                "type": "submit_form",
                "label": c.t("重命名", "Rename"),
                "action_id": "do_rename",
                "variant": "primary",
            },
            btn(c.t("取消", "Cancel"), "open_folder", fl.parent_of(rel)),
        ],
        c.t("请输入新名称", "Enter the new name"),
    )


def new_form(c: Ctx, folder: str) -> dict[str, Any]:
    shown = f"{c.wd}/{folder}" if folder else c.wd
    return view(
        "form",
        {
            "title": c.t(f"在「{shown}」里新建文件", f"New file in {shown}"),
            "fields": [
                {
                    "name": "name",
                    "label": c.t("文件名", "File name"),
                    "type": "text",
                    "required": True,
                    "placeholder": "notes.txt",
                },
                {
                    "name": "content",
                    "label": c.t("内容", "Content"),
                    "type": "textarea",
                    "monospace": True,
                },
                {"name": "folder", "type": "hidden", "value": folder},
            ],
        },
        [
            {
                "type": "submit_form",
                "label": c.t("创建", "Create"),
                "action_id": "create",
                "variant": "primary",
            },
            btn(c.t("取消", "Cancel"), "open_folder", folder),
        ],
        c.t("输入文件名和内容", "Enter a file name and its content"),
    )


def edit_form(c: Ctx, rel: str, text: str) -> dict[str, Any]:
    name = fl.base_of(rel)
    return view(
        "form",
        {
            "title": c.t(f"编辑「{rel}」", f"Editing {rel}"),
            "fields": [
                {
                    "name": "content",
                    "label": name,
                    "type": "textarea",
                    "monospace": True,
                    "value": text,
                },
                {"name": "path", "type": "hidden", "value": rel},
            ],
        },
        [
            {
                "type": "submit_form",
                "label": c.t("保存", "Save"),
                "action_id": "save",
                "variant": "primary",
            },
            btn(c.t("取消", "Cancel"), "preview", rel),
        ],
        c.t(f"编辑「{name}」，改完点保存", f"Editing {name}; press Save when done"),
    )
