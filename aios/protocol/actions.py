"""The ten controls an app's reply may carry (docs/protocol.md §4), told apart by ``type``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from aios.names import ACTION_ID_PATTERN
from aios.protocol.base import _Model, _Open

MAX_TEXT_ROWS = 60
"""Visible lines a multiline ``input`` may ask for (it scrolls beyond that)."""


OptionValue = str | int | float | bool


class Option(_Model):
    label: str
    value: OptionValue


class _ActionBase(_Open):
    label: str = ""
    action_id: str = Field(pattern=ACTION_ID_PATTERN)
    disabled: bool = False


class _OptionsAction(_ActionBase):
    options: list[OptionValue | Option] = Field(min_length=1)


BUTTON_VARIANTS = ("primary", "secondary", "danger")
"""A button's emphasis; only an explicit ``primary`` is drawn as the main action."""


def _variant(v: str | None) -> str | None:
    if v is not None and v not in BUTTON_VARIANTS:
        raise ValueError(f"variant {v!r} is not one of {', '.join(BUTTON_VARIANTS)}")
    return v


class ButtonAction(_ActionBase):
    type: Literal["button"]
    params: dict[str, Any] = Field(default_factory=dict)
    confirm: str | None = None
    """If set, the desktop asks this question before sending the action."""
    variant: str | None = Field(default=None, json_schema_extra={"enum": [*BUTTON_VARIANTS, None]})
    """``primary`` (the main action), ``secondary`` (the default look) or ``danger`` (red)."""

    _check_variant = field_validator("variant")(_variant)


class FormField(_Open):
    name: str = Field(min_length=1)
    label: str = ""
    type: Literal[
        "text",
        "number",
        "password",
        "textarea",
        "email",
        "url",
        "date",
        "time",
        "datetime",
        "select",
        "checkbox",
        "hidden",
    ] = "text"
    placeholder: str | None = None
    required: bool = False
    value: Any = None
    options: list[OptionValue | Option] | None = None
    monospace: bool = False
    """A ``textarea`` for code: a monospace font, and Tab indents (Escape, then Tab leaves)."""
    code: bool = False
    """An alias of ``monospace``."""


class SubmitFormAction(_ActionBase):
    type: Literal["submit_form"]
    fields: list[FormField] = Field(default_factory=list)
    variant: str | None = Field(default=None, json_schema_extra={"enum": [*BUTTON_VARIANTS, None]})
    """Like a button's; a submit_form is ``primary`` unless it says otherwise."""

    _check_variant = field_validator("variant")(_variant)


class SelectAction(_OptionsAction):
    type: Literal["select"]
    value: OptionValue | None = None


class CheckboxAction(_OptionsAction):
    type: Literal["checkbox"]
    value: list[OptionValue] = Field(default_factory=list)


class RadioAction(_OptionsAction):
    type: Literal["radio"]
    value: OptionValue | None = None


class InputAction(_ActionBase):
    type: Literal["input"]
    placeholder: str | None = None
    value: str = ""
    multiline: bool = False
    """A text area: Enter starts a new line, Ctrl+Enter (or the send button) sends."""
    monospace: bool = False
    """A monospace font; on a multiline input Tab indents (Escape, then Tab leaves)."""
    code: bool = False
    """``multiline`` and ``monospace`` at once (an editor)."""
    rows: int | None = Field(default=None, ge=1, le=MAX_TEXT_ROWS)
    """Visible lines of a multiline input."""


class LinkAction(_ActionBase):
    type: Literal["link"]
    href: str = Field(min_length=1)


class ToggleAction(_ActionBase):
    type: Literal["toggle"]
    value: bool = False


class SliderAction(_ActionBase):
    type: Literal["slider"]
    min: float = 0
    max: float = 100
    step: float = 1
    value: float | None = None

    @model_validator(mode="after")
    def _range(self) -> SliderAction:
        if self.max <= self.min:
            raise ValueError(f"slider max ({self.max}) must be greater than min ({self.min})")
        if self.step <= 0:
            raise ValueError(f"slider step must be positive (got {self.step})")
        if self.value is not None and not self.min <= self.value <= self.max:
            raise ValueError(f"slider value {self.value} is outside [{self.min}, {self.max}]")
        return self


class DatetimeAction(_ActionBase):
    type: Literal["datetime"]
    mode: Literal["datetime", "date", "time"] = "datetime"
    value: str | None = None


Action = Annotated[
    ButtonAction
    | SubmitFormAction
    | SelectAction
    | CheckboxAction
    | RadioAction
    | InputAction
    | LinkAction
    | ToggleAction
    | SliderAction
    | DatetimeAction,
    Field(discriminator="type"),
]
