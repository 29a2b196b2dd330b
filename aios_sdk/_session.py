"""The session of the request an app is serving, as a context variable.

Private: ``serving`` binds it around each ``/handle`` and ``/tools/<name>``
call and ``agent`` reads it for the calls an app makes back to the system.
It lives here so neither of those modules imports the other.
"""

from __future__ import annotations

import contextvars

_session: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "aios_session_id", default=None
)


def current_session_id() -> str | None:
    """The session of the request being served (``/handle`` or ``/tools/<name>``)."""
    return _session.get()


def bind_session(session_id: str | None) -> contextvars.Token[str | None]:
    return _session.set(session_id)


def unbind_session(token: contextvars.Token[str | None]) -> None:
    _session.reset(token)
