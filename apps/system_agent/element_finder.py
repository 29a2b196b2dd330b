"""Find the element a command names in the desktop's snapshot (spec §9.3), and where to put it.

The snapshot lists ``{id, type, label, x, y, width, height, visible, window?}``.
Each element gets aliases — its label, its id in words, the usual Chinese and
English names of the desktop's own parts ("时钟"/"clock", "任务栏"/"taskbar"),
"播放按钮"/"play button" for a button labelled 播放 — and the longest alias
found in the command wins. A window named in the command ("音乐窗口的播放按钮",
"the play button in the music window") narrows the choice to its controls.
Two equally good matches are ambiguous: the caller asks the user. Pure
functions, no I/O.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

DEFAULT_VIEWPORT = (1280, 800)
MARGIN = 20
"""Distance from the screen edge for named positions ("左上角" → (20, 20), spec §12.3)."""
SEARCH_STEP = 8
"""Pixels between the spots tried when a named position is taken by another element."""
CONTAINERS = frozenset({"taskbar", "tray", "start_menu", "calendar", "notifications"})
"""Desktop ids that hold other elements: a moved element may lie over them, not over what
they hold (the start button, a taskbar icon, the clock)."""

DESKTOP_NAMES: dict[str, tuple[list[str], list[str], str, str]] = {
    # id: (Chinese aliases, English aliases, Chinese display name, English display name)
    "clock": (["时钟", "时间", "钟表"], ["clock", "time"], "时钟", "the clock"),
    "taskbar": (["任务栏"], ["taskbar", "task bar"], "任务栏", "the taskbar"),
    "start_button": (
        ["开始按钮", "开始菜单按钮", "开始键", "开始"],
        ["start button", "start"],
        "开始按钮",
        "the start button",
    ),
    "start_menu": (["开始菜单"], ["start menu"], "开始菜单", "the start menu"),
    "tray": (
        ["系统托盘", "托盘", "状态栏"],
        ["system tray", "tray", "status area"],
        "系统托盘",
        "the system tray",
    ),
    "calendar": (["日历"], ["calendar"], "日历", "the calendar"),
    "command_input": (
        ["命令输入框", "指令输入框", "命令栏", "指令栏", "命令框", "输入框", "搜索框", "输入栏"],
        [
            "command bar",
            "command input",
            "command box",
            "input box",
            "input bar",
            "search bar",
            "input",
        ],
        "命令栏",
        "the command bar",
    ),
    "mic_button": (
        ["麦克风按钮", "语音输入按钮", "语音按钮", "麦克风", "话筒"],
        ["microphone button", "microphone", "mic button", "mic", "voice button"],
        "麦克风按钮",
        "the microphone button",
    ),
    "notifications": (
        ["通知栏", "通知区", "通知中心", "通知"],
        ["notifications", "notification area", "notification"],
        "通知栏",
        "the notifications",
    ),
}

BUTTON_WORDS: dict[str, list[str]] = {
    # Common button labels and their English words, so "play button" finds a button labelled 播放.
    "播放": ["play"],
    "暂停": ["pause"],
    "下一首": ["next", "next song", "next track"],
    "上一首": ["previous", "prev", "previous song", "previous track"],
    "停止": ["stop"],
    "保存": ["save"],
    "删除": ["delete", "remove"],
    "添加": ["add"],
    "搜索": ["search"],
    "刷新": ["refresh", "reload"],
    "确定": ["ok", "confirm"],
    "取消": ["cancel"],
    "打开": ["open"],
    "关闭": ["close"],
    "设置": ["settings"],
    "返回": ["back"],
    "发送": ["send"],
    "编辑": ["edit"],
    "新建": ["new"],
    "撤销": ["undo"],
    "提交": ["submit"],
    "清空": ["clear"],
    "运行": ["run"],
    "开始": ["start"],
    "完成": ["done"],
    "音量": ["volume"],
}
_EN_TO_ZH = {en: zh for zh, ens in BUTTON_WORDS.items() for en in ens}

TYPE_PRIORITY = {
    "window": 5,
    "button": 4,
    "control": 4,
    "desktop": 4,
    "input": 4,
    "icon": 3,
    "menu_item": 2,
    "panel": 1,
}
GENERIC = {
    "button": (
        {"按钮", "按键", "键", "button", "the button", "buttons"},
        ("button",),
        "按钮",
        "button",
    ),
    "window": ({"窗口", "window", "the window"}, ("window",), "窗口", "window"),
}


@dataclass
class Element:
    id: str
    type: str
    label: str
    x: float
    y: float
    width: float
    height: float
    visible: bool = True
    window: str | None = None
    aliases: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        """Unique within a snapshot: buttons repeat their id across windows."""
        return f"{self.id}@{self.window}" if self.window else self.id

    @property
    def kind(self) -> str:
        """A coarse kind for priorities and display names."""
        if self.id in DESKTOP_NAMES:
            return "desktop"
        if self.id.startswith("win_"):
            return "window"
        if self.id.startswith("winbody_"):
            return "panel"
        if self.id.startswith("icon_"):
            return "icon"
        if self.id.startswith("menu_"):
            return "menu_item"
        if self.type in ("button", "submit_form", "link") or (
            self.id.startswith("btn_") and self.type in ("", "control")
        ):
            return "button"
        return "control"

    @property
    def app(self) -> str | None:
        """The app a window/icon/menu entry belongs to."""
        for prefix in ("win_", "winbody_", "icon_", "menu_"):
            if self.id.startswith(prefix):
                return self.id[len(prefix) :]
        return self.window

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "type": self.type,
            "label": self.label,
            "x": self.x,
            "y": self.y,
            "width": self.width,
            "height": self.height,
            "visible": self.visible,
        }
        if self.window:
            out["window"] = self.window
        return out


class Snapshot:
    """The desktop's elements, indexed for lookup by name."""

    def __init__(self, raw: Any):
        raw = raw if isinstance(raw, dict) else {}
        items = raw.get("elements") if isinstance(raw.get("elements"), list) else []
        self.elements: list[Element] = [e for e in (_element(i) for i in items) if e]
        self.viewport = _viewport(raw.get("viewport"), self.elements)
        self.window_labels: dict[str, str] = {}
        for e in self.elements:
            if e.kind == "window" and e.app and e.label:
                self.window_labels[e.app] = e.label
        for e in self.elements:
            e.aliases = _aliases(e, self.window_labels)

    def __bool__(self) -> bool:
        return bool(self.elements)

    def get(self, key_or_id: str, window: str | None = None) -> Element | None:
        for e in self.elements:
            if e.key == key_or_id or (e.id == key_or_id and (window is None or e.window == window)):
                return e
        return None

    def window_name(self, app: str | None) -> str:
        if not app:
            return ""
        return self.window_labels.get(app, app)

    # ------------------------------------------------------------ lookup

    def find(self, text: str) -> list[Element]:
        """Elements named in ``text``; more than one means it is ambiguous; [] none."""
        lowered = (text or "").lower().replace("_", " ")
        if not lowered.strip():
            return []
        scored: list[tuple[int, Element]] = []
        for e in self.elements:
            best = max((len(a) for a in e.aliases if _contains(lowered, a)), default=0)
            if best:
                scored.append((best, e))
        if not scored:
            return []
        # A window named next to one of its controls only says where the control is.
        windows = {e.app for _, e in scored if e.kind == "window"}
        inner = [
            (s, e) for s, e in scored if e.window in windows and e.kind not in ("window", "panel")
        ]
        if inner:
            scored = inner
        top = max((s, TYPE_PRIORITY.get(e.kind, 3)) for s, e in scored)
        return [e for s, e in scored if (s, TYPE_PRIORITY.get(e.kind, 3)) == top]

    def generic(self, residual: str) -> tuple[str, list[Element]] | None:
        """ "按钮" / "the window" on their own: (kind, every element of that kind)."""
        word = residual.strip().lower()
        for kind, (words, kinds, _, _) in GENERIC.items():
            if word in words:
                return kind, [e for e in self.elements if e.kind in kinds]
        return None

    # ---------------------------------------------------------- names

    def display(self, e: Element, lang: str) -> str:
        """How a person calls it: 播放按钮 / the play button, 音乐窗口 / the 音乐 window."""
        if e.kind == "desktop":
            zh, en = DESKTOP_NAMES[e.id][2:]
            return en if lang == "en" else zh
        label = _core(e.label) or _id_words(e.id)
        if lang == "en":
            word = BUTTON_WORDS.get(label, [label])[0]
            suffix = {
                "window": " window",
                "panel": " window content",
                "icon": " icon",
                "menu_item": " menu entry",
                "button": " button",
            }.get(e.kind, "")
            if suffix and word.lower().endswith(suffix.strip()):
                suffix = ""
            return f"the {word}{suffix}"
        suffix = {
            "window": "窗口",
            "panel": "窗口内容",
            "icon": "图标",
            "menu_item": "菜单项",
            "button": "按钮",
        }.get(e.kind, "")
        return label if label.endswith(suffix) else label + suffix

    def choice_label(self, e: Element, lang: str) -> str:
        """A clarifying option: the name plus the window it is in and where it is."""
        name = self.display(e, lang)
        where = f"({e.x:g}, {e.y:g})"
        if e.window:
            win = self.window_name(e.window)
            return (
                f"{name} — {win} window {where}"
                if lang == "en"
                else f"{name}（{win} 窗口，{where}）"
            )
        return f"{name} {where}" if lang == "en" else f"{name}（{where}）"

    # ---------------------------------------------------------- geometry

    def free_position(self, e: Element, where: str) -> tuple[float, float]:
        """Like :meth:`position`, moved to the nearest spot where ``e`` covers no other
        element of the desktop (a taskbar icon, the start button…): a place named by
        the user must leave the rest usable. The screen's own spot when none is free."""
        want = self.position(e, where)
        obstacles = [
            (o.x, o.y, o.x + o.width, o.y + o.height)
            for o in self.elements
            if o.visible
            and o.key != e.key
            and o.width > 0
            and o.height > 0
            and o.window is None
            and o.kind in ("desktop", "icon", "button", "control", "input")
            and o.id not in CONTAINERS
        ]
        vw, vh = self.viewport
        w, h = min(e.width, vw), min(e.height, vh)

        def free(x: float, y: float) -> bool:
            return all(
                x >= right or x + w <= left or y >= bottom or y + h <= top
                for left, top, right, bottom in obstacles
            )

        if free(*want):
            return want
        spots = (
            (float(x), float(y))
            for x in range(MARGIN, int(vw - w - MARGIN) + 1, SEARCH_STEP)
            for y in range(MARGIN, int(vh - h - MARGIN) + 1, SEARCH_STEP)
        )
        return min(
            (s for s in spots if free(*s)),
            key=lambda s: (s[0] - want[0]) ** 2 + (s[1] - want[1]) ** 2,
            default=want,
        )

    def position(self, e: Element, where: str) -> tuple[float, float]:
        """Top-left corner that puts ``e`` at a named place, inside the screen."""
        vw, vh = self.viewport
        right = max(0.0, vw - e.width - MARGIN)
        bottom = max(0.0, vh - e.height - MARGIN)
        cx, cy = max(0.0, (vw - e.width) / 2), max(0.0, (vh - e.height) / 2)
        x, y = {
            "top_left": (MARGIN, MARGIN),
            "top_right": (right, MARGIN),
            "bottom_left": (MARGIN, bottom),
            "bottom_right": (right, bottom),
            "center": (cx, cy),
            "left": (MARGIN, e.y),
            "right": (right, e.y),
            "top": (e.x, MARGIN),
            "bottom": (e.x, bottom),
        }[where]
        return float(round(x)), float(round(y))


# ------------------------------------------------------------------ parsing


def _num(v: Any, default: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return default
    return float(v)


def _element(raw: Any) -> Element | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw["id"]:
        return None
    label = raw.get("label")
    window = raw.get("window")
    return Element(
        id=raw["id"][:128],
        type=str(raw.get("type") or "")[:40],
        label=(label if isinstance(label, str) else "")[:200],
        x=_num(raw.get("x")),
        y=_num(raw.get("y")),
        width=max(0.0, _num(raw.get("width"))),
        height=max(0.0, _num(raw.get("height"))),
        visible=raw.get("visible") is not False,
        window=window if isinstance(window, str) and window else None,
    )


def _viewport(raw: Any, elements: list[Element]) -> tuple[float, float]:
    if isinstance(raw, dict):
        w, h = _num(raw.get("width")), _num(raw.get("height"))
        if w > 0 and h > 0:
            return w, h
    # No viewport reported: the taskbar spans the screen, so the elements' extent is a guess.
    w = max((e.x + e.width for e in elements), default=0.0)
    h = max((e.y + e.height for e in elements), default=0.0)
    return (w, h) if w > 200 and h > 200 else DEFAULT_VIEWPORT


def _id_words(element_id: str) -> str:
    for prefix in ("btn_", "win_", "winbody_", "icon_", "menu_"):
        if element_id.startswith(prefix):
            element_id = element_id[len(prefix) :]
            break
    return re.sub(r"[_\-]+", " ", element_id).strip()


def _aliases(e: Element, window_labels: dict[str, str]) -> list[str]:
    out: list[str] = [e.id.lower().replace("_", " ")]
    label = _core(e.label).lower()
    words = _id_words(e.id).lower()
    kind = e.kind
    if kind == "desktop":
        zh, en, _, _ = DESKTOP_NAMES[e.id]
        out += zh + en
    elif kind in ("window", "panel", "icon", "menu_item"):
        names = {n for n in (label, words, window_labels.get(e.app or "", "").lower()) if n}
        for n in names:
            if kind == "window":
                out += [n, f"{n}窗口", f"{n} window", f"{n} app", f"{n}应用"]
            elif kind == "panel":
                out += [n, f"{n}窗口内容", f"{n}内容", f"{n} window content", f"{n} content"]
            elif kind == "icon":
                out += [n, f"{n}图标", f"{n} icon", f"任务栏上的{n}", f"{n} taskbar icon"]
            else:
                out += [n, f"{n}菜单项", f"开始菜单里的{n}", f"{n} menu entry", f"{n} menu item"]
    else:
        names = {n for n in (label, words) if n and not n.isdigit()}
        names.update(en for n in list(names) for en in BUTTON_WORDS.get(n, []))
        if words in _EN_TO_ZH:
            names.add(_EN_TO_ZH[words])
        for n in names:
            out += (
                [n, f"{n}按钮", f"{n}键", f"{n} button"]
                if kind == "button"
                else [n, f"{n}控件", f"{n} control"]
            )
    # Never a one-character alias: "的" or "x" would match half of every sentence.
    return sorted({a for a in out if len(a) >= 2}, key=len, reverse=True)


def _core(label: str) -> str:
    """A label without the symbols around it: "▶ 播放" → "播放"."""
    return re.sub(r"^[^\w]+|[^\w]+$", "", label or "").strip()


def _contains(text: str, alias: str) -> bool:
    if not alias:
        return False
    if re.search(r"[a-z0-9]", alias[0]) or re.search(r"[a-z0-9]", alias[-1]):
        pat = rf"(?<![a-z0-9]){re.escape(alias)}(?![a-z0-9])"
        return re.search(pat, text) is not None
    return alias in text
