"""UI operations (spec §9.4) have one set of rules: ``parse_ui_op`` in aios.protocol,
exported by the SDK, used by the server and the system-control app."""

from __future__ import annotations

from typing import Any

import pytest

import aios_sdk
from aios.errors import ProtocolError
from aios.protocol import UI_OPS, parse_ui_op


@pytest.mark.parametrize(
    ("op", "needle"),
    [
        ("hide the clock", "must be an object"),
        ({"op": "explode", "id": "clock"}, "unknown UI operation 'explode'"),
        ({"op": "hide"}, "hide: field 'id'"),
        ({"op": "hide", "id": "x" * 129}, "hide: field 'id'"),
        ({"op": "move", "id": "clock", "x": "left", "y": 0}, "move: field 'x' must be a finite"),
        ({"op": "move", "id": "clock", "x": 1}, "move: field 'y'"),
        ({"op": "move", "id": "clock", "x": float("nan"), "y": 0}, "field 'x'"),
        ({"op": "move", "id": "clock", "x": True, "y": 0}, "field 'x'"),
        (
            {"op": "resize", "id": "clock", "width": -5, "height": 9},
            "field 'width' must be a positive",
        ),
        ({"op": "resize", "id": "clock", "width": 5, "height": 0}, "field 'height'"),
        ({"op": "change_color", "id": "clock"}, "change_color: field 'color'"),
        ({"op": "change_color", "id": "clock", "color": "r" * 201}, "field 'color'"),
        ({"op": "change_text", "id": "clock", "text": ""}, "change_text: field 'text'"),
        ({"op": "change_text", "id": "clock", "text": "   "}, "not blank"),
        ({"op": "rotate", "id": "clock", "degrees": "45"}, "rotate: field 'degrees'"),
    ],
)
def test_each_malformed_op_is_refused_naming_the_field(op: Any, needle: str) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_ui_op(op)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_a_good_op_keeps_only_what_the_desktop_knows() -> None:
    assert parse_ui_op(
        {"op": "move", "id": "clock", "x": 20, "y": 5, "extra": 1, "window": ""}
    ) == {"op": "move", "id": "clock", "x": 20, "y": 5}
    assert parse_ui_op(
        {"op": "change_text", "id": "btn_a", "window": "gallery", "text": "Press"}
    ) == {"op": "change_text", "id": "btn_a", "window": "gallery", "text": "Press"}
    assert set(UI_OPS) == {
        "move",
        "resize",
        "hide",
        "show",
        "change_color",
        "change_text",
        "rotate",
        "undo",
        "reset",
    }


def test_the_sdk_exports_the_same_rules() -> None:
    assert aios_sdk.parse_ui_op is parse_ui_op
    from aios.protocol import UIOp

    assert aios_sdk.UIOp is UIOp
