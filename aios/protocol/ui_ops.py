"""UI operations (spec §9.4): what a ``desktop.control`` app may ask the desktop to do."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from aios.errors import ProtocolError

# Spec §9.4: what a ``desktop.control`` app may ask the desktop to do. This is
# the one home of these rules: the system checks every op with them before it
# reaches the desktop (``System.apply_ui_ops``), apps check theirs through the
# SDK, and the renderer checks only what needs the screen (bounds, CSS colours,
# the DOM).

UI_ID_MAX = 128
"""Characters of an element id (``id``) and of a window id (``window``)."""
UI_TEXT_MAX = 200
"""Characters of a ``change_text`` text and of a ``change_color`` colour."""

_Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]
_Size = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0)]
# at least one non-blank character: a blank label is refused (the system-control
# app always refused it; the server used to accept "   ")
_Text = Annotated[str, Field(min_length=1, max_length=UI_TEXT_MAX, pattern=r"\S")]

_UI_FIELD_RULES: dict[str, str] = {
    "id": f"(the element id) is required, text of at most {UI_ID_MAX} characters",
    "window": f"must be a window id of at most {UI_ID_MAX} characters",
    "x": "must be a finite number",
    "y": "must be a finite number",
    "degrees": "must be a finite number",
    "width": "must be a positive finite number",
    "height": "must be a positive finite number",
    "color": f"must be text of 1-{UI_TEXT_MAX} characters",
    "text": f"must be text of 1-{UI_TEXT_MAX} characters, not blank",
}


class _UIOpBase(BaseModel):
    # extra fields are dropped, not refused: the desktop gets only what it knows
    model_config = ConfigDict(extra="ignore", defer_build=True)

    op: str
    id: str = Field(min_length=1, max_length=UI_ID_MAX)
    window: str | None = Field(default=None, max_length=UI_ID_MAX)
    """The window a ``btn_*`` id is looked up in; absent or empty: the whole desktop."""

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, v: Any) -> Any:
        return v if isinstance(v, str) and v else None


class MoveOp(_UIOpBase):
    op: Literal["move"]
    x: _Number
    y: _Number


class ResizeOp(_UIOpBase):
    op: Literal["resize"]
    width: _Size
    height: _Size


class HideOp(_UIOpBase):
    op: Literal["hide"]


class ShowOp(_UIOpBase):
    op: Literal["show"]


class ChangeColorOp(_UIOpBase):
    op: Literal["change_color"]
    color: _Text


class ChangeTextOp(_UIOpBase):
    op: Literal["change_text"]
    text: _Text


class RotateOp(_UIOpBase):
    op: Literal["rotate"]
    degrees: _Number


class UndoOp(BaseModel):
    """Take back the last change still applied (the system keeps the log of changes)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    op: Literal["undo"]


class ResetOp(BaseModel):
    """Take back every change, or every change of one element (``id``, ``window``)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    op: Literal["reset"]
    id: str | None = Field(default=None, min_length=1, max_length=UI_ID_MAX)
    window: str | None = Field(default=None, max_length=UI_ID_MAX)

    @field_validator("window", mode="before")
    @classmethod
    def _window(cls, v: Any) -> Any:
        return v if isinstance(v, str) and v else None


UIOp = Annotated[
    MoveOp
    | ResizeOp
    | HideOp
    | ShowOp
    | ChangeColorOp
    | ChangeTextOp
    | RotateOp
    | UndoOp
    | ResetOp,
    Field(discriminator="op"),
]
"""One UI operation (docs/protocol.md §6, ``POST /api/sys/ui``), told apart by ``op``."""

UI_CHANGES: tuple[str, ...] = (
    "move",
    "resize",
    "hide",
    "show",
    "change_color",
    "change_text",
    "rotate",
)
"""The ops that change an element, in a fixed order; the system keeps them in its log."""
UI_OPS: tuple[str, ...] = (*UI_CHANGES, "undo", "reset")
"""The ``op`` names of :data:`UIOp`: the changes, then ``undo`` and ``reset`` of the log."""


@functools.cache
def _ui_op_adapter() -> TypeAdapter[UIOp]:
    return TypeAdapter(UIOp)


def parse_ui_op(raw: Any) -> dict[str, Any]:
    """Check one UI operation; return it as the desktop gets it, or raise ProtocolError.

    The message is one line naming the operation and the field, e.g.
    ``resize: field 'width' must be a positive finite number (got -5)``.
    """
    if not isinstance(raw, dict):
        raise ProtocolError(f"a UI operation must be an object, got {type(raw).__name__}")
    name = raw.get("op")
    if name not in UI_OPS:
        raise ProtocolError(f"unknown UI operation {name!r} (known: {', '.join(UI_OPS)})")
    try:
        op = _ui_op_adapter().validate_python(raw)
    except ValidationError as e:
        field = str(e.errors()[0]["loc"][-1])
        got = f" (got {_short_repr(raw[field])})" if field in raw else ""
        rule = _UI_FIELD_RULES.get(field, "is invalid")
        raise ProtocolError(f"{name}: field {field!r} {rule}{got}") from e
    dumped: dict[str, Any] = op.model_dump(exclude_none=True)
    return dumped


def _short_repr(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
