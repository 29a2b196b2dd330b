"""What a decision approves (DESIGN §14.2): the canonical hash of a step as it will
run, and the workdir files its interpreter runs. Real files in a temporary workdir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aios.config import SandboxConfig
from aios.runs.approved import (
    NOT_SHOWN,
    PIN_SHOW_CHARS,
    Approval,
    canonical,
    is_interpreter,
    pins_of,
    step_hash,
    template_refs,
)
from aios.tools.sandbox import SandboxPolicy


@pytest.fixture
def policy(tmp_path: Path) -> SandboxPolicy:
    wd = tmp_path / "work"
    wd.mkdir()
    return SandboxPolicy(workdir=wd.resolve(), config=SandboxConfig(allow_pipes=True))


def test_the_canonical_form_ignores_key_order_and_nothing_else() -> None:
    a = {"cmd": ["ls", "-l"], "cwd": "x", "env": {"A": "1", "B": "2"}}
    b = {"env": {"B": "2", "A": "1"}, "cwd": "x", "cmd": ["ls", "-l"]}
    assert canonical("shell_exec", a) == canonical("shell_exec", b)
    assert step_hash("shell_exec", a) == step_hash("shell_exec", b)
    for other in (
        {**a, "cwd": "y"},
        {**a, "cmd": ["ls", "-l "]},
        {**a, "cmd": ["ls", "-l\u200b"]},
        {**a, "env": {"A": "1", "B": "2", "C": ""}},
    ):
        assert step_hash("shell_exec", other) != step_hash("shell_exec", a)
    assert step_hash("process_start", a) != step_hash("shell_exec", a)
    assert step_hash("x", {"s": "\ud800"})  # a lone surrogate hashes, never raises


def test_template_refs_are_found_at_any_depth() -> None:
    args = {
        "url": "https://x/{{step_1.result}}",
        "body": {"items": [{"v": "{{ step_2.result.a }}"}]},
        "save_to": "{{step_1.result}}.bin",
        "plain": "{{ not a step }}",
    }
    assert sorted(template_refs(args)) == ["step_1", "step_2"]
    assert template_refs({"cmd": "echo {{x}}"}) == []


def test_interpreters_are_known_by_name_and_version() -> None:
    for name in ("python3", "python3.11", "/usr/bin/node", "bash", "sh", "perl5.36"):
        assert is_interpreter(name), name
    for name in ("ls", "cat", "echo", "pythonista"):
        assert not is_interpreter(name), name


def test_an_approval_holds_only_for_the_same_call_and_the_same_file(
    policy: SandboxPolicy,
) -> None:
    script = policy.workdir / "script.py"
    script.write_text("print(1)\n")
    args = {"cmd": "python3 script.py"}
    pins = pins_of(policy, "shell_exec", args)
    assert [p.path for p in pins] == ["script.py"] and pins[0].text == "print(1)\n"
    ok = Approval(step_hash("shell_exec", args, pins), reads_files=True)
    assert ok.holds("shell_exec", args, policy)
    assert not ok.holds("shell_exec", {"cmd": "python3 script.py "}, policy)
    script.write_text("print(2)\n")
    assert not ok.holds("shell_exec", args, policy)
    script.write_text("print(1)\n")
    assert ok.holds("shell_exec", args, policy)
    script.unlink()
    os.symlink("other.py", script)
    (policy.workdir / "other.py").write_text("print(1)\n")
    assert ok.holds("shell_exec", args, policy)  # the same content, reached by a link


def test_a_file_that_appears_after_the_approval_is_a_new_decision(
    policy: SandboxPolicy,
) -> None:
    args = {"cmd": ["python3", "late.py"]}
    approval = Approval(step_hash("shell_exec", args, pins_of(policy, "shell_exec", args)), True)
    assert approval.holds("shell_exec", args, policy)
    (policy.workdir / "late.py").write_text("import os\n")
    assert not approval.holds("shell_exec", args, policy)


def test_no_fifo_or_device_is_ever_opened(policy: SandboxPolicy) -> None:
    os.mkfifo(policy.workdir / "pipe.py")
    os.symlink("/dev/zero", policy.workdir / "zero.py")
    pins = {
        p.path: p
        for cmd in ("python3 pipe.py", "python3 zero.py")
        for p in pins_of(policy, "shell_exec", {"cmd": cmd})
    }
    assert pins["pipe.py"].text == "" and "not shown" in pins["pipe.py"].note
    assert pins["zero.py"].text == "" and "outside the workdir" in pins["zero.py"].note
    # why, by key too: the card says it in the UI's language
    assert pins["pipe.py"].public()["reason"] == "not_regular"
    assert pins["zero.py"].public()["reason"] == "outside"
    assert set(NOT_SHOWN) >= {p.reason for p in pins.values()}


def test_a_script_longer_than_the_card_shows_says_it_is_not_whole(policy: SandboxPolicy) -> None:
    """A long padding then the code that matters: the card must not look whole."""
    pad = "#" + " " * (PIN_SHOW_CHARS + 10) + "\n"
    (policy.workdir / "long.py").write_text(pad + "import os; os.remove('precious.db')\n")
    (policy.workdir / "short.py").write_text("print('hi')\n")
    pins = {
        p.path: p.public()
        for cmd in ("python3 long.py", "python3 short.py")
        for p in pins_of(policy, "shell_exec", {"cmd": cmd})
    }
    assert pins["long.py"]["whole"] is False and "precious" not in pins["long.py"]["content"]
    assert pins["long.py"]["shown_chars"] == PIN_SHOW_CHARS
    assert pins["short.py"]["content"] == "print('hi')\n" and "whole" not in pins["short.py"]


def test_a_big_command_costs_a_bounded_number_of_lookups(policy: SandboxPolicy) -> None:
    words = " ".join(f"f{i}" for i in range(10_000))
    assert pins_of(policy, "shell_exec", {"cmd": f"python3 -c '{words}'"}) == ()


def test_the_code_is_pinned_and_the_scripts_data_is_not(policy: SandboxPolicy) -> None:
    for name in ("s.py", "data.txt", "pre.js", "x.py"):
        (policy.workdir / name).write_text(name)
    (policy.workdir / "pkg").mkdir()
    (policy.workdir / "pkg" / "mod.py").write_text("mod")

    def pinned(cmd: str | list[str]) -> list[str]:
        return [p.target for p in pins_of(policy, "shell_exec", {"cmd": cmd})]

    assert pinned("python3 s.py data.txt") == ["s.py"]
    assert pinned("python3 -u -W ignore s.py") == ["s.py"]
    assert pinned("python3 -Wignore ./pkg/../s.py") == ["s.py"]
    assert pinned(["python3", "-uc", "exec(open('x.py').read())", "data.txt"]) == ["x.py"]
    assert pinned("python3 -m pkg.mod data.txt") == ["pkg/mod.py"]
    assert pinned("cat x.py | python3") == ["x.py"]
    assert pinned("cat data.txt | python3 s.py") == ["s.py"]
    assert pinned("cat s.py") == []  # no interpreter: nothing runs code from a file
