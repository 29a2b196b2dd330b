"""What the desktop says while the user types, in both languages (DESIGN §18).

The desktop's own voice: short, spoken, the way a person next to you would cut in
("诶，等一下——这会删掉 12 个文件"), never a system message ("Warning: destructive
operation detected"). One table, one :func:`say`; the engine picks the key.
"""

from __future__ import annotations

from typing import Any

from aios.names import Locale as Lang, lang_of

TEXTS: dict[str, dict[Lang, str]] = {
    "danger_files": {
        "zh-CN": "诶，等一下——这会删掉 {n} 个文件，删了就找不回来了。先看看吗？",
        "en": "Hang on — that would delete {n} files, for good. Want to look first?",
    },
    "danger_folder": {
        "zh-CN": "诶，等一下——「{name}」里还有 {n} 个文件，会一起删掉。先看看吗？",
        "en": "Hang on — “{name}” still holds {n} files; they'd go too. Look first?",
    },
    "danger_all": {
        "zh-CN": "等一下——这会把{what}全删了，删了就回不来了。确定吗？",
        "en": "Wait — that wipes out {what}, and there's no undo. Sure?",
    },
    "danger_code": {
        "zh-CN": "先别急——这段会删东西（{what}），回车前再看一眼？",
        "en": "Careful — that would delete things ({what}). Look again before Enter?",
    },
    "ambiguity": {
        "zh-CN": "你是说用{a}，还是{b}？",
        "en": "Do you mean {a}, or {b}?",
    },
    "slot_time": {"zh-CN": "几点提醒你？", "en": "Remind you when?"},
    "slot_new_name": {"zh-CN": "改成什么名字？", "en": "Rename it to what?"},
    "slot_file_name": {"zh-CN": "文件叫什么名字？", "en": "What should the file be called?"},
    "slot_level": {"zh-CN": "调到多少？", "en": "To what level?"},
    "slot_query": {"zh-CN": "搜什么呢？", "en": "Search for what?"},
    "slot_target": {"zh-CN": "删哪个？", "en": "Delete which one?"},
    "slot_code": {"zh-CN": "要运行什么代码？", "en": "Run which code?"},
    "slot_note": {"zh-CN": "记点什么？", "en": "Note what?"},
    "memory": {
        "zh-CN": "说到这个——你之前跟我说过：{memory}",
        "en": "Speaking of which — you told me: {memory}",
    },
    "heavy_deletion": {
        "zh-CN": "重新想想怎么说？跟我说个大概，我帮你理一理。",
        "en": "Starting over? Tell me roughly what you want — I can help.",
    },
    "all_files": {"zh-CN": "所有文件", "en": "all your files"},
    "all_notes": {"zh-CN": "所有笔记", "en": "all your notes"},
    "all_things": {"zh-CN": "这些东西", "en": "all of it"},
    "or": {"zh-CN": "还是", "en": "or"},
}


def say(key: str, lang: str | None, **fields: Any) -> str:
    """The text ``key`` in ``lang`` (zh-CN unless it is English), its fields filled in."""
    return TEXTS[key][lang_of(lang)].format(**fields)
