"""What the protocol's models share: their base classes and how a bad message is described."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from aios.errors import ProtocolError

_M = TypeVar("_M", bound=BaseModel)


# defer_build: an app process imports these models but validates few of them;
# building every validator at import would add ~0.1 s to each app's start.
class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class _Open(BaseModel):
    """A message that tolerates extra fields (forward compatible)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


def describe_validation_error(err: ValidationError) -> str:
    """One line per problem, each naming the field path."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(message)"
        lines.append(f"{loc}: {e['msg']}")
    return "; ".join(lines)


def parse_as(model: type[_M], payload: Any, what: str) -> _M:
    """``payload`` as ``model``, or ProtocolError naming ``what`` and each bad field."""
    try:
        return model.model_validate(payload)
    except ValidationError as e:
        raise ProtocolError(f"invalid {what}: {describe_validation_error(e)}") from e
