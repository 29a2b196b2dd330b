"""The one decision (``Approvals.decide``, DESIGN §12 and §14.4) and the launch limits.

Real SQLite (the store the policy lives in); the system-level attacks are in
tests/integration/test_rights.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.config import ApprovalsConfig
from aios.events import EventBus
from aios.runs.approvals import Approvals, Call
from aios.runs.rights import Acting, LaunchLimits, asked_by, check_launch, describe_ui_op
from aios.store import Store
from aios.store.runs import RunStore

SHELL = Call("shell_exec", "high")
UI = Call("ui_op", "high", "desktop.control")


@pytest.fixture
def approvals(tmp_path: Path) -> Iterator[Approvals]:
    store = Store(tmp_path / "aios.db")
    a = Approvals(RunStore(store), EventBus(), lambda: ApprovalsConfig(mode="smart"))
    grants = {
        "system_agent": frozenset({"desktop.control"}),
        "admin": frozenset({"desktop.control"}),
    }
    a.granted = lambda app: grants.get(app, frozenset())
    a.name = {"code": "Code", "evil": "Evil"}.get  # type: ignore[assignment]
    yield a
    store.close()


def allow_session(a: Approvals, sid: str, chain: list[str], tool: str) -> None:
    a._apply(  # what answering a card "allow for this session" in ``sid`` does
        {
            "id": "ia_x",
            "app": chain[-1],
            "session_id": sid,
            "steps": [
                {"tool": tool, "rule": "ask", **({"chain": chain} if len(chain) > 1 else {})}
            ],
        },
        "allow_session",
    )


def test_always_allow_for_the_child_does_not_cover_work_another_app_started(
    approvals: Approvals,
) -> None:
    approvals.set_policy("code", {"shell_exec": "allow"})
    assert approvals.decide("code", "s1", SHELL).rule == "allow"  # positive control
    got = approvals.decide("code", "s1", SHELL, chain=["evil"])
    assert got.rule == "ask" and "evil" in got.why, got
    approvals.set_policy("evil", {"shell_exec": "allow"})  # both allowed: the intersection is
    assert approvals.decide("code", "s1", SHELL, chain=["evil"]).rule == "allow"
    approvals.set_policy("evil", {"shell_exec": "never"})
    assert approvals.decide("code", "s1", SHELL, chain=["evil"]).rule == "never"


def test_permissions_are_intersected_along_the_chain(approvals: Approvals) -> None:
    assert approvals.decide("system_agent", "s1", UI).rule == "allow"
    got = approvals.decide("system_agent", "s1", UI, chain=["evil"])
    assert got.rule == "ask" and "not granted to evil" in got.why
    assert approvals.decide("system_agent", "s1", UI, chain=["admin"]).rule == "allow"
    assert approvals.decide("evil", "s1", UI).rule == "never"  # not its own grant either


def test_allow_for_session_is_keyed_by_session_and_chain(approvals: Approvals) -> None:
    allow_session(approvals, "s1", ["evil", "code"], "shell_exec")
    assert approvals.decide("code", "s1", SHELL, chain=["evil"]).rule == "allow"
    assert approvals.decide("code", "s2", SHELL, chain=["evil"]).rule == "ask"
    assert approvals.decide("code", "s1", SHELL).rule == "ask"  # code alone got nothing
    assert approvals.decide("code", "", SHELL, chain=["evil"]).rule == "ask"
    allow_session(approvals, "s1", ["evil", "system_agent"], "ui_op")
    assert approvals.decide("system_agent", "s1", UI, chain=["evil"]).rule == "allow"
    assert approvals.decide("system_agent", "s2", UI, chain=["evil"]).rule == "ask"
    # a persisted "ask" is not lifted by a session allow
    approvals.set_policy("evil", {"shell_exec": "ask"})
    assert approvals.decide("code", "s1", SHELL, chain=["evil"]).rule == "ask"


def test_no_session_allowance_without_a_session(approvals: Approvals) -> None:
    allow_session(approvals, "", ["evil"], "shell_exec")
    assert approvals.decide("evil", "", SHELL).rule == "ask"


def test_custom_tools_and_quiet_steps_need_nobody(approvals: Approvals) -> None:
    assert approvals.decide("code", "s1", Call("my_tool", None), chain=["evil"]).rule == "allow"
    assert approvals.decide("code", "s1", Call("file_read", "safe"), chain=["evil"]).rule == "allow"


@pytest.mark.parametrize(
    ("chain", "target", "launches", "words"),
    [
        (["a"], "a", 0, "cannot launch itself"),
        (["a", "b"], "a", 1, "a → b → a is a cycle"),
        (["a", "b", "c"], "b", 2, "is a cycle"),
        (["a", "b", "c", "d"], "e", 3, "too deep: 4 launches in one chain, at most 3"),
        (["a"], "b", 4, "at most 4 per run"),
    ],
)
def test_launches_over_the_limits_are_refused_naming_why(
    chain: list[str], target: str, launches: int, words: str
) -> None:
    why = check_launch(chain, target, launches, LaunchLimits(3, 4))
    assert why is not None and why.startswith("launch:") and words in why, why


def test_launches_within_the_limits_pass() -> None:
    assert check_launch(["a", "b", "c"], "d", 3, LaunchLimits(3, 4)) is None


def test_a_call_belongs_to_what_the_app_is_doing_not_to_what_it_claims() -> None:
    acting = Acting()
    assert acting.frame_for("code", "s1") is None
    with acting.frame("code", "s1", None):
        with acting.frame("code", "s2", None):
            assert acting.frame_for("code", "s1").session_id == "s1"  # type: ignore[union-attr]
            assert acting.frame_for("code", "s9").session_id in ("s1", "s2")  # type: ignore[union-attr]
            with acting.frame("code", "s2", None, ("evil",)):
                # launched work first, whatever session the app names
                frame = acting.frame_for("code", "s1")
                assert frame is not None and frame.chain == ("evil", "code")
    assert acting.frame_for("code", "s1") is None


def test_words_name_both_apps() -> None:
    names: dict[str, str] = {"code": "Code", "evil": "Evil", "x": "X"}
    assert asked_by(["evil", "code"], names.__getitem__) == "Code, asked by Evil"
    assert asked_by(["x", "evil", "code"], names.__getitem__) == "Code, asked by Evil for X"
    op: dict[str, Any] = {"op": "change_text", "id": "win_hello", "text": "系统设置"}
    assert describe_ui_op(op) == 'change_text win_hello to "系统设置"'
    assert describe_ui_op({"op": "hide", "id": "taskbar"}) == "hide taskbar"


def test_a_chains_card_carries_both_apps_and_the_steps_own_words(approvals: Approvals) -> None:
    """The card's words for launched work are the renderer's, in the UI's language: the
    step's text is the command alone; the chain and every app's names come as fields."""
    names = {"code": {"zh-CN": "代码", "en": "Code"}, "evil": {"zh-CN": "Evil", "en": "Evil"}}
    approvals.names = names.__getitem__
    review = approvals.review_call(
        "code", "s1", "step_1", "shell_exec", {"cmd": ["python3", "-c", "print(1)"]},
        chain=["evil"],
    )  # fmt: skip
    assert review.text == "python3 -c 'print(1)'" and review.chain == ("evil", "code")
    approvals._store.create_run("run_1", session_id="s1", app="code", kind="tool")
    ia = approvals.ask("run_1", "code", "s1", [review])
    card = ia.public()
    assert card["chain"] == ["evil", "code"] and card["on_behalf_of"] == ["evil"]
    assert card["chain_names"] == [names["evil"], names["code"]]
    (step,) = card["steps"]
    assert step["chain_names"] == [names["evil"], names["code"]]
    assert step["text"] == "python3 -c 'print(1)'"
    assert "allow_always" not in card["options"]
    # the stored card (what a listing after a reload reads) keeps both apps' names
    stored = approvals.pending()[0]
    assert stored["steps"][0]["chain_names"] == [names["evil"], names["code"]]
