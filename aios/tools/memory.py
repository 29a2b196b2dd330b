"""``memory_store`` / ``memory_search``: what an app keeps and finds again (DESIGN §15).

An app stores into and searches its own scope (its id); nothing names another app's.
The user's scope — what the system knows about the user — needs a permission the user
grants: ``memory.read`` to search it, ``memory.write`` to add to it, and even then what an
app writes there is only *proposed*: it waits in the memory window for the user's yes.
The memory itself (:class:`~aios.tools.base.MemoryPort`) is the system's; the tools only
check the arguments and the permissions.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from aios.errors import BadRequest, ToolFailed, ToolRefused
from aios.names import MEMORY_READ, MEMORY_WRITE, not_granted
from aios.tools.base import MemoryPort, ToolArgs, ToolContext, ToolOutput, atomic_tool

TEXT_MAX = 1000
"""Longest memory (characters), as the store takes it."""
SEARCH_K_MAX = 20
MEMORY_WORDS = ("记住", "记得", "记忆", "以前", "上次", "remember", "recall", "memory", "last time")
"""Words of a request for which the generic app offers the memory tools."""


class MemoryStoreArgs(ToolArgs):
    text: str = Field(min_length=1, max_length=TEXT_MAX, description="The fact to keep.")
    tags: list[str] = Field(default_factory=list, max_length=8)
    scope: Literal["app", "user"] = Field(
        default="app",
        description="'app': this app's own memory; 'user': proposed to the user's memory "
        "(needs memory.write; the user accepts it first).",
    )


class MemorySearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=TEXT_MAX)
    k: int = Field(default=5, ge=1, le=SEARCH_K_MAX)
    scope: Literal["app", "user"] = Field(
        default="app",
        description="'app': this app's memories; 'user': the user's too (needs memory.read).",
    )


def _memory(ctx: ToolContext, tool: str, scope: str, permission: str) -> MemoryPort:
    if ctx.memory is None:
        raise ToolFailed(f"{tool}: the memory is not available here (no system)")
    if scope == "user" and permission not in ctx.permissions:
        raise ToolRefused(f"{tool}: the user's memory: {not_granted(ctx.app_id, permission)}")
    return ctx.memory


@atomic_tool(
    "memory_store",
    MemoryStoreArgs,
    "Keep a fact for later: in this app's memory, or proposed to the user's memory "
    "(scope 'user', which the user accepts first). Returns the memory.",
    timeout=2,
    risk="low",
    describe=lambda args: str(args.get("text", ""))[:80],
    offer_words=MEMORY_WORDS,
)
def memory_store(ctx: ToolContext, args: MemoryStoreArgs) -> ToolOutput:
    port = _memory(ctx, "memory_store", args.scope, MEMORY_WRITE)
    if ctx.quotas is not None:  # QuotaExceeded: a denied result naming the quota
        ctx.quotas.check("memories", ctx.app_id, port.kept_by(ctx.app_id))
    try:
        kept = port.store(ctx.app_id, args.text, list(args.tags), user=args.scope == "user")
    except (BadRequest, ValueError) as e:  # the store's checks: say what is wrong
        raise ToolFailed(f"memory_store: {e}") from e
    return ToolOutput(kept, {"scope": args.scope, "state": kept.get("state")})


@atomic_tool(
    "memory_search",
    MemorySearchArgs,
    "Find kept facts matching a query (words or keywords, any language): this app's, and "
    "the user's with scope 'user'. Returns a list of {id, text, tags, scope, score}.",
    timeout=2,
    risk="safe",
    describe=lambda args: str(args.get("query", ""))[:80],
    offer_words=MEMORY_WORDS,
)
def memory_search(ctx: ToolContext, args: MemorySearchArgs) -> ToolOutput:
    port = _memory(ctx, "memory_search", args.scope, MEMORY_READ)
    found = port.search(ctx.app_id, args.query, args.k, user=args.scope == "user")
    return ToolOutput(found, {"scope": args.scope, "count": len(found)})
