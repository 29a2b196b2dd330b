"""The SDK's slot helpers, on their own: each finds its slot in both languages, and
says ``None`` when the text holds none — never a stray word such as the ``a`` of
"create a file"."""

from __future__ import annotations

from datetime import time, timedelta

import pytest

from aios_sdk import (
    find_content,
    find_duration,
    find_file_name,
    find_folder,
    find_name,
    find_number,
    find_quoted,
    find_time,
    strip_filler,
)
from aios_sdk.slots import find_quoted_all


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ("please could you list my files?", "list my files"),
        ("Can you please run this, thanks!", "run this"),
        ("kindly delete a.txt for me", "delete a.txt"),
        ("请帮我看看工作区吧", "看看工作区"),
        ("麻烦你新建一个文件，谢谢", "新建一个文件"),
        ("帮我 写一个文件", "写一个文件"),
        ("list files", "list files"),
        ("", ""),
        (None, ""),
    ],
)
def test_strip_filler_leaves_the_request(text: str | None, rest: str) -> None:
    assert strip_filler(text) == rest


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("新建「购物清单」", "购物清单"),
        ("open “my notes”", "my notes"),
        ('create "todo list"', "todo list"),
        ("call it 'draft'", "draft"),
        ("播放《七里香》", "七里香"),
        ("what's in Bob's file", None),  # apostrophes are not quotes
        ("no quotes here", None),
        ('empty ""', None),
    ],
)
def test_find_quoted(text: str, quoted: str | None) -> None:
    assert find_quoted(text) == quoted


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("create a new file called todo.txt", "todo.txt"),
        ("make a note named groceries", "groceries"),
        ("a playlist titled 'Road trip'", "Road trip"),
        ("新建一个叫「购物清单」的笔记", "购物清单"),
        ("创建文件叫todo.txt内容是买牛奶", "todo.txt"),
        ("一个名为 report.md 的文件", "report.md"),
        ("新建一个叫购物清单的文件", "购物清单"),
        ("create a file", None),
        ("create a new file called a", None),  # "a" is never a name
        ("新建文件", None),
    ],
)
def test_find_name(text: str, name: str | None) -> None:
    assert find_name(text) == name


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("create a new file called todo.txt", "todo.txt"),
        ("写一个文件 hello.txt 内容是你好", "hello.txt"),
        ("写一个文件笔记.txt", "笔记.txt"),
        ("新建hello.txt", "hello.txt"),
        ("文件.txt", "文件.txt"),
        ("hello.txt 内容是「hi」", "hello.txt"),  # the quoted content is not the name
        ('write "hi there" into a.txt', "a.txt"),
        ("preview docs/plan.md please", "docs/plan.md"),
        ("preview delete-me.txt", "delete-me.txt"),
        ("新建一个叫「购物清单.txt」的文件", "购物清单.txt"),
        ("please create a file 'shopping list.txt'", "shopping list.txt"),  # quoted: spaces kept
        ("创建「购物 清单.txt」内容是牛奶", "购物 清单.txt"),
        ('create "my notes.md" with hi', "my notes.md"),
        ("create a file named notes", "notes"),
        ("create a new file", None),
        ("list the files in your workspace", None),
        ("看看工作区里有哪些文件", None),
        ("print(sum(range(10)))", None),
    ],
)
def test_find_file_name(text: str, name: str | None) -> None:
    assert find_file_name(text) == name


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("写一个文件 hello.txt 内容是你好", "你好"),
        ("新建 a.txt，内容：明天开会", "明天开会"),
        ("a.txt 里面写上 buy milk", "buy milk"),
        ("make notes.md with the content buy milk", "buy milk"),
        ("create a.txt containing hello world", "hello world"),
        ('create a.txt with "buy milk"', "buy milk"),
        ("a file that says hi", "hi"),
        ("hello.txt 内容是「你好，世界」", "你好，世界"),
        ("create a new file called todo.txt", None),
        ("内容是", None),
        ("看看内容", None),
    ],
)
def test_find_content(text: str, content: str | None) -> None:
    assert find_content(text) == content


@pytest.mark.parametrize(
    ("text", "folder"),
    [
        ("list the files in your workspace", ""),
        ("看看工作区里有哪些文件", ""),
        ("what is in the docs folder", "docs"),
        ("open folder docs", "docs"),
        ("list the files in the folder named reports", "reports"),
        ("打开 docs 文件夹", "docs"),
        ("打开文档文件夹", "文档"),
        ("在 docs 里新建 a.txt", "docs"),
        ("create a.txt in the notes/2024 folder", "notes/2024"),
        ("新建文件夹 照片", "照片"),  # the verb before 文件夹 is not the folder's name
        ("新建一个照片文件夹", "照片"),
        ("列出 docs 文件夹", "docs"),
        ("列一下文件夹里的东西", None),
        ("create a new file called todo.txt", None),
        ("list my files", None),
    ],
)
def test_find_folder(text: str, folder: str | None) -> None:
    assert find_folder(text) == folder


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("play the 3rd song", 3),
        ("set volume to -2.5", -2.5),
        ("第十二首", 12),
        ("两百零五", 205),
        ("二〇二四年", 2024),
        ("来一首歌", 1),
        ("文件.txt", None),
        ("等一下", None),  # 一下 is "a moment", not one
        ("no number", None),
        ("v1.2 release", None),
        ("音量调到50", 50),
        ("第3首", 3),
        ("mp3 player", None),
    ],
)
def test_find_number(text: str, number: float | None) -> None:
    assert find_number(text) == number


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("meet at 15:30", time(15, 30)),
        ("remind me at 3pm", time(15, 0)),
        ("at 7 tomorrow", time(7, 0)),
        ("11:15 pm", time(23, 15)),
        ("下午3点半", time(15, 30)),
        ("八点一刻", time(8, 15)),
        ("晚上十点", time(22, 0)),
        ("凌晨12点", time(0, 0)),
        ("早上7点20分", time(7, 20)),
        ("at 25", None),
        ("in 10 minutes", None),
        ("没有时间", None),
    ],
)
def test_find_time(text: str, when: time | None) -> None:
    assert find_time(text) == when


@pytest.mark.parametrize(
    ("text", "length"),
    [
        ("in 10 minutes", timedelta(minutes=10)),
        ("timer 90s", timedelta(seconds=90)),
        ("an hour", timedelta(hours=1)),
        ("half an hour", timedelta(minutes=30)),
        ("半小时", timedelta(minutes=30)),
        ("两个小时", timedelta(hours=2)),
        ("5分钟后", timedelta(minutes=5)),
        ("at 3pm", None),
        ("no time", None),
    ],
)
def test_find_duration(text: str, length: timedelta | None) -> None:
    assert find_duration(text) == length


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('rename "a b.txt" to "c d.txt"', ["a b.txt", "c d.txt"]),
        ("把「旧 名.txt」改成「新 名.txt」", ["旧 名.txt", "新 名.txt"]),
        ("rename 'x.txt' to `y.txt`", ["x.txt", "y.txt"]),
        ("what's in Bob's file", []),
        ('empty "" and none', []),
    ],
)
def test_find_quoted_all(text: str, found: list[str]) -> None:
    assert find_quoted_all(text) == found
