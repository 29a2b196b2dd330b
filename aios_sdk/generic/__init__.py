"""The generic LLM app: an app that is only a role prompt.

An app folder whose ``main.py`` is::

    from aios_sdk.generic import GenericAgent

    if __name__ == "__main__":
        GenericAgent().run()

becomes a small AI that plans by itself. :class:`GenericAgent` reads the
manifest beside that script for its name and role, and on every request asks
the system's LLM with function calling. The functions offered are the ten
atomic tools (their schemas come from :func:`aios.tools.tool_schemas`), the
app's own ``@tool`` methods (subclass :class:`GenericAgent` to add some),
and ``show_view(view_type, data, actions, message)`` to finish.

One request, several rounds
---------------------------
* Round 1: the LLM's tool calls become the reply's ``steps`` (with a
  ``loading`` view). The system runs them in the app's sandbox, audits them,
  and calls ``handle`` again with the same instruction/action and
  ``context["tool_results"]``.
* Round N: each result goes back to the LLM as the ``tool`` message of the
  call that asked for it; the LLM calls more tools or ``show_view``.
* ``show_view`` is validated with :func:`aios.protocol.parse_response` and
  :func:`view_data_problems`. A bad view (or a bad tool call: unknown tool,
  arguments that are not JSON or fail the tool's schema) is fed back to the
  LLM once with the reason; a second bad answer becomes an error view.
* Small models (issue 15): calls written as JSON text in ``content`` are read
  with :mod:`aios.llm.toolcalls`; arguments that only echo the schema
  (``"required"``, ``"type"``, ``timeout: 0``) are dropped and
  ``/apps/<id>/files/x`` is the workdir's ``x``; a call repeated with the same
  (tool, arguments) is not run again: the loop stops and its result is shown
  (a table or text view), as it is when the model cannot finish after tools
  ran. Text that is JSON or markup is shown, never spoken.
* The prompt: the system message is stable (role, how to work, views), so a
  server's prompt cache keeps it with the tool schemas; files, the session so
  far and the last view come in the user's message. Only the tools the
  request's words call for are offered (:mod:`aios_sdk.generic.toolset`; all of
  them when it names none), with shortened schemas.
* A plain text answer becomes a ``text`` view. After ``max_tool_rounds``
  rounds of tools the LLM is offered ``show_view`` alone. The system caps a
  request at ``max_rounds`` (config, default 5) as well, so
  ``max_tool_rounds`` must stay below it; it defaults to 3 and a manifest may
  set ``"max_tool_rounds"``.

Where the conversation lives between rounds
-------------------------------------------
The LLM needs the whole exchange of one request (its earlier tool calls and
every result), but each round is a new HTTP call, and neither channel the
system offers carries it:

* ``context["tool_results"]`` holds the results of the *last* round only;
* a reply's ``state`` is kept per session and app and comes back as
  ``context["cwd_state"]``, but the controller stores it from the *final*
  reply of a request and builds the context once per request, so it does
  not change between rounds.

So the running message list is kept in the app's cache (``cache_set`` /
``cache_get`` through :meth:`~aios_sdk.agent.AIOSAgent.call_tool`), keyed by
session and by a fingerprint of the instruction/action (which the system
repeats every round), and mirrored in process memory. The cache lives in the
system's SQLite store, namespaced to this app: it survives a restart of the
app process between rounds, works the same standalone, and its use is
audited like any other tool call. Step ids are numbered across the whole
request and mapped back to the LLM's ``tool_call`` ids, so a result can
never be attributed to the wrong call. The ``state`` of the final reply is
used for what it is good at: remembering the last view of the session, so a
later click on one of its controls can be explained to the LLM.
"""

from __future__ import annotations

from aios_sdk.generic.agent import GenericAgent
from aios_sdk.generic.prompts import SHOW_VIEW, SHOW_VIEW_TOOL
from aios_sdk.generic.views import view_data_problems

__all__ = ["SHOW_VIEW", "SHOW_VIEW_TOOL", "GenericAgent", "view_data_problems"]
