"""Reading the time of a reminder or an automation (aios/duplex/when.py), zh and en.

This is the dev set the rules were tuned on; the labelled set the benchmark scores
(bench/data/when_set.jsonl, bench/bench_duplex_thinker.py) is kept apart from it."""

from __future__ import annotations

from datetime import datetime

import pytest

from aios.duplex.when import parse

NOW = datetime(2026, 12, 7, 10, 0).astimezone()  # a Monday, 10:00 local time

# (text, kind, what, at "YYYY-MM-DD HH:MM:SS" | cron)
DEV: list[tuple[str, str, str, str]] = [
    ("提醒我三点开会", "reminder", "开会", "2026-12-07 15:00:00"),
    ("remind me at 3pm to call Anna", "reminder", "call Anna", "2026-12-07 15:00:00"),
    ("每天早上八点读一下我的待办", "run", "读一下我的待办", "0 8 * * *"),
    ("every Monday at 9 list my notes tagged work", "run", "list my notes tagged work",
     "0 9 * * 1"),
    ("remind me in 3 seconds to stretch", "reminder", "stretch", "2026-12-07 10:00:03"),
    ("十分钟后提醒我喝水", "reminder", "喝水", "2026-12-07 10:10:00"),
    ("明天上午十点提醒我交报告", "reminder", "交报告", "2026-12-08 10:00:00"),
    ("每隔两小时提醒我站起来", "reminder", "站起来", "0 */2 * * *"),
    ("every weekday at 7:30 read my todos", "run", "read my todos", "30 7 * * 1-5"),
    ("remind me tomorrow to buy milk", "reminder", "buy milk", "2026-12-08 09:00:00"),
    ("下午三点半读一下我的待办", "run", "读一下我的待办", "2026-12-07 15:30:00"),
    ("今晚八点提醒我看球赛", "reminder", "看球赛", "2026-12-07 20:00:00"),
    ("每周五下午五点列出本周的笔记", "run", "列出本周的笔记", "0 17 * * 5"),
    ("remind me on Friday at 5pm to send the report", "reminder", "send the report",
     "2026-12-11 17:00:00"),
    ("every 15 minutes check my downloads", "run", "check my downloads", "*/15 * * * *"),
    ("每月1号上午九点提醒我交房租", "reminder", "交房租", "0 9 1 * *"),
    ("remind me at noon to eat", "reminder", "eat", "2026-12-07 12:00:00"),
    ("提醒我下周三开会", "reminder", "开会", "2026-12-16 09:00:00"),
    ("in half an hour remind me to take the cake out", "reminder", "take the cake out",
     "2026-12-07 10:30:00"),
    ("5分钟后提醒我关火", "reminder", "关火", "2026-12-07 10:05:00"),
    ("remind me in 10 minutes to check the oven", "reminder", "check the oven",
     "2026-12-07 10:10:00"),
    ("每天晚上十点提醒我睡觉", "reminder", "睡觉", "0 22 * * *"),
    ("every night at 10 remind me to sleep", "reminder", "sleep", "0 22 * * *"),
    ("每个工作日早上7点半播放新闻", "run", "播放新闻", "30 7 * * 1-5"),
    ("every hour remind me to drink water", "reminder", "drink water", "0 * * * *"),
    ("daily at 6pm summarize my notes", "run", "summarize my notes", "0 18 * * *"),
    ("every Sunday evening list my notes", "run", "list my notes", "0 20 * * 0"),
    ("明早提醒我带伞", "reminder", "带伞", "2026-12-08 08:00:00"),
    ("提醒我两点一刻给老王打电话", "reminder", "给老王打电话", "2026-12-07 14:15:00"),
    ("remind me tomorrow at 3 to call the bank", "reminder", "call the bank",
     "2026-12-08 15:00:00"),
    ("每周一早上9点列出标签为工作的笔记", "run", "列出标签为工作的笔记", "0 9 * * 1"),
    ("remind me tomorrow morning to water the plants", "reminder", "water the plants",
     "2026-12-08 08:00:00"),
    ("8:30 remind me to call mom", "reminder", "call mom", "2026-12-07 20:30:00"),
]  # fmt: skip

NOT_SCHEDULES = [
    "打开记事本",
    "明天天气怎么样",
    "what time is it",
    "三点了吗",
    "提醒我",
    "list my notes tagged work",
    "play some music",
    "记一下每天要喝水",
    "明天打开音乐",
]


@pytest.mark.parametrize(("text", "kind", "what", "when"), DEV)
def test_the_dev_set_is_read(text: str, kind: str, what: str, when: str) -> None:
    got = parse(text, NOW)
    assert got is not None, text
    assert (got.kind, got.what) == (kind, what)
    if got.cron is not None:
        assert got.cron == when
    else:
        assert got.at is not None and got.at.strftime("%Y-%m-%d %H:%M:%S") == when


@pytest.mark.parametrize("text", NOT_SCHEDULES)
def test_what_schedules_nothing_is_left_alone(text: str) -> None:
    assert parse(text, NOW) is None


def test_a_clock_hour_without_am_pm_is_the_next_one() -> None:
    late = NOW.replace(hour=16)
    got = parse("提醒我三点开会", late)
    assert got is not None and got.at is not None
    assert got.at.strftime("%Y-%m-%d %H:%M") == "2026-12-08 03:00"
