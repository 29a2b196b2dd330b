"""``cache_get`` / ``cache_set``: a small key-value cache per app.

Values live in the system store under the namespace ``ctx.app_id``; the
namespace never comes from the key, so ``other_app:secret`` is just a key in
the caller's own namespace and another app's entries are out of reach.

One key is shared on purpose: ``desktop:ui_snapshot``, the desktop's
element snapshot (§9.3). It lives in the :data:`DESKTOP_NAMESPACE` and is
readable (never writable) by apps holding the ``desktop.control``
permission. The server stores it with :func:`publish_ui_snapshot`.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import Field, field_validator

from aios.errors import StoreError, ToolFailed, ToolRefused
from aios.names import DESKTOP_CONTROL, not_granted
from aios.store import Store
from aios.tools.base import ToolArgs, ToolContext, ToolOutput, atomic_tool

log = logging.getLogger(__name__)

MAX_KEY_CHARS = 256
MAX_VALUE_BYTES = 1_000_000
"""Largest cached value, measured as its JSON text in UTF-8."""

DESKTOP_NAMESPACE = "desktop"
UI_SNAPSHOT_KEY = "ui_snapshot"
UI_SNAPSHOT_NAME = f"{DESKTOP_NAMESPACE}:{UI_SNAPSHOT_KEY}"
"""The key apps pass to ``cache_get`` to read the desktop snapshot."""
RESERVED_NAMESPACES = frozenset({DESKTOP_NAMESPACE})
"""System namespaces: an app whose id equals one of them gets no cache, so it
cannot forge what the system keeps there."""


class CacheGetArgs(ToolArgs):
    key: str = Field(min_length=1, max_length=MAX_KEY_CHARS)


class CacheSetArgs(ToolArgs):
    key: str = Field(min_length=1, max_length=MAX_KEY_CHARS)
    value: Any = Field(description="Any JSON value.")
    ttl: float | None = Field(
        default=None, gt=0, description="Seconds until the entry expires (default: never)."
    )

    @field_validator("value")
    @classmethod
    def _serialisable(cls, v: Any) -> Any:
        try:
            size = len(json.dumps(v, ensure_ascii=False).encode("utf-8"))
        except (TypeError, ValueError) as e:
            raise ValueError(f"value must be JSON-serialisable ({e})") from e
        if size > MAX_VALUE_BYTES:
            raise ValueError(
                f"value is {size} bytes as JSON, over the cache limit of {MAX_VALUE_BYTES} bytes"
            )
        return v


def _store(ctx: ToolContext, tool: str) -> Store:
    if ctx.store is None:
        raise ToolFailed(f"{tool}: the cache is not available (no system store)")
    if ctx.app_id in RESERVED_NAMESPACES:
        raise ToolRefused(
            f"cache policy: app id {ctx.app_id!r} is a reserved system "
            "namespace; rename the app to use the cache"
        )
    return ctx.store


CACHE_WORDS = ("缓存", "记住", "记得", "计数", "cache", "remember", "count")
"""Words of a request for which the generic app offers the cache tools."""


@atomic_tool(
    "cache_get",
    CacheGetArgs,
    "Read a value this app cached. Returns the value, or null when the key is "
    "missing or expired (meta.hit tells). 'desktop:ui_snapshot' returns the "
    "desktop's element snapshot (needs the desktop.control permission).",
    timeout=2,
    risk="safe",
    describe=lambda args: str(args.get("key", "")),
    offer_words=CACHE_WORDS,
)
def cache_get(ctx: ToolContext, args: CacheGetArgs) -> ToolOutput:
    store = _store(ctx, "cache_get")
    namespace, key = ctx.app_id, args.key
    if args.key == UI_SNAPSHOT_NAME:
        if DESKTOP_CONTROL not in ctx.permissions:
            raise ToolRefused(
                f"cache policy: {UI_SNAPSHOT_NAME!r}: {not_granted(ctx.app_id, DESKTOP_CONTROL)}"
            )
        namespace, key = DESKTOP_NAMESPACE, UI_SNAPSHOT_KEY
    try:
        missing = object()
        value = store.cache_get(namespace, key, missing)
    except StoreError as e:
        raise ToolFailed(f"cache_get: {e}") from e
    if value is missing:
        return ToolOutput(None, {"hit": False})
    return ToolOutput(value, {"hit": True})


@atomic_tool(
    "cache_set",
    CacheSetArgs,
    "Cache a JSON value under a key for this app, optionally expiring after ttl seconds.",
    timeout=2,
    risk="low",
    describe=lambda args: str(args.get("key", "")),
    offer_words=CACHE_WORDS,
)
def cache_set(ctx: ToolContext, args: CacheSetArgs) -> ToolOutput:
    store = _store(ctx, "cache_set")
    if args.key == UI_SNAPSHOT_NAME:
        raise ToolRefused(f"cache policy: {UI_SNAPSHOT_NAME!r} is written by the desktop only")
    quotas = ctx.quotas

    def fits(keys: int, size: int, adding: int) -> None:
        if quotas is not None:
            quotas.check("cache_keys", ctx.app_id, keys)
            quotas.check("cache_bytes", ctx.app_id, size, adding)

    try:
        store.cache_set(ctx.app_id, args.key, args.value, args.ttl, fits=fits)
    except StoreError as e:
        raise ToolFailed(f"cache_set: {e}") from e
    return ToolOutput({"key": args.key, "stored": True}, {"ttl": args.ttl})


def publish_ui_snapshot(store: Store, snapshot: Any) -> None:
    """Store the desktop's element snapshot where ``cache_get('desktop:ui_snapshot')`` reads it."""
    store.cache_set(DESKTOP_NAMESPACE, UI_SNAPSHOT_KEY, snapshot)
