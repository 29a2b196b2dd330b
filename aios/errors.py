"""Every exception the system raises on purpose.

    AIOSError                    base; ``str(e)`` is a message for a person
    ├── ConfigError              config.json or an override is invalid
    ├── ManifestError            an app folder's manifest is unusable
    ├── ProtocolError            a message fails validation against aios.protocol
    ├── BadRequest               a request to the system's HTTP API is malformed (HTTP 400)
    ├── PermissionDenied         the caller lacks a permission it needs       (HTTP 403)
    ├── QuotaExceeded            an app reached one of its quotas (DESIGN §14.6) (HTTP 429)
    ├── StoreError               the SQLite store failed (sqlite3 errors mapped here) (HTTP 500)
    │   ├── StoreFull            the disk holding the data dir is full  (HTTP 503)
    │   ├── StoreCorrupt         the database file is damaged           (HTTP 500)
    │   └── StoreBusy            no connection or lock within the timeout (HTTP 503)
    ├── ToolError                a tool call did not succeed
    │   ├── ToolRefused          a sandbox rule refused it (audited as ``denied``)
    │   │   └── PathNotFound     the path is inside the workdir but does not exist
    │   └── ToolFailed           it ran and failed (audited as ``error``)
    ├── AppError                 an app could not give a usable reply
    │   ├── AppNotFound          no such app id                      (HTTP 404)
    │   ├── AppUnavailable       the app is not running               (HTTP 503)
    │   │   └── AppBusy          every call slot of the app is taken  (HTTP 503)
    │   ├── AppTimeout           no reply within handle_timeout       (HTTP 504)
    │   └── AppReplyInvalid      the reply is not valid JSON or fails validation
    └── LLMError                 the language model could not answer
        └── LLMUnavailable       no LLM is configured

Foreign errors (sqlite3, subprocess, requests, openai) are mapped to these at
the boundary with ``raise ... from e``. Exceptions never log; whoever catches
one at a boundary logs it once.
"""

from __future__ import annotations

from typing import Any


class AIOSError(Exception):
    """Base class; the message says what went wrong and what to do."""


class ConfigError(AIOSError):
    pass


class ManifestError(AIOSError):
    pass


class ProtocolError(AIOSError):
    pass


class BadRequest(AIOSError):
    """A request to the system's HTTP API that cannot be served as sent."""

    http_status = 400


class NotFound(AIOSError):
    """No such run or interaction (404)."""

    http_status = 404


class Conflict(AIOSError):
    """The request meets a state that has moved on (409); ``current`` is that state."""

    http_status = 409

    def __init__(self, message: str, current: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.current = current or {}


class PermissionDenied(AIOSError):
    """The caller is known but may not do this (a missing manifest permission)."""

    http_status = 403


class QuotaExceeded(AIOSError):
    """An app reached one of its quotas; ``quota`` names it (the config key, aios/quotas.py)."""

    http_status = 429

    def __init__(self, quota: str, message: str):
        super().__init__(message)
        self.quota = quota


class StoreError(AIOSError):
    http_status = 500


class StoreFull(StoreError):
    http_status = 503


class StoreCorrupt(StoreError):
    http_status = 500


class StoreBusy(StoreError):
    http_status = 503


class ToolError(AIOSError):
    """A tool call that did not succeed.

    ``result`` and ``meta`` carry whatever the tool produced before failing
    (an HTTP error body, a command's output), so callers lose nothing.
    """

    status = "error"

    def __init__(self, error: str, *, result: Any = None, meta: dict[str, Any] | None = None):
        super().__init__(error)
        self.error = error
        self.result = result
        self.meta = meta or {}


class ToolRefused(ToolError):
    status = "denied"


class PathNotFound(ToolRefused):
    """A path that passes confinement but names nothing (a 404, not a 403)."""


class ToolFailed(ToolError):
    status = "error"


class AppError(AIOSError):
    http_status = 502


class AppNotFound(AppError):
    http_status = 404


class AppUnavailable(AppError):
    http_status = 503


class AppBusy(AppUnavailable):
    """The app has ``apps.max_concurrent_calls`` calls in flight and no room to wait."""


class AppTimeout(AppError):
    http_status = 504


class AppReplyInvalid(AppError):
    http_status = 200


class LLMError(AIOSError):
    pass


class LLMUnavailable(LLMError):
    pass
