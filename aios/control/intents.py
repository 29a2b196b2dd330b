"""System intents (DESIGN §9): what people type first, answered by the desktop itself.

Windows search, GNOME Activities and Spotlight answer "what can you do?",
"open settings" or "what time is it" themselves; so does the controller,
before any planning, with or without an LLM. The recogniser is a table of
whole utterances (help, the time and date, small talk, undo / reset of the
desktop) and a few verb patterns (open / close / switch to) whose rest must
name an app (its name in any language, its id, or a keyword that names it) or
a system window; anything else — "打开文件 report.txt", "播放音乐" — is left
to the apps. This module is pure: no I/O, the clock is passed in.

Replies carry (DESIGN §9, docs/protocol.md) ``intent``, an optional
``suggestions`` list (``{label, instruction}``: the desktop shows them as chips
that send ``instruction``) and an optional ``desktop`` list of operations the
page carries out (``open_app`` / ``close_app`` / ``focus_app`` with ``app``,
``open_window`` / ``close_window`` with ``window``, ``search_menu`` with
``query``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from aios.control.topics import resume_words
from aios.names import Locale as Lang, lang_of as lang_of

LANGS: tuple[Lang, ...] = ("zh-CN", "en")
DEFAULT_LANG: Lang = "zh-CN"

HELP_SUGGESTIONS_MAX = 12
"""Apps the help answer suggests (one example each)."""
TALK_SUGGESTIONS_MAX = 3
"""Suggestions under a small-talk reply (help first, then apps)."""
NO_MATCH_SUGGESTIONS_MAX = 3
"""Closest apps offered when nothing understood an instruction."""
ECHO_MAX_CHARS = 40
"""Characters of the user's text quoted back in the no-match answer."""
KEYWORD_NAME_MIN = 2
"""A keyword this short (after normalising) never names an app on its own."""

SYSTEM_AGENT = "system_agent"
"""The app that changes the desktop (DESIGN §9.4); undo / reset go to it."""

IntentKind = Literal[
    "help",
    "open_app",
    "close_app",
    "focus_app",
    "open_window",
    "close_window",
    "time",
    "date",
    "small_talk",
    "ui_reset",
    "resume_topic",
]
AppVerb = Literal["open_app", "close_app", "focus_app"]


# ------------------------------------------------------------------ messages

MESSAGES: dict[str, tuple[str, str]] = {
    "help": (
        "我是 Triton AIOS 桌面。直接说想做什么就行，也可以点一个例子试试：",
        "I'm the Triton AIOS desktop. Just say what you'd like to do, or try one of these:",
    ),
    "help_no_apps": (
        "我是 Triton AIOS 桌面，不过现在没有正在运行的应用。",
        "I'm the Triton AIOS desktop, but no apps are running right now.",
    ),
    "open_app": ("已打开「{name}」", "Opened {name}"),
    "close_app": ("已关闭「{name}」的窗口", "Closed the {name} window"),
    "focus_app": ("已切换到「{name}」", "Switched to {name}"),
    "open_window": ("已打开{window}", "Opened {window}"),
    "close_window": ("已关闭{window}", "Closed {window}"),
    "window_settings": ("设置", "Settings"),
    "window_audit": ("审计日志", "the audit log"),
    "window_memory": ("记忆", "Memory"),
    "time": ("现在是 {time}。", "It's {time}."),
    "date": ("今天是 {date}。", "Today is {date}."),
    "talk_greet": (
        "你好！我是 Triton AIOS 桌面，可以帮你打开应用、记笔记、放音乐……试试：",
        "Hi! I'm the Triton AIOS desktop: I can open apps, take notes, play music and more. Try:",
    ),
    "talk_thanks": ("不客气！还有什么要做的吗？", "You're welcome! Anything else?"),
    "talk_who": (
        "我是 Triton AIOS，一个可以用说话来操作的桌面：说出想做的事，我交给合适的应用去做。",
        "I'm Triton AIOS, a desktop you can talk to: say what you want and I hand it "
        "to the right app.",
    ),
    "talk_how": ("我很好，谢谢！想做点什么？", "I'm fine, thanks! What would you like to do?"),
    "talk_bye": ("再见！", "Goodbye!"),
    "talk_done": (
        "好的，有需要随时叫我。",
        "Alright — just ask whenever you need something.",
    ),
    "reset_unavailable": (
        "「系统控制」应用没有运行，所以没法撤销或恢复桌面的改动。",
        "The System control app is not running, so desktop changes can't be undone or reset.",
    ),
    "no_match": (
        "我还不知道怎么处理「{text}」。可以试试这些应用：{names}；开始菜单里也在搜索它。",
        'I don\'t know how to handle "{text}" yet. These apps might help: {names}. '
        "The start menu is searching for it too.",
    ),
    "no_match_no_apps": (
        "我还不知道怎么处理「{text}」，现在也没有正在运行的应用。开始菜单里在搜索它。",
        'I don\'t know how to handle "{text}" yet, and no apps are running. '
        "The start menu is searching for it.",
    ),
    "suggest_help": ("你能做什么？", "What can you do?"),
    "stopped": ("已停止 {n} 个运行", "Stopped {n} run(s)"),
    "nothing_running": ("没有正在运行的任务", "Nothing is running"),
    "done": ("完成", "Done"),
    "choose_app": ("你是想用{apps}？（{text}）", "Did you mean {apps}? ({text})"),
    "choose_or": (" 还是 ", " or "),
    "resume_topic": ("好，回到「{label}」（{app}）。", "OK — back to “{label}” in {app}."),
    "resume_app": ("好，回到{app}。", "OK — back to {app}."),
    "resume_none": (
        "现在还没有可以回去的话题。",
        "There's nothing from earlier to go back to yet.",
    ),
    "resume_unknown": (
        "嗯……没找到「{text}」。刚才聊过的有：{topics}",
        "Hmm, I can't find “{text}”. Earlier we had: {topics}",
    ),
    "resume_which": ("回到哪个？{topics}", "Back to which one — {topics}?"),
    "resume_chip": ("回到「{label}」", "back to {label}"),
    "owned_words": (
        "「{text}」用到了 {owners} 的词（{words}），而 {newcomer} 是后来安装的。交给哪个应用？",
        "“{text}” uses words of {owners} ({words}), and {newcomer} was installed later. "
        "Which app should get it?",
    ),
}


def say(key: str, lang: str | None, **fields: Any) -> str:
    """The message ``key`` in ``lang`` (zh-CN unless English), filled in."""
    zh, en = MESSAGES[key]
    return (en if lang_of(lang) == "en" else zh).format(**fields)


# ------------------------------------------------------------------ apps


@dataclass(frozen=True)
class AppInfo:
    """What the recogniser knows of a running app: its names, keywords and examples."""

    id: str
    names: Mapping[str, str]
    """The name shown in each locale."""
    aliases: frozenset[str] = frozenset()
    """Every spelling that names the app (normalised): ids, names of every locale."""
    keywords: Sequence[str] = ()
    examples: Mapping[str, Sequence[str]] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)

    def name(self, lang: str | None) -> str:
        lang = lang_of(lang)
        return self.names.get(lang) or self.names.get(DEFAULT_LANG) or self.id

    def example(self, lang: str | None) -> str:
        """A sample instruction in ``lang``: the manifest's first example, else "open <name>"."""
        lang = lang_of(lang)
        own = list(self.examples.get(lang) or ())
        if own:
            return str(own[0])
        return f"open {self.name(lang)}" if lang == "en" else f"打开{self.name(lang)}"


def _texts(value: Any) -> dict[str, str]:
    """A manifest text (a string, or ``{locale: text}``) as ``{locale: text}``."""
    if isinstance(value, str):
        return {DEFAULT_LANG: value} if value.strip() else {}
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items() if isinstance(v, str) and v.strip()}
    return {}


def _examples(value: Any) -> dict[str, list[str]]:
    """Manifest ``examples`` (a list for every locale, or ``{locale: [...]}``)."""
    if isinstance(value, (list, tuple)):
        texts = [v for v in value if isinstance(v, str) and v.strip()]
        return dict.fromkeys(LANGS, texts)
    if isinstance(value, Mapping):
        return {
            str(k): [v for v in vs if isinstance(v, str) and v.strip()]
            for k, vs in value.items()
            if isinstance(vs, (list, tuple))
        }
    return {}


_ID_NOISE = ("app", "agent")
"""Parts of an id that name nothing ("system_agent" is named by "system")."""


def app_info(record: Any) -> AppInfo:
    """An :class:`AppInfo` from a launcher record (``aios.apphost.manifests.AppRecord``).

    Manifests may give ``name`` / ``description`` / ``examples`` per locale
    (DESIGN §3); the record's shown names already tell apps that share a name apart.
    """
    manifest = record.manifest
    given = _texts(getattr(manifest, "names", None)) or _texts(getattr(manifest, "name", ""))
    extra = getattr(manifest, "model_extra", None) or {}
    if isinstance(extra.get("name_en"), str):
        given.setdefault("en", extra["name_en"])
    name_in = getattr(record, "name_in", None)
    shown: dict[str, str]
    if callable(name_in):  # the launcher's shown names tell apps sharing a name apart
        shown = {lang: str(name_in(lang)) for lang in LANGS}
    else:
        default = str(record.shown_name)
        shown = {lang: given.get(lang) or default for lang in LANGS}
    aliases = {_key(record.id), _key(record.id.replace("_", " "))}
    aliases.update(_key(p) for p in record.id.split("_") if len(p) > 2 and p not in _ID_NOISE)
    aliases.update(_key(n) for n in (*given.values(), *shown.values()))
    descriptions = _texts(getattr(manifest, "descriptions", None)) or _texts(
        getattr(manifest, "description", "")
    )
    return AppInfo(
        id=record.id,
        names=shown,
        aliases=frozenset(a for a in aliases if a),
        keywords=tuple(getattr(manifest, "keywords", None) or ()),
        examples=_examples(getattr(manifest, "examples", None)),
        descriptions=descriptions,
    )


# ------------------------------------------------------------------ recognising

_PUNCT = ' \t\r\n,.!?;:~，。！？；：、…～"“”‘’()（）[]【】<>《》'
_LEADS = (
    "请问",
    "请你",
    "请",
    "麻烦你",
    "麻烦",
    "你帮我",
    "帮我",
    "给我",
    "please ",
    "hey ",
    "ok ",
    "okay ",
    "can you please ",
    "can you ",
    "could you ",
    "would you ",
)
_TAILS = ("吧", "呢", "啊", "呀", "嘛", "哦", "一下", " please", " for me")


def normalise(text: str) -> str:
    """Lower case, no punctuation or apostrophes, single spaces, polite words dropped."""
    s = (text or "").casefold().replace("'", "").replace("\u2019", "")
    s = re.sub(r"\s+", " ", s.strip(_PUNCT))
    changed = True
    while changed and s:
        changed = False
        for lead in _LEADS:
            if s.startswith(lead) and len(s) > len(lead):
                s, changed = s[len(lead) :].strip(_PUNCT), True
        for tail in _TAILS:
            if s.endswith(tail) and len(s) > len(tail) + 1:
                s, changed = s[: -len(tail)].strip(_PUNCT), True
    return s


def _phrases(*groups: tuple[str, Sequence[str]]) -> dict[str, str]:
    return {normalise(p): topic for topic, ps in groups for p in ps}


HELP_PHRASES = _phrases(
    (
        "help",
        (
            "你能做什么",
            "你可以做什么",
            "你会做什么",
            "你会什么",
            "你能干什么",
            "你能干嘛",
            "你都能做什么",
            "你有什么功能",
            "能做什么",
            "怎么用",
            "帮助",
            "help",
            "what can you do",
            "what can you do for me",
            "what can i do",
            "what can i say",
            "what do you do",
            "how does this work",
            "how do i use this",
        ),
    )
)
TIME_PHRASES = _phrases(
    (
        "time",
        (
            "现在几点",
            "现在几点了",
            "几点了",
            "几点",
            "现在是几点",
            "现在时间",
            "现在什么时间",
            "时间",
            "what time is it",
            "what time is it now",
            "whats the time",
            "what is the time",
            "tell me the time",
            "time",
            "the time",
        ),
    )
)
DATE_PHRASES = _phrases(
    (
        "date",
        (
            "今天几号",
            "今天是几号",
            "今天几月几号",
            "今天星期几",
            "今天是星期几",
            "今天周几",
            "今天是什么日子",
            "今天日期",
            "今天的日期",
            "日期",
            "whats the date",
            "what is the date",
            "whats the date today",
            "what is the date today",
            "whats todays date",
            "what is todays date",
            "todays date",
            "what day is it",
            "what day is it today",
            "what day is today",
            "date",
        ),
    )
)
TALK_PHRASES = _phrases(
    ("greet", ("你好", "您好", "你好呀", "嗨", "哈喽", "哈啰", "早上好", "下午好", "晚上好", "早")),
    ("greet", ("hi", "hello", "hey", "hi there", "hello there", "good morning")),
    ("greet", ("good afternoon", "good evening", "howdy", "yo")),
    ("thanks", ("谢谢", "谢谢你", "多谢", "感谢", "thanks", "thank you", "thanks a lot", "thx")),
    ("thanks", ("谢谢你的帮助", "谢谢帮忙", "辛苦了", "太感谢了", "thank you very much", "ty")),
    ("thanks", ("thanks for the help", "thanks for your help", "thank you for your help")),
    ("thanks", ("cheers", "many thanks", "much appreciated", "appreciate it", "谢啦", "谢了")),
    ("who", ("你是谁", "你叫什么", "你叫什么名字", "你是什么", "who are you", "what are you")),
    ("who", ("whats your name", "what is your name")),
    ("how", ("你好吗", "最近怎么样", "how are you", "how are you doing", "hows it going")),
    ("bye", ("再见", "拜拜", "bye", "goodbye", "bye bye", "see you")),
    ("bye", ("see you later", "see ya", "good night", "晚安", "回头见", "下次见")),
    ("bye", ("take care", "later", "catch you later", "talk to you later", "ttyl", "cya")),
    ("bye", ("bye for now", "see you tomorrow", "回见", "明天见", "我走了", "我先走了", "拜")),
    ("done", ("没事了", "没事", "没有了", "没别的了", "不用了", "就这样", "就这些", "先这样")),
    ("done", ("thats all", "thats it", "nothing else", "im done", "all done", "never mind")),
    ("done", ("nevermind", "thats all for now", "thats it for now", "no thanks", "all good")),
)
CLOSING_FILLERS = frozenset(
    normalise(w)
    for w in (
        *("好的", "好", "好吧", "嗯", "嗯嗯", "行", "那", "那就", "了", "啦", "哈", "先"),
        *("ok", "okay", "alright", "great", "cool", "perfect", "fine", "so", "and", "for now"),
        *("now", "then", "that", "is", "all", "very", "much", "so much"),
    )
)
"""Words that go with a thanks or a goodbye ("好的谢谢", "ok thanks, that's all for now") and
make it no less small talk; alone they are not (an "ok" may answer a question)."""
TALK_TOPIC_ORDER = ("bye", "done", "thanks", "how", "who", "greet")
"""Which topic answers a mixed utterance: "thanks, bye" is a goodbye."""
RESET_PHRASES = _phrases(
    (
        "reset",
        (
            "恢复",
            "恢复默认",
            "全部恢复",
            "全部恢复默认",
            "恢复默认设置",
            "恢复原样",
            "全部还原",
            "还原",
            "还原桌面",
            "恢复桌面",
            "桌面恢复默认",
            "重置",
            "重置桌面",
            "reset",
            "reset all",
            "reset everything",
            "reset the desktop",
            "restore",
            "restore defaults",
            "restore the defaults",
            "restore default",
            "restore the desktop",
            "put everything back",
        ),
    ),
    (
        "undo",
        (
            "撤销",
            "撤消",
            "撤回",
            "撤销上一步",
            "撤销刚才的改动",
            "undo",
            "undo that",
            "undo the last change",
        ),
    ),
)
WINDOW_NAMES = _phrases(
    (
        "settings",
        ("设置", "系统设置", "设置窗口", "偏好设置", "settings", "setting", "system settings"),
    ),
    ("settings", ("preferences", "the settings")),
    (
        "audit",
        ("审计日志", "审计", "审计记录", "audit log", "audit", "the audit log", "audit logs"),
    ),
    (
        "memory",
        ("记忆", "我的记忆", "记忆窗口", "memory", "memories", "my memories", "the memory window"),
    ),
)

_TARGET = r"(?:the |my )?(?P<target>.+)"
_VERBS: tuple[tuple[AppVerb, re.Pattern[str]], ...] = (
    ("open_app", re.compile(r"^(?:打开|启动|开启|进入)(?:一下)?" + _TARGET)),
    ("close_app", re.compile(r"^(?:关闭|关掉|关上|退出)(?:一下)?" + _TARGET)),
    ("focus_app", re.compile(r"^(?:切换到|切换至|切到|切回到?|转到|回到|跳到)" + _TARGET)),
    ("open_app", re.compile(r"^(?:open|launch)(?: up)? " + _TARGET)),  # "start music" plays
    ("close_app", re.compile(r"^(?:close|quit|exit)(?: out of)? " + _TARGET)),
    ("focus_app", re.compile(r"^(?:switch|go|change|jump|get)(?: back| over)? to " + _TARGET)),
    ("focus_app", re.compile(r"^bring up " + _TARGET)),
)
_SUFFIXES = ("应用程序", "应用", "程序", "窗口", "application", "window", "app")

NOT_APP_NAMES = frozenset(
    {
        # what an app does
        *("静音", "声音", "音量", "播放", "暂停", "麦克风", "通知", "显示", "隐藏", "移动"),
        *("旋转", "颜色", "mute", "sound", "volume", "play", "pause", "mic", "microphone"),
        *("notifications", "show", "hide", "上一首", "下一首", "上一曲", "下一曲", "上一个"),
        *("下一个", "previous", "next", "previous song", "next song", "last song"),
        # the desktop's own parts (the system control app changes them)
        *("时钟", "日历", "任务栏", "开始按钮", "开始菜单", "按钮", "托盘", "桌面", "界面", "壁纸"),
        *("图标", "文字", "clock", "calendar", "taskbar", "startbutton", "startmenu", "button"),
        *("tray", "desktop", "wallpaper", "icon", "icons"),
    }
)
"""Keywords that are not an app's name: things an app does and parts of the desktop, so
"关闭静音" is not "close music" and "关闭时钟" hides the clock, it does not close the
system control app's window."""


def _key(text: str) -> str:
    """A name as compared: lower case, no spaces, dashes or underscores, no "app" suffix."""
    s = re.sub(r"[\s_\-]+", "", (text or "").casefold())
    for suffix in _SUFFIXES:
        if len(s) > len(suffix) and s.endswith(suffix):
            s = s[: -len(suffix)]
    return s


@dataclass(frozen=True)
class Intent:
    kind: IntentKind
    app: str | None = None
    window: str | None = None
    topic: str | None = None


def find_app(target: str, apps: Sequence[AppInfo]) -> AppInfo | None:
    """The app ``target`` names: a name or id first, else a keyword only one app has."""
    key = _key(target)
    keys = {key, key[:-1] if key.isascii() and key.endswith("s") else key}
    for app in apps:
        if keys & app.aliases:
            return app
    if len(key) < KEYWORD_NAME_MIN or key in NOT_APP_NAMES:
        return None
    owners = [
        app
        for app in apps
        if any(_key(k) in keys for k in app.keywords if _key(k) not in NOT_APP_NAMES)
    ]
    return owners[0] if len(owners) == 1 else None


def recognise(text: str, apps: Sequence[AppInfo]) -> Intent | None:
    """The system intent ``text`` is, as a whole; None leaves it to the apps."""
    said = normalise(text)
    if not said:
        return None
    if said in HELP_PHRASES:
        return Intent("help")
    if said in TIME_PHRASES:
        return Intent("time")
    if said in DATE_PHRASES:
        return Intent("date")
    if said in RESET_PHRASES:
        return Intent("ui_reset", topic=RESET_PHRASES[said])
    if said in WINDOW_NAMES:
        return Intent("open_window", window=WINDOW_NAMES[said])
    back = resume_words(said)
    if back is not None and not (WINDOW_NAMES.get(back) or WINDOW_NAMES.get(_key(back))):
        app = find_app(back, apps) if back else None
        return Intent("resume_topic", app=app.id if app else None, topic=back)
    for verb, pattern in _VERBS:
        m = pattern.match(said)
        if not m:
            continue
        target = m.group("target").strip(_PUNCT)
        window = WINDOW_NAMES.get(target) or WINDOW_NAMES.get(_key(target))
        if window and verb != "focus_app":
            return Intent("open_window" if verb == "open_app" else "close_window", window=window)
        if window:
            return Intent("open_window", window=window)
        app = find_app(target, apps)
        if app is not None:
            return Intent(verb, app=app.id)
    topic = talk_topic(said)
    if topic is not None:
        return Intent("small_talk", topic=topic)
    return None


_TALK_SEP = re.compile(r"[,.!?;:~，。！？；：、…～]+")
_TALK_WORDS = sorted({*TALK_PHRASES, *CLOSING_FILLERS}, key=len, reverse=True)


def _starts_with(rest: str, word: str) -> bool:
    """``rest`` starts with ``word``, a whole word when it is Latin ("hi" is not "high")."""
    if not rest.startswith(word):
        return False
    after = rest[len(word) : len(word) + 1]
    return not (word.isascii() and after.isascii() and after.isalnum())


def _talk_parts(said: str) -> list[str] | None:
    """``said`` (normalised) cut into small-talk phrases and fillers, longest first from the
    start of each piece ("好的谢谢" → 好的, 谢谢); None when anything else is left."""
    parts: list[str] = []
    for piece in _TALK_SEP.split(said):
        rest = piece.strip()
        while rest:
            word = next((w for w in _TALK_WORDS if _starts_with(rest, w)), None)
            if word is None:
                return None
            parts.append(word)
            rest = rest[len(word) :].strip()
    return parts


def talk_topic(said: str) -> str | None:
    """The small-talk topic of a normalised utterance: a phrase of :data:`TALK_PHRASES`
    alone, or several with the fillers that go with them ("thanks, that's all for now",
    "好的谢谢"); None when any word is not small talk."""
    if said in TALK_PHRASES:
        return TALK_PHRASES[said]
    topics = {TALK_PHRASES[p] for p in _talk_parts(said) or [] if p in TALK_PHRASES}
    return next((t for t in TALK_TOPIC_ORDER if t in topics), None)


# ------------------------------------------------------------------ answers


@dataclass
class Answer:
    """What the controller replies for an intent it answers itself."""

    intent: str
    message: str
    suggestions: list[dict[str, str]] = field(default_factory=list)
    desktop: list[dict[str, str]] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"intent": self.intent, "source": "system"}
        if self.suggestions:
            out["suggestions"] = self.suggestions
        if self.desktop:
            out["desktop"] = self.desktop
        return out


def suggestion(app: AppInfo, lang: Lang) -> dict[str, str]:
    """A chip for ``app``: its example, labelled with its name."""
    example = app.example(lang)
    sep = ": " if lang == "en" else "："
    return {"label": f"{app.name(lang)}{sep}{example}", "instruction": example, "app": app.id}


def _help_chip(lang: Lang) -> dict[str, str]:
    text = say("suggest_help", lang)
    return {"label": text, "instruction": text}


_WEEKDAYS_ZH = "一二三四五六日"
_WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS_EN = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _date(now: datetime, lang: Lang) -> str:
    if lang == "en":
        return f"{_WEEKDAYS_EN[now.weekday()]}, {_MONTHS_EN[now.month - 1]} {now.day}, {now.year}"
    return f"{now.year}年{now.month}月{now.day}日，星期{_WEEKDAYS_ZH[now.weekday()]}"


def answer(intent: Intent, apps: Sequence[AppInfo], lang: str | None, now: datetime) -> Answer:
    """The reply to an intent the desktop answers without an app (not ``ui_reset``).

    ``now`` is the local time the time and date answers read.
    """
    lg = lang_of(lang)
    kind = intent.kind
    by_id = {a.id: a for a in apps}
    if kind == "help":
        if not apps:
            return Answer(kind, say("help_no_apps", lg))
        chips = [suggestion(a, lg) for a in apps[:HELP_SUGGESTIONS_MAX]]
        return Answer(kind, say("help", lg), chips)
    if kind == "time":
        return Answer(kind, say("time", lg, time=now.strftime("%H:%M")))
    if kind == "date":
        return Answer(kind, say("date", lg, date=_date(now, lg)))
    if kind == "small_talk":
        chips = [_help_chip(lg), *(suggestion(a, lg) for a in apps)][:TALK_SUGGESTIONS_MAX]
        return Answer(kind, say(f"talk_{intent.topic}", lg), chips)
    if kind in ("open_window", "close_window"):
        window = str(intent.window)
        shown = say(f"window_{window}", lg)
        op = "open_window" if kind == "open_window" else "close_window"
        return Answer(kind, say(kind, lg, window=shown), desktop=[{"op": op, "window": window}])
    if kind in ("open_app", "close_app", "focus_app") and intent.app in by_id:
        app = by_id[str(intent.app)]
        return Answer(kind, say(kind, lg, name=app.name(lg)), desktop=[{"op": kind, "app": app.id}])
    raise ValueError(f"no answer for intent {kind!r}")


def no_match(text: str, closest: Sequence[AppInfo], lang: str | None) -> Answer:
    """Nothing understood ``text``: the closest apps with an example each, and a start-menu
    search for it (never a list of ids)."""
    lg = lang_of(lang)
    quoted = text if len(text) <= ECHO_MAX_CHARS else text[: ECHO_MAX_CHARS - 1] + "…"
    chips = [suggestion(a, lg) for a in closest[:NO_MATCH_SUGGESTIONS_MAX]]
    sep = ", " if lg == "en" else "、"
    names = sep.join(a.name(lg) for a in closest[:NO_MATCH_SUGGESTIONS_MAX])
    message = say("no_match" if chips else "no_match_no_apps", lg, text=quoted, names=names)
    return Answer("no_match", message, chips, [{"op": "search_menu", "query": text}])
