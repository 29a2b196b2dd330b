// The command bar's instructions: typed (or spoken) ones wait in a queue and run in order; a
// reply's views go to their apps' windows, its message to a toast unless a window shows it.
import * as conversation from '../conversation/conversation.js';
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { isObject, toText } from '../core/safe.js';
import { rememberSession, state } from '../core/state.js';
import * as runs from '../runs/runs.js';
import { ANY_APP, ensureWindow, tracked } from './apps.js';
import * as intents from './intents.js';
import * as notify from './notify.js';
import { renderResponse } from './render.js';
import * as taskbar from './taskbar.js';
import * as voice from './voice.js';
import * as wm from './wm.js';

// Instructions typed (or spoken) while one runs wait here and run in order (C6 of issue 13).
const COMMAND_QUEUE_MAX = 10;
const queuedCommands = [];
let commandRunning = false;

export function submitInstruction(detail) {
  voice.stopSpeaking(); // a new instruction, by any path: the desktop stops talking (barge-in)
  if (queuedCommands.length >= COMMAND_QUEUE_MAX) {
    notify.toast(t('command.queue_full', { n: COMMAND_QUEUE_MAX }), { level: 'warning' });
    return;
  }
  queuedCommands.push(detail);
  taskbar.setQueue(queuedCommands.slice(commandRunning ? 0 : 1).map((q) => q.text));
  if (!commandRunning) drainCommands();
}

async function drainCommands() {
  commandRunning = true;
  try {
    while (queuedCommands.length) {
      const next = queuedCommands.shift();
      taskbar.setQueue(queuedCommands.map((q) => q.text));
      taskbar.setCommandBusy(next.text);
      await runInstruction(next);
    }
  } finally {
    commandRunning = false;
    taskbar.setCommandBusy(false);
  }
}

/** One place per message: a reply shown in a window on screen is not also a toast. */
function onScreen(apps) {
  return apps.length > 0 && apps.every((id) => wm.isVisible(id));
}

async function runInstruction({ text, source }) {
  try {
    const reply = await tracked(ANY_APP, () => api.instruction(text, state.sessionId));
    showReply(reply, source);
  } catch (err) {
    notify.toast(t('command.failed', { error: err.message }), { level: 'error' });
  } finally {
    conversation.refresh();
    emit('command:done', { text, source }); // conversation mode: thinking → listening
  }
}

/**
 * An instruction's reply (or a topic resumed from the panel, which answers alike): its views
 * go to their windows, its desktop operations are carried out, its message is a toast unless
 * a window shows it, and it is spoken for a spoken instruction.
 */
export function showReply(reply, source) {
  rememberSession(reply && reply.session_id);
  runs.adoptReply(reply, { instruction: true });
  const results = reply && Array.isArray(reply.results) ? reply.results : [];
  for (const r of results) {
    if (!isObject(r) || typeof r.app !== 'string') continue;
    ensureWindow(r.app);
    wm.raise(r.app);
    renderResponse(r.app, r.response, { app: r.app, fromUser: true, runId: reply.run_id });
  }
  const message = reply && typeof reply.message === 'string' ? reply.message.trim() : '';
  const plan = reply && Array.isArray(reply.plan) ? reply.plan.filter(isObject) : [];
  const title = plan.length > 1
    ? t('command.plan', { plan: plan.map((task) => toText((state.apps.get(task.app) || {}).name || task.app)).join(' → ') })
    : undefined;
  const answered = intents.handleReply(reply); // a system intent: its desktop ops, its answer card
  const shownIn = results.filter((r) => isObject(r) && typeof r.app === 'string').map((r) => r.app);
  if (message && !answered && (title || !onScreen(shownIn))) {
    notify.toast(message.length > DEFAULTS.messageMaxChars ? `${message.slice(0, DEFAULTS.messageMaxChars)}…` : message,
      { level: 'info', title });
  }
  if (message) voice.speakReply(message, source);
}
