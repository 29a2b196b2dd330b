"""Duplex conversation (DESIGN §18): the desktop listens while the user types.

- :mod:`aios.duplex.listener` takes the command bar's draft from the events
  WebSocket and answers with a preview: where Enter would send it (the offline
  router, no side effect) and, at most, one interjection;
- :mod:`aios.duplex.engine` is the interruption engine: triggers, levels,
  urgency, styles, the rate limit, the budget and mute, per session;
- :mod:`aios.duplex.drafts` reads a draft's words (a delete and what it names, a
  missing slot, a sentence end) and counts, read-only, what a delete would remove;
- :mod:`aios.duplex.judge` is the language model's judgement (``duplex.llm``);
- :mod:`aios.duplex.texts` is what the desktop says, in both languages.
"""
