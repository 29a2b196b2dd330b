// Runs on the desktop (DESIGN §12): the plan preview card an app's window shows while its
// run waits for the user, the question cards of a plan's `ask` steps (choice / confirm /
// input, DESIGN §13), the stop buttons of active runs, and the progress line of a run.
// State comes from the run/step/progress/interaction events, from the replies that pause
// (their `pending`), and from GET /api/interactions?pending=1 + /api/runs?active=1 at start,
// after a reload or a resync (the `aios:runs-state` DOM event desk/connection.js dispatches).
// Everything drawn here lives beside a window's body, so a re-rendered view keeps it.
import { api } from '../core/api.js';
import { emit, on } from '../core/bus.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import { clearProgress } from '../desk/render.js';
import * as wm from '../desk/wm.js';
import { cardHead, cardText, cardWords, decisionButtons, isQuestion, optionLabel, optionValue } from './cards.js';
import { clearNote, drawCommandStop, drawProgress, elapsed, part, removePart, setNote } from './progress.js';
import {
  ACTIVE, FINAL, LASTING, activeRunsOf, answerFailed, answerSending, appsOf, cardClosed, cardPending, model, progressSeen,
  questionDismissed, questionEnded, questionSettled, runEnded, setCommandRun, stepSeen, upsertRun,
} from './state.js';

let openWindow = (id) => wm.get(id);
let tick = null;

// ------------------------------------------------------------------ wiring

/** hooks: {openWindow(appId) -> window}: opens an app's window the way desk/apps.js does. */
export function init(hooks = {}) {
  if (hooks.openWindow) openWindow = hooks.openWindow;
  on('run:stop', ({ id, runId }) => stopApp(id, runId));
  on('wm:changed', ({ id, state: s }) => {
    if (s === 'open') redraw(id);
  });
  const stop = document.getElementById('command_stop');
  if (stop) {
    stop.appendChild(icon('stop'));
    stop.addEventListener('click', () => {
      if (model.commandRun) cancel(model.commandRun);
    });
  }
  // desk/connection.js reads the listings at load and after a resync, and hands them over as a DOM event.
  document.addEventListener('aios:runs-state', (ev) => adoptState(ev.detail));
}

/** The page's language changed: the cards are drawn again in it. Called by main.js once the
 * apps' names are in the new language (the cards name the apps). */
export function relabel() {
  for (const w of wm.list()) redraw(w.id); // only the cards whose words changed (drawCards)
  drawCommandStop();
}

/** {interactions, runs} from the listings: pending cards and active runs are drawn again. */
export function adoptState(detail) {
  if (!isObject(detail)) return;
  if (Array.isArray(detail.runs)) {
    for (const r of detail.runs) {
      if (!isObject(r) || typeof r.run_id !== 'string' || model.endedRuns.has(r.run_id)) continue;
      const run = upsertRun(r);
      if (Array.isArray(r.steps)) {
        for (const s of r.steps) if (isObject(s)) stepSeen(run, s, { listing: true });
      }
      if (run.kind === 'instruction' && (!state.sessionId || run.session_id === state.sessionId)) {
        setCommandRun(run.run_id);
      }
      for (const app of run.apps) redraw(app);
    }
    drawCommandStop();
    ensureTick();
  }
  if (Array.isArray(detail.interactions)) {
    for (const ia of detail.interactions) addCard(ia);
  }
}

/** A reply of instruction/action/open: its run, and the cards it waits on. */
export function adoptReply(reply, { instruction = false } = {}) {
  if (!isObject(reply)) return;
  if (instruction && typeof reply.run_id === 'string' && !model.endedRuns.has(reply.run_id)) {
    setCommandRun(reply.run_id);
    drawCommandStop();
  }
  if (Array.isArray(reply.pending)) for (const ia of reply.pending) addCard(ia);
}

/** An interim view of a run that waited for the user: drawn (no request awaits it any more). */
export function ownsInterim(msg) {
  const run = isObject(msg) && typeof msg.run_id === 'string' ? model.runs.get(msg.run_id) : null;
  return !!run && run.paused && ACTIVE.has(run.state);
}

/** Server events of runs; true when the event was one of them. */
export function onEvent(msg) {
  switch (msg.type) {
    case 'run':
      runEvent(msg);
      return true;
    case 'step':
      if (typeof msg.run_id === 'string' && !model.endedRuns.has(msg.run_id)) {
        const run = upsertRun(msg, { stepOnly: true });
        stepSeen(run, msg, { ts: msg.ts });
        drawProgress(run);
        ensureTick();
      }
      return true;
    case 'progress': {
      const run = progressSeen(msg);
      if (run) drawProgress(run);
      return true;
    }
    case 'interaction':
      addCard(msg);
      return true;
    case 'interaction_done': {
      const id = toText(msg.id);
      const known = model.cards.get(id);
      if ((known && isQuestion(known)) || model.settled.has(id) || (isObject(msg.answer) && 'value' in msg.answer)) {
        // Not this tab's own answer in flight: someone answered elsewhere first.
        settle(id, msg.answer, msg.app, { elsewhere: isObject(msg.answer) && !model.answering.has(id) });
      } else {
        closeCard(id, toText(msg.answer), msg.app);
      }
      return true;
    }
    default:
      return false;
  }
}

// ------------------------------------------------------------------ runs

function runEvent(msg) {
  if (typeof msg.run_id !== 'string') return;
  if (FINAL.has(msg.state)) {
    endRun(msg.run_id, msg.state, msg);
    return;
  }
  if (model.endedRuns.has(msg.run_id)) return;
  const fresh = !model.runs.has(msg.run_id);
  const run = upsertRun(msg);
  if (fresh) {
    for (const app of run.apps) clearNote(app);
    if (run.kind === 'instruction' && (!state.sessionId || run.session_id === state.sessionId)) {
      setCommandRun(run.run_id);
    }
  }
  for (const app of run.apps) redraw(app);
  drawCommandStop();
  ensureTick();
}

function endRun(runId, finalState, msg) {
  const run = runEnded(runId, finalState, msg);
  const apps = run.apps.length ? run.apps : appsOf(msg.app);
  for (const app of apps) {
    clearProgress(app); // a pushed "Progress n %" ends with the run
    if (finalState === 'cancelled') setNote(app, t('runs.cancelled'), 'warn');
    else if (finalState === 'interrupted') setNote(app, t('runs.interrupted'), 'warn');
    else clearNote(app, 'ok'); // "allowed" has served its purpose; a denial stays said
    redraw(app);
  }
  drawCommandStop();
}

async function cancel(runId) {
  try {
    await api.cancelRun(runId);
  } catch (err) {
    // 409: it ended meanwhile; its run event says how.
    if (err.status !== 409) emit('runs:error', { message: t('runs.stop_failed', { error: err.message }) });
  }
}

function stopApp(app, runId) {
  const ids = runId && model.runs.has(runId) ? [runId] : activeRunsOf(app).map((r) => r.run_id);
  for (const id of ids) cancel(id);
}

// ------------------------------------------------------------------ drawing

/** Draw a window's run parts (card, stop button, progress) from the state. */
function redraw(app) {
  const w = wm.get(app);
  if (!w) return;
  const active = activeRunsOf(app);
  wm.setRunActive(app, active.length ? active[active.length - 1].run_id : null);
  const run = active.find((r) => r.state === 'running') || active[0];
  if (run) drawProgress(run);
  else removePart(w, '.run-progress');
  drawCards(app);
}

function ensureTick() {
  if (tick) return;
  tick = setInterval(() => {
    const live = [...model.runs.values()].filter((r) => ACTIVE.has(r.state));
    if (!live.length) {
      clearInterval(tick);
      tick = null;
    }
    for (const run of live) drawProgress(run);
    for (const id of model.cards.keys()) drawCountdown(id);
  }, DEFAULTS.runTickMs);
}

// ------------------------------------------------------------------ the plan preview card

function addCard(ia) {
  const pending = cardPending(ia);
  if (!pending) return;
  const { app, fresh } = pending;
  if (!wm.get(app)) openWindow(app);
  else if (fresh) wm.raise(app);
  redraw(app);
  ensureTick();
}

/** The card is answered (here, in another tab, or it expired/was withdrawn): say how. */
function closeCard(id, answer, app, { elsewhere = false } = {}) {
  const ia = cardClosed(id);
  const where = ia ? toText(ia.app) : toText(app);
  const w = wm.get(where);
  if (w) {
    const node = w.el.querySelector(`.run-card[data-interaction="${CSS.escape(id)}"]`);
    const hadFocus = node && node.contains(document.activeElement);
    redraw(where);
    if (hadFocus) w.body.focus({ preventScroll: true });
  }
  const key = `runs.outcome_${answer}`;
  const text = t(key);
  if (text === key) return;
  // A first answer given elsewhere is news to this tab: it stays said like a denial.
  if (elsewhere) setNote(where, t('runs.answered_elsewhere', { outcome: text }), 'info');
  else setNote(where, text, LASTING.has(answer) ? 'warn' : 'ok');
}

function renderCard(ia) {
  const titleId = `iatitle_${ia.id}`;
  const promptId = `iaprompt_${ia.id}`;
  const buttons = el('div', { class: 'run-card-buttons' }, decisionButtons(ia));
  const card = el('section', {
    class: 'run-card', tabIndex: -1, dataset: { interaction: ia.id, runId: toText(ia.run_id), systemChrome: '' },
    attrs: { role: 'alertdialog', 'aria-labelledby': titleId, 'aria-describedby': promptId },
  },
  cardHead(ia, { titleId }),
  cardText(ia, { promptId, promptClass: 'run-card-prompt' }),
  el('p', { class: 'run-card-expires muted', attrs: { 'aria-live': 'off' } }),
  el('p', { class: 'run-card-error', hidden: true, attrs: { role: 'alert' } }),
  buttons);
  buttons.addEventListener('click', (ev) => {
    const btn = ev.target.closest('[data-decision]');
    if (btn && !btn.disabled) decide(ia, btn.dataset.decision, card);
  });
  return card;
}

function drawCountdown(id) {
  const ia = model.cards.get(id);
  if (!ia) return;
  const w = wm.get(toText(ia.app));
  const node = w && w.el.querySelector(`.run-card[data-interaction="${CSS.escape(id)}"] .run-card-expires`);
  if (!node || typeof ia.expires !== 'number') return;
  const left = ia.expires * 1000 - Date.now();
  node.textContent = left > 0 ? t('runs.expires_in', { time: elapsed(left) }) : t('runs.expiring');
}

function drawCards(app) {
  const w = wm.get(app);
  if (!w) return;
  const mine = [...model.cards.values(), ...[...model.settled.values()].map((s) => s.ia)]
    .filter((ia) => toText(ia.app) === app);
  if (!mine.length) {
    removePart(w, '.run-cards');
    return;
  }
  const layer = part(w, 'run-cards', w.body);
  layer.dataset.systemChrome = ''; // the system's, above anything the app draws (runs.css)
  // Only ended questions left: they stay said without covering the window's content.
  layer.toggleAttribute('data-settled', !mine.some((ia) => model.cards.has(ia.id)));
  const shown = new Map([...layer.querySelectorAll(':scope > .run-card')].map((n) => [n.dataset.interaction, n]));
  for (const [id, node] of shown) {
    if (!model.cards.has(id) && !model.settled.has(id)) {
      node.remove();
      shown.delete(id);
    }
  }
  let first = null;
  for (const ia of mine) {
    const node = shown.get(ia.id);
    const done = model.settled.get(ia.id);
    const want = done ? done.state : 'pending';
    const words = cardWords(ia); // the language and the apps' names it is drawn with
    if (node && (node.dataset.state || 'pending') === want && node.dataset.words === words) continue;
    const card = isQuestion(ia) ? renderQuestion(ia, done) : renderCard(ia);
    card.dataset.words = words;
    if (node) {
      node.replaceWith(card);
    } else {
      layer.appendChild(card);
      if (!done) first = first || card;
    }
    drawCountdown(ia.id);
  }
  if (first && !typing()) focusCard(first);
}

/** A new card takes the keyboard: an input card's text field, any other card itself. */
function focusCard(card) {
  const field = card.querySelector('.ask-input:not(:disabled)');
  (field || card).focus({ preventScroll: true });
}

/** The user is typing somewhere: a card that appears must not take the keyboard away. */
function typing() {
  const a = document.activeElement;
  return !!a && (a.tagName === 'TEXTAREA' || (a.tagName === 'INPUT' && a.value !== '' && a.type !== 'checkbox'))
    && !a.closest('.run-card');
}

async function decide(ia, decision, card) {
  const buttons = [...card.querySelectorAll('[data-decision]')];
  for (const b of buttons) b.disabled = true;
  card.setAttribute('aria-busy', 'true');
  try {
    const reply = await api.answerInteraction(ia.id, decision);
    const answer = isObject(reply) && isObject(reply.answer) ? toText(reply.answer.decision) : decision;
    closeCard(ia.id, answer || decision, ia.app);
  } catch (err) {
    const current = isObject(err.body) && isObject(err.body.current) ? err.body.current : null;
    if (err.status === 409 && current) {
      // Another tab (or expiry) came first: say what happened instead of failing loudly.
      const first = isObject(current.answer) ? toText(current.answer.decision) : toText(current.state);
      closeCard(ia.id, first === 'withdrawn' ? 'cancelled' : first, ia.app, { elsewhere: true });
      return;
    }
    for (const b of buttons) b.disabled = false;
    card.removeAttribute('aria-busy');
    const box = card.querySelector('.run-card-error');
    box.textContent = t('runs.answer_failed', { error: err.message });
    box.hidden = false;
  }
}

// ------------------------------------------------------------------ question cards (DESIGN §13)

/** A choice's options, a confirm's yes and no, as {value, label}. */
function choicesOf(ia) {
  if (ia.kind === 'confirm') return [{ value: true, label: t('ask.yes') }, { value: false, label: t('ask.no') }];
  const options = Array.isArray(ia.options) ? ia.options : [];
  return options.map((o) => ({ value: optionValue(o), label: optionLabel(o) }));
}

/** The same value as the one given (JSON equality: values may be objects). */
function sameValue(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** How an ended question card says its outcome, in the page's language. */
function outcomeText(ia, done) {
  if (done.state !== 'answered') return t(`ask.${done.state}`);
  if (ia.kind === 'confirm') return t(done.value === true ? 'ask.confirmed' : 'ask.declined');
  if (ia.kind === 'choice') {
    const chosen = choicesOf(ia).find((c) => sameValue(c.value, done.value));
    return t('ask.chose', { choice: chosen ? chosen.label : toText(done.value) });
  }
  return t('ask.entered', { text: toText(done.value) });
}

function renderQuestion(ia, done) {
  const titleId = `iatitle_${ia.id}`;
  const promptId = `iaprompt_${ia.id}`;
  const controls = ia.kind === 'input' ? inputForm(ia, done, promptId) : choiceButtons(ia, done);
  const card = el('section', {
    class: ['run-card', 'ask-card'], tabIndex: -1,
    dataset: { interaction: ia.id, runId: toText(ia.run_id), kind: ia.kind, state: done ? done.state : 'pending',
      systemChrome: '' },
    attrs: { role: done ? 'group' : 'alertdialog', 'aria-labelledby': titleId, 'aria-describedby': promptId },
  },
  cardHead(ia, { titleId }),
  cardText(ia, { promptId, promptClass: 'ask-prompt' }),
  controls,
  done
    ? el('p', { class: 'ask-outcome', dataset: { state: done.state }, attrs: { role: 'status' } },
      el('span', { class: 'ask-outcome-text', text: outcomeText(ia, done) }),
      done.elsewhere ? el('span', { class: 'ask-elsewhere muted', text: t('ask.elsewhere') }) : null)
    : el('p', { class: 'run-card-expires muted', attrs: { 'aria-live': 'off' } }),
  el('p', { class: 'run-card-error', hidden: true, attrs: { role: 'alert' } }));
  if (done) {
    lockCard(card, true);
    return card;
  }
  card.addEventListener('click', (ev) => {
    const btn = ev.target.closest('[data-value]');
    if (btn && !btn.disabled) send(ia, JSON.parse(btn.dataset.value), card);
  });
  card.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const field = card.querySelector('.ask-input');
    if (field && !field.disabled) send(ia, field.value, card);
  });
  return card;
}

function choiceButtons(ia, done) {
  const chosen = (c) => !!done && done.state === 'answered' && sameValue(c.value, done.value);
  return el('div', { class: 'run-card-buttons' }, choicesOf(ia).map((c) => el('button', {
    type: 'button', class: ['run-card-btn', 'ask-option', chosen(c) ? 'is-chosen' : ''],
    dataset: { value: JSON.stringify(c.value) }, text: c.label,
    attrs: chosen(c) ? { 'aria-current': 'true' } : null,
  })));
}

function inputForm(ia, done, promptId) {
  const answered = !!done && done.state === 'answered';
  const start = ia.default === undefined || ia.default === null ? '' : toText(ia.default);
  const field = el('input', {
    type: 'text', class: 'ask-input', value: answered ? toText(done.value) : start,
    placeholder: toText(ia.placeholder), attrs: { 'aria-labelledby': promptId },
  });
  return el('form', { class: 'ask-form' }, field,
    el('button', { type: 'submit', class: ['run-card-btn', 'ask-submit'], text: t('ask.submit') }));
}

/** Disable (or enable again) everything a card can be operated with. */
function lockCard(card, locked) {
  for (const c of card.querySelectorAll('button, input')) {
    c.disabled = locked;
    if (locked) c.setAttribute('aria-disabled', 'true');
    else c.removeAttribute('aria-disabled');
  }
}

async function send(ia, value, card) {
  const app = toText(ia.app);
  answerSending(ia.id);
  lockCard(card, true);
  card.setAttribute('aria-busy', 'true');
  // The answer lets the run go on: its next view may come before this reply does.
  wm.addCleanup(app, () => dropSettled(ia.id, app));
  try {
    const reply = await api.answerQuestion(ia.id, value);
    settle(ia.id, isObject(reply) && isObject(reply.answer) ? reply.answer : { value }, app);
  } catch (err) {
    const current = isObject(err.body) && isObject(err.body.current) ? err.body.current : null;
    if (err.status === 409 && current) {
      // Answered first in another tab (or it expired): show that answer, quietly.
      settle(ia.id, isObject(current.answer) ? current.answer : toText(current.state), app, { elsewhere: true });
      return;
    }
    answerFailed(ia.id); // still pending: a view that came meanwhile did not replace it
    if (!card.isConnected) return;
    lockCard(card, false);
    card.removeAttribute('aria-busy');
    const box = card.querySelector('.run-card-error');
    box.textContent = t('ask.failed', { error: err.message });
    box.hidden = false;
  }
}

/** A question ended: answered ({value}), `expired`, or `cancelled`/`withdrawn`. The first outcome stays. */
function settle(id, answer, app, { elsewhere = false } = {}) {
  const { ia, wasSending } = questionEnded(id);
  const where = ia ? toText(ia.app) : toText(app);
  const w = wm.get(where);
  if (ia && w && questionSettled(id, ia, answer, elsewhere)) {
    if (!wasSending) wm.addCleanup(where, () => dropSettled(id, where));
  }
  if (!w) return;
  const hadFocus = cardHasFocus(w, id);
  redraw(where);
  if (hadFocus) {
    const again = w.el.querySelector(`.run-card[data-interaction="${CSS.escape(id)}"]`);
    (again || w.body).focus({ preventScroll: true });
  }
}

function cardHasFocus(w, id) {
  const node = w.el.querySelector(`.run-card[data-interaction="${CSS.escape(id)}"]`);
  return !!node && node.contains(document.activeElement);
}

/** The app's next view replaced the window's content: its ended question cards go with it. */
function dropSettled(id, app) {
  if (!questionDismissed(id)) return;
  const w = wm.get(app);
  if (!w) return;
  const hadFocus = cardHasFocus(w, id);
  drawCards(app);
  if (hadFocus) w.body.focus({ preventScroll: true });
}
