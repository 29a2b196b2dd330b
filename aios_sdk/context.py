"""The context an app receives with every request (docs/app-guide.md §2), typed, and its locale.

``handle(instruction, context, action_request)`` still gets the plain dict,
so the spec's examples run unchanged; :meth:`AppContext.of` gives the same
fields typed, with a usable default for each one that is missing or of the
wrong type::

    ctx = AppContext.of(context)
    if ctx.lang == "en": ...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Lang = Literal["zh", "en"]
"""The two languages of the bundled apps' messages."""

DEFAULT_LANG: Lang = "zh"


def locale_of(context: Mapping[str, Any] | None) -> Lang:
    """``"en"`` when the context's ``locale`` starts with "en" (any case), else ``"zh"``."""
    raw = context.get("locale") if isinstance(context, Mapping) else None
    return "en" if str(raw or "").lower().startswith("en") else DEFAULT_LANG


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


@dataclass(frozen=True)
class AppContext:
    """The context's fields (docs/app-guide.md §2), as the system sends them."""

    app: str = ""
    role: str = ""
    workdir: str = ""
    cwd_state: dict[str, Any] = field(default_factory=dict)
    """The app's saved ``state`` for this session, plus ``files`` in the workdir."""
    available_tools: list[str] = field(default_factory=list)
    session_id: str | None = None
    history_summary: str = ""
    tool_results: dict[str, Any] = field(default_factory=dict)
    """Results of the steps of the previous round, by ``step_<id>``."""
    upstream: dict[str, Any] = field(default_factory=dict)
    locale: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The dict it was made from, for fields a newer system may add."""

    @classmethod
    def of(cls, context: Mapping[str, Any] | None) -> AppContext:
        """The typed view of a ``context`` dict (anything else gives the defaults)."""
        ctx = dict(context) if isinstance(context, Mapping) else {}
        tools = ctx.get("available_tools")
        session = ctx.get("session_id")
        return cls(
            app=_str(ctx.get("app")),
            role=_str(ctx.get("role")),
            workdir=_str(ctx.get("workdir")),
            cwd_state=_dict(ctx.get("cwd_state")),
            available_tools=[t for t in tools if isinstance(t, str)]
            if isinstance(tools, list)
            else [],
            session_id=session if isinstance(session, str) else None,
            history_summary=_str(ctx.get("history_summary")),
            tool_results=_dict(ctx.get("tool_results")),
            upstream=_dict(ctx.get("upstream")),
            locale=_str(ctx.get("locale")),
            raw=ctx,
        )

    from_dict = of

    @property
    def lang(self) -> Lang:
        """``"en"`` or ``"zh"``: see :func:`locale_of`."""
        return locale_of({"locale": self.locale})

    @property
    def en(self) -> bool:
        return self.lang == "en"

    def tr(self, zh: str, en: str) -> str:
        """The text in this context's language."""
        return en if self.en else zh
