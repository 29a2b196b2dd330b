"""``python -m aios_sdk new|check``: scaffold an app, check folders, and run what was made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.apphost.manifests import MANIFEST, ROLE_FILE
from aios.apphost.registry import APP_ID_RE as LAUNCHER_APP_ID_RE
from aios.config import Config
from aios.protocol import parse_manifest
from aios_sdk import AIOSAgent, agent as agent_module
from aios_sdk.scaffold import APP_ID_RE, CheckReport, check_app, main, new_app
from tests.conftest import ROOT
from tests.integration.conftest import Running, start_system
from tests.util import wait_for

APP_START_WAIT = 30.0
"""Seconds a freshly scaffolded app may take to be picked up and start."""


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "aios_sdk", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def system(tmp_path: Path) -> Iterator[Running]:
    (tmp_path / "apps").mkdir()  # the launcher refuses a missing apps folder
    running = start_system(tmp_path / "apps", tmp_path / "data")
    yield running
    running.stop()


def wait_running(system: Running, app: str) -> None:
    wait_for(
        lambda: system.get("/api/health").json()["apps"].get(app) == "running",
        f"{app} to run",
        APP_START_WAIT,
    )


# ------------------------------------------------------------------------ new


def test_new_then_check_then_the_running_desktop_hot_loads_it(system: Running) -> None:
    made = cli(
        "new",
        "hello_app",
        "--dir",
        str(system.apps_dir),
        "--title",
        "你好应用",
        "--icon",
        "👋",
        cwd=system.apps_dir.parent,
    )
    assert made.returncode == 0, made.stderr
    folder = system.apps_dir / "hello_app"
    assert f"created {folder}/" in made.stdout
    assert tree(folder) == [
        "main.py",
        "manifest.json",
        "requirements.txt",
        "role.md",
        "workspace",
        "workspace/.gitkeep",
    ]
    assert [p.name for p in system.apps_dir.iterdir()] == ["hello_app"]
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    # each piece of metadata once: the manifest (no role_prompt: role.md is the role)
    assert list(manifest) == [
        "name",
        "icon",
        "description",
        "keywords",
        "examples",
        "entry",
        "workdir",
        "author",
        "version",
    ]
    assert (manifest["name"], manifest["icon"], manifest["entry"]) == ("你好应用", "👋", "main.py")
    parse_manifest(manifest)
    main_py = (folder / "main.py").read_text(encoding="utf-8")
    for attr in ("name", "icon", "description", "role_prompt"):
        assert f"    {attr} = " not in main_py  # the class reads them from the manifest

    checked = cli("check", str(folder), cwd=system.apps_dir.parent)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.splitlines() == [
        f"warning: {field}: still the scaffold's placeholder (【待填写】 / [to fill in]) "
        f"in {where}; write the real text"
        for field, where in [
            ("role", "role.md"),
            ("description", "manifest.json"),
            ("keywords", "manifest.json"),
            ("examples", "manifest.json"),
        ]
    ] + ["ok: 你好应用 (4 warnings)"]

    wait_running(system, "hello_app")  # picked up while the desktop runs
    opened = system.open("hello_app")["response"]
    assert opened["status"] == "ok" and opened["view_type"] == "text"
    assert opened["data"]["content"] == "你好，我是你好应用。"  # the manifest's name
    [button] = opened["actions"]
    assert (button["type"], button["action_id"]) == ("button", "hello")
    again = system.post(
        "/api/action", {"app": "hello_app", "action_id": "hello", "params": {}}
    ).json()["response"]
    assert again["data"]["content"] == "又见面了！"

    # the developer fills the placeholders in and makes handle show its role
    role = "你是仙人掌养护小AI，只管浇水和晒太阳。"
    (folder / "role.md").write_text(role + "\n", encoding="utf-8")
    (folder / "main.py").write_text(
        main_py.replace('f"你说：{instruction}"', 'context["role"] + "｜" + instruction'),
        encoding="utf-8",
    )
    filled = {
        **manifest,
        "description": {"zh-CN": "提醒你照顾仙人掌", "en": "Reminds you to look after the cactus"},
        "keywords": ["仙人掌", "cactus"],
        "examples": {"zh-CN": ["给仙人掌浇水"], "en": ["water the cactus"]},
    }
    (folder / "manifest.json").write_text(json.dumps(filled, ensure_ascii=False), encoding="utf-8")
    checked = cli("check", "--strict", str(folder), cwd=system.apps_dir.parent)
    assert (checked.returncode, checked.stdout) == (0, "ok: 你好应用\n")

    wait_for(
        lambda: system.get("/api/apps").json()[0]["keywords"] == ["仙人掌", "cactus"],
        "the edited manifest to be hot-loaded",
        APP_START_WAIT,
    )
    wait_running(system, "hello_app")
    reply = system.instruct("仙人掌今天要浇水吗")
    [result] = reply["results"]
    assert result["app"] == "hello_app", reply
    content = result["response"]["data"]["content"]
    assert content.startswith(role + "｜") and "浇水" in content  # role.md is the context's role


def test_new_refuses_an_existing_folder_and_leaves_it_alone(tmp_path: Path, capsys: Any) -> None:
    existing = tmp_path / "apps" / "notes"
    existing.mkdir(parents=True)
    (existing / "mine.txt").write_text("keep me")
    assert main(["new", "notes", "--dir", str(tmp_path / "apps")]) == 1
    err = capsys.readouterr().err
    assert err == f"error: refusing to overwrite {existing}: it already exists\n"
    assert tree(existing) == ["mine.txt"]
    assert [p.name for p in (tmp_path / "apps").iterdir()] == ["notes"]  # no staging left


@pytest.mark.parametrize("name", ["My App", "Notes", "-x", "../evil", "a/b", "", "日记"])
def test_new_refuses_a_name_that_is_not_an_app_id(tmp_path: Path, capsys: Any, name: str) -> None:
    assert main(["new", "--dir", str(tmp_path / "apps"), "--", name]) == 1
    assert "is not a valid app id: it must match [a-z0-9_][a-z0-9_-]*" in capsys.readouterr().err
    assert not (tmp_path / "apps").exists() or list((tmp_path / "apps").iterdir()) == []
    assert not (tmp_path / "evil").exists()


def test_the_app_id_rule_is_the_launchers() -> None:
    assert APP_ID_RE.pattern == LAUNCHER_APP_ID_RE.pattern


def test_class_names_are_valid_for_any_app_id(tmp_path: Path) -> None:
    for app_id in ("2fa", "my-app_x", "_private", "a"):
        folder = new_app(app_id, tmp_path)
        report = check_app(folder)
        assert report.errors == [], (app_id, report.errors)
        assert report.name == app_id


# ---------------------------------------------------------------------- check


def write(folder: Path, manifest: Any, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = manifest if isinstance(manifest, str) else json.dumps(manifest, ensure_ascii=False)
    (folder / "manifest.json").write_text(text, encoding="utf-8")
    for rel, content in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(content, encoding="utf-8")
    return folder


GOOD = {"name": "好", "entry": "main.py", "role_prompt": "你是好小AI"}
MAIN = {"main.py": "print('hi')\n"}


def test_check_lists_every_problem_one_per_line(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    folder = write(
        tmp_path / "broken",
        {
            "name": "",
            "entry": "main.py",
            "role_promt": "typo",
            "port": 80,
            "permissions": ["root"],
            "handle_endpoint": "handle",
            "workdir": "data",
            "keywords": ["notes", "Notes", " ", "x" * 41],
            "shell_whitelist": ["/bin/ls", "ls -la"],
            "http_domain_whitelist": ["https://api.example.com/v1", "api.example.com"],
        },
        {"main.py": "def handle(:\n    pass\n"},
    )
    (folder / "data").symlink_to(secret)
    result = cli("check", str(folder), cwd=tmp_path)
    assert result.returncode == 1
    assert [line for line in result.stdout.splitlines() if not line.startswith("warning: ")] == [
        "manifest.json field name: name (zh-CN) is empty",
        "manifest.json field port: Input should be greater than or equal to 1024",
        "manifest.json field handle_endpoint: must be a path starting with '/' (got 'handle')",
        "manifest.json field keywords.3: String should have at most 40 characters",
        "manifest.json field permissions.0: Input should be 'conversation.read', "
        "'desktop.control', 'network', 'system.processes', 'memory.read' or 'memory.write'",
        "manifest.json: unknown field 'role_promt'; did you mean 'role_prompt'?",
        "entry 'main.py' does not compile (line 1): invalid syntax",
        f"workdir 'data' resolves to {secret.resolve()}, outside the app folder",
        'no role prompt: set "role_prompt" in manifest.json or add a non-empty role.md',
        "keywords: empty entries are not allowed",
        "keywords: 'Notes' is listed twice",
        "shell_whitelist: '/bin/ls' must be a bare program name (no path, no arguments)",
        "shell_whitelist: 'ls -la' must be a bare program name (no path, no arguments)",
        "http_domain_whitelist: 'https://api.example.com/v1' must be a host name such as "
        "api.example.com or *.example.com (no scheme, port or path)",
    ]
    assert "ok:" not in result.stdout
    # checking compiles nothing into the app folder
    assert not (folder / "__pycache__").exists()


@pytest.mark.parametrize(
    ("manifest", "files", "problem"),
    [
        (None, {}, "no manifest.json in the folder"),
        (
            '{"name": "x",\n "entry": }',
            {},
            "manifest.json is not valid JSON: line 2 column 11: Expecting value",
        ),
        ("[1, 2]", {}, "manifest.json must hold a JSON object, not list"),
        ({**GOOD, "entry": "app.py"}, MAIN, "entry file 'app.py' not found in the app folder"),
        (
            {**GOOD, "entry": "../main.py"},
            MAIN,
            "manifest.json field entry: must be a path inside the app folder (got '../main.py')",
        ),
        (
            {**GOOD, "workdir": "/tmp"},
            MAIN,
            "manifest.json field workdir: must be a path inside the app folder (got '/tmp')",
        ),
        (
            {**GOOD, "workdir": "."},
            MAIN,
            "workdir '.' is the app folder itself: the app could then "
            "rewrite its own code and manifest; use a subfolder such "
            "as workspace",
        ),
        ({**GOOD, "workdir": "main.py"}, MAIN, "workdir 'main.py' exists and is not a folder"),
        (
            {"name": "x", "entry": "main.py", "role_prompt": "  "},
            {**MAIN, "role.md": "\n"},
            'no role prompt: set "role_prompt" in manifest.json or add a non-empty role.md',
        ),
        (
            {**GOOD, "permissions": ["desktop.control", "desktop.control"]},
            MAIN,
            "permissions: 'desktop.control' is listed twice",
        ),
        ({**GOOD, "name": "   "}, MAIN, "name is only blanks"),
        (
            {"entry": "main.py", "role_prompt": "r"},
            MAIN,
            "manifest.json field name: Field required",
        ),
    ],
)
def test_check_names_each_kind_of_problem(
    tmp_path: Path, capsys: Any, manifest: Any, files: dict[str, str], problem: str
) -> None:
    folder = tmp_path / "app"
    if manifest is None:
        folder.mkdir()
    else:
        write(folder, manifest, files)
    before = tree(folder)
    assert main(["check", str(folder)]) == 1
    assert problem in capsys.readouterr().out.splitlines()
    assert tree(folder) == before  # checking changes nothing


def test_check_accepts_role_md_instead_of_role_prompt(tmp_path: Path, capsys: Any) -> None:
    folder = write(
        tmp_path / "app", {"name": "好", "entry": "main.py"}, {**MAIN, "role.md": "你是好小AI\n"}
    )
    assert main(["check", str(folder)]) == 0
    assert (
        capsys.readouterr().out.splitlines()[-1] == "ok: 好 (2 warnings)"
    )  # no keywords, examples


def test_check_on_something_that_is_not_an_app_folder(tmp_path: Path, capsys: Any) -> None:
    assert main(["check", str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().out == f"{tmp_path / 'missing'} is not a folder\n"
    bad = write(tmp_path / "Bad App", GOOD, MAIN)
    assert main(["check", str(bad)]) == 1
    assert capsys.readouterr().out.startswith("folder name 'Bad App' is not a valid app id")


def test_check_dot_means_the_current_folder(tmp_path: Path) -> None:
    folder = new_app("here", tmp_path)
    result = cli("check", ".", cwd=folder)
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == "ok: here (4 warnings)"  # the placeholders


def test_bundled_assistant_passes_the_check(capsys: Any) -> None:
    assert main(["check", str(ROOT / "apps" / "assistant")]) == 0
    assert capsys.readouterr().out == "ok: 智能助手\n"


# ------------------------------------------------------------------ warnings

SANDBOX = Config.model_validate(
    {"tool_sandbox": {"shell_whitelist": ["ls", "cat"], "http_domain_whitelist": ["example.com"]}}
)
"""The global config the whitelists are compared with in these tests."""
READY = {
    **GOOD,
    "keywords": ["浇花"],
    "examples": ["给花浇水"],
    "shell_whitelist": ["ls"],
    "http_domain_whitelist": ["api.example.com"],
}
"""A manifest check has nothing to say about."""
NEIGHBOUR = {
    "name": {"zh-CN": "天气", "en": "Weather"},
    "entry": "main.py",
    "role_prompt": "r",
    "keywords": ["天气", "温度"],
}


def report_for(
    tmp_path: Path,
    manifest: dict[str, Any],
    files: dict[str, str] | None = None,
    *,
    elsewhere: bool = False,
) -> CheckReport:
    apps = tmp_path / "apps"
    write(apps / "weather", NEIGHBOUR, MAIN)
    write(apps / ".hidden", {**NEIGHBOUR, "name": "好"}, MAIN)  # a scaffold's staging: ignored
    folder = write(
        tmp_path / ("dev" if elsewhere else "apps") / "garden", manifest, {**MAIN, **(files or {})}
    )
    return check_app(folder, config=SANDBOX, apps_dirs=[apps])


def test_a_ready_manifest_has_neither_errors_nor_warnings(tmp_path: Path) -> None:
    report = report_for(tmp_path, READY)
    assert (report.name, report.errors, report.warnings) == ("好", [], [])


@pytest.mark.parametrize(
    ("change", "files", "warning"),
    [
        (
            {"keywords": []},
            {},
            "keywords: none; the offline router finds an app by its name, "
            "keywords and examples, so list the words a user says when they mean this app",
        ),
        (
            {"examples": {"zh-CN": [], "en": []}},
            {},
            "examples: none; list a few sample "
            "instructions (the router scores them, help and the start menu show them)",
        ),
        (
            {"description": {"zh-CN": "花园", "en": "[to fill in] One line"}},
            {},
            "description: still the scaffold's placeholder (【待填写】 / [to fill in]) in "
            "manifest.json; write the real text",
        ),
        (
            {"keywords": ["浇花", "【待填写】关键词"]},
            {},
            "keywords: still the scaffold's "
            "placeholder (【待填写】 / [to fill in]) in manifest.json; write the real text",
        ),
        (
            {"examples_en": ["[to fill in] say"]},
            {},
            "examples: still the scaffold's placeholder "
            "(【待填写】 / [to fill in]) in manifest.json; write the real text",
        ),
        (
            {"role_prompt": None},
            {"role.md": "你是【待填写】\n"},
            "role: still the scaffold's "
            "placeholder (【待填写】 / [to fill in]) in role.md; write the real text",
        ),
        (
            {"shell_whitelist": ["ls", "rm"]},
            {},
            "shell_whitelist: 'rm' is not in the system's "
            "shell whitelist (ls, cat; tool_sandbox.shell_whitelist in config.json), so the app "
            "can never run it",
        ),
        (
            {"http_domain_whitelist": ["api.example.com", "evil.org"]},
            {},
            "http_domain_whitelist: 'evil.org' is not allowed by the system's domain whitelist "
            "(example.com; tool_sandbox.http_domain_whitelist in config.json), so the app cannot "
            "reach it",
        ),
        (
            {"name": {"zh-CN": "花园", "en": "weather"}},
            {},
            "name: 'weather' is also the name of "
            "the installed app 'weather'; instructions naming it cannot tell the two apart",
        ),
        (
            {"keywords": ["浇花", "温度"]},
            {},
            "keywords: '温度' is also a keyword of the installed "
            "app 'weather'; routing between the two is ambiguous",
        ),
    ],
)
def test_check_warns_naming_the_field(
    tmp_path: Path, change: dict[str, Any], files: dict[str, str], warning: str
) -> None:
    report = report_for(tmp_path, {**READY, **change}, files)
    assert (report.errors, report.warnings) == ([], [warning])


def test_check_warns_when_the_id_is_already_installed(tmp_path: Path, capsys: Any) -> None:
    write(tmp_path / "dev" / "weather", READY, MAIN)
    report = report_for(tmp_path, READY, elsewhere=True)
    assert report.warnings == []  # garden: nothing shared
    folder = tmp_path / "dev" / "weather"
    argv = ["check", str(folder), "--apps-dir", str(tmp_path / "apps")]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        f"warning: id: 'weather' is already the id of the installed app in "
        f"{(tmp_path / 'apps' / 'weather').resolve()}; only one of them can be loaded "
        "(rename the folder)"
    )
    assert out[-1].startswith("ok: 好 (")
    assert main([*argv, "--strict"]) == 1  # --strict: a warning fails
    assert capsys.readouterr().out.splitlines()[-1].startswith("not ok: ")


def test_the_agent_reads_its_metadata_from_the_manifest(tmp_path: Path) -> None:
    folder = write(
        tmp_path / "garden",
        {"name": {"zh-CN": "花园", "en": "Garden"}, "icon": "sprout", "entry": "main.py"},
        {"role.md": "你是花园小AI\n"},
    )

    class Plain(AIOSAgent):
        def app_dir(self) -> Path:
            return folder

    class Own(Plain):
        name = "自己的名字"

    plain, own = Plain(), Own()
    assert (plain.name, plain.icon, plain.role_prompt, plain.display_name) == (
        "花园",
        "sprout",
        "你是花园小AI",
        "花园",
    )
    assert (own.name, own.icon) == ("自己的名字", "sprout")  # a class attribute wins
    assert (agent_module.MANIFEST_FILE, agent_module.ROLE_FILE) == (MANIFEST, ROLE_FILE)
