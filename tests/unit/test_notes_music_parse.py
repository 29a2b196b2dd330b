"""What the bundled Notes and Music apps take from a plain request, offline (issue 22):
the phrasings people type first, in both languages, polite or terse, with and without the
app's name. tests/integration/apps/test_notes.py and test_music.py check the outcomes
(the note's row, the player's state) through the real system."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_bundled_apps_parse import load

notes_lib = load("notes", "notes_lib.py")
music_lib = load("music", "library.py")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        # adding
        ("remember to water the plants", ("add", "water the plants")),
        ("please jot down: renew car insurance", ("add", "renew car insurance")),
        ("note that the meeting moved to 3pm", ("add", "the meeting moved to 3pm")),
        ("could you please add a note saying call mom?", ("add", "call mom")),
        ("add a note: finish the report", ("add", "finish the report")),
        ("make a note to book the flights", ("add", "book the flights")),
        ("remind me to get it done", ("add", "get it done")),
        ("don't let me forget to pay rent", ("add", "pay rent")),
        ("add buy eggs to my notes", ("add", "buy eggs")),
        ("new note: pick up the dry cleaning", ("add", "pick up the dry cleaning")),
        ("add a note buy milk #work", ("add", "buy milk #work")),
        ("add note prepare slides, tag work", ("add", "prepare slides #work")),
        ("notes add prepare the meeting #work", ("add", "prepare the meeting #work")),
        ("记一下明天买牛奶", ("add", "明天买牛奶")),
        ("帮我记住周五交房租", ("add", "周五交房租")),
        ("添加笔记 买菜", ("add", "买菜")),
        ("新建一条笔记：周末去爬山", ("add", "周末去爬山")),
        ("记事本 记下 给妈妈打电话", ("add", "给妈妈打电话")),
        ("提醒我把作业做完", ("add", "把作业做完")),
        ("记一下 写周报 标签 工作", ("add", "写周报 #工作")),
        ("记一下：明天开会，标签是工作", ("add", "明天开会 #工作")),
        ("提醒我买牛奶 #急事 #家", ("add", "买牛奶 #急事 #家")),
        ("请帮我记一下交电费吧", ("add", "交电费")),
        # marking done (or not)
        ("mark the dentist note as done", ("done", "dentist")),
        ("dentist done", ("done", "dentist")),
        ("check off the dentist", ("done", "dentist")),
        ("I finished the report", ("done", "report")),
        ("mark milk as not done", ("undone", "milk")),
        ("把买牛奶那条标记为完成", ("done", "买牛奶")),
        ("买牛奶完成了", ("done", "买牛奶")),
        ("完成 买牛奶", ("done", "买牛奶")),
        ("把周报标记为未完成", ("undone", "周报")),
        # deleting
        ("delete the note about milk", ("delete", "milk")),
        ("remove the milk note", ("delete", "milk")),
        ("please delete the note called dentist", ("delete", "dentist")),
        ("删掉关于牛奶的笔记", ("delete", "牛奶")),
        ("把牛奶那条删了", ("delete", "牛奶")),
        ("删除笔记 牛奶", ("delete", "牛奶")),
        ("delete all notes", ("vague", "delete")),
        ("删除所有笔记", ("vague", "delete")),
        ("mark it as done", ("vague", "done")),
        ("删除", ("unknown", "删除")),
        ("记一下", ("unknown", "记一下")),
        ("todo: buy milk", ("add", "buy milk")),
        ("add to my notes: buy milk", ("add", "buy milk")),
        ("记个事：交房租", ("add", "交房租")),
        ("删牛奶那条", ("delete", "牛奶")),
        # listing and searching
        ("what notes do I have about milk", ("search", "milk")),
        ("show my notes", ("list", "")),
        ("my notes", ("list", "")),
        ("list notes", ("list", "")),
        ("open notes", ("list", "")),
        ("打开记事本", ("list", "")),
        ("我的笔记", ("list", "")),
        ("看看所有笔记", ("list", "")),
        ("find notes about milk", ("search", "milk")),
        ("search my notes for dentist", ("search", "dentist")),
        ("look for milk in my notes", ("search", "milk")),
        ("show notes about milk", ("search", "milk")),
        ("search milk", ("search", "milk")),
        ("搜一下牛奶", ("search", "牛奶")),
        ("搜索 牛奶", ("search", "牛奶")),
        ("有没有关于牛奶的笔记", ("search", "牛奶")),
        ("找找关于周报的笔记", ("search", "周报")),
        # done, said as what was done and then "check it off"
        ("i did the laundry, tick it off", ("done", "laundry")),
        ("finished calling the bank, please mark it done", ("done", "calling the bank")),
        ("洗衣服做完了，把它勾掉", ("done", "洗衣服")),
        ("交电费，标记完成", ("done", "交电费")),
    ],
)
def test_notes_reads_plain_requests(text: str, parsed: tuple[str, str]) -> None:
    assert notes_lib.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "title", "tags"),
    [
        ("写周报 #工作", "写周报", ["work"]),
        ("buy milk #work", "buy milk", ["work"]),
        ("买牛奶 #急事 #家", "买牛奶", ["急事", "家"]),
    ],
)
def test_a_spoken_tag_becomes_the_notes_tag(text: str, title: str, tags: list[str]) -> None:
    assert notes_lib.split_hashtags(text) == (title, tags)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("next song", ("next", None)),
        ("skip this one", ("next", None)),
        ("please skip this song", ("next", None)),
        ("play the next track", ("next", None)),
        ("下一首", ("next", None)),
        ("切歌", ("next", None)),
        ("换一首歌吧", ("next", None)),
        ("音乐 下一首", ("next", None)),
        ("上一首", ("prev", None)),
        ("上一首歌", ("prev", None)),
        ("回到上一首", ("prev", None)),
        ("previous track", ("prev", None)),
        ("go back one song", ("prev", None)),
        ("play the previous song", ("prev", None)),
        ("the song before this one", ("prev", None)),
        ("pause the music", ("pause", None)),
        ("could you pause it?", ("pause", None)),
        ("暂停一下", ("pause", None)),
        ("把音乐暂停一下", ("pause", None)),
        ("stop", ("pause", None)),
        ("继续放", ("resume", None)),
        ("继续播放吧", ("resume", None)),
        ("resume the music", ("resume", None)),
        ("keep playing", ("resume", None)),
        ("turn it up", ("volume_step", 10)),
        ("louder please", ("volume_step", 10)),
        ("大声点", ("volume_step", 10)),
        ("声音大一点", ("volume_step", 10)),
        ("turn the volume up by 20", ("volume_step", 20)),
        ("turn it down a bit", ("volume_step", -10)),
        ("声音小一点", ("volume_step", -10)),
        ("lower the volume", ("volume_step", -10)),
        ("volume to 30", ("volume", 30)),
        ("set the volume to 45 please", ("volume", 45)),
        ("volume 60", ("volume", 60)),
        ("声音调到 30", ("volume", 30)),
        ("音量调到50", ("volume", 50)),
        ("把声音调到三十", ("volume", 30)),
        ("mute", ("volume", 0)),
        ("play 七里香", ("play", "七里香")),
        ("放一首 七里香", ("play", "七里香")),
        ("放一首晴天吧", ("play", "晴天")),
        ("来一首七里香", ("play", "七里香")),
        ("播放一下晴天", ("play", "晴天")),
        ("can you play 晴天 please", ("play", "晴天")),
        ("I want to listen to 晴天", ("play", "晴天")),
        ("play up all night", ("play", "up all night")),
        ("播放周杰伦的歌", ("play", "周杰伦")),
        ("play music", ("play", "")),
        # anything from the library, not a song called "some"
        ("play some tunes", ("play", "")),
        ("put on something", ("play", "")),
        ("来点音乐吧", ("play", "")),
        ("放点歌听听", ("play", "")),
        # the previous one, and controls said twice
        ("skip back to the previous track", ("prev", None)),
        ("return to the last song", ("prev", None)),
        ("别放了，先暂停", ("pause", None)),
        ("stop it. pause.", ("pause", None)),
        ("search jay chou", ("search", "jay chou")),
    ],
)
def test_music_reads_plain_requests(text: str, parsed: tuple[str, Any]) -> None:
    assert music_lib.parse_command(text) == parsed
