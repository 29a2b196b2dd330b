"""``notify``: a notification toast on the desktop.

Inside the system ``ctx.emit`` sends a ``notify`` event to the desktop; the
toast is titled with the sending app's display name (``app_name``), never
one the app chooses, so an app cannot pose as the system; its own title and
body follow. Each app may send ``apps.notify_burst`` notifications per
``apps.notify_window`` seconds (:class:`NotifyLimiter`); beyond that the call
fails with "notification rate limit" and nothing is shown. Outside the system
(an app developed standalone through the SDK) there is nobody to show it to,
so it is logged and reported as not delivered — never an error, an app must
not break for want of a screen.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Literal

from pydantic import Field

from aios.config import AppsConfig
from aios.errors import ToolRefused
from aios.tools.base import ToolArgs, ToolContext, ToolOutput, atomic_tool

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 4000


class NotifyLimiter:
    """A sliding window of notification times per app (limits read from the config)."""

    def __init__(
        self, config: Callable[[], AppsConfig], clock: Callable[[], float] = time.monotonic
    ):
        self._config = config
        self._clock = clock
        self._sent: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, app_id: str) -> bool:
        """Count one notification of ``app_id``; False (not counted) when over the limit."""
        cfg, now = self._config(), self._clock()
        with self._lock:
            sent = self._sent.setdefault(app_id, deque())
            while sent and sent[0] <= now - cfg.notify_window:
                sent.popleft()
            if len(sent) >= cfg.notify_burst:
                return False
            sent.append(now)
            return True

    def gate(self, app_id: str) -> Callable[[], bool]:
        return lambda: self.allow(app_id)


class NotifyArgs(ToolArgs):
    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)
    body: str = Field(default="", max_length=MAX_BODY_CHARS)
    level: Literal["info", "success", "warning", "error"] = "info"


@atomic_tool(
    "notify",
    NotifyArgs,
    "Show a notification on the desktop. level: info, success, warning or error. "
    "Returns {delivered, id}.",
    timeout=2,
    risk="low",
    describe=lambda args: str(args.get("title", "")),
    offer_words=("提醒", "通知", "notify", "notification", "remind", "alert"),
)
def notify(ctx: ToolContext, args: NotifyArgs) -> ToolOutput:
    if ctx.notify_allowed is not None and not ctx.notify_allowed():
        raise ToolRefused(
            f"notification rate limit: app {ctx.app_id!r} sent too many "
            "notifications in a short time; nothing was shown"
        )
    note_id = uuid.uuid4().hex
    event = {
        "id": note_id,
        "app": ctx.app_id,
        "app_name": ctx.app_name or ctx.app_id,
        "app_names": dict(ctx.app_names),
        "title": args.title,
        "body": args.body,
        "level": args.level,
        "ts": time.time(),
    }
    if ctx.emit is None:
        log.info(
            "notify (no desktop) from %s [%s] %s: %s", ctx.app_id, args.level, args.title, args.body
        )
        return ToolOutput(
            {"delivered": False, "id": note_id},
            {"reason": "no desktop is connected (running outside the system)"},
        )
    try:
        ctx.emit("notify", event)
    except Exception as e:  # noqa: BLE001 - a broken event channel must not fail the app
        log.warning("notify from %s could not be delivered: %s", ctx.app_id, e)
        return ToolOutput(
            {"delivered": False, "id": note_id},
            {"reason": f"the desktop could not be reached: {e}"},
        )
    return ToolOutput({"delivered": True, "id": note_id}, None)
