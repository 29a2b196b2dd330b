"""The view builders make what the system and the renderer accept, and refuse what they don't."""

from __future__ import annotations

from typing import Any

import pytest

from aios.protocol import parse_response
from aios.protocol.actions import FormField
from aios_sdk import form_view, list_view, table_view, text_view

BUTTON = {"type": "button", "label": "Back", "action_id": "home"}


def accepted(reply: dict[str, Any]) -> dict[str, Any]:
    """The system's own checks: the reply as a whole, and a form's fields as a submit_form's."""
    parse_response(reply)
    if reply["view_type"] == "form":
        for field in reply["data"]["fields"]:
            FormField.model_validate(field)
    return reply


def test_list_view() -> None:
    reply = accepted(
        list_view(
            ["plain", {"title": "七里香", "sub": "周杰伦", "id": 1}],
            title="Songs",
            empty="No songs",
            actions=[BUTTON],
            state={"q": "x"},
        )
    )
    assert reply["view_type"] == "list" and reply["message"] == "Songs"
    assert reply["data"] == {
        "title": "Songs",
        "items": ["plain", {"title": "七里香", "sub": "周杰伦", "id": 1}],
        "empty": "No songs",
    }
    assert reply["state"] == {"q": "x"} and reply["actions"] == [BUTTON]
    with pytest.raises(ValueError, match="item 1 must be a text or a dict"):
        list_view(["ok", 3])  # type: ignore[list-item]


def test_table_view() -> None:
    reply = accepted(
        table_view(
            ["Name", {"key": "cpu", "label": "CPU", "align": "right"}],
            [("python", "3%"), {"Name": "sh", "cpu": "0%"}],
            title="Processes",
            message="2 processes",
            row_ids=[1, 2],
        )
    )
    assert reply["data"]["rows"] == [["python", "3%"], {"Name": "sh", "cpu": "0%"}]
    assert reply["data"]["row_ids"] == [1, 2] and reply["message"] == "2 processes"
    with pytest.raises(ValueError, match="row 0 has 1 values for 2 columns"):
        table_view(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="column 0 must be a text or a dict with a key"):
        table_view([{"label": "no key"}], [])


def test_form_view() -> None:
    reply = accepted(
        form_view(
            [
                {"name": "title", "label": "Title", "type": "text", "required": True},
                {"name": "tag", "label": "Tag", "type": "select", "options": ["a", "b"]},
            ],
            submit={"action_id": "add", "label": "Add"},
            title="New note",
            description="A note",
        )
    )
    assert reply["actions"] == [{"type": "submit_form", "action_id": "add", "label": "Add"}]
    assert reply["data"]["description"] == "A note" and len(reply["data"]["fields"]) == 2
    with pytest.raises(ValueError, match="form_view field 0"):
        form_view([{"name": "x", "type": "colour"}])
    with pytest.raises(ValueError, match="form_view field 0"):
        form_view([{"label": "no name"}])


def test_text_view_is_unchanged() -> None:
    assert accepted(text_view("hi", title="T"))["data"] == {"title": "T", "content": "hi"}
