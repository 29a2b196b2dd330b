"""Privacy by default between apps (DESIGN §14.8, issue 20 item 8).

Two real apps behind the real system: ``echo`` and a second echo, ``parrot``,
each answering with the context it received. What the user told ``echo``
(a bank card PIN) never reaches ``parrot`` in ``context.history_summary``;
``parrot`` sees its own turns. With ``conversation.read`` granted by the user
it sees the whole conversation, and after a revocation it no longer does.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.integration.conftest import SYSTEM_APPS, Running

SECRET = "银行卡密码 4711"


def apps_with_parrot(root: Path) -> Path:
    apps = root / "apps_privacy"
    shutil.copytree(SYSTEM_APPS / "echo", apps / "echo")
    shutil.copytree(SYSTEM_APPS / "echo", apps / "parrot")
    manifest = {
        "name": "Parrot",
        "entry": "main.py",
        "description": "repeats what it gets",
        "keywords": ["parrot", "鹦鹉"],
        "role_prompt": "You repeat what you get.",
        "permissions": ["conversation.read"],
    }
    (apps / "parrot" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return apps


def say(running: Running, text: str, sid: str | None) -> dict[str, Any]:
    out = running.instruct(text, sid)
    return out


def summary_seen(out: dict[str, Any], app: str) -> str:
    """The history_summary ``app`` received for the instruction ``out`` answers."""
    replies = [r.get("response") or {} for r in out.get("results", [])]
    for r in replies:
        ctx = (r.get("data") or {}).get("context")
        if isinstance(ctx, dict) and ctx.get("app") == app:
            return str(ctx["history_summary"])
    raise AssertionError(f"no reply of {app} in {json.dumps(out, ensure_ascii=False)[:500]}")


def test_an_app_never_sees_another_apps_turns_without_conversation_read(
    make_system: Callable[..., Running], tmp_path: Path
) -> None:
    running = make_system(apps_dir=apps_with_parrot(tmp_path))
    first = say(running, f"echo 帮我记一下：{SECRET}", None)
    sid = first["session_id"]
    summary_seen(first, "echo")
    said = say(running, "parrot hello", sid)
    seen = summary_seen(said, "parrot")
    assert "4711" not in seen and "银行卡" not in seen
    assert "echo" not in seen  # not even that the user talked to echo
    # positive control: parrot sees its own turn, echo sees its own secret
    again = say(running, "parrot once more", sid)
    assert "hello" in summary_seen(again, "parrot")
    assert "4711" not in summary_seen(again, "parrot")
    back = say(running, "echo what did I say", sid)
    assert "4711" in summary_seen(back, "echo")
    assert "parrot" not in summary_seen(back, "echo").lower()

    # the user grants parrot conversation.read: it sees the whole conversation
    r = running.post("/api/apps/parrot/permissions", {"grant": ["conversation.read"]})
    assert r.status_code == 200 and "conversation.read" in r.json()["permissions"]["granted"]
    granted = say(running, "parrot and now", sid)
    assert "4711" in summary_seen(granted, "parrot")
    # revoked: private again
    r = running.post("/api/apps/parrot/permissions", {"revoke": ["conversation.read"]})
    assert r.status_code == 200
    revoked = say(running, "parrot last", sid)
    assert "4711" not in summary_seen(revoked, "parrot")


def test_the_assistant_gets_conversation_read_as_a_revocable_default(
    make_system: Callable[..., Running],
) -> None:
    from aios.config import DEFAULT_GRANTS

    assert DEFAULT_GRANTS["assistant"] == [  # and §14.5, §15
        "conversation.read",
        "memory.read",
        "memory.write",
        "domains",
    ]
    manifest = json.loads(
        (Path(__file__).resolve().parents[2] / "apps" / "assistant" / "manifest.json").read_text(
            encoding="utf-8"
        )
    )
    assert manifest["permissions"] == ["conversation.read", "memory.read", "memory.write"]
