"""Which tools the generic app offers the LLM for a request, and in how many words.

Eleven full tool schemas are ~2,000 tokens a small local model reads on every call
(issue 15). A request that names what it is about gets only the tools of those
words (files for file words, http for a URL...) plus ``show_view``; one that names
nothing gets them all. Schemas are shortened: titles dropped, descriptions cut to
their first sentence.
"""

from __future__ import annotations

import re
from typing import Any

SCHEMA_DESCRIPTION_CHARS = 120
"""A description in an offered schema is cut to its first sentence, at most this long."""

TOOL_GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # group: (tools, words of a request that call for them; matched in lower case)
    "files": (
        ("file_read", "file_write", "file_list"),
        (
            "文件", "目录", "文件夹", "保存", "存到", "写到", "记到", "记下", "读取", "打开",
            "列出", "笔记", "待办", "file", "folder", "directory", "save", "write", "read",
            "list", "note", "todo", ".txt", ".md", ".csv", ".json", "workspace", "/files/",
        ),
    ),
    "http": (
        ("http_request",),
        ("http://", "https://", "www.", "网址", "网页", "链接", "下载", "url", "website",
         "download", "api"),
    ),
    "shell": (
        ("shell_exec",),
        ("命令", "终端", "执行", "运行", "脚本", "command", "shell", "terminal", "run ",
         "script", "python"),
    ),
    "process": (
        ("process_start",),
        ("进程", "后台", "启动程序", "process", "background"),
    ),
    "db": (
        ("db_query",),
        ("数据库", "表格", "sql", "sqlite", "database", "table", "query"),
    ),
    "cache": (
        ("cache_get", "cache_set"),
        ("缓存", "记住", "记得", "计数", "cache", "remember", "count"),
    ),
    "notify": (
        ("notify",),
        ("提醒", "通知", "notify", "notification", "remind", "alert"),
    ),
}  # fmt: skip

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|(?<=[。！？])")


def relevant_tools(text: str) -> set[str] | None:
    """The atomic tools ``text`` calls for, or None when it names none (offer them all)."""
    low = (text or "").lower()
    chosen: set[str] = set()
    for names, words in TOOL_GROUPS.values():
        if any(w in low for w in words):
            chosen.update(names)
    return chosen or None


def short_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """The function schema without titles, its descriptions cut to their first sentence,
    ``anyOf [X, null]`` (an optional value) as X."""
    short: dict[str, Any] = _shorten(spec)
    return short


def _shorten(value: Any, *, in_properties: bool = False) -> Any:
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    options = value.get("anyOf")
    if not in_properties and isinstance(options, list) and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        if len(rest) == 1 and isinstance(rest[0], dict):
            value = {**{k: v for k, v in value.items() if k != "anyOf"}, **rest[0]}
            if value.get("default", 0) is None:
                del value["default"]
    for key, item in value.items():
        if not in_properties and key == "title" and isinstance(item, str):
            continue
        if not in_properties and key == "description" and isinstance(item, str):
            item = _first_sentence(item)
        out[key] = _shorten(item, in_properties=(key == "properties" and not in_properties))
    return out


def _first_sentence(text: str) -> str:
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    if len(first) > SCHEMA_DESCRIPTION_CHARS:
        first = first[: SCHEMA_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return first
