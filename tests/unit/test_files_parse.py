"""What the Files app takes from a plain request, offline (issue 22, second wave): names
with spaces in quotes, content said in many ways, new folders, terse lists, deletes and
renames. The integration tests (tests/integration/apps/test_files.py) check the files
these produce on disk."""

from __future__ import annotations

import pytest

from tests.unit.test_bundled_apps_parse import files_lib


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        # quoted names keep their spaces
        ("please create a file 'shopping list.txt'", ("create", ["shopping list.txt", ""])),
        ("创建文件「购物 清单.txt」", ("create", ["购物 清单.txt", ""])),
        ('new file "my notes.md" containing hi', ("create", ["my notes.md", "hi"])),
        ("新建「购物 清单.txt」内容是牛奶、面包", ("create", ["购物 清单.txt", "牛奶、面包"])),
    ],
)
def test_quoted_names_keep_their_spaces(text: str, parsed: tuple[str, list[str]]) -> None:
    assert files_lib.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (
            "create a file called greeting.txt with the text hello world",
            ("create", ["greeting.txt", "hello world"]),
        ),
        ("make a file called port.txt and put 8080 in it", ("create", ["port.txt", "8080"])),
        ("new file x.txt with hello inside", ("create", ["x.txt", "hello"])),
        ("create todo.txt with buy milk in it", ("create", ["todo.txt", "buy milk"])),
        ('write "buy milk" into a file named errands.txt', ("create", ["errands.txt", "buy milk"])),
        ("put hello world in notes.txt", ("create", ["notes.txt", "hello world"])),
        ("could you put 42 into a new file called answer.txt", ("create", ["answer.txt", "42"])),
        ("创建 memo.txt 写入“明天九点开会”", ("create", ["memo.txt", "明天九点开会"])),
        ("在 a.txt 里写上 你好", ("create", ["a.txt", "你好"])),
        ("把 你好世界 写进 hi.txt", ("create", ["hi.txt", "你好世界"])),
        ("新建 b.txt，内容：明天开会", ("create", ["b.txt", "明天开会"])),
        # the quoted content is kept whole, even its own "in it"
        ('create c.txt with "stay in it"', ("create", ["c.txt", "stay in it"])),
    ],
)
def test_content_said_in_many_ways(text: str, parsed: tuple[str, list[str]]) -> None:
    assert files_lib.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("新建文件夹 照片", ("mkdir", ["照片"])),
        ("建一个叫 工作 的目录", ("mkdir", ["工作"])),
        ("请帮我新建一个照片文件夹", ("mkdir", ["照片"])),
        ("新建一个文件夹叫照片", ("mkdir", ["照片"])),
        ("make a folder called photos", ("mkdir", ["photos"])),
        ("create a directory named 2024", ("mkdir", ["2024"])),
        ("please make a photos folder", ("mkdir", ["photos"])),
        ("files: mkdir photos", ("mkdir", ["photos"])),
        ("create a folder called img in docs", ("mkdir", ["docs/img"])),
        ("在 docs 里新建文件夹 img", ("mkdir", ["docs/img"])),
        ("新建文件夹", ("mkdir", [])),  # no name: the app asks for one
        ("make a new folder", ("mkdir", [])),
        # a file in a folder is still a file
        ("create a.txt in docs", ("create", ["a.txt", "", "docs"])),
        ("create notes.txt in the docs folder", ("create", ["notes.txt", "", "docs"])),
        ("新建 a.txt 到 docs 里", ("create", ["a.txt", "", "docs"])),
        ("在 docs 里新建 a.txt 内容是x", ("create", ["a.txt", "x", "docs"])),
        ("create a.txt with hello in it", ("create", ["a.txt", "hello"])),  # "it" is no folder
    ],
)
def test_new_folders_and_files_in_folders(text: str, parsed: tuple[str, list[str]]) -> None:
    assert files_lib.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("列一下文件夹里的东西", ("list", [""])),
        ("what's in this folder", ("list", [""])),
        ("what's here?", ("list", [""])),
        ("这里有什么", ("list", [""])),
        ("show everything", ("home", [])),
        ("show me everything", ("home", [])),
        ("全部显示", ("home", [])),
        ("列出 docs 文件夹", ("list", ["docs"])),
        ("open the docs folder", ("list", ["docs"])),
        ("show everything in files", ("home", [])),
        ("list docs in the file manager", ("list", ["docs"])),
        ("新建文件夹 照片 在文件管理里", ("mkdir", ["照片"])),
    ],
)
def test_listing_said_tersely(text: str, parsed: tuple[str, list[str]]) -> None:
    assert files_lib.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("delete junk.log", ("delete", ["junk.log"])),
        ("rm junk.log", ("delete", ["junk.log"])),
        ("删除 junk.log", ("delete", ["junk.log"])),
        ("把 junk.log 删了", ("delete", ["junk.log"])),
        ("old.txt 改名 new.txt", ("rename", ["old.txt", "new.txt"])),
        ("mv old.txt new.txt", ("rename", ["old.txt", "new.txt"])),
        ("rename 'old file.txt' to 'new file.txt'", ("rename", ["old file.txt", "new file.txt"])),
        ("把「旧 名.txt」改成「新 名.txt」", ("rename", ["旧 名.txt", "新 名.txt"])),
    ],
)
def test_terse_deletes_and_renames(text: str, parsed: tuple[str, list[str]]) -> None:
    assert files_lib.parse_instruction(text) == parsed
