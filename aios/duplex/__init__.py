"""Duplex conversation and a proactive desktop (DESIGN §18): the desktop listens while
the user types, speaks first when it should, and runs what the user scheduled.

- :mod:`aios.duplex.listener` takes the command bar's draft from the events
  WebSocket and answers with a preview: where Enter would send it (the offline
  router, no side effect) and, at most, one interjection;
- :mod:`aios.duplex.engine` is the interruption engine: triggers, levels,
  urgency, styles, the rate limit, the budget and mute, per session;
- :mod:`aios.duplex.drafts` reads a draft's words (a delete and what it names, a
  missing slot, a sentence end) and counts, read-only, what a delete would remove;
- :mod:`aios.duplex.judge` is the language model's judgement (``duplex.llm``);
- :mod:`aios.duplex.texts` is what the desktop says, in both languages;
- :mod:`aios.duplex.thinker` speaks first: a run the user is not looking at ended,
  an app crashed, a reminder is due, a silence (``duplex.idle_s``);
- :mod:`aios.duplex.when` reads a time in words ("提醒我三点开会", "every Monday at 9");
- :mod:`aios.duplex.automations` schedules reminders and runs (one-off and cron),
  never twice, missed ones reported.
"""
