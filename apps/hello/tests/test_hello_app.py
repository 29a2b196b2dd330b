"""Hello小AI's own tests, written as an app developer writes them: the SDK's fixtures only.

``aios_app`` runs the app folder above this file in-process against a temporary
workdir; ``aios_system`` starts the real system with it (aios_sdk/pytest_plugin.py).
Run them alone with ``pytest apps/hello/tests``.
"""

from __future__ import annotations

from aios_sdk.testing import AppHarness, RunningSystem


def test_greets_the_name_in_the_instruction(aios_app: AppHarness) -> None:
    reply = aios_app.instruct("hello 世界")
    assert reply["status"] == "ok" and reply["data"]["content"] == "你好，世界"
    assert [a["action_id"] for a in reply["actions"]] == ["again"]
    # the greeting was read through file_read, audited in the test's own database
    assert [row["tool"] for row in aios_app.audit()] == ["file_read"]


def test_again_repeats_the_last_greeting_in_english(aios_app: AppHarness) -> None:
    aios_app.instruct("hello Alice")
    reply = aios_app.action("again", locale="en")
    assert reply["data"]["content"] == "你好，Alice"  # the greeting file is Chinese
    assert reply["actions"][0]["label"] == "Say it again"


def test_a_missing_greeting_file_is_an_error_view_naming_it(aios_app: AppHarness) -> None:
    (aios_app.workdir / "greeting.txt").unlink()
    reply = aios_app.instruct("hello", locale="en")
    assert reply["status"] == "error" and reply["view_type"] == "error"
    assert "greeting.txt" in reply["message"]


def test_the_real_system_routes_an_instruction_to_hello(aios_system: RunningSystem) -> None:
    reply = aios_system.instruction("hello Bob")
    (result,) = reply["results"]
    assert result["app"] == "hello"
    assert result["response"]["data"]["content"] == "你好，Bob"
