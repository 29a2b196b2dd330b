"""``@action("name")``: a method that answers one control of the app's views.

    class Music(AIOSAgent):
        @action("play")
        def play(self, ctx: AppContext, id: str) -> dict[str, Any]: ...

        @action("volume")
        def volume(self, ctx: AppContext, value: float) -> dict[str, Any]: ...

When a request carries an ``action_request`` whose ``action_id`` is registered, the
SDK calls that method with the context and, as keyword arguments, the button's
``params`` and the control's own fields (``value``, ``selected``, ``checked``,
``form_values``, ``href``, ``on``); a parameter named ``request`` gets the whole
``action_request``. Keys the method does not take are ignored (the desktop may
send more than a control needs). A required parameter that is missing, or one whose
annotation (``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, ``X | None``)
the value does not fit, answers the standard "cannot handle the action" error view;
an ``action_id`` the app does not register answers the standard "unknown action"
view naming the known ones. An app without ``@action`` methods gets every action
in ``handle``, as before.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aios_sdk.context import Lang
from aios_sdk.messages import Messages

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__aios_action__"
_ACTION_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")
REQUEST_PARAM = "request"
"""A parameter of this name receives the whole ``action_request``."""
PAYLOAD_FIELDS = ("form_values", "selected", "checked", "value", "href", "on")
"""What a control sends beside ``params`` (docs/protocol.md §3)."""

STANDARD = Messages(
    {
        "unknown_action": (
            "未知的操作 {action}；可用的操作：{known}。",
            "unknown action {action}; known actions: {known}.",
        ),
        "bad_action": (
            "无法处理操作 {action}：{error}",
            "cannot handle the action {action}: {error}",
        ),
        "missing_id": ("缺少 action_id", "action_id is missing"),
        "missing_param": ("缺少参数 {name}", "the parameter {name} is missing"),
        "bad_param": (
            "参数 {name} 应该是{want_zh}，收到的是 {got}",
            "the parameter {name} must be {want_en}, got {got}",
        ),
        "bad_params": ("params 必须是对象", "params must be an object"),
    }
)
"""The SDK's own messages for actions it cannot route."""

_KINDS: dict[type, tuple[str, str]] = {
    str: ("文本", "a text"),
    int: ("整数", "a whole number"),
    float: ("数字", "a number"),
    bool: ("是/否", "true or false"),
    list: ("列表", "a list"),
    dict: ("对象", "an object"),
}


@dataclass(frozen=True)
class ActionInfo:
    """A registered ``@action``: its id and the method's attribute name."""

    name: str
    attr: str


def action(name: str, *more: str) -> Callable[[F], F]:
    """Register a method as the answer to the control whose ``action_id`` is ``name``
    (or one of ``more``: one method for several controls, told apart by ``request``).

    Returns the method unchanged; the class collects its actions when it is
    created and refuses two methods for one ``action_id``.
    """
    for each in (name, *more):
        if not isinstance(each, str) or not _ACTION_ID.match(each):
            raise ValueError(
                f"@action name must be an action_id (1-64 letters, digits, '_', '-', '.', "
                f"':'), got {each!r}"
            )

    def deco(func: F) -> F:
        if not inspect.isfunction(func):
            raise TypeError(f"@action decorates a method (a def in the class), got {func!r}")
        setattr(func, _MARK, (name, *more))
        return func

    return deco


def collect_actions(cls: type) -> dict[str, ActionInfo]:
    """The ``@action`` methods of ``cls`` and its bases, by ``action_id``."""
    resolved: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        resolved.update(vars(klass))
    found: dict[str, ActionInfo] = {}
    for attr, obj in resolved.items():
        names = getattr(obj, _MARK, ()) if inspect.isfunction(obj) else ()
        for name in names:
            if name in found:
                raise TypeError(
                    f"{cls.__name__}: action {name!r} is registered twice "
                    f"({found[name].attr}() and {attr}()); action ids must be unique"
                )
            found[name] = ActionInfo(name, attr)
    return found


class BadAction(Exception):
    """An action the SDK cannot route, told with the :data:`STANDARD` messages."""

    def __init__(
        self, key: str, *, action: str, known: str = "", error: str = "", **error_fields: Any
    ) -> None:
        super().__init__(key)
        self.key, self.action, self.known = key, action, known
        self.error, self.error_fields = error, error_fields

    def message(self, lang: Lang) -> str:
        error = STANDARD(self.error, lang, **self.error_fields) if self.error else ""
        return STANDARD(self.key, lang, action=self.action, known=self.known, error=error)


def find(actions: Mapping[str, ActionInfo], request: Any) -> tuple[ActionInfo, dict[str, Any]]:
    """The action ``request`` names and the request as a dict; :class:`BadAction` otherwise."""
    action_id = request.get("action_id") if isinstance(request, dict) else None
    if not isinstance(action_id, str) or not action_id:
        raise BadAction("bad_action", action="?", error="missing_id")
    info = actions.get(action_id)
    if info is None:
        raise BadAction("unknown_action", action=repr(action_id), known=", ".join(actions))
    return info, request


def arguments(method: Callable[..., Any], request: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``method`` (bound, after the context) from ``request``."""
    action_id = repr(request.get("action_id"))
    params = request.get("params")
    if params is not None and not isinstance(params, dict):
        raise BadAction("bad_action", action=action_id, error="bad_params")
    given: dict[str, Any] = dict(params or {})
    for key in PAYLOAD_FIELDS:
        if request.get(key) is not None:
            given[key] = request[key]
    try:
        hints = typing.get_type_hints(method)
    except Exception:  # noqa: BLE001 - unresolvable annotations only lose the check
        hints = {}
    out: dict[str, Any] = {}
    spread = False
    for p in list(inspect.signature(method).parameters.values())[1:]:  # after ctx
        if p.kind is p.VAR_KEYWORD:
            spread = True
            continue
        if p.kind in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY):
            continue
        if p.name == REQUEST_PARAM:
            out[p.name] = request
        elif p.name in given:
            out[p.name] = _checked(action_id, p.name, given[p.name], hints.get(p.name))
        elif p.default is p.empty:
            raise BadAction(
                "bad_action",
                action=action_id,
                error="missing_param",
                name=p.name,
            )
    if spread:
        out.update({k: v for k, v in given.items() if k not in out})
    return out


def _checked(action_id: str, name: str, value: Any, hint: Any) -> Any:
    kinds = _kinds(hint)
    if kinds is None or value is None and type(None) in kinds:
        return value
    ok = any(_fits(value, kind) for kind in kinds)
    if not ok:
        want = next(k for k in kinds if k is not type(None))
        zh, en = _KINDS[want]
        raise BadAction(
            "bad_action",
            action=action_id,
            error="bad_param",
            name=name,
            want_zh=zh,
            want_en=en,
            got=repr(value)[:40],
        )
    return float(value) if kinds[0] is float and not isinstance(value, float) else value


def _kinds(hint: Any) -> tuple[type, ...] | None:
    """The plain types a value of ``hint`` may have, or None when the SDK does not check it."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        parts = [_kinds(a) for a in typing.get_args(hint)]
        if any(p is None for p in parts):
            return None
        return tuple(k for p in parts if p for k in p)
    if hint is type(None):
        return (type(None),)
    base = origin or hint
    return (base,) if base in _KINDS else None


def _fits(value: Any, kind: type) -> bool:
    if kind is type(None):
        return value is None
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float) and value == value
    return isinstance(value, kind)
