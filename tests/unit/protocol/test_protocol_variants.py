"""Button variants and code inputs in the protocol (docs/renderer.md, "Variants")."""

from __future__ import annotations

from typing import Any

import pytest

from aios.errors import ProtocolError
from aios.protocol import parse_response


def reply(*actions: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ok", "view_type": "text", "data": {"content": "x"}, "actions": list(actions)}


def test_the_three_variants_and_code_inputs_are_accepted() -> None:
    parsed = parse_response(
        reply(
            *(
                {"type": "button", "action_id": f"b_{v}", "variant": v}
                for v in ("primary", "secondary", "danger")
            ),
            {"type": "submit_form", "action_id": "save", "variant": "secondary"},
            {"type": "input", "action_id": "code", "code": True, "rows": 12},
        )
    )
    assert len(parsed.actions) == 5


@pytest.mark.parametrize(
    ("action", "needle"),
    [
        ({"type": "button", "action_id": "rm", "variant": "red"}, "variant 'red' is not one of"),
        ({"type": "submit_form", "action_id": "s", "variant": "big"}, "variant 'big'"),
        ({"type": "input", "action_id": "c", "code": True, "rows": 0}, "rows"),
    ],
)
def test_a_bad_variant_or_row_count_is_one_line_naming_it(
    action: dict[str, Any], needle: str
) -> None:
    with pytest.raises(ProtocolError) as err:
        parse_response(reply(action))
    text = str(err.value)
    assert needle in text and "actions.0" in text and "\n" not in text
