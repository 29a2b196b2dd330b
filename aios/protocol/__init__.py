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

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:  # the names below load on first use: an app needs none of them to start
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

_HOMES: dict[str, str] = {
    "BUTTON_VARIANTS": "actions",
    "MAX_TEXT_ROWS": "actions",
    "Action": "actions",
    "ButtonAction": "actions",
    "CheckboxAction": "actions",
    "DatetimeAction": "actions",
    "FormField": "actions",
    "InputAction": "actions",
    "LinkAction": "actions",
    "Option": "actions",
    "OptionValue": "actions",
    "RadioAction": "actions",
    "SelectAction": "actions",
    "SliderAction": "actions",
    "SubmitFormAction": "actions",
    "ToggleAction": "actions",
    "describe_validation_error": "base",
    "DEFAULT_LOCALE": "manifest",
    "ICON_IMAGE_SUFFIXES": "manifest",
    "LOCALES": "manifest",
    "MANIFEST_AUTHOR_MAX": "manifest",
    "MANIFEST_DESCRIPTION_MAX": "manifest",
    "MANIFEST_EXAMPLE_MAX": "manifest",
    "MANIFEST_EXAMPLES_MAX": "manifest",
    "MANIFEST_ICON_MAX": "manifest",
    "MANIFEST_KEYWORD_MAX": "manifest",
    "MANIFEST_KEYWORDS_MAX": "manifest",
    "MANIFEST_NAME_MAX": "manifest",
    "MANIFEST_VERSION_MAX": "manifest",
    "MAX_ICON_TEXT": "manifest",
    "PERMISSIONS": "manifest",
    "Locale": "manifest",
    "Manifest": "manifest",
    "Permission": "manifest",
    "icon_file": "manifest",
    "parse_manifest": "manifest",
    "SYSTEM_REPLY_FIELDS": "replies",
    "ActionRequest": "replies",
    "AgentResponse": "replies",
    "Context": "replies",
    "HandleRequest": "replies",
    "Step": "replies",
    "ToolResult": "replies",
    "forwardable_reply": "replies",
    "parse_action_request": "replies",
    "parse_response": "replies",
    "parse_steps": "replies",
    "without_system_fields": "replies",
    "SCHEMA_DIR": "schemas",
    "generate_schemas": "schemas",
    "schema_models": "schemas",
    "write_schemas": "schemas",
    "UI_CHANGES": "ui_ops",
    "UI_ID_MAX": "ui_ops",
    "UI_OPS": "ui_ops",
    "UI_TEXT_MAX": "ui_ops",
    "ChangeColorOp": "ui_ops",
    "ChangeTextOp": "ui_ops",
    "HideOp": "ui_ops",
    "MoveOp": "ui_ops",
    "ResetOp": "ui_ops",
    "ResizeOp": "ui_ops",
    "RotateOp": "ui_ops",
    "ShowOp": "ui_ops",
    "UIOp": "ui_ops",
    "UndoOp": "ui_ops",
    "parse_ui_op": "ui_ops",
}
"""Where each re-exported name lives: its module is imported when the name is first used.

The SDK imports ``aios.protocol.app_secret`` in every app; loading the pydantic models then
would cost each app ~14 MB and ~0.1 s it never uses (bench/bench_system.py, app start)."""


def __getattr__(name: str) -> Any:
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module 'aios.protocol' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"aios.protocol.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
