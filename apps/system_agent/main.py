# Longer than ~500 lines on purpose: a bundled app is what third-party developers copy: its
# handlers, views and bilingual messages stay in one file they can read at once.
"""系统控制 (system control): change the desktop's UI by talking to it (spec §9, §12.3).

The flow of spec §12.3: a step ``cache_get("desktop:ui_snapshot")`` reads what
is on screen (the manifest's ``desktop.control`` permission allows it), the
command is understood offline (:mod:`command_parser`), the element it names is
found in the snapshot (:mod:`element_finder`), and the validated operation
goes to the desktop through the SDK's ``self.ui`` (the system relays it as a
``ui_op`` event). Replies say what was done, with an undo button and quick
actions. A name that matches several elements ("the button") is not
guessed: the app asks (DESIGN §13) with one ``choice`` step per ambiguous
command (the options are the candidates, ``{value: element key, label}``),
and the round with the answers applies every operation at once; nothing is
sent before the user has chosen, and an expired or cancelled question
changes nothing.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from command_parser import (
    POSITION_NAMES,
    ZH_COLOR_NAMES,
    Command,
    ParseError,
    check_op,
    is_pronoun,
    parse,
    residual,
    split_commands,
)
from element_finder import Element, Snapshot

from aios_sdk import (
    AIOSAgent,
    AIOSError,
    AppContext,
    AppFailure,
    Messages,
    StepResult,
    ToolError,
    action,
)

log = logging.getLogger(__name__)

SNAPSHOT_KEY = "desktop:ui_snapshot"
SNAPSHOT_STEP = "snapshot"
STATE_MAP_MAX = 50
"""Remembered colours/texts/rotations per session (for undo), newest kept."""
CHOICES_MAX = 12
PICK_STEP = "pick_target_"
"""``step_id`` prefix of the question for the ambiguous command number ``i`` (1-based)."""
EXAMPLES = {
    "zh": ["把时钟变成红色", "旋转 45 度", "隐藏时钟", "显示时钟", "把开始按钮移到右上角"],
    "en": [
        "make the clock red",
        "rotate 45 degrees",
        "hide the clock",
        "show the clock",
        "move the start button to the top right",
    ],
}
_ROUTING = re.compile(
    r"^\s*(?:请|帮我|麻烦)?\s*(?:打开|启动|用|使用|open|launch|start|use|ask)?\s*(?:the\s+)?"
    r"(?:系统控制器?|桌面控制|system[\s_-]*(?:control(?:ler)?|agent)|desktop[\s_-]*control)"
    r"(?:应用|程序|\s*app)?\s*[:：,，]?\s*",
    re.IGNORECASE,
)

T: dict[str, tuple[str, str]] = {
    "title": ("系统控制", "System control"),
    "no_snapshot": (
        "桌面还没有上报界面快照，暂时不知道屏幕上有什么。请先打开桌面（或稍等片刻）再试。",
        "The desktop has not reported its UI snapshot yet, so I don't know what is "
        "on screen. Open the desktop (or wait a moment) and try again.",
    ),
    "snapshot_failed": (
        "读取桌面快照失败：{error}",
        "Could not read the desktop snapshot: {error}",
    ),
    "not_understood": (
        "没听懂“{text}”。可以这样说：{examples}",
        'I did not understand "{text}". Try: {examples}',
    ),
    "unknown_element": (
        "找不到“{name}”。桌面上可以操作的有：{names}",
        'There is no "{name}" on the desktop. I can change: {names}',
    ),
    "no_target": (
        "要操作哪个元素？请说出它的名字，例如“把时钟变成红色”。",
        'Which element? Name it, for example "make the clock red".',
    ),
    "ambiguous": ("有 {n} 个“{name}”，要操作哪一个？", 'There are {n} "{name}" — which one?'),
    "cancelled": ("已取消，没有做任何修改。", "Cancelled; nothing was changed."),
    "expired": (
        "选择已过期，没有做任何修改。",
        "The question expired unanswered; nothing was changed.",
    ),
    "stale_choice": (
        "“{key}”不在候选列表中，请重新下达指令。",
        '"{key}" is not one of the choices; please give the command again.',
    ),
    "gone": ("元素“{key}”已经不在桌面上了。", 'The element "{key}" is no longer on the desktop.'),
    "refused": ("桌面拒绝了这个操作：{error}", "The desktop refused the operation: {error}"),
    "no_listener": (
        "（桌面当前没有连接，操作会在它连上后才看得到。）",
        "(No desktop is connected right now, so nothing visible changed.)",
    ),
    "undo": ("撤销", "Undo"),
    "undone": ("已撤销：{what}", "Undone: {what}"),
    "undone_last": ("已撤销上一处修改", "Took back the last change"),
    "undone_n": ("已撤销最近 {n} 处修改", "Took back the last {n} changes"),
    "reset_all": ("已把桌面恢复默认", "Put the desktop back to its defaults"),
    "reset_one": ("已把{name}恢复原样", "Put {name} back as it was"),
    "reset_button": ("恢复默认", "Reset all"),
    "reset_command": ("恢复默认", "reset"),
    "restore_one": ("恢复原样", "Put back"),
    "hide": ("隐藏", "Hide"),
    "show": ("显示", "Show"),
    "center": ("移到中间", "Move to center"),
    "rotate90": ("旋转 90°", "Rotate 90°"),
    "unrotate": ("复原旋转", "Reset rotation"),
    "uncolor": ("恢复颜色", "Reset colour"),
    "command": ("输入指令", "Type a command"),
    "refresh": ("刷新", "Refresh"),
    "placeholder": ("例如：把时钟变成红色", "e.g. make the clock red"),
    "home_title": ("桌面元素（{n} 个）", "Desktop elements ({n})"),
    "home_message": (
        "可以对 {n} 个桌面元素下指令，例如“把时钟变成红色”。",
        '{n} desktop elements can be changed, e.g. "make the clock red".',
    ),
    "bad_action": (
        "无法处理操作“{action}”：{error}",
        'Cannot handle the action "{action}": {error}',
    ),
    "said": ("{message}", "{message}"),
    "part": ("第 {i} 条指令“{text}”：{error}", 'Command {i} ("{text}"): {error}'),
    "failed": ("出错了：{error}", "Something went wrong: {error}"),
    "hidden": ("隐藏", "hidden"),
    "window": ("窗口", "window"),
}


t = Messages(T)


class SnapshotFailed(Exception):
    pass


def _said(message: str) -> AppFailure:
    """A failure whose message is already composed in the user's language (a command's part)."""
    return AppFailure("said", message=message)


class NotChosen(Exception):
    """The user's choice did not come (expired, cancelled): nothing is done, no error."""


class SystemAgent(AIOSAgent):
    name = "系统控制"
    description = "用自然语言修改桌面界面 / change the desktop UI by voice or text"
    icon = "🎛️"

    # ------------------------------------------------------------ entry

    messages = t

    def respond(
        self, instruction: str | None, context: Any, action_request: Any = None
    ) -> dict[str, Any]:
        ctx = AppContext.of(context)
        lang = ctx.lang
        try:
            return super().respond(instruction, ctx, action_request)
        except NotChosen as e:
            return _text_view(str(e), lang, _State(ctx.cwd_state), self._command_actions(lang))
        except SnapshotFailed as e:
            message = t("snapshot_failed", lang, error=str(e))
        except ParseError as e:
            message = e.text(lang)
        except ToolError as e:
            message = t("refused", lang, error=e.error)
        except Exception as e:  # noqa: BLE001 - a bug must still answer with a view
            log.exception("system_agent failed")
            message = t("failed", lang, error=f"{type(e).__name__}: {e}")
        return self.error_reply(ctx, message)

    def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
        return _error_view(message, ctx.lang, _State(ctx.cwd_state))

    def handle(
        self,
        instruction: str | None,
        context: AppContext,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        lang = context.lang
        text = _strip_routing(instruction if isinstance(instruction, str) else "")
        snap = self._snapshot(context)
        if snap is None:
            return self._fetch_snapshot(lang)
        state = _State(context.cwd_state)
        if not text:
            return self._home(snap, state, lang)
        return self._commands(split_commands(text) or [text], snap, state, lang, context)

    # --------------------------------------------------------- snapshot

    def _snapshot(self, ctx: AppContext) -> Snapshot | None:
        """The snapshot read by this round's step; None = not read yet (return the step)."""
        results = ctx.tool_results
        for key, answer in results.items():
            # A question not answered stops the run, and the snapshot step after it with it.
            if key.startswith(f"step_{PICK_STEP}") and isinstance(answer, dict):
                if answer.get("code") in ("expired", "cancelled"):
                    raise NotChosen(t(str(answer["code"]), ctx.lang))
        got = ctx.result(SNAPSHOT_STEP)
        if got is None:
            if not results:
                return None
            # Results without our step (should not happen): read it directly, no loop.
            try:
                return Snapshot(self.call_tool("cache_get", key=SNAPSHOT_KEY))
            except ToolError as e:
                raise SnapshotFailed(e.error) from e
        if not got.ok:
            raise SnapshotFailed(str(got.raw.get("error") or "cache_get failed"))
        return Snapshot(got.value)

    def _fetch_snapshot(self, lang: str) -> dict[str, Any]:
        return {
            "status": "ok",
            "view_type": "loading",
            "data": {
                "message": "正在读取桌面快照…" if lang == "zh" else "Reading the desktop snapshot…"
            },
            "actions": [],
            "steps": self.plan_steps(
                [{"step_id": SNAPSHOT_STEP, "tool": "cache_get", "args": {"key": SNAPSHOT_KEY}}]
            ),
        }

    # ---------------------------------------------------------- actions

    def _screen(self, ctx: AppContext) -> Snapshot | None:
        """Every action looks at the screen first: None when the snapshot must be read."""
        snap = self._snapshot(ctx)
        if snap is not None and not snap:
            raise AppFailure("no_snapshot")
        return snap

    @action("home", "refresh")
    def home(self, ctx: AppContext) -> dict[str, Any]:
        snap = self._screen(ctx)
        if snap is None:
            return self._fetch_snapshot(ctx.lang)
        return self._home(snap, _State(ctx.cwd_state), ctx.lang)

    @action("command")
    def command(self, ctx: AppContext, value: Any = None) -> dict[str, Any]:
        return self._typed(ctx, "command", value)

    @action("run")
    def run_command(self, ctx: AppContext, command: Any = None) -> dict[str, Any]:
        return self._typed(ctx, "run", command)

    def _typed(self, ctx: AppContext, action_id: str, text: Any) -> dict[str, Any]:
        snap = self._screen(ctx)
        if snap is None:
            return self._fetch_snapshot(ctx.lang)
        if not isinstance(text, str) or not text.strip():
            raise AppFailure(
                "bad_action",
                action=action_id,
                error=ctx.tr("需要一条文字指令", "a text command is required"),
            )
        text = _strip_routing(text[:1000])
        state = _State(ctx.cwd_state)
        return self._commands(split_commands(text) or [text], snap, state, ctx.lang, ctx)

    @action("apply", "undo")
    def apply(self, ctx: AppContext, request: dict[str, Any]) -> dict[str, Any]:
        snap = self._screen(ctx)
        if snap is None:
            return self._fetch_snapshot(ctx.lang)
        params = request.get("params") or {}
        state = _State(ctx.cwd_state)
        if request["action_id"] == "undo" and "ops" not in params and "op" not in params:
            return self._undo(params.get("count", 1), snap, state, ctx.lang)
        return self._apply_action(request["action_id"], params, snap, state, ctx.lang)

    def _apply_action(
        self, action: str, params: dict[str, Any], snap: Snapshot, state: _State, lang: str
    ) -> dict[str, Any]:
        raw_ops = params.get("ops", params.get("op"))
        raw_ops = [raw_ops] if isinstance(raw_ops, dict) else raw_ops
        if not isinstance(raw_ops, list) or not raw_ops or len(raw_ops) > 20:
            raise AppFailure(
                "bad_action",
                action=action,
                error="params.ops 必须是 1-20 个界面操作"
                if lang == "zh"
                else "params.ops must hold 1-20 UI operations",
            )
        try:
            ops = [check_op(o) for o in raw_ops]
        except ValueError as e:
            raise AppFailure("bad_action", action=action, error=str(e)) from e
        done: list[_Done] = []
        for op in ops:
            element = snap.get(op["id"], op.get("window"))
            if element is None:
                raise AppFailure("gone", key=op["id"])
            done.append(
                _Done(
                    element,
                    op,
                    describe(op, snap.display(element, lang), lang),
                )
            )
            state.remember(element, op)
        return self._send(done, snap, state, lang, undo=action == "undo")

    # --------------------------------------------------------- commands

    def _commands(
        self, parts: list[str], snap: Snapshot, state: _State, lang: str, context: AppContext
    ) -> dict[str, Any]:
        """Understand each part, find its element, then send every operation at once.

        A part naming several elements becomes a ``choice`` step (asked all in one
        plan); until answered its first candidate stands in, so later parts ("然后
        旋转它") are checked now and point at the chosen element in the answer round.
        """
        if not snap:
            raise AppFailure("no_snapshot")
        many = len(parts) > 1
        done: list[_Done] = []
        questions: list[dict[str, Any]] = []
        first_asked: list[Element] = []
        for i, part in enumerate(parts, 1):
            try:
                cmd = parse(part)
            except ParseError as e:
                raise _said(_part(e.text(lang), i, part, many, lang)) from e
            if cmd is None:
                guessed = self._ask_llm(part, snap, lang)
                if guessed is None:
                    raise _said(
                        _part(
                            t("not_understood", lang, text=part, examples=_examples(lang)),
                            i,
                            part,
                            many,
                            lang,
                        )
                    )
                element, op = guessed
                done.append(
                    _Done(
                        element,
                        op,
                        describe(op, snap.display(element, lang), lang),
                    )
                )
                state.remember(element, op)
                continue
            if cmd.op == "undo" or (cmd.op == "reset" and not residual(cmd.target)):
                if cmd.op == "reset":
                    state.forget(None)
                message = t("undone_last" if cmd.op == "undo" else "reset_all", lang)
                done.append(_Done(None, {"op": cmd.op}, message))
                continue
            found = self._resolve(cmd, snap, state, lang, part)
            if isinstance(found, list):  # ambiguous: the user picks, nothing is guessed
                step_id = f"{PICK_STEP}{i}"
                answer = context.result(step_id)
                if answer is not None:
                    found = _picked(answer, found, lang)
                else:
                    questions.append(self._question(found, part, snap, lang, step_id, many))
                    first_asked = first_asked or found
                    found = found[0]
            if isinstance(found, tuple):  # the model understood it better
                element, op = found
                done.append(
                    _Done(
                        element,
                        op,
                        describe(op, snap.display(element, lang), lang),
                    )
                )
                state.remember(element, op)
                continue
            try:
                done.append(self._prepare(cmd, found, snap, state, lang, said=part))
            except ParseError as e:
                raise _said(_part(e.text(lang), i, part, many, lang)) from e
        if questions:
            return self._clarify(first_asked, questions, snap, state, lang)
        return self._send(done, snap, state, lang)

    def _question(
        self, found: list[Element], part: str, snap: Snapshot, lang: str, step_id: str, many: bool
    ) -> dict[str, Any]:
        """The ``choice`` step for one ambiguous command: its candidates as options."""
        question = t("ambiguous", lang, n=len(found), name=_name_of(found, snap, lang))
        if many:
            question = f"“{part}”：{question}" if lang == "zh" else f'"{part}": {question}'
        options = [{"value": e.key, "label": snap.choice_label(e, lang)} for e in found]
        return self.ask("choice", question, options=options, step_id=step_id)

    def _resolve(
        self, cmd: Command, snap: Snapshot, state: _State, lang: str, part: str
    ) -> Element | list[Element] | tuple[Element, dict[str, Any]]:
        found = snap.find(cmd.target) or snap.find(cmd.raw_target)
        if len(found) == 1:
            return found[0]
        if found:
            return found[:CHOICES_MAX]
        rest = residual(cmd.target)
        last = state.last_element(snap)
        if not rest or is_pronoun(cmd.target) or is_pronoun(rest):
            if last is None:
                raise AppFailure("no_target")
            return last
        generic = snap.generic(rest)
        if generic is not None:
            kind, members = generic
            if last is not None and last.kind == kind:
                return last
            if len(members) == 1:
                return members[0]
            if members:
                return members[:CHOICES_MAX]
        guessed = self._ask_llm(part, snap, lang)
        if guessed is not None:
            return guessed
        names = "、".join(
            dict.fromkeys(
                snap.display(e, lang)
                for e in snap.elements
                if e.kind in ("desktop", "window", "button")
            )
        )
        raise AppFailure("unknown_element", name=rest, names=names[:600])

    def _prepare(
        self, cmd: Command, e: Element, snap: Snapshot, state: _State, lang: str, said: str = ""
    ) -> _Done:
        op = self._build_op(cmd, e, snap, state, lang)
        name = snap.display(e, lang)
        if cmd.op == "reset":
            state.forget(e)
            return _Done(e, op, t("reset_one", lang, name=name))
        where = cmd.spec.get("where") if cmd.op == "move" else None
        color_said = cmd.spec.get("said") if cmd.op == "change_color" else None
        done = _Done(
            e,
            op,
            describe(op, name, lang, where=where, said=color_said),
        )
        state.remember(e, op)
        return done

    def _build_op(
        self, cmd: Command, e: Element, snap: Snapshot, state: _State, lang: str
    ) -> dict[str, Any]:
        op: dict[str, Any] = {"op": cmd.op, "id": e.id}
        if e.window:
            op["window"] = e.window
        spec = cmd.spec
        vw, vh = snap.viewport
        if cmd.op == "reset":
            return check_op(op | {"op": "reset"})
        if cmd.op == "move":
            if "where" in spec:
                op["x"], op["y"] = snap.free_position(e, str(spec["where"]))
            else:
                x, y = float(spec.get("x", 0)), float(spec.get("y", 0))
                if not (0 <= x <= vw and 0 <= y <= vh):
                    raise ParseError(
                        f"坐标 ({x:g}, {y:g}) 超出了屏幕（{vw:g}×{vh:g}）",
                        f"({x:g}, {y:g}) is outside the screen ({vw:g}×{vh:g})",
                    )
                # honoured, but the whole element stays on screen
                op["x"] = max(0.0, min(x, vw - e.width))
                op["y"] = max(0.0, min(y, vh - e.height))
        elif cmd.op == "resize":
            if "scale" in spec:
                if e.width <= 0 or e.height <= 0:
                    raise ParseError(
                        "不知道它现在的大小（可能被隐藏了），请直接说尺寸，例如 200x80",
                        "Its current size is unknown (hidden?); give a size such as 200x80",
                    )
                width, height = e.width * float(spec["scale"]), e.height * float(spec["scale"])
            else:
                width = float(spec.get("width") or e.width)
                height = float(spec.get("height") or e.height)
            width, height = round(min(width, vw)), round(min(height, vh))
            if width < 1 or height < 1:
                raise ParseError(
                    f"尺寸 {width:g}×{height:g} 太小了", f"{width:g}×{height:g} is too small"
                )
            op["width"], op["height"] = float(width), float(height)
        elif cmd.op == "change_color":
            op["color"] = str(spec.get("color"))
        elif cmd.op == "change_text":
            op["text"] = str(spec.get("text"))
        elif cmd.op == "rotate":
            degrees = float(spec.get("degrees", 0))
            if spec.get("relative"):
                degrees += state.rotation_of(e)
            if abs(degrees) > 3600:
                raise ParseError(
                    f"旋转角度 {degrees:g} 超出范围（±3600）",
                    f"{degrees:g} degrees is out of range (±3600)",
                )
            op["degrees"] = degrees
        return check_op(op)

    # ---------------------------------------------------------- sending

    def _send(
        self, done: list[_Done], snap: Snapshot, state: _State, lang: str, *, undo: bool = False
    ) -> dict[str, Any]:
        if not done:
            return self._home(snap, state, lang)
        ops = [d.op for d in done]
        result = self.ui(ops)
        state.commit()
        last = next((d.element for d in reversed(done) if d.element is not None), None)
        if last is not None:
            state.last = {"id": last.id, "window": last.window}
        sep = "；" if lang == "zh" else "; "
        message = sep.join(d.message for d in done if d.message)
        if undo:
            message = t("undone", lang, what=message)
        note = "" if result.get("listeners", 1) else t("no_listener", lang)
        # The system logs every change: Undo takes back this reply's own, newest first.
        changes = sum(1 for op in ops if op["op"] not in ("undo", "reset"))
        actions: list[dict[str, Any]] = []
        if changes and changes == len(ops):
            actions.append(
                {
                    "type": "button",
                    "label": t("undo", lang),
                    "action_id": "undo",
                    "params": {"count": changes},
                }
            )
        if last is not None:
            actions += self._quick_actions(last, snap, state, lang)
        actions += self._command_actions(lang)
        content = message + (f"\n{note}" if note else "")
        return {
            "status": "ok",
            "view_type": "text",
            "data": {"title": t("title", lang), "content": content, "ops": ops},
            "actions": actions,
            "message": message + note,
            "state": state.dump(),
        }

    def _undo(self, count: Any, snap: Snapshot, state: _State, lang: str) -> dict[str, Any]:
        """The Undo button of a reply: take back its ``count`` changes (the newest)."""
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 20:
            raise AppFailure(
                "bad_action",
                action="undo",
                error="params.count 必须是 1-20 的整数"
                if lang == "zh"
                else "params.count must be a whole number from 1 to 20",
            )
        message = t("undone_last", lang) if count == 1 else t("undone_n", lang, n=count)
        done = [_Done(None, {"op": "undo"}, message if i == 0 else "") for i in range(count)]
        return self._send(done, snap, state, lang)

    def _quick_actions(
        self, e: Element, snap: Snapshot, state: _State, lang: str
    ) -> list[dict[str, Any]]:
        base: dict[str, Any] = {"id": e.id, **({"window": e.window} if e.window else {})}

        def button(label: str, op: dict[str, Any]) -> dict[str, Any]:
            return {
                "type": "button",
                "label": label,
                "action_id": "apply",
                "params": {"ops": [{**op, **base}]},
            }

        out = [
            button(t("show", lang), {"op": "show"})
            if not state.visible(e)
            else button(t("hide", lang), {"op": "hide"})
        ]
        if e.width > 0 and e.height > 0:
            x, y = snap.free_position(e, "center")
            out.append(button(t("center", lang), {"op": "move", "x": x, "y": y}))
        out.append(
            button(t("rotate90", lang), {"op": "rotate", "degrees": state.rotation_of(e) + 90})
        )
        if state.rotation_of(e):
            out.append(button(t("unrotate", lang), {"op": "rotate", "degrees": 0}))
        if state.color_of(e):
            out.append(button(t("uncolor", lang), {"op": "change_color", "color": "revert-layer"}))
        out.append(button(t("restore_one", lang), {"op": "reset"}))
        return out

    def _command_actions(self, lang: str) -> list[dict[str, Any]]:
        return [
            {
                "type": "input",
                "label": t("command", lang),
                "action_id": "command",
                "placeholder": t("placeholder", lang),
            }
        ]

    # ---------------------------------------------------------- replies

    def _clarify(
        self,
        found: list[Element],
        questions: list[dict[str, Any]],
        snap: Snapshot,
        state: _State,
        lang: str,
    ) -> dict[str, Any]:
        """While the run waits for the choices: the first question's candidates, described."""
        question = str(questions[0]["args"]["prompt"])
        items = [
            {"title": snap.display(e, lang), "sub": _describe_place(e, snap, lang)} for e in found
        ]
        # The screen is read again after the answers: the choice applies to what is there then.
        again = self.plan_steps(
            [{"step_id": SNAPSHOT_STEP, "tool": "cache_get", "args": {"key": SNAPSHOT_KEY}}]
        )
        return {
            "status": "ok",
            "view_type": "list",
            "data": {"title": question, "items": items},
            "actions": self._command_actions(lang),
            "message": question,
            "state": state.dump(),
            "steps": [*questions, *again],
        }

    def _home(self, snap: Snapshot, state: _State, lang: str) -> dict[str, Any]:
        if not snap:
            raise AppFailure("no_snapshot")
        items = [
            {"title": snap.display(e, lang), "sub": _describe_place(e, snap, lang)}
            for e in snap.elements[:200]
        ]
        actions = self._command_actions(lang)
        actions += [
            {"type": "button", "label": ex, "action_id": "run", "params": {"command": ex}}
            for ex in EXAMPLES[lang][:4]
        ]
        actions.append(
            {
                "type": "button",
                "label": t("reset_button", lang),
                "action_id": "run",
                "params": {"command": t("reset_command", lang)},
            }
        )
        actions.append({"type": "button", "label": t("refresh", lang), "action_id": "refresh"})
        n = len(snap.elements)
        return {
            "status": "ok",
            "view_type": "list",
            "data": {"title": t("home_title", lang, n=n), "items": items},
            "actions": actions,
            "message": t("home_message", lang, n=n),
            "state": state.dump(),
        }

    # --------------------------------------------------------------- llm

    def _ask_llm(
        self, text: str, snap: Snapshot, lang: str
    ) -> tuple[Element, dict[str, Any]] | None:
        """Ask the system's LLM (when there is one) to turn a command into one operation."""
        elements = [
            {
                "id": e.id,
                "label": e.label,
                "type": e.type,
                "window": e.window,
                "x": e.x,
                "y": e.y,
                "width": e.width,
                "height": e.height,
            }
            for e in snap.elements[:120]
        ]
        prompt = (
            "You control a desktop UI. Turn the user's command into ONE operation as "
            'JSON: {"op": move|resize|hide|show|change_color|change_text|rotate, '
            '"id": element id, "window": its window or omitted, and x,y | width,'
            "height | color (CSS) | text | degrees}. Use only ids from the element list. "
            "If the command names no listed element or is not a UI change, answer "
            '{"op": null}. Answer with JSON only.'
        )
        payload = {"command": text, "viewport": list(snap.viewport), "elements": elements}
        try:
            reply = self.llm(
                [
                    {"role": "system", "content": prompt},
                    {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
                ]
            )
        except AIOSError as e:
            log.info("no LLM help for %r: %s", text, e)
            return None
        content = reply.get("content") if isinstance(reply, dict) else None
        if not isinstance(content, str):
            return None
        match = re.search(r"\{.*\}", content, re.DOTALL)
        try:
            op = check_op(json.loads(match.group(0))) if match else None
        except ValueError as e:
            log.info("LLM operation rejected: %s", e)
            return None
        element = snap.get(op["id"], op.get("window")) if op else None
        if op is None or element is None:
            return None
        if element.window and "window" not in op:
            op["window"] = element.window
        return element, op


# ------------------------------------------------------------------- state


class _Done:
    """One operation ready to send (of an element; None: undo, reset all) and its sentence."""

    def __init__(self, element: Element | None, op: dict[str, Any], message: str):
        self.element, self.op, self.message = element, op, message


class _State:
    """What the session remembers (the system keeps it and hands it back as cwd_state)."""

    def __init__(self, raw: Any):
        raw = raw if isinstance(raw, dict) else {}
        last = raw.get("last")
        self.last: dict[str, Any] | None = last if isinstance(last, dict) else None
        self.maps: dict[str, dict[str, Any]] = {}
        for name in ("colors", "texts", "rotation", "visible"):
            value = raw.get(name)
            self.maps[name] = dict(value) if isinstance(value, dict) else {}
        self._staged: list[tuple[Element, dict[str, Any]]] = []

    def last_element(self, snap: Snapshot) -> Element | None:
        if self._staged:  # "把时钟变成红色然后旋转 30 度": the clock again
            return self._staged[-1][0]
        if not self.last or not isinstance(self.last.get("id"), str):
            return None
        window = self.last.get("window")
        return snap.get(self.last["id"], window if isinstance(window, str) else None)

    def _get(self, name: str, e: Element) -> Any:
        for element, op in reversed(self._staged):  # this batch's own earlier ops count
            if element.key == e.key and _MAP_OF.get(op["op"]) == name:
                return _value_of(op)
        return self.maps[name].get(e.key)

    def color_of(self, e: Element) -> str | None:
        v = self._get("colors", e)
        return v if isinstance(v, str) and v != "revert-layer" else None

    def text_of(self, e: Element) -> str | None:
        v = self._get("texts", e)
        return v if isinstance(v, str) else None

    def rotation_of(self, e: Element) -> float:
        v = self._get("rotation", e)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0

    def visible(self, e: Element) -> bool:
        v = self._get("visible", e)
        return v if isinstance(v, bool) else e.visible

    def remember(self, e: Element, op: dict[str, Any]) -> None:
        self._staged.append((e, op))

    def commit(self) -> None:
        for e, op in self._staged:
            name = _MAP_OF.get(op["op"])
            if name:
                m = self.maps[name]
                m.pop(e.key, None)
                m[e.key] = _value_of(op)
                while len(m) > STATE_MAP_MAX:
                    m.pop(next(iter(m)))
        self._staged = []

    def forget(self, e: Element | None) -> None:
        """After a reset: what the session knew of ``e`` (None: of every element) is gone."""
        for m in self.maps.values():
            if e is None:
                m.clear()
            else:
                m.pop(e.key, None)
        self._staged = [(s, op) for s, op in self._staged if e is not None and s.key != e.key]

    def dump(self) -> dict[str, Any]:
        return {"last": self.last, **self.maps}


_MAP_OF = {
    "change_color": "colors",
    "change_text": "texts",
    "rotate": "rotation",
    "hide": "visible",
    "show": "visible",
}


def _value_of(op: dict[str, Any]) -> Any:
    return {
        "change_color": op.get("color"),
        "change_text": op.get("text"),
        "rotate": op.get("degrees"),
        "hide": False,
        "show": True,
    }.get(op["op"])


# ----------------------------------------------------------------- helpers


def describe(
    op: dict[str, Any], name: str, lang: str, *, where: str | None = None, said: str | None = None
) -> str:
    """The sentence that is shown and spoken: 已将播放按钮移到左上角."""
    kind = op["op"]
    if lang == "en":
        cap = name[:1].upper() + name[1:]
        if kind == "move":
            place = POSITION_NAMES["en"].get(where or "") or f"({op['x']:g}, {op['y']:g})"
            return f"Moved {name} to {place}"
        return {
            "resize": lambda: f"Resized {name} to {op['width']:g}×{op['height']:g}",
            "hide": lambda: f"Hid {name}",
            "show": lambda: f"Showed {name}",
            # an English reply names the CSS colour, not the Chinese word the user said
            "change_color": lambda: (
                f"Made {name} {said if said and said.isascii() else op['color']}"
                if op["color"] != "revert-layer"
                else f"{cap} has its own colour again"
            ),
            "change_text": lambda: f"Changed the text of {name} to “{op['text']}”",
            "rotate": lambda: (
                f"Rotated {name} to {op['degrees']:g} degrees"
                if op["degrees"]
                else f"Turned {name} back upright"
            ),
        }[kind]()
    if kind == "move":
        place = POSITION_NAMES["zh"].get(where or "") or f" ({op['x']:g}, {op['y']:g})"
        return f"已将{name}移到{place}"
    if kind == "change_color":
        if op["color"] == "revert-layer":
            return f"已恢复{name}原来的颜色"
        color = (
            said if said and not said.isascii() else ZH_COLOR_NAMES.get(op["color"], op["color"])
        )
        if len(color) == 1:
            color += "色"
        return f"已将{name}变成{color}"
    return {
        "resize": lambda: f"已将{name}的大小调整为 {op['width']:g}×{op['height']:g}",
        "hide": lambda: f"已隐藏{name}",
        "show": lambda: f"已显示{name}",
        "change_text": lambda: f"已将{name}的文字改成“{op['text']}”",
        "rotate": lambda: (
            f"已将{name}旋转 {op['degrees']:g} 度" if op["degrees"] else f"已将{name}转回原来的方向"
        ),
    }[kind]()


def _picked(answer: StepResult, found: list[Element], lang: str) -> Element:
    """The candidate the user chose; NotChosen when the question expired or was cancelled."""
    if not answer.ok:
        if answer.code in ("expired", "cancelled"):
            raise NotChosen(t(str(answer.code), lang))
        raise AppFailure("failed", error=str(answer.raw.get("error") or "no answer"))
    key = answer.answer
    chosen = next((e for e in found if e.key == key), None)
    if chosen is None:  # the screen changed between the question and the answer
        raise AppFailure("stale_choice", key=str(key)[:80])
    return chosen


def _describe_place(e: Element, snap: Snapshot, lang: str) -> str:
    parts = [e.id, f"({e.x:g}, {e.y:g})", f"{e.width:g}×{e.height:g}"]
    if e.window:
        parts.append(f"{t('window', lang)}: {snap.window_name(e.window)}")
    if not e.visible:
        parts.append(t("hidden", lang))
    return " · ".join(parts)


def _name_of(found: list[Element], snap: Snapshot, lang: str) -> str:
    names = list(dict.fromkeys(snap.display(e, lang) for e in found))
    return names[0] if len(names) == 1 else ("、" if lang == "zh" else ", ").join(names[:3])


def _examples(lang: str) -> str:
    return (
        "、".join(f"“{e}”" for e in EXAMPLES["zh"])
        if lang == "zh"
        else ", ".join(f'"{e}"' for e in EXAMPLES["en"])
    )


def _part(error: str, i: int, part: str, many: bool, lang: str) -> str:
    return t("part", lang, i=i, text=part, error=error) if many else error


def _strip_routing(text: str) -> str:
    text = (text or "").strip()
    return _ROUTING.sub("", text, count=1).strip() if _ROUTING.match(text) else text


def _text_view(
    message: str, lang: str, state: _State, actions: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "status": "ok",
        "view_type": "text",
        "data": {"title": t("title", lang), "content": message},
        "actions": actions,
        "message": message,
        "state": state.dump(),
    }


def _error_view(message: str, lang: str, state: _State) -> dict[str, Any]:
    actions = [
        {
            "type": "input",
            "label": t("command", lang),
            "action_id": "command",
            "placeholder": t("placeholder", lang),
        },
        {"type": "button", "label": t("refresh", lang), "action_id": "refresh"},
    ]
    return {
        "status": "error",
        "view_type": "text",
        "data": {"title": t("title", lang), "content": message},
        "actions": actions,
        "message": message,
        "state": state.dump(),
    }


if __name__ == "__main__":
    SystemAgent().run()
