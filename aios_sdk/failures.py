"""``AppFailure``: the exception an app raises to answer with an error view.

Raised anywhere inside ``handle`` or an ``@action`` method::

    class Music(AIOSAgent):
        messages = Messages({"need_query": ("要搜索什么？", "Search for what?")})

        @action("search")
        def search(self, ctx, value: str = ""):
            if not value.strip():
                raise AppFailure("need_query")

the SDK catches it and replies with the app's error view (:meth:`AIOSAgent.error_reply`)
whose message is ``messages(key, lang, **fields)`` in the user's language. A key the
table does not have (or a field its text names but the raise did not give) still
answers, with the key and the fields, and logs the slip once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aios_sdk.context import Lang
from aios_sdk.messages import Messages, tr

log = logging.getLogger(__name__)


class AppFailure(Exception):
    """A user-facing failure named by a key of the app's :class:`Messages` table."""

    def __init__(self, key: str, /, **fields: Any) -> None:
        super().__init__(key)
        self.key = key
        self.fields = fields

    def __str__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.key} ({shown})" if shown else self.key

    def message(self, table: Messages | Mapping[str, tuple[str, str]] | None, lang: Lang) -> str:
        """The text of this failure in ``lang`` from ``table``, or the fallback."""
        messages = table if isinstance(table, Messages) else Messages(table or {})
        if self.key in messages:
            try:
                return messages(self.key, lang, **self.fields)
            except (KeyError, IndexError, ValueError) as e:
                log.warning("message %r cannot be filled from %s: %s", self.key, self.fields, e)
        else:
            log.warning("AppFailure key %r is not in the app's messages table", self.key)
        detail = "; ".join(f"{k}: {v}" for k, v in self.fields.items())
        what = f"{self.key}（{detail}）" if detail else self.key
        return tr(lang, f"出错了：{what}", f"Something went wrong: {self.key}") + (
            f" ({detail})" if detail and lang == "en" else ""
        )
