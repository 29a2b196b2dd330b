"""What the bundled Files and Code apps take from a plain request, offline (issue 22):
the phrasings people type first, with and without the app's name, polite or terse,
quoted or not. The integration tests check the outcomes through the real system."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.conftest import ROOT


def load(app: str, module: str) -> ModuleType:
    folder = ROOT / "apps" / app
    spec = importlib.util.spec_from_file_location(f"_parse_{app}_{module}", folder / module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded  # dataclasses look their module up there
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(loaded)
    finally:
        sys.path.remove(str(folder))
    return loaded


files_lib = load("files", "files_lib.py")
code_main = load("code", "main.py")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("create a new file called todo.txt", ("create", ["todo.txt", ""])),
        ("写一个文件 hello.txt 内容是你好", ("create", ["hello.txt", "你好"])),
        ("文件管理 新建 hello.txt 你好世界", ("create", ["hello.txt", "你好世界"])),
        ("new file todo.txt", ("create", ["todo.txt", ""])),
        ("I want to create a file called notes.txt", ("create", ["notes.txt", ""])),
        ("create a new text file called shopping list.txt", ("create", ["shopping list.txt", ""])),
        ("帮我新建一个叫「清单.txt」的文件，内容是牛奶", ("create", ["清单.txt", "牛奶"])),
        ("新建一个名为 notes.md 的文件", ("create", ["notes.md", ""])),
        ("创建 todo.txt 并写入 买菜", ("create", ["todo.txt", "买菜"])),
        ('write "hi there" into a.txt', ("create", ["a.txt", "hi there"])),
        ("在 docs 里新建 a.txt 内容是x", ("create", ["a.txt", "x", "docs"])),
        ("create a new file", ("new", [])),
        ("新建文件", ("new", [])),
        ("看看工作区里有哪些文件", ("list", [""])),
        ("list the files in your workspace", ("list", [""])),
        ("what files do I have?", ("list", [""])),
        ("列出我的文件", ("home", [])),
        ("show me my files", ("home", [])),
        ("打开 docs 文件夹", ("list", ["docs"])),
        ("what files are in docs?", ("list", ["docs"])),
        ("go to docs", ("list", ["docs"])),
        ("could you show me what is in todo.txt?", ("preview", ["todo.txt"])),
        ("hello.txt 里写了什么", ("preview", ["hello.txt"])),
        ("请帮我读一下 hello.txt", ("preview", ["hello.txt"])),
        ("preview delete-me.txt", ("preview", ["delete-me.txt"])),
        ("please delete the file called todo.txt", ("delete", ["todo.txt"])),
        ("把 a.txt 删掉", ("delete", ["a.txt"])),
        ("删除 docs 文件夹", ("delete", ["docs"])),
        ("rename todo.txt to done.txt", ("rename", ["todo.txt", "done.txt"])),
        ("change the name of a.txt to b.txt", ("rename", ["a.txt", "b.txt"])),
        ("把a.txt重命名成b.txt", ("rename", ["a.txt", "b.txt"])),
        ("文件管理 编辑 todo.md", ("edit", ["todo.md"])),
    ],
)
def test_files_reads_plain_requests(text: str, parsed: tuple[str, list[str]]) -> None:
    assert files_lib.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("运行 Python 代码 print(1+2)", ("run", "print(1+2)")),
        ("run this python snippet: print(sum(range(10)))", ("run", "print(sum(range(10)))")),
        ("请帮我执行这段代码：print(2*3)", ("run", "print(2*3)")),
        ("代码 执行 print(1+1)", ("run", "print(1+1)")),
        ("print(1+1)", ("run", "print(1+1)")),
        ("run ```python\nprint(5)\n```", ("run", "print(5)")),
        ("run a = 1; print(a)", ("run", "a = 1; print(a)")),
        ("写一段 Python 代码 print(1)", ("show", "print(1)")),
        ("write python code: print(1)", ("show", "print(1)")),
        ("运行 算一下1到100的和", ("run", "print(sum(range(1, 101)))")),  # offline now
        ("运行 分析一下这份数据", ("words", "运行 分析一下这份数据")),
        ("写一个程序计算1到100的和", ("write", "写一个程序计算1到100的和")),
        ("写一个程序计算1到100的和并运行", ("words", "写一个程序计算1到100的和并运行")),
        ("打开代码", ("home", "")),
        ("运行代码", ("home", "")),
    ],
)
def test_code_reads_run_and_write(text: str, parsed: tuple[str, str]) -> None:
    assert code_main.parse_instruction(text) == parsed
