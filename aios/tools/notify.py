"""``notify``: a notification toast on the desktop (spec §7.2).

Inside the system ``ctx.emit`` sends a ``notify`` event to the desktop; the
toast shows the app, title, body and level. Outside it (an app developed
standalone through the SDK) there is nobody to show it to, so it is logged
and reported as not delivered — never an error, an app must not break for
want of a screen.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Literal

from pydantic import Field

from aios.tools.base import ToolArgs, ToolContext, ToolOutput, atomic_tool

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 4000


class NotifyArgs(ToolArgs):
    title: str = Field(min_length=1, max_length=MAX_TITLE_CHARS)
    body: str = Field(default="", max_length=MAX_BODY_CHARS)
    level: Literal["info", "success", "warning", "error"] = "info"


@atomic_tool("notify", NotifyArgs,
             "Show a notification on the desktop. level: info, success, warning or error. "
             "Returns {delivered, id}.")
def notify(ctx: ToolContext, args: NotifyArgs) -> ToolOutput:
    note_id = uuid.uuid4().hex
    event = {"id": note_id, "app": ctx.app_id, "title": args.title, "body": args.body,
             "level": args.level, "ts": time.time()}
    if ctx.emit is None:
        log.info("notify (no desktop) from %s [%s] %s: %s", ctx.app_id, args.level,
                 args.title, args.body)
        return ToolOutput({"delivered": False, "id": note_id},
                          {"reason": "no desktop is connected (running outside the system)"})
    try:
        ctx.emit("notify", event)
    except Exception as e:  # noqa: BLE001 - a broken event channel must not fail the app
        log.warning("notify from %s could not be delivered: %s", ctx.app_id, e)
        return ToolOutput({"delivered": False, "id": note_id},
                          {"reason": f"the desktop could not be reached: {e}"})
    return ToolOutput({"delivered": True, "id": note_id}, None)
