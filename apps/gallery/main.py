# Longer than ~500 lines on purpose: a bundled app is what third-party developers copy: its
# handlers, views and bilingual messages stay in one file they can read at once.
"""组件展示 (gallery): every view type and every action control, with sample data.

For users it is a tour of what an app can show; for the desktop's end-to-end
tests it is the fixture that produces each view (``show`` with
``{"view": "<type>"}``), each control (the ``controls`` view), and hostile
data for each view type (``{"view": "hostile", "as": "<type>"}``). Every
action reply carries the received ``action_request`` unchanged under
``data.received``, so a test can assert exactly what the desktop sent.

The media and image views point at files the app generates into its
workspace at first use through its own ``@tool``s (``make_tone``,
``make_image``), run as steps so the system audits them.
"""

from __future__ import annotations

import json
import logging
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import hostile_views
import media_assets
import rows_demo
import sample_views

from aios_sdk import (
    AIOSAgent,
    AppContext,
    Lang,
    StepResult,
    action,
    error_view,
    text_view,
    tool,
    tr,
)

log = logging.getLogger(__name__)

VIEW_TYPES = (
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
)
EXTRA_VIEWS = (
    "loading",
    "error",
    "controls",
    "rows",
    "variants",
    "hostile",
    "notify",
    "push",
    "memory",
)
ALL_VIEWS = (*VIEW_TYPES, *EXTRA_VIEWS)

TONE_FILE = "tone.wav"
IMAGE_FILE = "sample.png"
CACHE_KEY = "gallery.loading_demo"
CACHE_TTL = 300
PUSH_EVENTS = 4

LIMITS = {"rows": (0, 5000, 20), "items": (0, 1000, 8), "points": (1, 500, 7), "series": (1, 5, 1)}
"""param: (min, max, default)."""

LABELS = {
    "text": ("文本", "Text", "多行文字、emoji 与特殊字符"),
    "list": ("列表", "List", "带副标题的条目，可选 N 条"),
    "card": ("卡片", "Card", "带图片与描述的卡片"),
    "table": ("表格", "Table", "订单表，可选 1,000 行"),
    "form": ("表单", "Form", "常见字段类型与提交"),
    "media": ("媒体", "Media", "自动生成的 440 Hz 正弦音 WAV"),
    "image": ("图片", "Image", "自动生成的 PNG 图片"),
    "chart": ("图表", "Chart", "柱状 / 折线 / 饼图 / 环形图"),
    "code": ("代码", "Code", "Python 示例代码高亮"),
    "dashboard": ("仪表盘", "Dashboard", "文本 + 图表 + 表格 + 列表组件"),
    "loading": ("加载中", "Loading", "先显示加载视图，再运行两步计划"),
    "error": ("错误", "Error", "错误视图示例"),
    "controls": ("全部控件", "All controls", "十种操作控件，点击后原样回显"),
    "rows": ("逐行控件", "Row controls", "每行自带勾选、开关与删除按钮，完成的划掉"),
    "variants": ("按钮样式", "Button variants", "主要 / 普通 / 危险按钮、数值选项与代码输入框"),
    "hostile": ("恶意数据", "Hostile data", "用恶意字符串测试每种视图的安全渲染"),
    "notify": ("通知", "Notify", "通过步骤发送桌面通知"),
    "push": ("推送", "Push", "推送几条实时进度事件"),
    "memory": ("记忆", "Memory", "记住一条示例，再把它找回来（应用自己的记忆）"),
}

# Instruction words → view (checked longest first, so "饼图" wins over "图").
VIEW_WORDS: dict[str, tuple[str, ...]] = {
    "hostile": ("hostile", "恶意", "攻击", "xss"),
    "rows": ("rows", "逐行"),
    "variants": ("variants", "variant", "按钮样式"),
    "controls": ("controls", "control", "控件", "操作"),
    "dashboard": ("dashboard", "仪表盘", "看板"),
    "chart": ("chart", "图表", "柱状图", "折线图", "饼图", "环形图"),
    "table": ("table", "表格"),
    "list": ("list", "列表"),
    "card": ("cards", "card", "卡片"),
    "form": ("form", "表单"),
    "media": ("media", "audio", "sound", "tone", "媒体", "音频", "声音"),
    "image": ("image", "picture", "png", "图片", "图像"),
    "code": ("code", "代码"),
    "text": ("text", "文本", "文字"),
    "loading": ("loading", "加载"),
    "error": ("error", "错误"),
    "notify": ("notify", "notification", "通知"),
    "push": ("push", "progress", "推送", "进度"),
    "memory": ("memory", "remember", "记忆"),
}
CHART_WORDS = {
    "bar": ("bar", "柱状"),
    "line": ("line", "折线"),
    "pie": ("pie", "饼"),
    "doughnut": ("doughnut", "donut", "环形"),
}


class BadParam(ValueError):
    """A ``show`` parameter that is missing or out of range; the message names it."""


def controls() -> list[dict[str, Any]]:
    """All ten action controls of spec §6.3, one each."""
    return [
        {
            "type": "button",
            "label": "按钮 button",
            "action_id": "ctl_button",
            "params": {"n": 1, "who": "gallery"},
        },
        {
            "type": "submit_form",
            "label": "提交 submit_form",
            "action_id": "ctl_form",
            "fields": [
                {"name": "name", "label": "姓名 name", "type": "text", "value": "张三"},
                {"name": "age", "label": "年龄 age", "type": "number", "value": 30},
                {
                    "name": "color",
                    "label": "颜色 color",
                    "type": "select",
                    "options": ["red", "green", "blue"],
                    "value": "green",
                },
            ],
        },
        {
            "type": "select",
            "label": "选择 select",
            "action_id": "ctl_select",
            "options": [
                {"label": "苹果 apple", "value": "apple"},
                {"label": "香蕉 banana", "value": "banana"},
                {"label": "樱桃 cherry", "value": "cherry"},
            ],
            "value": "apple",
        },
        {
            "type": "checkbox",
            "label": "多选 checkbox",
            "action_id": "ctl_checkbox",
            "options": ["a", "b", "c"],
            "value": ["a"],
        },
        {
            "type": "radio",
            "label": "单选 radio",
            "action_id": "ctl_radio",
            "options": ["small", "medium", "large"],
            "value": "medium",
        },
        {
            "type": "input",
            "label": "输入 input",
            "action_id": "ctl_input",
            "placeholder": "输入文字后回车 type and press Enter",
            "value": "",
        },
        {
            "type": "link",
            "label": "链接 link",
            "action_id": "ctl_link",
            "href": "https://example.com",
        },
        {"type": "toggle", "label": "开关 toggle", "action_id": "ctl_toggle", "value": False},
        {
            "type": "slider",
            "label": "滑块 slider",
            "action_id": "ctl_slider",
            "min": 0,
            "max": 100,
            "step": 1,
            "value": 50,
        },
        {
            "type": "datetime",
            "label": "日期时间 datetime",
            "action_id": "ctl_datetime",
            "mode": "datetime",
            "value": "2026-01-01T09:00",
        },
    ]


ECHO_IDS = frozenset({a["action_id"] for a in controls()} | {"form_submit"})


def _home_button(lang: Lang) -> dict[str, Any]:
    # No emoji in labels: a desktop without an emoji font draws a box.
    return {"type": "button", "label": tr(lang, "返回目录", "All views"), "action_id": "home"}


def _show(label: str, **params: Any) -> dict[str, Any]:
    return {"type": "button", "label": label, "action_id": "show", "params": params}


def _int_param(params: dict[str, Any], key: str) -> int:
    lo, hi, default = LIMITS[key]
    raw = params.get(key, default)
    value: Any = raw
    if isinstance(raw, str) and raw.strip().isdigit():
        value = int(raw.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise BadParam(
            f"参数 {key} 必须是 {lo}–{hi} 之间的整数（收到 {raw!r}）"
            f" / param {key} must be an integer from {lo} to {hi} (got {raw!r})"
        )
    return value


def parse_instruction(text: str | None) -> dict[str, Any] | None:
    """``show`` params for an instruction such as "gallery table 1000" or "展示饼图"."""
    lowered = (text or "").strip().lower()
    if not lowered:
        return None
    words = set(re.findall(r"[a-z]+", lowered))

    def has(word: str) -> bool:
        return word in words if word.isascii() else word in lowered

    found = [view for view, keys in VIEW_WORDS.items() if any(has(k) for k in keys)]
    if not found:
        return None
    params: dict[str, Any] = {"view": found[0]}
    if found[0] == "hostile" and len(found) > 1 and found[1] in VIEW_TYPES:
        params["as"] = found[1]
    kind = next((k for k, keys in CHART_WORDS.items() if any(has(w) for w in keys)), None)
    if kind and params["view"] == "chart":
        params["type"] = kind
    number = re.search(r"\d+", lowered)
    if number:
        key = {"table": "rows", "list": "items", "chart": "points"}.get(params["view"])
        if key:
            params[key] = int(number.group())
    return params


class GalleryAgent(AIOSAgent):
    name = "组件展示"
    description = "展示全部视图类型和操作控件"
    icon = "🧩"
    role_prompt = "你是组件展示小AI，展示每种视图和控件。"

    def __init__(self) -> None:
        super().__init__()
        self._rows = rows_demo.RowsState()

    # ------------------------------------------------------------ handle

    def respond(
        self, instruction: str | None, context: Any, action_request: Any = None
    ) -> dict[str, Any]:
        lang = AppContext.of(context).lang
        try:
            reply = super().respond(instruction, context, action_request)
        except Exception as e:  # noqa: BLE001 - a bug must become a view, not a dead window
            log.exception("gallery failed")
            reply = self._error(lang, f"{type(e).__name__}: {e}")
        # every answer to a control shows what the control sent
        if action_request is not None and isinstance(reply.get("data"), dict):
            reply["data"]["received"] = action_request
        return reply

    def error_reply(self, ctx: AppContext, message: str) -> dict[str, Any]:
        return self._error(ctx.lang, message)

    def handle(
        self,
        instruction: str | None,
        context: AppContext,
        action_request: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        lang = context.lang
        params = parse_instruction(instruction)
        if params is None:
            note = None
            if (instruction or "").strip():
                note = tr(
                    lang,
                    "没认出要看哪种视图，下面是全部类型。",
                    "Which view? Here are all of them.",
                )
            return self._home(lang, note)
        return self._render(params, context, lang)

    # ----------------------------------------------------------- actions

    @action(*sorted(ECHO_IDS))
    def echo(self, ctx: AppContext, request: dict[str, Any]) -> dict[str, Any]:
        return self._echo(request, ctx.lang)

    @action(*sorted(rows_demo.ROW_ACTIONS))
    def row_control(self, ctx: AppContext, request: dict[str, Any]) -> dict[str, Any]:
        params = request.get("params")
        self._rows.apply(request["action_id"], params if isinstance(params, dict) else {})
        return self._rows_reply(ctx.lang, received=request)

    @action(*sorted(rows_demo.VARIANT_ACTIONS))
    def variant(self, ctx: AppContext, request: dict[str, Any]) -> dict[str, Any]:
        return self._variants(ctx.lang, received=request)

    @action("home")
    def home(self, ctx: AppContext) -> dict[str, Any]:
        return self._home(ctx.lang)

    @action("show")
    def show(self, ctx: AppContext, request: dict[str, Any]) -> dict[str, Any]:
        params = request.get("params")
        if not isinstance(params, dict):
            return self._error(
                ctx.lang,
                ctx.tr(
                    'show 需要参数 params，例如 {"view": "table"}',
                    'show needs params, e.g. {"view": "table"}',
                ),
            )
        return self._render(params, ctx, ctx.lang)

    # ------------------------------------------------------------- views

    def _home(self, lang: Lang, note: str | None = None) -> dict[str, Any]:
        items = []
        actions: list[dict[str, Any]] = []
        for view in ALL_VIEWS:
            zh, en_name, desc = LABELS[view]
            items.append(
                {
                    "id": view,
                    "title": tr(lang, f"{zh} {en_name}", en_name),
                    "sub": desc,
                    "view": view,
                }
            )
            actions.append(_show(tr(lang, "打开", "Show"), view=view))
        actions += [
            _show(tr(lang, "1,000 行", "1,000 rows"), view="table", rows=1000),
            _show(tr(lang, "100 条", "100 items"), view="list", items=100),
            _show(tr(lang, "折线", "Line"), view="chart", type="line", points=12),
            _show(tr(lang, "饼图", "Pie"), view="chart", type="pie", points=5),
            _show(tr(lang, "空清单", "Empty"), view="rows", items=0),
        ]
        return {
            "status": "ok",
            "view_type": "list",
            "data": {
                "title": tr(lang, "组件展示：全部视图类型", "Gallery: every view type"),
                "items": items,
            },
            "actions": actions,
            "message": note or tr(lang, "请选择要展示的视图", "Pick a view to show"),
        }

    def _render(self, params: dict[str, Any], context: AppContext, lang: Lang) -> dict[str, Any]:
        try:
            return self._build(params, context, lang)
        except BadParam as e:
            return self._error(lang, str(e))

    def _build(self, params: dict[str, Any], context: AppContext, lang: Lang) -> dict[str, Any]:
        view = params.get("view", "home")
        if view == "home":
            return self._home(lang)
        if not isinstance(view, str) or view not in ALL_VIEWS:
            raise BadParam(
                f"参数 view 必须是 {', '.join(ALL_VIEWS)} 之一（收到 {view!r}）"
                f" / param view must be one of them (got {view!r})"
            )
        results = context.tool_results
        files = (context.get("cwd_state") or {}).get("files") or []
        app = context.get("app") or "gallery"
        name = tr(lang, LABELS[view][0], LABELS[view][1])
        done = tr(lang, f"已展示{name}视图", f"Showing the {name} view")
        simple = {
            "text": sample_views.text_view,
            "form": sample_views.form_view,
            "code": sample_views.code_view,
            "dashboard": sample_views.dashboard_view,
        }
        if view in simple:
            actions = (
                [
                    {
                        "type": "submit_form",
                        "label": tr(lang, "提交", "Submit"),
                        "action_id": "form_submit",
                    }
                ]
                if view == "form"
                else []
            )
            return self._view(view, simple[view](), lang, done, actions)
        if view == "table":
            rows = _int_param(params, "rows")
            return self._view(
                "table",
                sample_views.table_view(rows),
                lang,
                tr(lang, f"表格共 {rows} 行", f"Table with {rows} rows"),
            )
        if view == "list":
            return self._view(
                "list", sample_views.list_view(_int_param(params, "items")), lang, done
            )
        if view == "chart":
            kind = params.get("type", params.get("chart_type", "bar"))
            if kind not in sample_views.CHART_TYPES:
                raise BadParam(
                    f"参数 type 必须是 bar、line、pie 或 doughnut（收到 {kind!r}）"
                    f" / param type must be bar, line, pie or doughnut "
                    f"(got {kind!r})"
                )
            data = sample_views.chart_view(
                _int_param(params, "points"), kind, _int_param(params, "series")
            )
            return self._view("chart", data, lang, done)
        if view == "card":
            url = f"/apps/{app}/files/{IMAGE_FILE}" if IMAGE_FILE in files else None
            return self._view("card", sample_views.card_view(url), lang, done)
        if view == "media":
            return self._asset(
                context.result(1),
                files,
                "make_tone",
                TONE_FILE,
                lang,
                lambda: self._view(
                    "media",
                    {
                        "url": f"/apps/{app}/files/{TONE_FILE}",
                        "type": "audio",
                        "title": tr(lang, "440 Hz 正弦音", "440 Hz sine tone"),
                        "artist": tr(lang, "组件展示生成", "made by the gallery"),
                    },
                    lang,
                    done,
                ),
            )
        if view == "image":
            return self._asset(
                context.result(1),
                files,
                "make_image",
                IMAGE_FILE,
                lang,
                lambda: self._view(
                    "image",
                    {
                        "url": f"/apps/{app}/files/{IMAGE_FILE}",
                        "caption": tr(lang, "组件展示生成的 PNG 图片", "A PNG made by the gallery"),
                    },
                    lang,
                    done,
                ),
            )
        if view == "rows":
            count = _int_param(params, "items") if "items" in params else rows_demo.ROW_TASKS
            return self._rows_reply(lang, count=count)
        if view == "variants":
            return self._variants(lang)
        return {
            "loading": self._loading,
            "error": self._sample_error,
            "controls": self._controls,
            "hostile": self._hostile,
            "notify": self._notify,
            "push": self._push,
            "memory": self._memory,
        }[view](params, results, lang)

    def _view(
        self,
        view_type: str,
        data: dict[str, Any],
        lang: Lang,
        message: str,
        actions: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        return {
            "status": "ok",
            "view_type": view_type,
            "data": data,
            "actions": [*(actions or []), _home_button(lang)],
            "message": message,
        }

    def _asset(
        self,
        made: StepResult | None,
        files: list[str],
        tool_name: str,
        filename: str,
        lang: Lang,
        final: Any,
    ) -> dict[str, Any]:
        """The view once ``filename`` exists; first a step running ``tool_name`` to make it."""
        if made is not None:
            if not made.ok:
                error = made.raw.get("error")
                return self._error(
                    lang,
                    tr(
                        lang,
                        f"生成 {filename} 失败：{error}",
                        f"could not make {filename}: {error}",
                    ),
                )
            return final()
        if filename in files:
            return final()
        return {
            "status": "ok",
            "view_type": "loading",
            "data": {"message": tr(lang, f"正在生成 {filename}…", f"Making {filename}…")},
            "steps": self.plan_steps([{"tool": tool_name, "args": {}}]),
            "message": tr(lang, "正在准备", "Preparing"),
        }

    def _loading(
        self, params: dict[str, Any], results: dict[str, Any], lang: Lang
    ) -> dict[str, Any]:
        if "step_1" not in results:
            value = {
                "prepared_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "items": ["α", "β", "γ"],
            }
            return {
                "status": "ok",
                "view_type": "loading",
                "data": {
                    "message": tr(
                        lang,
                        "正在加载…（缓存写入，再读回）",
                        "Loading… (write to the cache, read it back)",
                    ),
                    "plan": ["cache_set", "cache_get"],
                },
                "steps": self.plan_steps(
                    [
                        {
                            "tool": "cache_set",
                            "args": {"key": CACHE_KEY, "value": value, "ttl": CACHE_TTL},
                        },
                        {"tool": "cache_get", "args": {"key": CACHE_KEY}},
                    ]
                ),
                "message": tr(lang, "加载中", "Loading"),
            }
        statuses = {k: v.get("status") for k, v in results.items() if isinstance(v, dict)}
        read = results.get("step_2")
        if not isinstance(read, dict) or read.get("status") != "ok":
            failed = next(
                (
                    v.get("error")
                    for v in results.values()
                    if isinstance(v, dict) and v.get("status") != "ok"
                ),
                "?",
            )
            return self._error(lang, tr(lang, f"加载失败：{failed}", f"loading failed: {failed}"))
        value = read.get("result")
        return self._view(
            "text",
            {
                "title": tr(lang, "加载完成", "Loaded"),
                "content": tr(
                    lang,
                    "两步计划已运行：先 cache_set 再 cache_get。读回的值：\n",
                    "The two-step plan ran: cache_set, then cache_get. Read back:\n",
                )
                + json.dumps(value, ensure_ascii=False, indent=2),
                "value": value,
                "steps": statuses,
            },
            lang,
            tr(lang, "加载完成", "Loaded"),
        )

    def _sample_error(
        self, params: dict[str, Any], results: dict[str, Any], lang: Lang
    ) -> dict[str, Any]:
        message = tr(
            lang,
            "这是一个示例错误：找不到文件 missing.txt（这不是真的故障）。",
            "A sample error: file missing.txt not found (nothing is really broken).",
        )
        return error_view(
            message,
            title=tr(lang, "示例错误", "Sample error"),
            detail={"code": "E_SAMPLE", "hint": 'show {"view": "home"}'},
            actions=[_home_button(lang)],
        )

    def _controls(
        self, params: dict[str, Any], results: dict[str, Any], lang: Lang
    ) -> dict[str, Any]:
        return text_view(
            tr(
                lang,
                "每个控件触发后，回复里会原样显示桌面发送的内容。",
                "Use any control: the reply shows exactly what the desktop sent.",
            ),
            title=tr(lang, "全部十种操作控件", "All ten action controls"),
            actions=[*controls(), _home_button(lang)],
            message=tr(lang, "十种控件", "Ten controls"),
        )

    def _rows_reply(
        self, lang: Lang, received: Any = None, count: int = rows_demo.ROW_TASKS
    ) -> dict[str, Any]:
        """The rows view; after a row control, the message line shows what was received."""
        data = rows_demo.rows_view(self._rows, lang, count)
        message = tr(lang, "每行的控件带着该行的 id", "Each row's controls carry its id")
        if received is not None:
            data["received"] = received
            message = json.dumps(received, ensure_ascii=False, sort_keys=True)
        return self._view("list", data, lang, message)

    def _variants(self, lang: Lang, received: Any = None) -> dict[str, Any]:
        content = tr(
            lang,
            "只有“保存”是主要按钮，“删除”是危险按钮；字号的选项值是数字；代码框里 Tab 缩进，"
            "按 Esc 再按 Tab 离开。",
            "Only Save is primary and Delete is danger; the size options are numbers; "
            "Tab indents in the code box, Escape then Tab leaves it.",
        )
        if received is not None:
            content = json.dumps(received, ensure_ascii=False, indent=2, sort_keys=True)
        return text_view(
            content,
            title=tr(lang, "按钮样式", "Button variants"),
            received=received,
            actions=[*rows_demo.variant_actions(lang), _home_button(lang)],
            message=tr(lang, "试试每个控件", "Try each control"),
        )

    def _echo(self, req: dict[str, Any], lang: Lang) -> dict[str, Any]:
        return text_view(
            json.dumps(req, ensure_ascii=False, indent=2, sort_keys=True),
            title=tr(lang, "收到的操作", "Received action"),
            received=req,
            actions=[*controls(), _home_button(lang)],
            message=tr(lang, f"收到 {req.get('action_id')}", f"Received {req.get('action_id')}"),
        )

    def _hostile(
        self, params: dict[str, Any], results: dict[str, Any], lang: Lang
    ) -> dict[str, Any]:
        kind = params.get("as")
        if kind is None:
            items = [
                {
                    "id": v,
                    "title": tr(
                        lang, f"恶意数据 → {LABELS[v][0]}", f"Hostile data → {LABELS[v][1]}"
                    ),
                    "sub": v,
                }
                for v in VIEW_TYPES
            ]
            actions = [
                _show(tr(lang, "打开", "Show"), view="hostile", **{"as": v}) for v in VIEW_TYPES
            ]
            return self._view(
                "list",
                {"title": tr(lang, "恶意数据测试", "Hostile data"), "items": items},
                lang,
                tr(lang, "请选择视图类型", "Pick a view type"),
                actions,
            )
        if kind not in VIEW_TYPES:
            raise BadParam(
                f"参数 as 必须是 {', '.join(VIEW_TYPES)} 之一（收到 {kind!r}）"
                f" / param as must be a view type (got {kind!r})"
            )
        return {
            "status": "ok",
            "view_type": kind,
            "data": hostile_views.BUILDERS[kind](),
            "actions": [*hostile_views.actions(), _home_button(lang)],
            "message": tr(lang, "恶意数据：", "Hostile data: ") + hostile_views.IMG_ONERROR,
        }

    def _notify(
        self, params: dict[str, Any], results: dict[str, Any], lang: Lang
    ) -> dict[str, Any]:
        if not results:
            steps = [
                {
                    "tool": "notify",
                    "args": {
                        "title": tr(lang, "组件展示", "Gallery"),
                        "body": tr(
                            lang,
                            f"这是一条 {level} 级别的通知。",
                            f"A notification, level {level}.",
                        ),
                        "level": level,
                    },
                }
                for level in ("info", "success")
            ]
            return {
                "status": "ok",
                "view_type": "loading",
                "data": {"message": tr(lang, "正在发送通知…", "Sending notifications…")},
                "steps": self.plan_steps(steps),
                "message": tr(lang, "发送中", "Sending"),
            }
        delivered = [
            bool((r.get("result") or {}).get("delivered"))
            for r in results.values()
            if isinstance(r, dict)
        ]
        return self._view(
            "text",
            {
                "title": tr(lang, "通知", "Notifications"),
                "content": tr(
                    lang,
                    f"已通过步骤发送 {len(delivered)} 条通知，送达 {sum(delivered)} 条。",
                    f"Sent {len(delivered)} notifications through steps; "
                    f"{sum(delivered)} delivered.",
                ),
                "delivered": delivered,
            },
            lang,
            tr(lang, "通知已发送", "Notifications sent"),
        )

    def _memory(
        self, params: dict[str, Any], results: dict[str, Any], lang: Lang
    ) -> dict[str, Any]:
        """The memory tools in a plan: keep a fact in the gallery's own memory, find it
        again (no permission needed: an app's own scope is its own)."""
        fact = tr(lang, "组件展示的示例记忆：蓝色按钮是主要按钮", "Gallery sample: blue is primary")
        if not results:
            steps = [
                {"step_id": 1, "tool": "memory_store", "args": {"text": fact, "tags": ["demo"]}},
                {"step_id": 2, "tool": "memory_search", "args": {"query": fact, "k": 3}},
            ]
            return {
                "status": "ok",
                "view_type": "loading",
                "data": {"message": tr(lang, "正在记住并查找…", "Remembering and recalling…")},
                "steps": self.plan_steps(steps),
                "message": tr(lang, "记忆中", "Remembering"),
            }
        found = (results.get("step_2") or {}).get("result") or []
        items = [
            {"title": str(m.get("text", "")), "subtitle": " ".join(m.get("tags") or [])}
            for m in found
            if isinstance(m, dict)
        ]
        return self._view(
            "list",
            {"title": tr(lang, "应用自己的记忆", "The app's own memory"), "items": items},
            lang,
            tr(lang, f"找回 {len(items)} 条记忆", f"Recalled {len(items)} memories"),
        )

    def _push(self, params: dict[str, Any], results: dict[str, Any], lang: Lang) -> dict[str, Any]:
        sent = 0
        for i in range(1, PUSH_EVENTS + 1):
            if self.push(
                {"progress": i / PUSH_EVENTS, "label": f"{i}/{PUSH_EVENTS}", "source": "gallery"}
            ):
                sent += 1
        return self._view(
            "text",
            {
                "title": tr(lang, "推送", "Push"),
                "content": tr(
                    lang,
                    f"已推送 {PUSH_EVENTS} 条进度事件，系统接收 {sent} 条。",
                    f"Pushed {PUSH_EVENTS} progress events; the system took {sent}.",
                ),
                "pushed": PUSH_EVENTS,
                "accepted": sent,
            },
            lang,
            tr(lang, "推送完成", "Pushed"),
        )

    def _error(self, lang: Lang, message: str, received: Any = None) -> dict[str, Any]:
        extra: dict[str, Any] = {} if received is None else {"received": received}
        return error_view(
            message,
            title=tr(lang, "组件展示：出错了", "Gallery: error"),
            actions=[_home_button(lang)],
            **extra,
        )

    # ------------------------------------------------------ custom tools

    def _workdir(self) -> Path:
        return Path(os.environ.get("AIOS_WORKDIR") or self.app_dir() / "workspace")

    def _write_asset(self, name: str, data: bytes) -> dict[str, Any]:
        # Fixed file names only (no argument reaches the path), written atomically.
        target = self._workdir() / name
        if target.is_file() and target.read_bytes() == data:
            return {"path": name, "size": len(data), "created": False}
        tmp = target.with_name(f".{name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
        return {"path": name, "size": len(data), "created": True}

    @tool(name="make_tone", desc="Write workspace/tone.wav: a 1.5 s 440 Hz sine tone")
    def make_tone(self) -> dict[str, Any]:
        return self._write_asset(TONE_FILE, media_assets.sine_wav())

    @tool(name="make_image", desc="Write workspace/sample.png: a small generated picture")
    def make_image(self) -> dict[str, Any]:
        return self._write_asset(IMAGE_FILE, media_assets.gradient_png())


if __name__ == "__main__":
    GalleryAgent().run()
