# Longer than ~500 lines on purpose: every wire model in one module, so aios/protocol/schemas/ is
# generated from one place and the drift test has one source.
"""The wire protocol between the desktop, the system and the apps (docs/protocol.md).

Every message that crosses a process boundary is one of these pydantic
models. ``data`` stays opaque: the system stores and forwards it, it never
interprets it. The JSON Schemas in ``aios/protocol/schemas/`` are
generated from these models (``python -m aios.protocol``) for third-party
developers and for jsonschema users; a test fails when they drift.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from aios.errors import ProtocolError
from aios.names import (  # re-exported ("X as X"): the protocol's vocabulary
    ACTION_ID_PATTERN as ACTION_ID_PATTERN,
    ACTION_TYPES as ACTION_TYPES,
    ATOMIC_TOOLS as ATOMIC_TOOLS,
    SYSTEM_VIEW_TYPES as SYSTEM_VIEW_TYPES,
    TOOL_NAME_PATTERN as TOOL_NAME_PATTERN,
    VIEW_TYPES as VIEW_TYPES,
    ViewType as ViewType,
    error_response as error_response,
)
from aios.protocol.outbound import DOMAINS_MAX, BadDestination, check_domain

_M = TypeVar("_M", bound=BaseModel)

_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)
_ICON_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
ICON_IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg", ".gif", ".webp")
MAX_ICON_TEXT = 8
"""Code points of a text icon: an emoji with its modifiers, not a sentence."""
MAX_TEXT_ROWS = 60
"""Visible lines a multiline ``input`` may ask for (it scrolls beyond that)."""


def icon_file(icon: str) -> str | None:
    """The relative image path a manifest's ``icon`` names, or None when it names none."""
    p = Path(icon)
    if (
        icon
        and p.suffix.lower() in ICON_IMAGE_SUFFIXES
        and not p.is_absolute()
        and ".." not in p.parts
        and "\\" not in icon
        and ":" not in icon
    ):
        return icon
    return None


# defer_build: an app process imports these models but validates few of them;
# building every validator at import would add ~0.1 s to each app's start.
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class _Open(BaseModel):
    """A message that tolerates extra fields (forward compatible)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


# --------------------------------------------------------------------- actions

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

# ----------------------------------------------------------------------- steps


class Step(_Model):
    step_id: int | str
    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    args: dict[str, Any] = Field(default_factory=dict)
    on_error: Literal["stop", "continue"] = "stop"
    timeout: float | None = Field(default=None, gt=0)
    """Seconds; never more than the tool's configured timeout."""

    @field_validator("step_id")
    @classmethod
    def _step_id(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 0:
            raise ValueError(f"step_id must not be negative (got {v})")
        if isinstance(v, str) and not _TOOL_NAME.match(v) and not v.isdigit():
            raise ValueError(f"step_id must be a number or an identifier (got {v!r})")
        return v

    @property
    def key(self) -> str:
        """The name this step's result has in ``tool_results`` and templates."""
        return f"step_{self.step_id}"


def _unique_steps(steps: list[Step]) -> list[Step]:
    seen: set[str] = set()
    for step in steps:
        if step.key in seen:
            raise ValueError(f"step_id {step.step_id!r} is used twice")
        seen.add(step.key)
    return steps


# -------------------------------------------------------------------- replies


class AgentResponse(_Open):
    """What an app's ``handle`` returns (docs/protocol.md §2)."""

    status: Literal["ok", "error"]
    """Required: a reply that leaves it out is invalid, never assumed ``ok``."""
    view_type: ViewType
    data: Any = Field(default_factory=dict)
    actions: list[Action] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    message: str | None = None

    @field_validator("steps")
    @classmethod
    def _steps(cls, v: list[Step]) -> list[Step]:
        return _unique_steps(v)


class ToolResult(_Model):
    """One entry of ``context.tool_results`` (DESIGN §5)."""

    tool: str
    status: Literal["ok", "error"]
    result: Any = None
    error: str | None = None
    meta: dict[str, Any] | None = None
    duration_ms: float = 0.0
    code: Literal["denied", "expired", "cancelled"] | None = None
    """Why a step did not run or was stopped by the user (DESIGN §12)."""


class ActionRequest(_Open):
    """What the desktop forwards when a control fires (docs/protocol.md §3)."""

    action_id: str = Field(pattern=ACTION_ID_PATTERN)
    params: dict[str, Any] | None = None
    form_values: dict[str, Any] | None = None
    selected: OptionValue | None = None
    checked: list[OptionValue] | None = None
    value: Any = None
    href: str | None = None
    on: bool | None = None


class Context(_Open):
    """What the system injects before each call (docs/app-guide.md §2)."""

    app: str = ""
    role: str = ""
    workdir: str = ""
    cwd_state: dict[str, Any] = Field(default_factory=dict)
    available_tools: list[str] = Field(default_factory=list)
    session_id: str | None = None
    history_summary: str = ""
    tool_results: dict[str, ToolResult] = Field(default_factory=dict)
    upstream: dict[str, Any] = Field(default_factory=dict)
    locale: str = "zh-CN"


class HandleRequest(_Open):
    """The body POSTed to an app's handle endpoint (DESIGN §5)."""

    instruction: str | None = None
    context: Context = Field(default_factory=Context)
    action_request: ActionRequest | None = None
    session_id: str | None = None


# ------------------------------------------------------------------- manifest


# Caps on the manifest's text fields: what the desktop shows (taskbar, start menu,
# window titles) must fit there, and a name or icon may not be a page of text.
MANIFEST_NAME_MAX = 64
MANIFEST_DESCRIPTION_MAX = 500
MANIFEST_ICON_MAX = 200
MANIFEST_AUTHOR_MAX = 100
MANIFEST_VERSION_MAX = 40
MANIFEST_KEYWORD_MAX = 40
MANIFEST_KEYWORDS_MAX = 100
MANIFEST_EXAMPLE_MAX = 100
MANIFEST_EXAMPLES_MAX = 8


Permission = Literal["conversation.read", "desktop.control", "network", "system.processes"]
"""What a manifest may request (DESIGN §11.7): the whole conversation in
``history_summary`` (other apps' turns too, §14.8), UI operations, direct outside
network, the host's process list (served read-only by the system)."""
PERMISSIONS: tuple[str, ...] = get_args(Permission)

Locale = Literal["zh-CN", "en"]
"""A UI language (``config.language``): the keys of a manifest's per-locale texts."""
LOCALES: tuple[str, ...] = get_args(Locale)
DEFAULT_LOCALE = "zh-CN"
"""The locale of a text given as a plain string, and the fallback of a missing one."""
_LOCALE_SUFFIXES = {"en": "_en", "zh-CN": "_zh"}
"""``name_en`` / ``description_en`` / ``examples_en``: the flat spelling of one locale."""


def _per_locale(value: Any, field: str, check: Any) -> dict[str, Any]:
    """``value`` (one text, or ``{locale: text}``) as ``{locale: text}``; ValueError naming why."""
    if not isinstance(value, dict):
        return {DEFAULT_LOCALE: check(value)}
    out: dict[str, Any] = {}
    for key, text in value.items():
        if key not in LOCALES:
            raise ValueError(
                f"unknown locale {key!r} in {field}: use {' or '.join(map(repr, LOCALES))}"
            )
        out[key] = check(text, key)
    if not out:
        raise ValueError(f"{field} has no text: give at least one of {', '.join(LOCALES)}")
    return out


def _text_check(field: str, max_len: int, *, required: bool) -> Any:
    def check(v: Any, locale: str = DEFAULT_LOCALE) -> str:
        if not isinstance(v, str):
            raise ValueError(
                f"{field} must be a string or an object of locale -> string "
                f'({{"zh-CN": "...", "en": "..."}}), got {type(v).__name__}'
            )
        if required and not v.strip():
            raise ValueError(f"{field} ({locale}) is empty")
        if len(v) > max_len:
            raise ValueError(f"{field} ({locale}) is longer than {max_len} characters")
        return v

    return check


def _examples_check(v: Any, locale: str = DEFAULT_LOCALE) -> list[str]:
    if not isinstance(v, list):
        raise ValueError(
            "examples must be a list of strings or an object of locale -> list of strings, "
            f"got {type(v).__name__}"
        )
    if not all(isinstance(x, str) and x.strip() for x in v):
        raise ValueError(f"examples ({locale}) must be non-empty strings")
    if len(v) > MANIFEST_EXAMPLES_MAX or any(len(x) > MANIFEST_EXAMPLE_MAX for x in v):
        raise ValueError(
            f"examples ({locale}): at most {MANIFEST_EXAMPLES_MAX}, each at most "
            f"{MANIFEST_EXAMPLE_MAX} characters"
        )
    return list(v)


_CHECKS: dict[str, Any] = {
    "name": _text_check("name", MANIFEST_NAME_MAX, required=True),
    "description": _text_check("description", MANIFEST_DESCRIPTION_MAX, required=False),
    "examples": _examples_check,
}
"""The per-locale fields of a manifest, and how one locale's value is checked."""
_NameText = Annotated[str, Field(min_length=1, max_length=MANIFEST_NAME_MAX)]
_DescriptionText = Annotated[str, Field(max_length=MANIFEST_DESCRIPTION_MAX)]
_Examples = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MANIFEST_EXAMPLE_MAX)]],
    Field(max_length=MANIFEST_EXAMPLES_MAX),
]


class Manifest(_Open):
    """``apps/<id>/manifest.json`` (docs/app-guide.md §8)."""

    # name, description and examples: one value (zh-CN) or one per locale (DESIGN §3); the
    # flat name_en / description_en / examples_en are folded in. After validation each holds
    # {locale: value}: read them with name_in / description_in / examples_in.
    names_given: _NameText | dict[Locale, _NameText] = Field(alias="name")
    entry: str = Field(min_length=1)
    role_prompt: str | None = None
    icon: str = Field(default="", max_length=MANIFEST_ICON_MAX)
    """A Lucide icon name from renderer/vendor/lucide ("music"), an image file in the app
    folder ("icon.png") or a short text such as an emoji; empty: the app's initial."""
    descriptions_given: _DescriptionText | dict[Locale, _DescriptionText] = Field(
        default="", alias="description"
    )
    examples_given: _Examples | dict[Locale, _Examples] = Field(
        default_factory=list, alias="examples"
    )
    """Sample instructions shown to the user (help, start menu): one list or one per locale."""
    author: str = Field(default="", max_length=MANIFEST_AUTHOR_MAX)
    version: str = Field(default="", max_length=MANIFEST_VERSION_MAX)
    workdir: str = "workspace"
    port: int | None = Field(default=None, ge=1024, le=65535)
    handle_endpoint: str = "/handle"
    keywords: list[Annotated[str, Field(max_length=MANIFEST_KEYWORD_MAX)]] = Field(
        default_factory=list, max_length=MANIFEST_KEYWORDS_MAX
    )
    shell_whitelist: list[str] | None = None
    http_domain_whitelist: list[str] | None = None
    permissions: list[Permission] = Field(default_factory=list)
    """Requests (DESIGN §11.7): each takes effect once the user granted it."""
    domains: list[str] = Field(default_factory=list, max_length=DOMAINS_MAX)
    """Outbound destinations the app asks for (DESIGN §14.5): requests the user grants
    (``domain:<host>`` beside the permissions); each covers its subdomains."""

    @field_validator("domains")
    @classmethod
    def _domains(cls, v: list[str]) -> list[str]:
        try:
            return list(dict.fromkeys(check_domain(d) for d in v))
        except BadDestination as e:
            raise ValueError(str(e)) from e

    @model_validator(mode="before")
    @classmethod
    def _flat_locales(cls, raw: Any) -> Any:
        """Fold ``name_en`` (and the like) into ``name``: ``{"zh-CN": name, "en": name_en}``."""
        if not isinstance(raw, dict):
            return raw
        raw = dict(raw)
        for field in _CHECKS:
            flat = {
                loc: raw.pop(field + suffix)
                for loc, suffix in _LOCALE_SUFFIXES.items()
                if field + suffix in raw
            }
            if flat:
                given = raw.get(field)
                base = given if isinstance(given, dict) else {}
                if field in raw and not isinstance(given, dict):
                    base = {DEFAULT_LOCALE: given}
                raw[field] = {**base, **flat}
        return raw

    @field_validator("names_given", "descriptions_given", "examples_given", mode="before")
    @classmethod
    def _locales(cls, v: Any, info: ValidationInfo) -> dict[str, Any]:
        field = (info.field_name or "").removesuffix("_given")
        field = {"names": "name", "descriptions": "description"}.get(field, field)
        return _per_locale(v, field, _CHECKS[field])

    @staticmethod
    def _in(given: Any, locale: str | None) -> Any:
        if not isinstance(given, dict):
            return given
        for loc in (locale, DEFAULT_LOCALE, *LOCALES):
            if loc in given and given[loc]:
                return given[loc]
        return next(iter(given.values()), None)

    @property
    def name(self) -> str:
        """The name in the default locale (zh-CN), else the one given."""
        return self.name_in(DEFAULT_LOCALE)

    @property
    def description(self) -> str:
        return self.description_in(DEFAULT_LOCALE)

    def name_in(self, locale: str | None) -> str:
        """The name in ``locale``; a locale not given falls back to zh-CN, then to any."""
        return str(self._in(self.names_given, locale) or "")

    def description_in(self, locale: str | None) -> str:
        return str(self._in(self.descriptions_given, locale) or "")

    def examples_in(self, locale: str | None) -> list[str]:
        return list(self._in(self.examples_given, locale) or [])

    @property
    def names(self) -> dict[str, str]:
        """Every locale's name, each falling back as :meth:`name_in` does."""
        return {loc: self.name_in(loc) for loc in LOCALES}

    @property
    def descriptions(self) -> dict[str, str]:
        return {loc: self.description_in(loc) for loc in LOCALES}

    @property
    def examples(self) -> dict[str, list[str]]:
        return {loc: self.examples_in(loc) for loc in LOCALES}

    @field_validator("entry", "workdir")
    @classmethod
    def _relative(cls, v: str) -> str:
        p = Path(v)
        if p.is_absolute() or ".." in p.parts:
            raise ValueError(f"must be a path inside the app folder (got {v!r})")
        return v

    @field_validator("icon")
    @classmethod
    def _icon(cls, v: str) -> str:
        v = v.strip()
        if not v or _ICON_NAME.match(v) or icon_file(v) is not None:
            return v
        looks_like_path = "/" in v or "\\" in v or "." in v
        if (
            not looks_like_path
            and len(v) <= MAX_ICON_TEXT
            and v.isprintable()
            and not any(c.isspace() for c in v)
        ):
            return v
        raise ValueError(
            f"must be an icon name such as 'music', an image file inside the app folder "
            f"({', '.join(ICON_IMAGE_SUFFIXES)}) or an emoji of at most {MAX_ICON_TEXT} "
            f"characters (got {v!r})"
        )

    @field_validator("handle_endpoint")
    @classmethod
    def _endpoint(cls, v: str) -> str:
        if not v.startswith("/") or any(c in v for c in "?# "):
            raise ValueError(f"must be a path starting with '/' (got {v!r})")
        return v


# ------------------------------------------------------------ UI operations
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


# ---------------------------------------------------------------- validation


def describe_validation_error(err: ValidationError) -> str:
    """One line per problem, each naming the field path."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(message)"
        lines.append(f"{loc}: {e['msg']}")
    return "; ".join(lines)


def _parse(model: type[_M], payload: Any, what: str) -> _M:
    try:
        return model.model_validate(payload)
    except ValidationError as e:
        raise ProtocolError(f"invalid {what}: {describe_validation_error(e)}") from e


def parse_response(payload: Any) -> AgentResponse:
    """Validate an app's reply; raises ProtocolError naming each bad field."""
    return _parse(AgentResponse, payload, "reply")


SYSTEM_REPLY_FIELDS: frozenset[str] = frozenset(
    {
        # a run's own fields: the cards of a paused run are drawn from these (DESIGN §12)
        "pending",
        "run_id",
        "interaction",
        "interactions",
        "answer",
        "cancelled",
        "resume",
        # the envelope of an entry point's reply and of the events that carry a view
        "app",
        "apps",
        "session_id",
        "results",
        "plan",
        "interim",
        "pushed",
        "type",
        "seq",
        "epoch",
        # a system intent's answer: its desktop operations and chips (aios/control/intents.py)
        "source",
        "intent",
        "suggestions",
        "desktop",
    }
)
"""Fields only the system may set on a reply (DESIGN §14.3): an app's reply or push never
carries them on. ``state`` is not one: it is the app's own stored state (docs/protocol.md
§2); the ``state`` of a waiting run is set by the system on its own reply's envelope."""


def without_system_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """An app's reply or push with every field only the system may set taken out.

    The one place (DESIGN §14.3): everything an app sends the desktop passes here before
    anything else sees it; the system adds its own fields afterwards.
    """
    return {k: v for k, v in payload.items() if k not in SYSTEM_REPLY_FIELDS}


def forwardable_reply(payload: Any) -> dict[str, Any]:
    """Validate an app's reply and return what the system forwards: the app's own JSON.

    The models only judge the reply. Re-serialising it from them would add
    defaults the app never sent (a form field gaining ``"required": false``)
    and reorder keys, so ``data``, ``actions`` and every other field go on
    exactly as sent; only an absent ``data`` / ``actions`` / ``steps`` is filled
    with its empty default, and the fields only the system may set
    (:data:`SYSTEM_REPLY_FIELDS`) are dropped. Raises ProtocolError naming each
    bad field.
    """
    parse_response(payload)
    reply = without_system_fields(payload)
    reply.setdefault("data", {})
    reply.setdefault("actions", [])
    reply.setdefault("steps", [])
    return reply


def parse_action_request(payload: Any) -> ActionRequest:
    return _parse(ActionRequest, payload, "action_request")


def parse_manifest(payload: Any) -> Manifest:
    return _parse(Manifest, payload, "manifest")


@functools.cache
def _steps_adapter() -> TypeAdapter[list[Step]]:
    return TypeAdapter(list[Step])


def parse_steps(payload: Any) -> list[Step]:
    try:
        return _unique_steps(_steps_adapter().validate_python(payload))
    except ValidationError as e:
        raise ProtocolError(f"invalid steps: {describe_validation_error(e)}") from e
    except ValueError as e:
        raise ProtocolError(f"invalid steps: {e}") from e


# -------------------------------------------------------------------- schemas

SCHEMA_DIR = Path(__file__).with_name("schemas")


def schema_models() -> dict[str, Any]:
    """Schema name -> model (or TypeAdapter), in file order."""
    return {
        "manifest": Manifest,
        "agent_response": AgentResponse,
        "action": TypeAdapter(Action),
        "action_request": ActionRequest,
        "step": Step,
        "context": Context,
        "handle_request": HandleRequest,
        "tool_result": ToolResult,
        "ui_op": TypeAdapter(UIOp),
    }


def generate_schemas() -> dict[str, str]:
    """Schema file name -> JSON text, exactly as checked in."""
    out = {}
    for name, model in schema_models().items():
        schema = (
            model.json_schema() if isinstance(model, TypeAdapter) else model.model_json_schema()
        )
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"{name}.schema.json",
            **schema,
        }
        out[f"{name}.schema.json"] = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    return out


def write_schemas(directory: Path = SCHEMA_DIR) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for fname, text in generate_schemas().items():
        (directory / fname).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write_schemas()
    print(f"wrote {len(schema_models())} schemas to {SCHEMA_DIR}")
