# Longer than ~500 lines on purpose: a bundled app is what third-party developers copy: its
# handlers and bilingual messages stay in one file they can read at once (the forms, which
# need no I/O, are in files_views.py).
"""文件管理 (files): browse, preview, create, rename and delete files in the workspace.

Everything goes through the system's atomic tools, so the sandbox and the
audit log apply: ``file_list`` to browse, ``file_read`` to preview,
``file_write`` to create. There is no delete, rename or make-folder tool, so those run
a fixed one-line Python script (:data:`FS_SCRIPTS`) through ``shell_exec`` with the
path as a separate argv entry: no shell parses it, the command policy checks
that the path argument stays in the workdir, and the OS sandbox confines
the interpreter to the workdir. Renaming moves the entry with the same helper
(``mv``): every byte kept, and nothing read first (a read before a command
makes the run ask about the command, DESIGN §14.5). A new folder ("新建文件夹 照片",
"make a folder called photos") is made the same way (``mkdir``).

Deleting asks the user once (DESIGN §13): ``delete`` (the button, or
"删除 a.txt") answers with an ``ask`` step, a ``confirm`` card in the window
and the conversation panel, that *covers* the exact delete command: a yes
approves that one call, so the system's approval policy does not ask about
it again, and in the "auto" mode the card still asks. Only the next round,
with the answer ``true`` in ``tool_results``, deletes. No, an expired or a
cancelled question deletes nothing and says so.

Text files are edited in a form (a monospace text area, Save / Cancel) and
saved with ``file_write``; binary files and files larger than
:data:`EDIT_MAX_BYTES` are refused with a message saying why. A mistake the
user can fix at once (a name that exists already) keeps the file list and
says so in its message line instead of replacing the window with an error.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import unquote

import files_lib as fl
from files_lib import BadPath
from files_views import Ctx, Problem, btn, edit_form, new_form, rename_form, view

from aios_sdk import AIOSAgent, LLMError, LLMUnavailable, ToolError, error_view

log = logging.getLogger(__name__)

FS_SCRIPTS = {
    "rm": "import os,sys;p=sys.argv[1];"
    "os.rmdir(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)",
    "mv": "import os,sys;s,d=sys.argv[1:3];"
    "os.path.lexists(d) and sys.exit('already exists: '+d);os.rename(s,d)",
    "mkdir": "import os,sys;os.makedirs(sys.argv[1])",
}
"""Removes (``rm PATH``), renames (``mv SRC DST``) or makes (``mkdir PATH``) one entry;
paths arrive as argv.
Short on purpose: the confirm card shows the whole command line."""

PREVIEW_CHARS = 200_000
"""Characters of a text file shown in a preview (more is cut, with a note)."""
CREATE_MAX_CHARS = 1_000_000
"""Characters a new or edited file may hold."""
EDIT_MAX_BYTES = 1_000_000
"""Bytes up to which a text file can be edited in the window."""
MAX_ROWS_WITH_CONTROLS = 60
"""Entries that get their own buttons; more are listed without (the view stays usable)."""
CONFIRM_STEP = "confirm_delete"
"""The ``step_id`` of the question before a delete; its answer is ``step_confirm_delete``."""

ACTIONS = (
    "open_folder",
    "preview",
    "rename",
    "do_rename",
    "delete",
    "new_file",
    "create",
    "edit",
    "save",
    "refresh",
    "open_link",
    "download",
    "pick",
)


class FilesAgent(AIOSAgent):
    name = "文件管理"
    description = "浏览、预览、新建、重命名、删除工作区里的文件"
    icon = "🗂️"
    role_prompt = "你是文件管理小AI。"

    # ------------------------------------------------------------ handle

    def handle(
        self,
        instruction: str | None,
        context: dict[str, Any],
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        c = Ctx(context if isinstance(context, dict) else {})
        try:
            if action_request is not None:
                return self._action(c, action_request)
            return self._instruction(c, instruction)
        except Problem as p:
            if p.inline:
                return self._inline_error(c, c.t(p.zh, p.en), p.folder)
            return self._error(c, c.t(p.zh, p.en), p.folder)
        except BadPath as e:
            return self._error(c, e.text(c.en), c.folder)
        except ToolError as e:
            return self._error(c, c.t(f"操作失败：{e.error}", f"failed: {e.error}"), c.folder)

    def _action(self, c: Ctx, req: Any) -> dict[str, Any]:
        if not isinstance(req, dict):
            raise Problem("操作请求必须是对象", "the action request must be an object")
        action_id = req.get("action_id")
        if action_id not in ACTIONS:
            raise Problem(
                f"未知的操作 {action_id!r}（可用：{', '.join(ACTIONS)}）",
                f"unknown action {action_id!r} (known: {', '.join(ACTIONS)})",
            )
        if action_id in ("create", "do_rename", "save"):
            values = req.get("form_values")
            if not isinstance(values, dict):
                raise Problem(
                    f"{action_id} 需要表单内容 form_values", f"{action_id} needs form_values"
                )
            if action_id == "create":
                return self._create(
                    c, values.get("name"), values.get("content"), values.get("folder", c.folder)
                )
            if action_id == "save":
                return self._save(c, values.get("path"), values.get("content"))
            return self._do_rename(c, values.get("path"), values.get("new_name"))
        if action_id in ("open_link", "download"):
            # The desktop opened the link itself; keep showing that file.
            return self._preview(c, self._path_from_href(c, req.get("href")))
        params = req.get("params")
        params = params if isinstance(params, dict) else {}
        if action_id == "refresh":
            return self._browse(c, fl.clean_rel(params.get("path", c.folder), allow_root=True))
        if action_id == "open_folder":
            picking = bool(params.get("picking"))
            return self._browse(
                c, fl.clean_rel(params.get("path"), allow_root=True), picking=picking
            )
        if action_id == "pick":
            return self._pick(c, fl.clean_rel(params.get("path")))
        if action_id == "new_file":
            return self._new_form(c, fl.clean_rel(params.get("path", c.folder), allow_root=True))
        if "path" not in params:
            raise Problem(f"{action_id} 需要参数 path", f"{action_id} needs the param path")
        path = fl.clean_rel(params.get("path"))
        return {
            "preview": self._preview,
            "rename": self._rename_form,
            "delete": self._ask_delete,
            "edit": self._edit_form,
        }[action_id](c, path)

    def _instruction(self, c: Ctx, text: str | None) -> dict[str, Any]:
        intent, args = fl.parse_instruction(text)
        if intent == "unknown":
            intent, args = self._llm_intent(c, args[0])
        if intent == "home":
            return self._browse(c, "")
        if intent == "pick":
            return self._browse(c, "", picking=True)
        if intent == "new":
            return self._new_form(c, c.folder)
        if intent == "list":
            return self._browse(c, fl.clean_rel(args[0], allow_root=True))
        if intent == "mkdir":
            return self._mkdir(c, args[0] if args else None)
        if intent == "create":
            folder = args[2] if len(args) > 2 else c.folder
            return self._create(c, args[0], args[1] if len(args) > 1 else "", folder)
        if intent in ("preview", "delete", "edit"):
            path = self._resolve(c, args[0])
            if intent == "edit":
                return self._edit_form(c, path)
            return self._preview(c, path) if intent == "preview" else self._ask_delete(c, path)
        if intent == "rename":
            path = self._resolve(c, args[0])
            return self._do_rename(c, path, args[1])
        reply = self._browse(c, c.folder)
        reply["message"] = c.t(
            f"没看懂「{args[0]}」。可以说：预览 a.txt、编辑 a.txt、新建 a.txt 内容、"
            "新建文件夹 照片、重命名 a.txt 为 b.txt、删除 a.txt。",
            f"I did not understand {args[0]!r}. Try: preview a.txt, edit a.txt, create a.txt "
            "text, make a folder called photos, rename a.txt to b.txt, delete a.txt.",
        )
        return reply

    @staticmethod
    def _path_from_href(c: Ctx, href: Any) -> str:
        prefix = fl.file_url(c.app, "")
        if not isinstance(href, str) or not href.startswith(prefix):
            raise Problem(
                f"链接 {href!r} 不是本应用的文件", f"link {href!r} is not a file of this app"
            )
        return fl.clean_rel(unquote(href[len(prefix) :]))

    def _resolve(self, c: Ctx, raw: str) -> str:
        """A name from an instruction: relative to the folder being browsed, else the root."""
        rel = fl.clean_rel(raw)
        if c.folder:
            inside = fl.join(c.folder, rel)
            if self._entry(c, inside) is not None:
                return inside
        return rel

    def _llm_intent(self, c: Ctx, text: str) -> tuple[str, list[str]]:
        """With an LLM, turn free text into one of the commands; without, unknown."""
        prompt = (
            'Map the user\'s request about files to JSON {"intent": one of '
            'home|list|preview|edit|create|mkdir|delete|rename|unknown, "args": [strings]}. '
            "create args: [name, content]; mkdir (a new folder) args: [path]; "
            "rename args: [old, new]; others: [path]. "
            "Answer with the JSON only."
        )
        try:
            answer = self.llm(
                [{"role": "system", "content": prompt}, {"role": "user", "content": text}]
            )
            parsed = json.loads(
                str(answer.get("content") or "").strip().strip("`").removeprefix("json").strip()
            )
        except (LLMUnavailable, LLMError, ValueError):
            return "unknown", [text]
        if not isinstance(parsed, dict):
            return "unknown", [text]
        intent, args = parsed.get("intent"), parsed.get("args") or []
        if (
            intent in ("home", "list", "preview", "edit", "create", "mkdir", "delete", "rename")
            and isinstance(args, list)
            and all(isinstance(a, str) for a in args)
        ):
            needed = {"home": 0, "list": 0, "create": 1, "rename": 2}.get(intent, 1)
            if len(args) >= needed:
                return intent, [*args, ""] if intent == "list" and not args else args
        return "unknown", [text]

    # ------------------------------------------------------------- tools

    def _listing(self, c: Ctx, folder: str) -> list[dict[str, Any]]:
        try:
            result = self.call_tool("file_list", path=c.tool_path(folder))
        except ToolError as e:
            raise Problem(
                f"打不开文件夹「{folder or c.wd}」：{e.error}",
                f"cannot open folder {folder or c.wd!r}: {e.error}",
            ) from e
        entries = result.get("entries") if isinstance(result, dict) else None
        return [
            e
            for e in entries or []
            if isinstance(e, dict) and not str(e.get("name", ".")).startswith(".")
        ]

    def _entry(self, c: Ctx, rel: str) -> dict[str, Any] | None:
        try:
            entries = self._listing(c, fl.parent_of(rel))
        except Problem:
            return None
        name = fl.base_of(rel)
        return next((e for e in entries if e.get("name") == name), None)

    def _must_exist(self, c: Ctx, rel: str) -> dict[str, Any]:
        entry = self._entry(c, rel)
        if entry is None:
            raise Problem(f"找不到「{rel}」", f"{rel!r} not found", fl.parent_of(rel))
        return entry

    @staticmethod
    def _helper_args(op: str, *paths: str) -> dict[str, Any]:
        """The ``shell_exec`` arguments of one helper operation (a confirm covers them)."""
        return {"cmd": ["python3", "-c", FS_SCRIPTS[op], *paths]}

    def _helper(self, c: Ctx, op: str, *paths: str) -> None:
        try:
            self.call_tool("shell_exec", **self._helper_args(op, *paths))
        except ToolError as e:
            out = e.result if isinstance(e.result, dict) else {}
            lines = str(out.get("stderr") or "").strip().splitlines()
            reason = lines[-1] if lines else e.error
            raise Problem(
                f"操作没有完成：{reason}",
                f"the operation did not complete: {reason}",
                fl.parent_of(paths[0]),
            ) from e

    # ------------------------------------------------------------- views

    def _pick(self, c: Ctx, path: str) -> dict[str, Any]:
        """The user chose a file for the app that launched us: answer with it as the result."""
        entry = self._entry(c, path)
        if entry is None or entry.get("type") == "dir":
            raise Problem(f"没有文件「{path}」", f"no file {path!r}", fl.parent_of(path))
        reply = self._browse(c, fl.parent_of(path))
        name = fl.base_of(path)
        reply["message"] = c.t(f"已选择「{name}」", f"picked {name}")
        reply["result"] = {"path": path, "name": name, "size": entry.get("size")}
        return reply

    def _browse(
        self, c: Ctx, folder: str, message: str | None = None, *, picking: bool = False
    ) -> dict[str, Any]:
        entries = self._listing(c, folder)
        entries.sort(key=lambda e: (e.get("type") != "dir", str(e.get("name")).lower()))
        rows: list[dict[str, Any]] = []
        per_row: list[dict[str, Any]] = []
        for i, e in enumerate(entries):
            rel = fl.join(folder, str(e.get("name")))
            kind = fl.kind_of(rel, str(e.get("type")))
            rows.append(
                {
                    "id": rel,
                    "name": str(e.get("name")) + ("/" if kind.key == "dir" else ""),
                    "type": c.t(kind.zh, kind.en),
                    "size": fl.human_size(e.get("size")),
                    "modified": str(e.get("modified") or "").replace("T", " ")[:19],
                }
            )
            if i >= MAX_ROWS_WITH_CONTROLS:
                continue
            if kind.key == "dir":
                opener = btn(c.t("打开", "Open"), "open_folder", rel)
                if picking:
                    opener["params"]["picking"] = True
                per_row.append(opener)
            else:
                if picking:
                    per_row.append(btn(c.t("选择", "Pick"), "pick", rel, "primary"))
                per_row.append(btn(c.t("预览", "Preview"), "preview", rel))
            per_row.append(btn(c.t("重命名", "Rename"), "rename", rel))
            per_row.append(btn(c.t("删除", "Delete"), "delete", rel, "danger"))
        crumbs = [btn(c.wd, "open_folder", "")]
        parts = folder.split("/") if folder else []
        for i, part in enumerate(parts):
            crumbs.append(btn(f"› {part}", "open_folder", "/".join(parts[: i + 1])))
        # The new-file form is a view of its own (like File › New): drawn under the list
        # it took the window's height and squeezed the list to nothing.
        create = btn(c.t("新建文件", "New file"), "new_file", folder, "primary")
        refresh = btn(c.t("刷新", "Refresh"), "refresh", folder)
        shown = f"{c.wd}/{folder}" if folder else c.wd
        if rows:
            default = c.t(f"「{shown}」里有 {len(rows)} 项", f"{len(rows)} items in {shown}")
        else:
            default = c.t(f"「{shown}」是空的，新建一个文件吧", f"{shown} is empty; create a file")
        return {
            "status": "ok",
            "view_type": "table",
            "data": {
                "title": shown,
                "folder": folder,
                "columns": [
                    {"key": "name", "label": c.t("名称", "Name")},
                    {"key": "type", "label": c.t("类型", "Type")},
                    {"key": "size", "label": c.t("大小", "Size")},
                    {"key": "modified", "label": c.t("修改时间", "Modified")},
                ],
                "rows": rows,
                "count": c.t(f"{len(rows)} 项", f"{len(rows)} items"),
                "empty": c.t("这个文件夹是空的", "This folder is empty"),
            },
            "actions": [*crumbs, create, refresh, *per_row],
            "message": message or default,
            "state": {"folder": folder},
        }

    def _inline_error(self, c: Ctx, message: str, folder: str) -> dict[str, Any]:
        """The list of ``folder`` (the root if it is gone) with ``message`` as its error."""
        try:
            reply = self._browse(c, folder, message)
        except Problem:
            reply = self._browse(c, "", message)
        reply["status"] = "error"
        return reply

    def _file_actions(self, c: Ctx, rel: str, *, editable: bool = False) -> list[dict[str, Any]]:
        url = fl.file_url(c.app, rel)
        edit = [btn(c.t("编辑", "Edit"), "edit", rel, "primary")] if editable else []
        return [
            btn(c.t("← 返回", "← Back"), "open_folder", fl.parent_of(rel)),
            *edit,
            {
                "type": "link",
                "label": c.t("在新标签页打开", "Open in a new tab"),
                "action_id": "open_link",
                "href": url,
            },
            {
                "type": "link",
                "label": c.t("下载", "Download"),
                "action_id": "download",
                "href": url,
            },
            btn(c.t("重命名", "Rename"), "rename", rel),
            btn(c.t("删除", "Delete"), "delete", rel, "danger"),
        ]

    def _preview(self, c: Ctx, rel: str) -> dict[str, Any]:
        entry = self._must_exist(c, rel)
        kind = fl.kind_of(rel, str(entry.get("type")))
        if kind.key == "dir":
            return self._browse(c, rel)
        actions = self._file_actions(c, rel)
        name = fl.base_of(rel)
        message = c.t(f"预览「{name}」", f"Previewing {name}")
        if kind.key == "image":
            return view(
                "image", {"url": fl.file_url(c.app, rel), "caption": name}, actions, message
            )
        if kind.key in ("audio", "video"):
            return view(
                "media",
                {"url": fl.file_url(c.app, rel), "type": kind.key, "title": name},
                actions,
                message,
            )
        try:
            text = self.call_tool("file_read", path=c.tool_path(rel), limit=PREVIEW_CHARS)
        except ToolError as e:
            raise Problem(
                f"读不了「{rel}」：{e.error}", f"cannot read {rel!r}: {e.error}", fl.parent_of(rel)
            ) from e
        text = str(text)
        if "\x00" in text or "\ufffd" in text[:4096]:
            return view(
                "text",
                {
                    "title": name,
                    "content": c.t(
                        "这是二进制文件，不能按文本预览。可以用「下载」打开它。",
                        "This is a binary file; it cannot be previewed as text. Use Download.",
                    ),
                },
                actions,
                message,
            )
        size = entry.get("size")
        if isinstance(size, int) and size > len(text.encode("utf-8")):
            message += c.t(
                f"（只显示前 {PREVIEW_CHARS} 个字符）", f" (first {PREVIEW_CHARS} characters only)"
            )
        actions = self._file_actions(c, rel, editable=True)
        lang = fl.CODE_LANG.get(fl.ext_of(rel))
        if lang:
            return view("code", {"language": lang, "code": text, "title": name}, actions, message)
        return view("text", {"title": name, "content": text}, actions, message)

    def _rename_form(self, c: Ctx, rel: str) -> dict[str, Any]:
        self._must_exist(c, rel)
        return rename_form(c, rel)

    def _new_form(self, c: Ctx, folder: str) -> dict[str, Any]:
        return new_form(c, folder)

    def _edit_form(self, c: Ctx, rel: str) -> dict[str, Any]:
        return edit_form(c, rel, self._editable_text(c, rel))

    def _editable_text(self, c: Ctx, rel: str) -> str:
        """The whole text of ``rel``, or an inline Problem saying why it cannot be edited."""
        entry = self._must_exist(c, rel)
        folder = fl.parent_of(rel)
        kind = fl.kind_of(rel, str(entry.get("type")))
        size = entry.get("size")
        name = fl.base_of(rel)
        if entry.get("type") != "file" or kind.key in ("image", "audio", "video"):
            raise Problem(
                f"「{name}」不是文本文件，不能编辑",
                f"{name!r} is not a text file; it cannot be edited",
                folder,
                inline=True,
            )
        if not isinstance(size, int) or size > EDIT_MAX_BYTES:
            raise Problem(
                f"「{name}」太大了（{fl.human_size(size)}），最多能编辑 "
                f"{fl.human_size(EDIT_MAX_BYTES)} 的文件",
                f"{name!r} is too large to edit ({fl.human_size(size)}; "
                f"at most {fl.human_size(EDIT_MAX_BYTES)})",
                folder,
                inline=True,
            )
        text = str(self.call_tool("file_read", path=c.tool_path(rel), limit=EDIT_MAX_BYTES))
        # Saving what was read must give back the same bytes: no NUL, nothing replaced.
        if "\x00" in text or "\ufffd" in text or len(text.encode("utf-8")) != size:
            raise Problem(
                f"「{name}」是二进制文件，不能按文本编辑",
                f"{name!r} is a binary file; it cannot be edited as text",
                folder,
                inline=True,
            )
        return text

    def _save(self, c: Ctx, raw_path: Any, content: Any) -> dict[str, Any]:
        rel = fl.clean_rel(raw_path)
        self._editable_text(c, rel)  # still there, still text
        if not isinstance(content, str):
            raise Problem(
                f"内容必须是文字（收到 {type(content).__name__}）",
                f"content must be text (got {type(content).__name__})",
                fl.parent_of(rel),
            )
        if len(content.encode("utf-8")) > EDIT_MAX_BYTES:
            raise Problem(
                f"内容太长（最多 {fl.human_size(EDIT_MAX_BYTES)}），没有保存",
                f"the content is too long (at most {fl.human_size(EDIT_MAX_BYTES)}); not saved",
                fl.parent_of(rel),
                inline=True,
            )
        try:
            self.call_tool("file_write", path=c.tool_path(rel), content=content)
        except ToolError as e:
            raise Problem(
                f"没能保存「{rel}」：{e.error}",
                f"could not save {rel!r}: {e.error}",
                fl.parent_of(rel),
                inline=True,
            ) from e
        reply = self._preview(c, rel)
        reply["message"] = c.t(f"已保存「{fl.base_of(rel)}」", f"Saved {fl.base_of(rel)}")
        return reply

    def _do_rename(self, c: Ctx, raw_path: Any, raw_name: Any) -> dict[str, Any]:
        rel = fl.clean_rel(raw_path)
        name = fl.clean_name(raw_name)
        folder = fl.parent_of(rel)
        target = fl.join(folder, name)
        self._must_exist(c, rel)
        if target == rel:
            return self._browse(c, folder, c.t("名称没有变化", "The name is unchanged"))
        if self._entry(c, target) is not None:
            raise Problem(
                f"没有重命名「{fl.base_of(rel)}」：「{name}」已经存在，换一个名字吧（没有覆盖任何文件）",
                f"Not renamed {fl.base_of(rel)!r}: {name!r} already exists; choose another "
                "name (nothing was overwritten)",
                folder,
                inline=True,
            )
        self._helper(c, "mv", rel, target)
        return self._browse(
            c,
            folder,
            c.t(
                f"已将「{fl.base_of(rel)}」重命名为「{name}」",
                f"Renamed {fl.base_of(rel)!r} to {name!r}",
            ),
        )

    def _ask_delete(self, c: Ctx, rel: str) -> dict[str, Any]:
        """Round one asks (a ``confirm`` step); the round with the answer deletes or not."""
        answer = c.results.get(f"step_{CONFIRM_STEP}")
        if isinstance(answer, dict):
            return self._after_confirm(c, rel, answer)
        entry = self._must_exist(c, rel)
        what = c.t("文件夹", "folder") if entry.get("type") == "dir" else c.t("文件", "file")
        reply = self._browse(
            c,
            fl.parent_of(rel),
            c.t(f"请确认是否删除「{rel}」", f"Please confirm deleting {rel!r}"),
        )
        # The card covers the delete command: the yes is its approval, asked once.
        covered = {"tool": "shell_exec", "args": self._helper_args("rm", rel)}
        reply["steps"] = [
            self.ask(
                "confirm",
                c.t(
                    f"确定要删除{what}「{rel}」吗？删除后无法恢复。",
                    f"Really delete the {what} {rel!r}? This cannot be undone.",
                ),
                default=False,
                step_id=CONFIRM_STEP,
                covers=[covered],
            )
        ]
        return reply

    def _after_confirm(self, c: Ctx, rel: str, answer: dict[str, Any]) -> dict[str, Any]:
        result = answer.get("result")
        if (
            answer.get("status") == "ok"
            and isinstance(result, dict)
            and result.get("value") is True
        ):
            return self._delete(c, rel)
        if answer.get("status") == "ok":
            why = c.t("你选择了不删除", "you chose not to delete it")
        elif answer.get("code") == "expired":
            why = c.t("确认已过期", "the question expired unanswered")
        elif answer.get("code") == "cancelled":
            why = c.t("已取消", "it was cancelled")
        else:
            why = c.t(f"没能确认：{answer.get('error')}", f"no answer: {answer.get('error')}")
        folder = fl.parent_of(rel)
        return self._browse(
            c, folder, c.t(f"没有删除「{rel}」：{why}", f"Not deleted {rel!r}: {why}")
        )

    def _delete(self, c: Ctx, rel: str) -> dict[str, Any]:
        entry = self._must_exist(c, rel)
        if entry.get("type") == "dir" and self._listing(c, rel):
            raise Problem(
                f"文件夹「{rel}」不是空的，请先删除里面的文件",
                f"folder {rel!r} is not empty; delete its files first",
                rel,
            )
        self._helper(c, "rm", rel)
        return self._browse(c, fl.parent_of(rel), c.t(f"已删除「{rel}」", f"Deleted {rel!r}"))

    def _mkdir(self, c: Ctx, raw: str | None) -> dict[str, Any]:
        """A new, empty folder (its parents too); one that exists already is left as it is."""
        if not raw:
            raise Problem(
                "新文件夹叫什么？比如说：新建文件夹 照片",
                "What should the new folder be called? For example: make a folder called photos",
                c.folder,
                inline=True,
            )
        rel = fl.clean_rel(raw, what="folder name", zh="文件夹名")
        if c.folder and "/" not in raw:
            rel = fl.join(c.folder, rel)  # inside the folder being browsed
        folder = fl.parent_of(rel)
        if self._entry(c, rel) is not None:
            raise Problem(
                f"「{rel}」已经存在，没有新建；换个名字吧",
                f"{rel!r} already exists; nothing was created. Choose another name",
                folder,
                inline=True,
            )
        self._helper(c, "mkdir", rel)
        return self._browse(c, folder, c.t(f"已新建文件夹「{rel}」", f"Created the folder {rel!r}"))

    def _create(self, c: Ctx, raw_name: Any, content: Any, raw_folder: Any) -> dict[str, Any]:
        folder = fl.clean_rel(raw_folder, allow_root=True, what="folder", zh="文件夹")
        rel = fl.join(folder, fl.clean_rel(raw_name, what="file name", zh="文件名"))
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise Problem(
                f"内容必须是文字（收到 {type(content).__name__}）",
                f"content must be text (got {type(content).__name__})",
                folder,
            )
        if len(content) > CREATE_MAX_CHARS:
            raise Problem(
                f"内容太长（{len(content)} 字符，最多 {CREATE_MAX_CHARS}）",
                f"content too long ({len(content)} characters, at most {CREATE_MAX_CHARS})",
                folder,
            )
        if self._entry(c, rel) is not None:
            raise Problem(
                f"「{rel}」已经存在，没有覆盖它；换个名字吧",
                f"{rel!r} already exists and was not overwritten; choose another name",
                folder,
                inline=True,
            )
        try:
            self.call_tool("file_write", path=c.tool_path(rel), content=content)
        except ToolError as e:
            raise Problem(
                f"没能创建「{rel}」：{e.error}", f"could not create {rel!r}: {e.error}", folder
            ) from e
        return self._browse(c, fl.parent_of(rel), c.t(f"已创建「{rel}」", f"Created {rel!r}"))

    # ------------------------------------------------------------ replies

    def _error(self, c: Ctx, message: str, folder: str = "") -> dict[str, Any]:
        return error_view(
            message,
            title=c.t("文件管理：出错了", "Files: error"),
            actions=[btn(c.t("返回文件列表", "Back to the files"), "open_folder", folder)],
        )


if __name__ == "__main__":
    FilesAgent().run()
