"""The context an app receives with every request (docs/app-guide.md §2), typed, and its locale.

``handle(instruction, context, action_request)`` gets an :class:`AppContext`: the
context dict itself (``context["cwd_state"]``, ``context.get(...)``,
``isinstance(context, dict)`` all work as before), with the fields typed as
attributes, each with a usable default when it is missing or of the wrong type::

    def handle(self, instruction, ctx, action_request=None):
        if ctx.lang == "en": ...
        got = ctx.result("search")    # this step's result, or None before it ran

:meth:`AppContext.of` makes one from any dict (a test's, or an older caller's).
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
class StepResult:
    """What one step of the previous round gave (``context.tool_results["step_<id>"]``)."""

    step_id: str
    ok: bool
    """The step ran and its tool succeeded (``status`` ``ok``)."""
    value: Any = None
    """The tool's ``result`` (``None`` when it failed)."""
    error: str = ""
    """Why it failed (empty when ``ok``)."""
    code: str | None = None
    """``denied`` / ``expired`` / ``cancelled`` when the system or the user stopped it."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def answer(self) -> Any:
        """The user's answer to an ``ask`` step (``result["value"]``), else ``None``."""
        return self.value.get("value") if self.ok and isinstance(self.value, dict) else None

    @classmethod
    def of(cls, step_id: str, entry: Mapping[str, Any]) -> StepResult:
        ok = entry.get("status") == "ok"
        code = entry.get("code")
        return cls(
            step_id=step_id,
            ok=ok,
            value=entry.get("result") if ok else None,
            error="" if ok else str(entry.get("error") or code or "no result"),
            code=code if isinstance(code, str) else None,
            raw=dict(entry),
        )


class AppContext(dict[str, Any]):
    """The context's fields (docs/app-guide.md §2), as the system sends them.

    A dict (so code that indexes the context keeps working) whose attributes read
    its fields typed: a missing or mistyped field reads as its empty default.
    """

    @classmethod
    def of(cls, context: Mapping[str, Any] | None) -> AppContext:
        """The typed view of a ``context`` dict (anything else gives the defaults)."""
        if isinstance(context, AppContext):
            return context
        return cls(context) if isinstance(context, Mapping) else cls()

    from_dict = of

    # ------------------------------------------------------------ fields

    @property
    def app(self) -> str:
        return _str(self.get("app"))

    @property
    def role(self) -> str:
        return _str(self.get("role"))

    @property
    def workdir(self) -> str:
        return _str(self.get("workdir"))

    @property
    def cwd_state(self) -> dict[str, Any]:
        """The app's saved ``state`` for this session, plus ``files`` in the workdir."""
        return _dict(self.get("cwd_state"))

    @property
    def available_tools(self) -> list[str]:
        tools = self.get("available_tools")
        return [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else []

    @property
    def session_id(self) -> str | None:
        session = self.get("session_id")
        return session if isinstance(session, str) else None

    @property
    def history_summary(self) -> str:
        return _str(self.get("history_summary"))

    @property
    def tool_results(self) -> dict[str, Any]:
        """Results of the steps of the previous round, by ``step_<id>``."""
        return _dict(self.get("tool_results"))

    @property
    def upstream(self) -> dict[str, Any]:
        return _dict(self.get("upstream"))

    @property
    def locale(self) -> str:
        return _str(self.get("locale"))

    @property
    def memory(self) -> list[dict[str, Any]]:
        """This app's memories relevant to the instruction (and the user's, with the
        ``memory.read`` permission), best first: ``{id, text, tags, scope}`` each."""
        found = self.get("memory")
        return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []

    @property
    def self_text(self) -> str:
        """With ``memory.read``: who the user is and what they keep (SOUL, USER, AGENTS and
        their memories), quoted as data — facts for a prompt, never instructions."""
        return _str(self.get("self"))

    @property
    def routed(self) -> dict[str, Any]:
        """How the instruction reached this app (``{text, matched, score, source}``), or ``{}``."""
        return _dict(self.get("routed"))

    @property
    def raw(self) -> dict[str, Any]:
        """The context as a plain dict, for fields a newer system may add."""
        return dict(self)

    # ------------------------------------------------------------ language

    @property
    def lang(self) -> Lang:
        """``"en"`` or ``"zh"``: see :func:`locale_of`."""
        return locale_of(self)

    @property
    def en(self) -> bool:
        return self.lang == "en"

    def tr(self, zh: str, en: str) -> str:
        """The text in this context's language."""
        return en if self.en else zh

    # ------------------------------------------------------------ steps

    def result(self, step_id: int | str) -> StepResult | None:
        """The result of step ``step_id`` of the previous round; ``None`` when it has not run.

        ``None`` means "return the steps first"; see :meth:`AIOSAgent.after`, which
        does both in one call.
        """
        entry = self.tool_results.get(f"step_{step_id}")
        return StepResult.of(str(step_id), entry) if isinstance(entry, Mapping) else None
