"""The per-launch secret that lets only the system drive an app (DESIGN §11 item 6).

Each launch of an app gets a fresh secret, apart from ``AIOS_APP_TOKEN``
(which the app shows the system when *it* calls). The launcher puts it in
the app's environment as ``AIOS_LAUNCH_SECRET``; every call the system makes
to the app (``/handle``, ``/tools``, ``/tools/<name>``, the ``/health``
probe) carries it in the ``aios.names.LAUNCH_SECRET_HEADER`` header; the SDK refuses ``/handle`` and
``/tools*`` without it. Another local process, or a page that rebinds a DNS
name to 127.0.0.1, has no way to learn it. An app that serves raw Flask
(without the SDK) does not check it: only confinement protects such an
app from other local processes.
"""

from __future__ import annotations

import hmac
import secrets

from aios.names import ENV_LAUNCH_SECRET, LAUNCH_SECRET_HEADER

LAUNCH_SECRET_ENV = ENV_LAUNCH_SECRET
SECRET_BYTES = 32
"""Random bytes in one secret (urlsafe base64 in the env and the header)."""


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def headers(secret: str) -> dict[str, str]:
    """The header that proves a call comes from the system."""
    return {LAUNCH_SECRET_HEADER: secret} if secret else {}


def matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison; an empty ``given`` never matches."""
    return bool(given) and hmac.compare_digest((given or "").encode(), expected.encode())


__all__ = ["LAUNCH_SECRET_ENV", "LAUNCH_SECRET_HEADER", "headers", "matches", "new_secret"]
