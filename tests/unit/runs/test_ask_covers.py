"""A confirm that covers calls (``ask`` with ``covers``): what it accepts, and the key
a yes is remembered by (the gate allows exactly that call, once; see test_files.py)."""

from __future__ import annotations

from typing import Any

import pytest

from aios.errors import BadRequest
from aios.runs.gate import covered_key
from aios.runs.interactions import ASK_COVERS_MAX, check_covers

RM = {"tool": "shell_exec", "args": {"cmd": ["python3", "-c", "...", "a.txt"]}}


def test_a_confirm_covers_the_calls_it_lists() -> None:
    assert check_covers({"kind": "confirm", "prompt": "?"}) == []
    assert check_covers({"kind": "confirm", "prompt": "?", "covers": [RM]}) == [
        ("shell_exec", RM["args"])
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"kind": "choice", "covers": [RM]}, "only a confirm"),
        ({"kind": "confirm", "covers": []}, "1 to"),
        ({"kind": "confirm", "covers": RM}, "a list"),
        ({"kind": "confirm", "covers": [RM] * (ASK_COVERS_MAX + 1)}, f"{ASK_COVERS_MAX} steps"),
        ({"kind": "confirm", "covers": [{"tool": "my_tool", "args": {}}]}, "atomic tool"),
        ({"kind": "confirm", "covers": [{"tool": "shell_exec", "args": "rm -rf"}]}, "args"),
    ],
)
def test_bad_covers_are_refused_naming_why(args: dict[str, Any], needle: str) -> None:
    with pytest.raises(BadRequest, match=needle):
        check_covers(args)


def test_the_key_is_the_exact_call() -> None:
    args = {"cmd": ["rm", "a"], "cwd": "x"}
    assert covered_key("shell_exec", args) == covered_key(
        "shell_exec", dict(reversed(args.items()))
    )
    assert covered_key("shell_exec", args) != covered_key("shell_exec", {"cmd": ["rm", "b"]})
    assert covered_key("shell_exec", args) != covered_key("process_start", args)
