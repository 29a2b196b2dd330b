# Longer than ~500 lines on purpose: a bundled app is what third-party developers copy: its
# handlers, views and bilingual messages stay in one file they can read at once.
"""Understand a UI command in Chinese or English, without a language model.

:func:`parse` turns one command ("把播放按钮移到左上角", "make the clock red",
"旋转 45 度") into a :class:`Command`: the operation of spec §9.4, what the
operation needs (a named position, a size, a colour…) and ``target``, the part
of the sentence that is left once the operation's own words are taken out —
the words that name the element. Resolving that name against the desktop's
snapshot is :mod:`element_finder`'s job. Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import aios_sdk

OPS = ("move", "resize", "hide", "show", "change_color", "change_text", "rotate", "undo", "reset")
TEXT_MAX = 200
"""The system accepts text and colours of 1-200 characters (the SDK's ``parse_ui_op``)."""

# ------------------------------------------------------------------ colours

ZH_COLORS: dict[str, str] = {
    "深蓝色": "navy",
    "深蓝": "navy",
    "浅蓝色": "lightblue",
    "浅蓝": "lightblue",
    "天蓝色": "skyblue",
    "天蓝": "skyblue",
    "深绿色": "darkgreen",
    "深绿": "darkgreen",
    "浅绿色": "lightgreen",
    "浅绿": "lightgreen",
    "深红色": "darkred",
    "深红": "darkred",
    "粉红色": "pink",
    "粉红": "pink",
    "浅灰色": "lightgray",
    "浅灰": "lightgray",
    "深灰色": "dimgray",
    "深灰": "dimgray",
    "红色": "red",
    "橙色": "orange",
    "橘色": "orange",
    "黄色": "yellow",
    "绿色": "green",
    "青色": "cyan",
    "蓝色": "blue",
    "紫色": "purple",
    "粉色": "pink",
    "黑色": "black",
    "白色": "white",
    "灰色": "gray",
    "棕色": "brown",
    "褐色": "brown",
    "金色": "gold",
    "银色": "silver",
    "透明": "transparent",
    "红": "red",
    "橙": "orange",
    "黄": "yellow",
    "绿": "green",
    "青": "cyan",
    "蓝": "blue",
    "紫": "purple",
    "粉": "pink",
    "黑": "black",
    "白": "white",
    "灰": "gray",
}
EN_COLORS: tuple[str, ...] = (
    "lightblue",
    "light blue",
    "darkblue",
    "dark blue",
    "skyblue",
    "sky blue",
    "lightgreen",
    "light green",
    "darkgreen",
    "dark green",
    "darkred",
    "dark red",
    "lightgray",
    "light gray",
    "lightgrey",
    "light grey",
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "black",
    "white",
    "gray",
    "grey",
    "brown",
    "gold",
    "silver",
    "cyan",
    "magenta",
    "navy",
    "teal",
    "lime",
    "maroon",
    "olive",
    "violet",
    "indigo",
    "coral",
    "crimson",
    "tomato",
    "turquoise",
    "beige",
    "orchid",
    "salmon",
    "khaki",
    "plum",
    "tan",
    "transparent",
)
_HEX = r"#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3,4})(?![0-9a-fA-F])"
_FUNC_COLOR = r"(?:rgba?|hsla?)\([^()]{1,60}\)"
_ZH_COLOR_RE = "|".join(sorted(ZH_COLORS, key=len, reverse=True))
_EN_COLOR_RE = "|".join(re.escape(c) for c in sorted(EN_COLORS, key=len, reverse=True))
COLOR_RE = re.compile(
    rf"{_HEX}|{_FUNC_COLOR}|(?<![a-z]){'(?:' + _EN_COLOR_RE + ')'}(?![a-z])"
    rf"|{_ZH_COLOR_RE}",
    re.IGNORECASE,
)
ZH_COLOR_NAMES: dict[str, str] = {
    "red": "红色",
    "orange": "橙色",
    "yellow": "黄色",
    "green": "绿色",
    "cyan": "青色",
    "blue": "蓝色",
    "purple": "紫色",
    "pink": "粉色",
    "black": "黑色",
    "white": "白色",
    "gray": "灰色",
    "brown": "棕色",
    "gold": "金色",
    "silver": "银色",
    "navy": "深蓝色",
    "transparent": "透明",
}


def color_of(word: str) -> str:
    """The CSS colour for a colour word the user said ("红色" → red, "#f00" stays)."""
    w = word.strip()
    if w in ZH_COLORS:
        return ZH_COLORS[w]
    if w.startswith("#") or "(" in w:
        return w
    return re.sub(r"\s+", "", w.lower()).replace("grey", "gray")


# ---------------------------------------------------------------- positions

POSITIONS = (
    "top_left",
    "top_right",
    "bottom_left",
    "bottom_right",
    "center",
    "left",
    "right",
    "top",
    "bottom",
)
_POSITION_PATTERNS: list[tuple[str, str]] = [
    (
        "top_left",
        r"左上(?:角|方|边|部)?|(?:the\s+)?(?:top|upper)[\s-]*left(?:[\s-]*(?:hand\s+)?"
        r"corner)?",
    ),
    (
        "top_right",
        r"右上(?:角|方|边|部)?|(?:the\s+)?(?:top|upper)[\s-]*right(?:[\s-]*(?:hand\s+)?"
        r"corner)?",
    ),
    (
        "bottom_left",
        r"左下(?:角|方|边|部)?|(?:the\s+)?(?:bottom|lower)[\s-]*left(?:[\s-]*"
        r"(?:hand\s+)?corner)?",
    ),
    (
        "bottom_right",
        r"右下(?:角|方|边|部)?|(?:the\s+)?(?:bottom|lower)[\s-]*right(?:[\s-]*"
        r"(?:hand\s+)?corner)?",
    ),
    (
        "center",
        r"(?:屏幕|桌面)?(?:的)?(?:正中间|正中央|中间|中央|正中|中心|居中)"
        r"|(?:the\s+)?(?:center|centre|middle)(?:\s+of\s+the\s+(?:screen|desktop))?",
    ),
    ("left", r"最?左(?:边|侧|面|方)|(?:the\s+)?(?:far\s+)?left(?:\s+(?:side|edge))?"),
    ("right", r"最?右(?:边|侧|面|方)|(?:the\s+)?(?:far\s+)?right(?:\s+(?:side|edge))?"),
    ("top", r"最?上(?:面|方|边)|顶部|顶端|最上|(?:the\s+)?(?:top|upper)(?:\s+(?:side|edge))?"),
    (
        "bottom",
        r"最?下(?:面|方|边)|底部|底端|最下|(?:the\s+)?(?:bottom|lower)"
        r"(?:\s+(?:side|edge))?",
    ),
]
POSITION_RE = [
    (name, re.compile(rf"(?<![a-z])(?:{pat})(?![a-z])", re.IGNORECASE))
    for name, pat in _POSITION_PATTERNS
]
POSITION_NAMES = {
    "zh": {
        "top_left": "左上角",
        "top_right": "右上角",
        "bottom_left": "左下角",
        "bottom_right": "右下角",
        "center": "屏幕中间",
        "left": "左边",
        "right": "右边",
        "top": "上面",
        "bottom": "下面",
    },
    "en": {
        "top_left": "the top-left corner",
        "top_right": "the top-right corner",
        "bottom_left": "the bottom-left corner",
        "bottom_right": "the bottom-right corner",
        "center": "the center of the screen",
        "left": "the left side",
        "right": "the right side",
        "top": "the top",
        "bottom": "the bottom",
    },
}

_NUM = r"-?\d+(?:\.\d+)?"
_COORDS = re.compile(
    rf"(?:x\s*[=:：]?\s*)?\(?\s*({_NUM})\s*[,，]\s*(?:y\s*[=:：]?\s*)?({_NUM})"
    r"\s*\)?",
    re.IGNORECASE,
)
_XY = re.compile(
    rf"\bx\s*[=:：]?\s*({_NUM})\s*(?:[,，]|and)?\s*\by\s*[=:：]?\s*({_NUM})", re.IGNORECASE
)
_SIZE = re.compile(
    rf"({_NUM})\s*(?:[x×X*]|by|乘)\s*({_NUM})(?:\s*(?:px|像素|pixels?))?", re.IGNORECASE
)
_WIDTH = re.compile(
    rf"(?:宽度?|width)\s*(?:为|到|是|改为|设为|=|:|：|to|of)?\s*({_NUM})"
    r"(?:\s*(?:px|像素|pixels?))?",
    re.IGNORECASE,
)
_HEIGHT = re.compile(
    rf"(?:高度?|height)\s*(?:为|到|是|改为|设为|=|:|：|to|of)?\s*({_NUM})"
    r"(?:\s*(?:px|像素|pixels?))?",
    re.IGNORECASE,
)
_PERCENT = re.compile(rf"({_NUM})\s*%")
_TIMES = re.compile(r"(\d+(?:\.\d+)?|一|两|二|三|四|五)\s*倍|(\d+(?:\.\d+)?)\s*times", re.I)
_CN_DIGITS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5}

_DEGREES = re.compile(rf"({_NUM})\s*(?:度|°|deg(?:rees?)?\b)", re.IGNORECASE)
_ROTATE_NUM = re.compile(
    rf"(?:旋转|转动|转|rotate|spin|turn)(?:\s*(?:it|by|了|到))?\s*({_NUM})", re.IGNORECASE
)

# --------------------------------------------------------------- op words

_TEXT_ZH = re.compile(
    r"(?:的)?(?:文字|文本|字样|字|标签|标题|名字|名称)(?:内容)?\s*"
    r"(?:改成|改为|换成|变成|设为|设置为|写成|修改为|改写为|替换为|改)"
    r"\s*[:：]?\s*(?P<text>.+)$"
)
_RENAME_ZH = re.compile(r"(?:改名为|改名成|重命名为|命名为)\s*[:：]?\s*(?P<text>.+)$")
_TEXT_EN = [
    re.compile(
        r"(?:change|set|update|make)\s+(?:the\s+)?(?:text|label|title|caption)\s+"
        r"(?:of|on)\s+(?P<target>.+?)\s+(?:to|into|as)\s+(?P<text>.+)$",
        re.I,
    ),
    re.compile(
        r"(?:change|set|update|make)\s+(?P<target>.+?)(?:'s|’s)?\s+(?:text|label|title|"
        r"caption)\s+(?:to|into|as)\s+(?P<text>.+)$",
        re.I,
    ),
    re.compile(r"(?:rename|relabel)\s+(?P<target>.+?)\s+(?:to|as)\s+(?P<text>.+)$", re.I),
    re.compile(r"(?:change|set)\s+(?:the\s+)?(?:text|label)\s+(?:to|into)\s+(?P<text>.+)$", re.I),
]


def _words(zh: str, en: str) -> re.Pattern[str]:
    # English words only as whole words: "to" must not eat the "to" of "button".
    return re.compile(
        rf"{zh}|(?<![a-z])(?:{en})(?![a-z])"
        if zh
        else rf"(?<![a-z])(?:{en})"
        r"(?![a-z])",
        re.IGNORECASE,
    )


OP_WORDS: dict[str, re.Pattern[str]] = {
    "rotate": _words(
        r"旋转|转动|转回来?|转正|转|逆时针|顺时针|复原|还原|恢复|再|又",
        r"rotate|spin|turn|(?:counter|anti)[\s-]?clockwise|clockwise|upright"
        r"|straight|back|reset|by|another|more|further",
    ),
    "resize": _words(
        r"放大|缩小|变大|变小|大小|尺寸|调整为|调整到|调整|调成|调到|设为|改为|改成"
        r"|宽度?|高度?|像素|倍",
        r"resize|size|bigger|smaller|larger|enlarge|shrink|grow|width|height"
        r"|pixels?|px|make|set|change|to|by|and|times",
    ),
    "move": _words(
        r"移动到|移到|移至|挪到|放到|放在|拖到|搬到|移动|挪|移|去|到|坐标|位置|边|角",
        r"move|put|place|drag|position|to|at|into|corner|side",
    ),
    "change_color": _words(
        r"背景颜色|背景色|颜色|背景|变成|改成|换成|设为|设置为|染成|涂成"
        r"|变|改|换",
        r"colou?r|background|make|turn|paint|set|change|to|into",
    ),
    "hide": _words(
        r"隐藏起来|隐藏|藏起来|藏起|隐去|不要显示|不显示|关掉|收起", r"hide|conceal|invisible"
    ),
    "show": _words(
        r"重新显示|恢复显示|取消隐藏|显示出来|显示|显现|展示|露出|打开",
        r"show|unhide|reveal|display|visible|again",
    ),
    "change_text": re.compile(r"(?!x)x"),  # nothing: the new text is cut out already
    "undo": re.compile(r"(?!x)x"),
    "reset": re.compile(r"(?!x)x"),  # the restore words are cut out already
}
_HIDE = re.compile(r"隐藏|藏起|隐去|不要显示|不显示|\bhide\b|\bconceal\b|\binvisible\b", re.I)
_SHOW = re.compile(
    r"显示|显现|展示|露出来|取消隐藏|\bshow\b|\bunhide\b|\breveal\b|\bdisplay\b", re.I
)
_MOVE = re.compile(
    r"移动|移到|移至|挪|放到|放在|拖到|搬到|\bmove\b|\bput\b|\bplace\b|\bdrag\b", re.I
)
_RESIZE = re.compile(
    r"放大|缩小|变大|变小|大小|尺寸|\bresize\b|\bbigger\b|\bsmaller\b|\blarger\b"
    r"|\benlarge\b|\bshrink\b|\bgrow\b|\bsize\b",
    re.I,
)
_ROTATE = re.compile(r"旋转|转动|转回|转正|\brotate\b|\bspin\b|(?:转|turn)\s*-?\d", re.I)
_ROTATE_RESET = re.compile(
    r"转回来?|转正|复原|还原|恢复|\bupright\b|\bstraight\b|"
    r"rotate\s+(?:it\s+)?back|reset",
    re.I,
)
_ROTATE_CCW = re.compile(r"逆时针|向左转|(?:counter|anti)[\s-]?clockwise", re.I)
_ROTATE_MORE = re.compile(r"再|又|另外|\banother\b|\bmore\b|\bfurther\b|\bby\b", re.I)
_COLOR_VERB = re.compile(
    r"颜色|变|改|换|染|涂|设|\bcolou?r\b|\bmake\b|\bturn\b|\bpaint\b|\bset\b"
    r"|\bchange\b|background",
    re.I,
)
_SMALLER = re.compile(r"缩小|变小|\bsmaller\b|\bshrink\b", re.I)

FILLER_ZH = (
    "帮我",
    "帮忙",
    "麻烦",
    "请你",
    "一下",
    "这个",
    "那个",
    "这些",
    "元素",
    "屏幕",
    "桌面上的",
    "桌面",
    "位置",
    "地方",
    "它的",
    "它",
    "他",
    "她",
    "把",
    "将",
    "让",
    "给",
    "请",
    "的",
    "了",
    "吧",
    "呢",
    "啊",
    "到",
    "成",
    "为",
    "上",
    "里",
    "中",
    "在",
    "再",
    "又",
    "也",
    "个",
    "度",
    "那",
    "这",
)
FILLER_EN = frozenset(
    """
a an the to it its it's this that please of element on onto screen desktop corner side by
degrees degree deg make turn set change color colour into at so and position me can you
could would kindly now again also with in up my our thing one
""".split()
)
PRONOUNS = frozenset({"它", "它的", "这个", "那个", "it", "this", "that", "this one", "that one"})


# "撤销" / "undo": take back the last change; the whole sentence is the command.
_UNDO = re.compile(
    r"^(?:请|帮我|麻烦)?\s*(?:撤销|撤消|撤回)(?:一下)?\s*(?:上一步|上一个|上一次|刚才|最后一步|最后一次)?"
    r"(?:的)?(?:操作|修改|更改|改动|变化)?(?:吧)?$"
    r"|^(?:please\s+)?undo(?:\s+(?:that|it|this|(?:the\s+)?last(?:\s+(?:change|one|step))?))?"
    r"(?:\s+please)?$",
    re.IGNORECASE,
)
# "恢复默认" / "reset" / "把时钟放回原来的位置": take back every change (of one element, when
# one is named). Not "恢复显示" (show) nor a rotation back ("转回来", handled as rotate 0).
_RESTORE = re.compile(
    r"恢复(?:成|到|为)?(?:默认|原样|原状|原来的?(?:样子|位置|外观)?|出厂设置|初始状态?)"
    r"(?:设置|样子|外观|状态)?|放回(?:到)?(?:原来的?(?:位置|地方)|原位|原处|去)|"
    r"(?:回|移回|挪回|放回)(?:到)?原来的?(?:位置|地方)|回到原位|恢复|还原|复原|重置|"
    r"(?<![a-z])(?:reset|restore|revert)(?![a-z])(?:\s+(?:to\s+)?(?:the\s+)?defaults?)?"
    r"|(?<![a-z])(?:put|move|set)\s+(?P<target>.+?)\s+back(?:\s+(?:where\s+it\s+was|"
    r"to\s+(?:its|the)\s+(?:original\s+)?(?:place|position|default)s?|to\s+normal))?"
    r"|(?:back\s+)?to\s+(?:its\s+|the\s+)?(?:defaults?|normal|original(?:\s+look)?)",
    re.IGNORECASE,
)
_NOT_RESTORE = re.compile(
    r"恢复显示|转|旋转|\brotat|\bspin\b|\bshow\b|\bunhide\b|显示出来", re.IGNORECASE
)
_RESTORE_COLOR = re.compile(r"颜色|背景|\bcolou?rs?\b|\bbackground\b", re.IGNORECASE)
_EVERYTHING = re.compile(
    r"全部|所有的?(?:修改|改动|设置|东西)?|一切|整个|界面|默认|"
    r"(?<![a-z])(?:everything|all(?:\s+changes)?|the\s+ui|ui|layout|defaults?|normal|go|back)"
    r"(?![a-z])",
    re.IGNORECASE,
)


@dataclass
class Command:
    """One understood command. ``target`` is the text that names the element ("" = none)."""

    op: str
    target: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    """move: {"where"} or {"x","y"}; resize: {"width"?, "height"?} or {"scale"};
    change_color: {"color", "said"}; change_text: {"text"}; rotate: {"degrees", "relative"}."""
    raw_target: str = ""
    """``target`` before the operation's own words were removed: a label such as
    "移除" contains "移", so names are looked up in both."""


class ParseError(ValueError):
    """The command was understood as far as an op, but something it needs is missing/bad."""

    def __init__(self, zh: str, en: str):
        super().__init__(zh)
        self.zh, self.en = zh, en

    def text(self, lang: str) -> str:
        return self.en if lang == "en" else self.zh


# --------------------------------------------------------------- splitting

_SPLIT = re.compile(
    r"\s*(?:[;；。!！?？]+|(?:然后|接着|随后|之后)再?|[,，](?!\s*(?:y\s*[=:：]?\s*)?-?\d)\s*"
    r"(?:(?:然后|接着)再?|再)?|(?<=\S)再(?=把|将|让|隐藏|显示|旋转|移|放大|缩小|改|变|调)"
    r"|\s+and\s+then\s+|\s+then\s+|,?\s+and\s+(?=(?:hide|show|move|rotate|resize|make|turn|"
    r"change|set|paint|rename)\b))\s*",
    re.IGNORECASE,
)


def split_commands(text: str) -> list[str]:
    """ "把时钟变成红色然后旋转 45 度" → two commands, in order."""
    return [p.strip() for p in _SPLIT.split(text or "") if p and p.strip()]


# ----------------------------------------------------------------- parsing


def normalize(text: str) -> str:
    """Full-width digits and punctuation to ASCII (NFKC), whitespace collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text or "")).strip()


def _cut(text: str, span: tuple[int, int]) -> str:
    # A space keeps the words on either side from joining into a new word.
    return text[: span[0]] + " " + text[span[1] :]


def _clean_payload(raw: str) -> str:
    text = raw.strip().strip("\"'“”‘’「」『』《》<>").strip()
    return re.sub(r"[。.!！]+$", "", text).strip() or raw.strip()


def parse(raw: str) -> Command | None:
    """The command in ``raw``, or None when no operation is recognised.

    Raises ParseError when the operation is clear but an argument is
    missing or wrong ("移到" without a place, text over 200 characters).
    """
    original = (raw or "").strip()
    if not original:
        return None
    cmd = _parse_text_change(original)
    if cmd is not None:
        return cmd
    text = normalize(original)
    cmd = _parse_restore(text)
    if cmd is not None:
        return cmd
    for parser in (
        _parse_rotate,
        _parse_move,
        _parse_resize,
        _parse_color,
        _parse_hide,
        _parse_show,
    ):
        cmd = parser(text)
        if cmd is not None:
            return _finish(cmd)
    return None


def _parse_restore(text: str) -> Command | None:
    """undo; reset (target "" = every change); "恢复时钟的颜色" = its own colour again."""
    bare = re.sub(r"[。.!！?？~～]+$", "", text).strip()
    if _UNDO.match(bare):
        return Command("undo")
    m = _RESTORE.search(bare)
    if not m or _NOT_RESTORE.search(bare):
        return None
    target = m.group("target") or _cut(bare, m.span())
    if _RESTORE_COLOR.search(target):
        rest = _RESTORE_COLOR.sub(" ", target)
        return _finish(Command("change_color", rest, {"color": "revert-layer", "said": ""}))
    rest = clean_target(_EVERYTHING.sub(" ", target))
    return Command("reset", rest, {}, raw_target=clean_target(target))


def _finish(cmd: Command) -> Command:
    cmd.raw_target = clean_target(cmd.target)
    cmd.target = clean_target(OP_WORDS[cmd.op].sub(" ", cmd.target))
    return cmd


def _parse_text_change(text: str) -> Command | None:
    m = _TEXT_ZH.search(text) or _RENAME_ZH.search(text)
    target = ""
    if m:
        target = text[: m.start()]
    else:
        for pat in _TEXT_EN:
            m = pat.search(text)
            if m:
                target = m.groupdict().get("target") or text[: m.start()]
                break
    if not m:
        return None
    payload = _clean_payload(m.group("text"))
    # "把时钟的字变成红色" is about colour, not about writing the word 红色.
    if COLOR_RE.fullmatch(payload) and re.search(r"变成|换成|\bmake\b|\bturn\b", m.group(0), re.I):
        return None
    if len(payload) > TEXT_MAX:
        raise ParseError(
            f"新文字有 {len(payload)} 个字，最多 {TEXT_MAX} 个字",
            f"the new text has {len(payload)} characters; the limit is {TEXT_MAX}",
        )
    return _finish(Command("change_text", normalize(target), {"text": payload}))


def _parse_rotate(text: str) -> Command | None:
    reset = (
        _ROTATE_RESET.search(text)
        if re.search(r"转|rotat|spin|upright|straight", text, re.I)
        else None
    )
    if not _ROTATE.search(text) and not reset and not _DEGREES.search(text):
        return None
    rest = text
    m = _DEGREES.search(rest) or _ROTATE_NUM.search(rest)
    spec: dict[str, Any]
    if m:
        degrees = float(m.group(1))
        rest = _cut(rest, m.span(1)) if m.re is _ROTATE_NUM else _cut(rest, m.span())
        relative = bool(_ROTATE_MORE.search(text))
        spec = {"degrees": degrees, "relative": relative}
    elif reset:
        spec = {"degrees": 0.0, "relative": False}
    else:
        spec = {"degrees": 90.0, "relative": True}
    if _ROTATE_CCW.search(text) and spec["degrees"] > 0:
        spec["degrees"] = -spec["degrees"]
    return Command("rotate", rest, spec)


def _find_position(text: str) -> tuple[dict[str, Any], str] | None:
    m = _XY.search(text) or _COORDS.search(text)
    if m:
        return {"x": float(m.group(1)), "y": float(m.group(2))}, _cut(text, m.span())
    for name, pat in POSITION_RE:
        pm = pat.search(text)
        if pm:
            return {"where": name}, _cut(text, pm.span())
    return None


def _parse_move(text: str) -> Command | None:
    if not _MOVE.search(text):
        # "放到左上角" is caught above; a bare position with 到/to still means move.
        if (
            not re.search(r"到|\bto\b", text, re.I)
            or _find_position(text) is None
            or _RESIZE.search(text)
            or COLOR_RE.search(text)
        ):
            return None
    found = _find_position(text)
    if found is None:
        raise ParseError(
            "要移到哪里？请说一个位置，例如“左上角”“屏幕中间”或坐标“(300, 200)”",
            "Move it where? Say a place such as 'top left', 'center' or "
            "coordinates like '300, 200'",
        )
    spec, rest = found
    return Command("move", rest, spec)


def _parse_resize(text: str) -> Command | None:
    size = _SIZE.search(text)
    width, height = _WIDTH.search(text), _HEIGHT.search(text)
    if not (_RESIZE.search(text) or size or width or height):
        return None
    rest = text
    spec: dict[str, Any] = {}
    if size:
        spec = {"width": float(size.group(1)), "height": float(size.group(2))}
        rest = _cut(rest, size.span())
    elif width or height:
        for key, m in (("width", width), ("height", height)):
            if m:
                spec[key] = float(m.group(1))
        for m in sorted((m for m in (width, height) if m), key=lambda m: -m.start()):
            rest = _cut(rest, m.span())
    else:
        pct, times = _PERCENT.search(text), _TIMES.search(text)
        if pct:
            spec = {"scale": float(pct.group(1)) / 100}
            rest = _cut(rest, pct.span())
        elif times:
            raw = times.group(1) or times.group(2)
            factor = float(_CN_DIGITS.get(raw, raw))
            smaller = bool(_SMALLER.search(text))
            spec = {"scale": (1 / factor if factor else 1.0) if smaller else factor}
            rest = _cut(rest, times.span())
        else:
            spec = {"scale": 1 / 1.5 if _SMALLER.search(text) else 1.5}
    for key in ("width", "height", "scale"):
        if key in spec and spec[key] <= 0:
            raise ParseError(
                f"大小必须是正数（{key} = {spec[key]:g}）",
                f"sizes must be positive ({key} = {spec[key]:g})",
            )
    return Command("resize", rest, spec)


def _parse_color(text: str) -> Command | None:
    m = COLOR_RE.search(text)
    if not m:
        if re.search(r"颜色|\bcolou?r\b", text, re.I):
            raise ParseError(
                "要变成什么颜色？例如“红色”“蓝色”或“#ff8800”",
                "Which colour? For example 'red', 'blue' or '#ff8800'",
            )
        return None
    if not _COLOR_VERB.search(_cut(text, m.span())):
        return None
    said = m.group(0)
    rest = _cut(text, m.span())
    return Command("change_color", rest, {"color": color_of(said), "said": said})


def _parse_hide(text: str) -> Command | None:
    if not _HIDE.search(text):
        return None
    return Command("hide", text, {})


def _parse_show(text: str) -> Command | None:
    if not _SHOW.search(text):
        return None
    return Command("show", text, {})


# --------------------------------------------------------------- the target


def clean_target(text: str) -> str:
    """The words left to name the element: punctuation, numbers and stray op words gone."""
    text = re.sub(r"[()（）\[\]【】,，.。:：;；!！?？\"'“”‘’]", " ", text or "")
    text = re.sub(r"(?<![A-Za-z_])-?\d+(?:\.\d+)?(?![A-Za-z_])", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def residual(target: str) -> str:
    """What is left of ``target`` once filler words are gone ("" = nothing named)."""
    text = target.lower()
    for word in FILLER_ZH:
        text = text.replace(word, " ")
    words = [w for w in re.split(r"[\s_\-]+", text) if w and w not in FILLER_EN]
    return " ".join(words).strip()


def is_pronoun(target: str) -> bool:
    t = re.sub(r"\s+", " ", target.lower()).strip()
    return t in PRONOUNS or t.removeprefix("the ") in PRONOUNS


# ------------------------------------------------------------ checking ops


def check_op(raw: Any) -> dict[str, Any]:
    """A UI operation as the system accepts it (the SDK's ``parse_ui_op``), or ValueError.

    Used on operations that come back from the desktop in a button's params
    (undo, quick actions) or from a language model, before they are sent.
    """
    try:  # attribute access: the SDK loads the models only now, not at the app's start
        return aios_sdk.parse_ui_op(raw)
    except aios_sdk.ProtocolError as e:
        raise ValueError(str(e)) from None
