"""记事本 (notes): notes in SQLite, through the ``db_query`` atomic tool.

The database is ``notes.db`` in the app's workspace, so notes survive a
restart of the system. The table is created on first use. Views: a list of
notes with a search input, a tag filter and an add form; each note's row has
its own done box (``done`` with ``params.id`` / ``params.value``; done notes
are drawn struck through) and its own delete button. Tags are free text
(see :mod:`notes_lib`).
The current search and tag filter are kept in the session state, so an
action on a filtered list keeps the filter. Deleting asks first (DESIGN §13):
``delete`` answers with an ``ask`` step (a ``confirm`` card); only the next
round, with the answer ``true``, deletes the note.

Offline the app understands (see :func:`notes_lib.parse_instruction`) adding
("记一下明天买牛奶", "帮我记住…", "remember to water the plants", "jot down: …", with a
tag "#work" / "标签 工作"), marking done ("mark the dentist note as done",
"把买牛奶那条标记为完成"), deleting ("delete the note about milk", "删掉关于牛奶的笔记"),
searching ("find notes about milk", "搜一下牛奶") and listing ("show my notes"). A note
is named by words it contains; when several notes match, a ``choice`` step asks which.
With an LLM it also picks a tag for a new note and reads free-form requests.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any

import notes_lib as nl
from notes_lib import BadInput

from aios_sdk import (
    AIOSAgent,
    AppContext,
    AppFailure,
    Lang,
    LLMError,
    LLMUnavailable,
    Messages,
    StepResult,
    ToolError,
    action,
    error_view,
    tr,
)

log = logging.getLogger(__name__)

DSN = "notes.db"
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS notes ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, "
    "body TEXT NOT NULL DEFAULT '', tag TEXT NOT NULL DEFAULT 'other', "
    "done INTEGER NOT NULL DEFAULT 0, created TEXT NOT NULL)"
)
LIST_LIMIT = 200
"""Notes shown at most (the message tells the total)."""
CONTROLS_LIMIT = 30
"""Notes that get their own done box and delete button."""
TOGGLE = "done"
"""The per-row done box: ``params: {id, value}``."""
TOGGLE_PREFIX = "done."
"""The older per-note switch ``done.<id>`` with ``on``, still understood."""
CONFIRM_STEP = "confirm_delete"
"""The ``step_id`` of the question before a delete; its answer is ``step_confirm_delete``."""
WHICH_STEP = "which_note"
"""The ``step_id`` of the question "which note?" when a request's words name several."""
PICK_LIMIT = 10
"""Notes offered at most when a request's words name several."""
PICK_STEP = "pick_file"
"""The ``step_id`` of the launch that asks the files app for a file (DESIGN §13)."""


T = Messages(
    {
        "need_form": ("添加笔记需要表单内容 form_values", "add needs form_values"),
        "need_tag": ("请选择一个标签（selected）", "choose a tag (selected)"),
        "bad_switch": (
            "完成开关的值必须是 true 或 false（收到 {on}）",
            "the done switch's value must be true or false (got {on})",
        ),
        "no_note": (
            "没有编号为 {id} 的笔记（可能已被删除）",
            "there is no note {id} (it may have been deleted)",
        ),
        "db_error": ("数据库出错：{error}", "database error: {error}"),
        "db_unexpected": ("数据库返回了意外的结果", "the database returned an unexpected result"),
    }
)


class NotesAgent(AIOSAgent):
    name = "记事本"
    description = "记笔记、搜索、标签、完成"
    icon = "📝"
    role_prompt = "你是记事本小AI。"

    # ------------------------------------------------------------ handle

    messages = T

    def respond(
        self, instruction: str | None, context: Any, action_request: Any = None
    ) -> dict[str, Any]:
        ctx = AppContext.of(context)
        if isinstance(action_request, dict):
            action_id = action_request.get("action_id")
            if isinstance(action_id, str) and action_id.startswith(TOGGLE_PREFIX):
                # the older per-note switch: its id is in the action_id
                note = action_id[len(TOGGLE_PREFIX) :]
                params = {"id": note, "value": action_request.get("on")}
                action_request = {"action_id": TOGGLE, "params": params}
        try:
            self._db(SCHEMA)
            return super().respond(instruction, ctx, action_request)
        except AppFailure as e:  # from creating the table, before the SDK answers one
            return self.error_reply(ctx, e.message(T, ctx.lang))
        except BadInput as e:
            return self.error_reply(ctx, tr(ctx.lang, e.zh, e.en))

    def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
        return self._error(ctx.lang, message)

    def handle(
        self,
        instruction: str | None,
        context: AppContext,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return self._instruction(context, instruction)

    # ------------------------------------------------------------ actions

    @staticmethod
    def _filters(ctx: AppContext) -> tuple[str, str]:
        """The search and the tag filter kept in the session state."""
        query, tag = ctx.cwd_state.get("query"), ctx.cwd_state.get("tag")
        return (query if isinstance(query, str) else "", tag if isinstance(tag, str) else "")

    @action(TOGGLE)
    def done(
        self, ctx: AppContext, id: Any = None, value: Any = None, on: Any = None
    ) -> dict[str, Any]:
        return self._set_done(ctx.lang, id, on if value is None else value, *self._filters(ctx))

    @action("add")
    def add(self, ctx: AppContext, form_values: Any = None) -> dict[str, Any]:
        if not isinstance(form_values, dict):
            raise AppFailure("need_form")
        tags = nl.check_tags(form_values.get("tag"))
        return self._add(ctx.lang, form_values.get("title"), form_values.get("body"), tags)

    @action("search")
    def search(self, ctx: AppContext, value: Any = None) -> dict[str, Any]:
        return self._search(ctx.lang, value, self._filters(ctx)[1])

    @action("filter_tag")
    def filter_tag(self, ctx: AppContext, request: dict[str, Any]) -> dict[str, Any]:
        if "selected" not in request:
            raise AppFailure("need_tag")
        query = self._filters(ctx)[0]
        return self._list(ctx.lang, query, nl.check_filter(request.get("selected")))

    @action("delete")
    def delete(self, ctx: AppContext, id: Any = None) -> dict[str, Any]:
        return self._delete(ctx, id, *self._filters(ctx))

    @action("attach")
    def attach(self, ctx: AppContext) -> dict[str, Any]:
        return self._attach(ctx)

    @action("show_all")
    def show_all(self, ctx: AppContext) -> dict[str, Any]:
        return self._list(ctx.lang, "", "")

    @action("refresh")
    def refresh(self, ctx: AppContext) -> dict[str, Any]:
        return self._list(ctx.lang, *self._filters(ctx))

    def _instruction(self, ctx: AppContext, text: str | None) -> dict[str, Any]:
        lang = ctx.lang
        intent, arg = nl.parse_instruction(text)
        if intent == "unknown":
            intent, arg = self._llm_intent(arg)
        if intent in ("done", "undone", "delete"):
            return self._on_named(ctx, intent, arg)
        if intent == "vague":  # "delete all notes", "mark it as done": which one?
            example = {
                "delete": ("删掉关于牛奶的笔记", "delete the note about milk"),
                "done": ("把买牛奶那条标记为完成", "mark the milk note as done"),
                "undone": ("把买牛奶那条标记为未完成", "mark the milk note as not done"),
            }[arg]
            return self._list(
                lang,
                "",
                "",
                tr(
                    lang,
                    f"请说出笔记里的几个字，一次一条，例如：{example[0]}",
                    f"Say a few words of the note, one at a time, e.g. {example[1]!r}",
                ),
            )
        if intent == "add":
            title, tags = nl.split_hashtags(arg)
            return self._add(lang, title, "", tags)
        if intent == "search":
            return self._search(lang, arg, "")
        reply = self._list(lang, "", "")
        if intent == "unknown":
            reply["message"] = tr(
                lang,
                f"没看懂「{arg}」。可以说：记一下 明天买牛奶；搜索 牛奶。",
                f"I did not understand {arg!r}. Try: add note buy milk; search milk.",
            )
        return reply

    # ------------------------------------------------------------ by words

    def _matching(self, words: str) -> list[tuple[int, str, bool]]:
        """``(id, title, done)`` of the notes ``words`` name: the whole phrase in the title or
        body, else every one of its words (newest first)."""
        sql = (
            "SELECT id, title, done FROM notes WHERE {} ORDER BY done, id DESC LIMIT "
            f"{PICK_LIMIT}"
        )
        one = "(title LIKE ? ESCAPE '\\' OR body LIKE ? ESCAPE '\\')"
        rows = self._db(sql.format(one), [nl.like_pattern(words)] * 2)["rows"]
        parts = nl.note_words(words)
        if not rows and len(parts) > 1:
            params = [q for w in parts for q in [nl.like_pattern(w)] * 2]
            rows = self._db(sql.format(" AND ".join([one] * len(parts))), params)["rows"]
        return [(int(r[0]), str(r[1]), bool(r[2])) for r in rows]

    def _on_named(self, ctx: AppContext, intent: str, words: str) -> dict[str, Any]:
        """ "mark the dentist note as done" / "删掉关于牛奶的笔记": the note the words name;
        several: the user picks one (a ``choice`` step), none: the list says so."""
        lang = ctx.lang
        found = self._matching(words)
        if intent != "delete" and len(found) > 1:
            # "mark milk done" means the one not done yet, when only one is
            wanted = intent == "done"
            narrowed = [f for f in found if f[2] != wanted]
            found = narrowed or found
        if not found:
            return self._list(
                lang,
                "",
                "",
                tr(lang, f"没有找到包含「{words}」的笔记", f"No note mentions {words!r}"),
            )
        if len(found) == 1:
            note_id = found[0][0]
        else:
            chosen = ctx.result(WHICH_STEP)
            if chosen is None:
                return self._ask_which(lang, intent, words, found)
            picked = chosen.answer
            ids = {str(f[0]): f[0] for f in found}
            if not chosen.ok or picked not in ids:
                return self._list(lang, "", "", tr(lang, "没有改动任何笔记", "No note was changed"))
            note_id = ids[str(picked)]
            if intent == "delete":  # picking it on the card was the confirmation
                title = self._title(note_id)
                self._db("DELETE FROM notes WHERE id = ?", [note_id])
                return self._list(lang, "", "", tr(lang, f"已删除：{title}", f"Deleted: {title}"))
        if intent == "delete":
            return self._delete(ctx, note_id, "", "")
        return self._set_done(lang, note_id, intent == "done", "", "")

    def _ask_which(
        self, lang: Lang, intent: str, words: str, found: list[tuple[int, str, bool]]
    ) -> dict[str, Any]:
        options: list[Any] = [
            {"value": str(note_id), "label": title[:80] + (" ✓" if done else "")}
            for note_id, title, done in found
        ]
        if intent == "delete":
            options.append({"value": "cancel", "label": tr(lang, "都不删", "None of them")})
            prompt = tr(
                lang,
                f"有 {len(found)} 条笔记包含「{words}」，删除哪一条？删除后无法恢复。",
                f"{len(found)} notes mention {words!r}. Delete which one? This cannot be undone.",
            )
        else:
            prompt = tr(
                lang,
                f"有 {len(found)} 条笔记包含「{words}」，"
                f"把哪一条标记为{'完成' if intent == 'done' else '未完成'}？",
                f"{len(found)} notes mention {words!r}. Which one is "
                f"{'done' if intent == 'done' else 'not done'}?",
            )
        reply = self._list(lang, words, "", prompt)
        reply["steps"] = [self.ask("choice", prompt, options=options, step_id=WHICH_STEP)]
        return reply

    # ------------------------------------------------------------ commands

    def _attach(self, ctx: AppContext) -> dict[str, Any]:
        """ "Attach a file": the files app is launched for the user to pick one (DESIGN §13);
        the pick becomes a note pointing at it."""
        pick = {
            "step_id": PICK_STEP,
            "tool": "launch",
            "args": {"app": "files", "instruction": "选一个文件", "await_result": True},
        }
        waiting = {
            "status": "ok",
            "view_type": "loading",
            "data": {},
            "actions": [],
            "message": ctx.tr("请在文件管理里选一个文件", "pick a file in Files"),
        }
        return self.after(ctx, [pick], then=lambda got: self._attached(ctx.lang, got), view=waiting)

    def _attached(self, lang: Lang, got: StepResult) -> dict[str, Any]:
        picked = (got.value or {}) if got.ok else {}
        chosen = picked.get("result") if isinstance(picked.get("result"), dict) else None
        if chosen is None or not isinstance(chosen.get("path"), str):
            why = (
                tr(lang, "你关闭了文件管理", "you closed Files")
                if picked.get("closed_by_user")
                else str(got.raw.get("error") or got.code or "")
            )
            return self._list(
                lang, "", "", tr(lang, f"没有附加文件（{why}）", f"no file attached ({why})")
            )
        name = str(chosen.get("name") or chosen["path"])
        # no emoji: the desktop draws them only with an emoji font installed
        title = tr(lang, f"附件：{name}", f"Attachment: {name}")
        return self._add(lang, title[: nl.MAX_TITLE], f"files: {chosen['path']}", [])

    def _add(self, lang: Lang, title: Any, body: Any, tags: list[str]) -> dict[str, Any]:
        title = nl.check_text(title, "title", "标题", nl.MAX_TITLE * 50, required=True)
        body = nl.check_text(body, "body", "内容", nl.MAX_BODY, required=False)
        if len(title) > nl.MAX_TITLE:
            # A long dictated note: a short title, the whole text as the body.
            body = f"{title}\n\n{body}".strip() if body else title
            title = title[:40] + "…"
        tags = tags or [self._pick_tag(f"{title} {body}")]
        created = datetime.now().strftime("%Y-%m-%d %H:%M")
        self._db(
            "INSERT INTO notes (title, body, tag, done, created) VALUES (?, ?, ?, 0, ?)",
            [title, body, ",".join(tags), created],
        )
        shown = nl.label_of_tags(",".join(tags), lang)
        return self._list(
            lang, "", "", tr(lang, f"已记下：{title}（{shown}）", f"Noted: {title} ({shown})")
        )

    def _search(self, lang: Lang, value: Any, tag: str) -> dict[str, Any]:
        query = nl.check_text(value, "search text", "搜索内容", nl.MAX_QUERY, required=False)
        return self._list(lang, query, tag)

    def _set_done(self, lang: Lang, raw_id: Any, on: Any, query: str, tag: str) -> dict[str, Any]:
        note_id = nl.check_id(raw_id)
        if not isinstance(on, bool):
            raise AppFailure("bad_switch", on=repr(on))
        title = self._title(note_id)
        self._db("UPDATE notes SET done = ? WHERE id = ?", [int(on), note_id])
        return self._list(
            lang,
            query,
            tag,
            tr(
                lang,
                f"已完成：{title}" if on else f"已改为未完成：{title}",
                f"Done: {title}" if on else f"Not done: {title}",
            ),
        )

    def _delete(self, ctx: AppContext, raw_id: Any, query: str, tag: str) -> dict[str, Any]:
        """Round one asks (a ``confirm`` step); the round with the answer deletes or not."""
        lang = ctx.lang
        note_id = nl.check_id(raw_id)
        title = self._title(note_id)
        answer = ctx.result(CONFIRM_STEP)
        if answer is None:
            reply = self._list(
                lang,
                query,
                tag,
                tr(lang, f"请确认是否删除：{title}", f"Please confirm deleting: {title}"),
            )
            prompt = tr(
                lang,
                f"删除笔记「{title[:60]}」？删除后无法恢复。",
                f"Delete the note {title[:60]!r}? This cannot be undone.",
            )
            reply["steps"] = [self.ask("confirm", prompt, default=False, step_id=CONFIRM_STEP)]
            return reply
        if answer.answer is True:
            self._db("DELETE FROM notes WHERE id = ?", [note_id])
            return self._list(lang, query, tag, tr(lang, f"已删除：{title}", f"Deleted: {title}"))
        error = answer.raw.get("error")
        if answer.ok:
            why = tr(lang, "你选择了不删除", "you chose not to delete it")
        elif answer.code == "expired":
            why = tr(lang, "确认已过期", "the question expired unanswered")
        elif answer.code == "cancelled":
            why = tr(lang, "已取消", "it was cancelled")
        else:
            why = tr(lang, f"没能确认：{error}", f"no answer: {error}")
        return self._list(
            lang,
            query,
            tag,
            tr(lang, f"没有删除：{title}（{why}）", f"Not deleted: {title} ({why})"),
        )

    def _title(self, note_id: int) -> str:
        rows = self._db("SELECT title FROM notes WHERE id = ?", [note_id])["rows"]
        if not rows:
            raise AppFailure("no_note", id=note_id)
        return str(rows[0][0])

    # --------------------------------------------------------------- view

    def _list(self, lang: Lang, query: str, tag: str, message: str | None = None) -> dict[str, Any]:
        where, params = [], []
        if tag:
            where.append("(',' || tag || ',') LIKE ? ESCAPE '\\'")
            params.append(nl.tag_pattern(tag))
        if query:
            where.append("(title LIKE ? ESCAPE '\\' OR body LIKE ? ESCAPE '\\')")
            params += [nl.like_pattern(query)] * 2
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        total = self._db(f"SELECT COUNT(*) FROM notes{clause}", params)["rows"][0][0]
        rows = self._db(
            f"SELECT id, title, body, tag, done, created FROM notes{clause} "
            f"ORDER BY done, id DESC LIMIT {LIST_LIMIT}",
            params,
        )["rows"]
        items = []
        deletes: list[dict[str, Any]] = []
        for i, (note_id, title, body, note_tags, done, created) in enumerate(rows):
            snippet = (body or "").replace("\n", " ")
            snippet = snippet[:60] + ("…" if len(snippet) > 60 else "")
            sub = " · ".join(
                p for p in (snippet, nl.label_of_tags(note_tags or "", lang), created) if p
            )
            item: dict[str, Any] = {
                "id": note_id,
                "title": title,
                "sub": sub,
                "done": bool(done),
                "tags": nl.tags_of(note_tags or ""),
                "created": created,
            }
            if i < CONTROLS_LIMIT:
                # the row's own done box, drawn before its title (a checkbox without
                # options); the note's id and the box's value come back in params
                item["actions"] = [
                    {
                        "type": "checkbox",
                        "label": tr(lang, "完成", "Done"),
                        "action_id": TOGGLE,
                        "value": bool(done),
                        "params": {"id": note_id},
                    }
                ]
                deletes.append(
                    {
                        "type": "button",
                        "label": tr(lang, "删除", "Delete"),
                        "action_id": "delete",
                        "params": {"id": note_id},
                        "variant": "danger",
                    }
                )
            items.append(item)
        suggested = [*nl.TAGS, *(t for t in self._used_tags() if t not in nl.TAGS)]
        tag_options = [{"label": tr(lang, "全部标签", "All tags"), "value": "all"}] + [
            {"label": nl.tag_label(k, lang), "value": k} for k in suggested
        ]
        if tag and tag not in suggested:
            tag_options.append({"label": tag, "value": tag})
        hint = ", ".join(nl.tag_label(k, lang) for k in nl.TAGS)
        actions: list[dict[str, Any]] = [
            {
                "type": "input",
                "label": tr(lang, "搜索", "Search"),
                "action_id": "search",
                "placeholder": tr(lang, "搜索笔记…", "Search notes…"),
                "value": query,
            },
            {
                "type": "select",
                "label": tr(lang, "标签", "Tag"),
                "action_id": "filter_tag",
                "options": tag_options,
                "value": tag or "all",
            },
            {
                "type": "button",
                "label": tr(lang, "附加文件", "Attach a file"),
                "action_id": "attach",
            },
            {
                "type": "submit_form",
                "label": tr(lang, "添加笔记", "Add note"),
                "action_id": "add",
                "variant": "primary",
                "fields": [
                    {
                        "name": "title",
                        "label": tr(lang, "标题", "Title"),
                        "type": "text",
                        "required": True,
                    },
                    {"name": "body", "label": tr(lang, "内容", "Body"), "type": "textarea"},
                    {
                        "name": "tag",
                        "label": tr(lang, "标签（用逗号分隔）", "Tags (comma separated)"),
                        "type": "text",
                        "placeholder": tr(lang, f"例如：{hint}", f"e.g. {hint}"),
                    },
                ],
            },
            *deletes,
        ]
        if query or tag:
            actions.append(
                {
                    "type": "button",
                    "label": tr(lang, "显示全部", "Show all"),
                    "action_id": "show_all",
                }
            )
        empty = self._empty_text(lang, query, tag)
        if message is None:
            # An empty list says so once, in the view (data.empty), not in the line too.
            message = self._summary(lang, total, query, tag) if total else None
        title = tr(lang, "记事本", "Notes")
        if query:
            title += tr(lang, f" · 搜索「{query}」", f" · search {query!r}")
        if tag:
            title += f" · #{nl.tag_label(tag, lang)}"
        reply: dict[str, Any] = {
            "status": "ok",
            "view_type": "list",
            "data": {
                "title": title,
                "items": items,
                "total": total,
                "query": query,
                "tag": tag or "all",
                "empty": empty,
            },
            "actions": actions,
            "state": {"query": query, "tag": tag},
        }
        if message:
            reply["message"] = message
        return reply

    def _used_tags(self) -> list[str]:
        """Every tag some note carries, for the filter (the suggestions come first)."""
        rows = self._db("SELECT DISTINCT tag FROM notes")["rows"]
        seen: dict[str, None] = {}
        for (column,) in rows:
            for t in nl.tags_of(str(column or "")):
                seen.setdefault(t, None)
        return sorted(seen, key=str.lower)

    @staticmethod
    def _empty_text(lang: Lang, query: str, tag: str) -> str:
        if query or tag:
            return tr(lang, "没有找到符合条件的笔记", "No notes match")
        return tr(lang, "还没有笔记，添加第一条吧", "No notes yet; add the first one")

    @staticmethod
    def _summary(lang: Lang, total: int, query: str, tag: str) -> str:
        if query or tag:
            return tr(lang, f"找到 {total} 条笔记", f"Found {total} notes")
        return tr(lang, f"共 {total} 条笔记", f"{total} notes")

    # ------------------------------------------------------------ helpers

    def _db(self, sql: str, params: list[Any] | None = None) -> dict[str, Any]:
        try:
            result = self.call_tool("db_query", dsn=DSN, sql=sql, params=params or [])
        except ToolError as e:
            raise AppFailure("db_error", error=e.error) from e
        if not isinstance(result, dict) or not isinstance(result.get("rows"), list):
            raise AppFailure("db_unexpected")
        return result

    def _pick_tag(self, text: str) -> str:
        """Ask the LLM for a tag when one is configured; otherwise guess from words."""
        try:
            answer = self.llm(
                [
                    {
                        "role": "system",
                        "content": "Classify the note into exactly one tag of: "
                        f"{', '.join(nl.TAGS)}. Answer with the tag only.",
                    },
                    {"role": "user", "content": text[:1000]},
                ]
            )
            tag = nl.tag_from_word(str(answer.get("content") or "").strip().strip(".").lower())
            if tag:
                return tag
        except (LLMUnavailable, LLMError):
            pass
        return nl.guess_tag(text)

    def _llm_intent(self, text: str) -> tuple[str, str]:
        try:
            answer = self.llm(
                [
                    {
                        "role": "system",
                        "content": "The user talks to a notes app. Answer JSON "
                        '{"intent": "add"|"search"|"list"|"done"|"undone"|"delete"|"unknown", '
                        '"text": "the note text, the search words, or the words naming '
                        'the note"} and nothing else.',
                    },
                    {"role": "user", "content": text[:1000]},
                ]
            )
            parsed = json.loads(
                str(answer.get("content") or "").strip().strip("`").removeprefix("json").strip()
            )
        except (LLMUnavailable, LLMError, ValueError):
            return "unknown", text
        if (
            isinstance(parsed, dict)
            and parsed.get("intent") in ("add", "search", "list", "done", "undone", "delete")
            and isinstance(parsed.get("text", ""), str)
        ):
            return str(parsed["intent"]), str(parsed.get("text", "")).strip()
        return "unknown", text

    def _error(self, lang: Lang, message: str) -> dict[str, Any]:
        return error_view(
            message,
            title=tr(lang, "记事本：出错了", "Notes: error"),
            actions=[
                {
                    "type": "button",
                    "label": tr(lang, "返回笔记列表", "Back to notes"),
                    "action_id": "show_all",
                }
            ],
        )


if __name__ == "__main__":
    NotesAgent().run()
