"""The wire protocol between the desktop, the system and the apps (docs/protocol.md).

Every message that crosses a process boundary is one of these pydantic
models. ``data`` stays opaque: the system stores and forwards it, it never
interprets it. The JSON Schemas in ``aios/protocol/schemas/`` are
generated from these models (``python -m aios.protocol``) for third-party
developers and for jsonschema users; a test fails when they drift.

One module per kind of message: :mod:`~aios.protocol.replies` (a reply, its steps and
tool results, the context and requests an app gets), :mod:`~aios.protocol.actions` (the
ten controls), :mod:`~aios.protocol.manifest`, :mod:`~aios.protocol.ui_ops` and
:mod:`~aios.protocol.schemas`. This package re-exports their public names:
``from aios.protocol import Step`` is the import apps, the SDK and the docs use.
"""

from __future__ import annotations

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
from aios.protocol.actions import (
    BUTTON_VARIANTS as BUTTON_VARIANTS,
    MAX_TEXT_ROWS as MAX_TEXT_ROWS,
    Action as Action,
    ButtonAction as ButtonAction,
    CheckboxAction as CheckboxAction,
    DatetimeAction as DatetimeAction,
    FormField as FormField,
    InputAction as InputAction,
    LinkAction as LinkAction,
    Option as Option,
    OptionValue as OptionValue,
    RadioAction as RadioAction,
    SelectAction as SelectAction,
    SliderAction as SliderAction,
    SubmitFormAction as SubmitFormAction,
    ToggleAction as ToggleAction,
)
from aios.protocol.base import (
    describe_validation_error as describe_validation_error,
)
from aios.protocol.manifest import (
    DEFAULT_LOCALE as DEFAULT_LOCALE,
    ICON_IMAGE_SUFFIXES as ICON_IMAGE_SUFFIXES,
    LOCALES as LOCALES,
    MANIFEST_AUTHOR_MAX as MANIFEST_AUTHOR_MAX,
    MANIFEST_DESCRIPTION_MAX as MANIFEST_DESCRIPTION_MAX,
    MANIFEST_EXAMPLE_MAX as MANIFEST_EXAMPLE_MAX,
    MANIFEST_EXAMPLES_MAX as MANIFEST_EXAMPLES_MAX,
    MANIFEST_ICON_MAX as MANIFEST_ICON_MAX,
    MANIFEST_KEYWORD_MAX as MANIFEST_KEYWORD_MAX,
    MANIFEST_KEYWORDS_MAX as MANIFEST_KEYWORDS_MAX,
    MANIFEST_NAME_MAX as MANIFEST_NAME_MAX,
    MANIFEST_VERSION_MAX as MANIFEST_VERSION_MAX,
    MAX_ICON_TEXT as MAX_ICON_TEXT,
    PERMISSIONS as PERMISSIONS,
    Locale as Locale,
    Manifest as Manifest,
    Permission as Permission,
    icon_file as icon_file,
    parse_manifest as parse_manifest,
)
from aios.protocol.replies import (
    SYSTEM_REPLY_FIELDS as SYSTEM_REPLY_FIELDS,
    ActionRequest as ActionRequest,
    AgentResponse as AgentResponse,
    Context as Context,
    HandleRequest as HandleRequest,
    Step as Step,
    ToolResult as ToolResult,
    forwardable_reply as forwardable_reply,
    parse_action_request as parse_action_request,
    parse_response as parse_response,
    parse_steps as parse_steps,
    without_system_fields as without_system_fields,
)
from aios.protocol.schemas import (
    SCHEMA_DIR as SCHEMA_DIR,
    generate_schemas as generate_schemas,
    schema_models as schema_models,
    write_schemas as write_schemas,
)
from aios.protocol.ui_ops import (
    UI_CHANGES as UI_CHANGES,
    UI_ID_MAX as UI_ID_MAX,
    UI_OPS as UI_OPS,
    UI_TEXT_MAX as UI_TEXT_MAX,
    ChangeColorOp as ChangeColorOp,
    ChangeTextOp as ChangeTextOp,
    HideOp as HideOp,
    MoveOp as MoveOp,
    ResetOp as ResetOp,
    ResizeOp as ResizeOp,
    RotateOp as RotateOp,
    ShowOp as ShowOp,
    UIOp as UIOp,
    UndoOp as UndoOp,
    parse_ui_op as parse_ui_op,
)
