"""The offline router: what a user without an LLM key gets when typing or saying a command."""

from __future__ import annotations

import pytest

from aios.control.router import AppProfile, OfflineRouter, Task, split_instruction, tokenize

# Profiles shaped like the bundled apps' manifests (Chinese names, bilingual keywords).
APPS = [
    AppProfile(
        "notes",
        "记事本",
        "记录和查看笔记、待办事项",
        ["笔记", "记事", "记", "备忘", "待办", "note", "memo", "todo"],
        "你是一个记事本小AI，负责帮用户记录、查找和整理笔记。",
    ),
    AppProfile(
        "music",
        "音乐",
        "搜索和播放音乐、歌曲，管理播放列表",
        ["歌", "歌曲", "播放", "听歌", "歌手", "song", "play", "playlist"],
        "你是一个音乐小AI，负责搜索和播放音乐",
    ),
    AppProfile(
        "monitor",
        "系统监视器",
        "查看 CPU、内存、磁盘占用和运行中的进程",
        ["cpu", "内存", "磁盘", "进程", "占用", "memory", "disk", "process", "usage"],
        "你是系统监视小AI，用 shell 工具读取系统状态并以仪表盘展示。",
    ),
    AppProfile(
        "weather",
        "天气",
        "查询城市天气和未来几天的预报",
        ["天气", "气温", "下雨", "预报", "forecast", "temperature"],
        "你是天气小AI，通过 http_request 获取天气数据。",
    ),
    AppProfile(
        "files",
        "文件管理",
        "浏览、搜索、打开工作目录里的文件",
        ["文件", "文件夹", "目录", "file", "folder", "browse"],
        "你是文件管理小AI，负责列出和打开文件。",
    ),
    AppProfile(
        "system_agent",
        "系统控制",
        "修改桌面界面：移动、隐藏、改颜色、改文字",
        ["桌面", "界面", "颜色", "窗口", "任务栏", "desktop", "color", "window"],
        "你是系统控制小AI，读取桌面 UI 快照并生成 UI 操作指令。",
    ),
    AppProfile(
        "calculator",
        "计算器",
        "计算数学表达式和单位换算",
        ["计算", "算", "加", "减", "乘", "除", "calculate", "math"],
        "你是计算器小AI。",
    ),
]


@pytest.fixture(scope="module")
def router() -> OfflineRouter:
    return OfflineRouter(APPS)


def apps_of(tasks: list[Task]) -> list[str]:
    return [t.app for t in tasks]


# ------------------------------------------------------------- splitting


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        ("打开记事本然后播放音乐", ["打开记事本", "播放音乐"]),
        ("打开记事本，然后再播放音乐", ["打开记事本", "播放音乐"]),
        ("打开记事本，再播放音乐", ["打开记事本", "播放音乐"]),
        ("先打开记事本再播放音乐", ["打开记事本", "播放音乐"]),
        ("打开记事本，接着看看天气", ["打开记事本", "看看天气"]),
        ("记一条笔记；查一下天气", ["记一条笔记", "查一下天气"]),
        ("open notes and then play music", ["open notes", "play music"]),
        ("open notes, then play music", ["open notes", "play music"]),
        ("Open notes. Then play music.", ["Open notes", "play music"]),
        ("play music; show cpu usage", ["play music", "show cpu usage"]),
    ],
)
def test_compound_instructions_are_split_in_order(text: str, clauses: list[str]) -> None:
    assert split_instruction(text) == clauses


@pytest.mark.parametrize(
    "text",
    [
        "再见",
        "再说一次",
        "好的，再见",
        "帮我再放一遍七里香",
        "五分钟之后提醒我喝水",
        "接着播放",
        "play the song again",
        "",
    ],
)
def test_words_that_only_look_like_separators_do_not_split(text: str) -> None:
    assert split_instruction(text) == ([text] if text else [])


def test_tokens_cover_chinese_bigrams_and_stemmed_english() -> None:
    terms = tokenize("看看系统CPU占用 and playing notes")
    assert {"系统", "占用", "cpu", "play", "note"} <= set(terms)
    assert terms["系统"] > terms["系"]  # unigrams count less than bigrams
    assert "and" not in terms


# ---------------------------------------------------------------- routing


@pytest.mark.parametrize(
    ("text", "app"),
    [
        ("帮我播放周杰伦的歌", "music"),
        ("打开记事本", "notes"),
        ("看看系统CPU占用", "monitor"),
        ("明天北京会下雨吗", "weather"),
        ("把任务栏改成蓝色", "system_agent"),
        ("记一下明天要买牛奶", "notes"),
        ("open notes", "notes"),
        ("play some music", "music"),
        ("show cpu usage", "monitor"),
        ("what's the weather forecast for tomorrow", "weather"),
        ("Open the Music app", "music"),
        ("launch calculator", "calculator"),
    ],
)
def test_single_instruction_goes_to_the_right_app(
    router: OfflineRouter, text: str, app: str
) -> None:
    tasks = router.route(text)
    assert apps_of(tasks) == [app], router.score(text)
    assert tasks[0].id == "t1" and tasks[0].depends_on == []
    assert tasks[0].instruction == text.strip()


def test_opening_an_app_by_name_beats_word_overlap(router: OfflineRouter) -> None:
    # "系统" also appears in the monitor's text; naming the app decides.
    assert apps_of(router.route("打开系统控制")) == ["system_agent"]
    assert apps_of(router.route("打开系统监视器")) == ["monitor"]
    assert apps_of(router.route("open system agent")) == ["system_agent"]


@pytest.mark.parametrize(
    "text", ["打开记事本然后播放音乐", "open notes and then play music", "先打开记事本再播放音乐"]
)
def test_compound_instruction_gives_independent_tasks_in_order(
    router: OfflineRouter, text: str
) -> None:
    tasks = router.route(text)
    # "then" is order, not data: neither step uses the other's result
    assert [(t.id, t.app, t.depends_on) for t in tasks] == [
        ("t1", "notes", []),
        ("t2", "music", []),
    ]
    assert "播放" in tasks[1].instruction or "play" in tasks[1].instruction


def test_three_independent_clauses(router: OfflineRouter) -> None:
    tasks = router.route("看看天气，然后播放音乐，再看看CPU占用")
    assert apps_of(tasks) == ["weather", "music", "monitor"]
    assert [t.depends_on for t in tasks] == [[], [], []]


@pytest.mark.parametrize(
    "text",
    [
        "查一下明天的天气，然后用它记一条笔记",
        "看看天气，然后把结果记到记事本",
        "查天气，然后据此记一条笔记",
        "check the weather forecast and use that to write a note",
        "check the weather forecast, then save the result in my notes",
        "check the weather forecast and then note it",
    ],
)
def test_a_step_that_uses_the_previous_result_depends_on_it(
    router: OfflineRouter, text: str
) -> None:
    tasks = router.route(text)
    assert [(t.app, t.depends_on) for t in tasks] == [("weather", []), ("notes", ["t1"])]


def test_the_baseline_mode_chains_every_clause() -> None:
    tasks = OfflineRouter(APPS, mode="baseline").route("打开记事本然后播放音乐")
    assert [t.depends_on for t in tasks] == [[], ["t1"]]


def test_clauses_for_the_same_app_stay_one_task_with_the_users_words(router: OfflineRouter) -> None:
    tasks = router.route("打开记事本并且记一条笔记：买牛奶")
    assert apps_of(tasks) == ["notes"]
    assert tasks[0].instruction == "打开记事本并且记一条笔记：买牛奶"


def test_a_clause_matching_nothing_stays_with_its_neighbour(router: OfflineRouter) -> None:
    tasks = router.route("播放音乐然后音量大一点点")
    assert apps_of(tasks) == ["music"]
    assert tasks[0].instruction == "播放音乐然后音量大一点点"


@pytest.mark.parametrize("text", ["asdfgh", "", "   ", "你好", "再见", "hello there"])
def test_nothing_matches_gives_no_tasks(router: OfflineRouter, text: str) -> None:
    assert router.route(text) == []


def test_scores_are_sorted_and_normalised(router: OfflineRouter) -> None:
    scores = router.score("播放周杰伦的歌")
    assert scores[0][0] == "music"
    assert [s for _, s in scores] == sorted((s for _, s in scores), reverse=True)
    assert all(0 < s <= 2 for _, s in scores)
    assert router.score("asdfgh") == []


def test_matched_names_the_words_that_counted_heaviest_first(router: OfflineRouter) -> None:
    """What the trace viewer shows beside a candidate's score (DESIGN §16)."""
    words = router.matched("播放周杰伦的歌", "music")
    assert "播放" in words and "歌" in words
    assert "周杰" not in words  # no word of the music app's profile
    assert "disk" in router.matched("check the disk usage", "monitor")
    assert router.matched("播放周杰伦的歌", "weather") == []
    assert router.matched("播放", "no_such_app") == []


def test_a_long_role_prompt_does_not_outscore_a_precise_short_app() -> None:
    chatty = AppProfile(
        "assistant",
        "助手",
        "通用助手",
        [],
        "你是通用助手。" + "你可以聊天、播放、查询、记录、计算、打开东西。" * 20,
    )
    short = AppProfile("music", "音乐", "播放歌曲", ["歌", "播放"], "")
    router = OfflineRouter([chatty, short])
    assert apps_of(router.route("播放一首歌")) == ["music"]


def test_router_with_no_apps_routes_nothing() -> None:
    assert OfflineRouter([]).route("播放音乐") == []


def test_a_clause_starting_with_an_app_id_or_name_is_addressed_to_it() -> None:
    router = OfflineRouter(
        [
            AppProfile(
                id="files",
                name="文件管理",
                description="浏览 预览 文件",
                keywords=["files", "file"],
                role_prompt="",
            ),
            AppProfile(
                id="hello",
                name="Hello小AI",
                description="打招呼",
                keywords=["hello"],
                role_prompt="",
            ),
            AppProfile(
                id="notes",
                name="记事本",
                description="笔记 搜索",
                keywords=["notes"],
                role_prompt="",
            ),
            AppProfile(
                id="music",
                name="音乐",
                description="播放 搜索 歌曲",
                keywords=["music"],
                role_prompt="",
            ),
        ]
    )
    assert [t.app for t in router.route("files preview hello.txt")] == ["files"]
    assert [t.app for t in router.route("记事本 搜索 牛奶")] == ["notes"]
    assert [t.app for t in router.route("filesystem hello")] == ["hello"]


def test_the_sessions_last_app_wins_a_near_tie() -> None:
    apps = [
        AppProfile(
            id="notes", name="记事本", description="搜索笔记", keywords=["牛奶"], role_prompt=""
        ),
        AppProfile(
            id="music", name="音乐", description="搜索歌曲", keywords=["牛奶"], role_prompt=""
        ),
    ]
    plain = OfflineRouter(apps).route("搜索 牛奶")
    assert [t.app for t in OfflineRouter(apps, prefer="notes").route("搜索 牛奶")] == ["notes"]
    assert [t.app for t in OfflineRouter(apps, prefer="music").route("搜索 牛奶")] == ["music"]
    assert plain  # without a preference it still picks one of them
    # a clear winner is not overridden by the preference
    assert [t.app for t in OfflineRouter(apps, prefer="music").route("记事本 搜索")] == ["notes"]


# ------------------------------------------- the issue's third-party apps

# Shaped like the three apps of issue 14, written from the docs by a new developer:
# their descriptions mention the data they show ("明天", "提醒"); the to-do list has
# few keywords, its examples say what users ask it.
THIRD_PARTY = [
    AppProfile(
        "todo",
        "待办清单",
        "待办事项清单：添加、完成、删除待办",
        ["待办", "待办清单", "todo", "to-do", "task"],
        "你是待办清单小AI。",
        examples=(
            "记一下周五交报告",
            "提醒我给妈妈打电话",
            "remind me to call mom",
            "mark call mom as done",
        ),
    ),
    AppProfile(
        "weather",
        "天气看板",
        "显示今天和明天的天气、气温曲线和下雨概率，数据来自网上",
        ["天气", "气温", "weather", "forecast", "temperature"],
        "你是天气小AI。",
        examples=("北京明天天气怎么样", "上海会下雨吗", "weather in Paris"),
    ),
    AppProfile(
        "pomodoro",
        "番茄钟",
        "番茄工作法计时器：专注 25 分钟，到点提醒你休息，标记完成的番茄",
        ["番茄钟", "番茄", "专注", "计时", "pomodoro", "timer", "focus"],
        "你是番茄钟小AI。",
        examples=("开始一个番茄钟", "专注 25 分钟", "start a pomodoro", "start a 25 minute timer"),
    ),
]


@pytest.mark.parametrize(
    ("text", "app"),
    [
        ("记一下明天下午开会", "todo"),  # went to weather: 明天 in its description
        ("提醒我明天买牛奶", "todo"),  # went to the timer: 提醒 in its description
        ("remind me to buy bread", "todo"),  # found no app
        ("mark buy milk as done", "todo"),  # found no app
        ("明天会下雨吗", "weather"),
        ("专注 25 分钟", "pomodoro"),
        ("start a 25 minute timer", "pomodoro"),
    ],
)
def test_the_issues_instructions_reach_the_app_meant(text: str, app: str) -> None:
    assert apps_of(OfflineRouter(THIRD_PARTY).route(text)) == [app]


def test_a_word_only_in_the_description_weighs_less_than_a_keyword() -> None:
    # weather has 明天 in its description and an example, the to-do app its phrase 记一下
    scores = dict(OfflineRouter(THIRD_PARTY).score("记一下明天下午开会"))
    assert scores["todo"] > scores["weather"]
    # a word only in one app's description, the same word as another's keyword
    desc_only = AppProfile("a", "甲", "查看明天的安排", [], "")
    keyword = AppProfile("b", "乙", "", ["明天"], "")
    assert OfflineRouter([desc_only, keyword]).score("明天")[0][0] == "b"


# ------------------------------------------------------------ routed


@pytest.mark.parametrize(
    ("text", "app", "stripped"),
    [
        ("打开待办清单，记一下买牛奶", "todo", "记一下买牛奶"),
        ("用待办清单记一下买牛奶", "todo", "记一下买牛奶"),
        ("用待办记一下买牛奶", "todo", "记一下买牛奶"),  # a keyword after 用 names the app
        ("待办清单 搜索 牛奶", "todo", "搜索 牛奶"),
        ("在待办清单里记一下买牛奶", "todo", "记一下买牛奶"),
        ("open todo and add buy milk", "todo", "add buy milk"),
        ("remind me to buy bread", "todo", "remind me to buy bread"),
        ("番茄钟 开始", "pomodoro", "开始"),
        ("start a 25 minute timer with pomodoro", "pomodoro", "start a 25 minute timer"),
    ],
)
def test_the_app_gets_its_part_without_the_routing_words(
    text: str, app: str, stripped: str
) -> None:
    [task] = OfflineRouter(THIRD_PARTY).route(text)
    assert task.app == app and task.instruction == text
    assert task.routed is not None
    assert task.routed["text"] == stripped
    assert task.routed["source"] == "offline" and task.routed["score"] > 0


def test_routed_says_what_the_router_matched_per_segment() -> None:
    tasks = OfflineRouter(THIRD_PARTY).route("记一下明天下午开会，然后开始一个番茄钟")
    assert apps_of(tasks) == ["todo", "pomodoro"]
    todo, timer = (t.routed or {} for t in tasks)
    assert todo["text"] == "记一下明天下午开会" and "记一下" in todo["matched"]
    assert timer["text"] == "开始一个番茄钟" and "番茄钟" in timer["matched"]
    assert "开始一个番茄钟" in timer["matched"]  # the example it is phrased like
    assert "routed" not in tasks[0].model_dump()  # the plan the desktop sees is unchanged


def test_routed_for_a_rival_the_user_chose_is_that_apps() -> None:
    apps = [
        AppProfile("jotter", "Jotter", "记录 笔记", ["记录", "笔记"], ""),
        AppProfile("memo", "Memo", "记录 笔记", ["记录", "笔记"], ""),
    ]
    router = OfflineRouter(apps)
    [task] = router.route("记录 买牛奶")
    assert task.alternatives  # too close: the desktop asks
    rival = "memo" if task.app == "jotter" else "jotter"
    routed = router.routed_info(rival, "用 Memo 记录 买牛奶", ["用 Memo 记录 买牛奶"])
    assert routed["score"] > 0 and routed["matched"]
    if rival == "memo":
        assert routed["text"] == "记录 买牛奶"


@pytest.mark.parametrize(
    "text",
    [
        "remove draft.md",  # no word of the files app but the name
        "trash old-report.pdf please",
        "把 预算.xlsx 删了",
        "show me what's inside config.yaml",
    ],
)
def test_a_named_file_is_about_files_whatever_the_verb(router: OfflineRouter, text: str) -> None:
    assert apps_of(router.route(text)) == ["files"]


@pytest.mark.parametrize(
    ("text", "app"),
    [
        ("make a file called memo.txt with the text play the weather song", "files"),
        ("新建 a.txt 内容是 明天会下雨吗", "files"),
        ("create plan.md saying check cpu usage", "files"),
    ],
)
def test_the_words_to_write_do_not_choose_the_app(
    router: OfflineRouter, text: str, app: str
) -> None:
    """What follows "with the text" / "内容是" / "saying" is the user's data."""
    assert apps_of(router.route(text)) == [app]


def test_a_version_or_a_web_address_is_not_a_file(router: OfflineRouter) -> None:
    assert apps_of(router.route("play version 2.0 of the song")) == ["music"]
    assert not router.route("example.com")
