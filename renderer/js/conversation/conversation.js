// The conversation panel (#conversation, DESIGN §13): the session's timeline — what the user
// typed or said, what the system and the apps answered (with a link that raises the app's
// window), the approval and question cards (answerable here too; once answered they show the
// answer and are disabled), runs in progress and their outcomes (interrupted ones can be sent
// again). Everything comes from GET /api/sessions/<sid>/timeline, so a reload or a restart of
// the system shows the same; server events only say "look again". A session menu starts a
// new conversation or switches to another one. The memory window opens it on the entry a memory
// was taken from (showEntry). Above the timeline, the session's topic tree (topics.js).
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { el, isObject, toText } from '../core/safe.js';
import { rememberSession, state } from '../core/state.js';
import { sendSuggestion } from '../desk/intents.js';
import { render, report } from './entries.js';
import * as topics from './topics.js';
import * as stream from './stream.js';

/** Timeline entries read per request. */
const PAGE = 50;
/** Events arrive in bursts (a run's state, its card, its views): one read after the burst. */
const REFRESH_DELAY_MS = 120;
/** Scrolled this close to the top (or bottom), the panel loads older entries (or follows). */
const SCROLL_TOP_PX = 24;
/** Sessions the switcher lists. */
const SESSIONS_SHOWN = 30;
const LIVE_EVENTS = new Set(['run', 'interaction', 'interaction_done', 'view', 'said']);
/** Whether the panel was open, kept for this tab so that a reload shows it again. */
const OPEN_KEY = 'aios.conversation.open';
/** Older pages read at most when looking for one entry (showEntry). */
const SEEK_PAGES_MAX = 20;

const ui = {};
/** entry id -> {entry, node}, in timeline order. */
let shown = new Map();
let olderCursor = null;
let loadingOlder = null;
/** The newest page's load under way (or done): showEntry waits for it. */
let loading = Promise.resolve();
let refreshTimer = null;
let stale = true;
/** Bumped on every session switch, so a late reply of the previous session is dropped. */
let generation = 0;

export function init() {
  ui.toggle = document.getElementById('conversation_button');
  ui.toggle.appendChild(icon('chat'));
  ui.list = el('ol', { class: 'conv-list', tabIndex: -1, attrs: { 'aria-live': 'polite' } });
  ui.empty = el('p', { class: 'conv-empty muted', text: t('conv.empty') });
  ui.older = el('p', { class: 'conv-older muted', hidden: true, text: t('conv.loading_older') });
  ui.error = el('p', { class: 'conv-error', hidden: true, attrs: { role: 'alert' } });
  ui.sessions = el('select', { class: 'conv-sessions', attrs: { 'aria-label': t('conv.sessions') } });
  ui.newBtn = el('button', { type: 'button', class: 'conv-new', dataset: { action: 'new-conversation' }, text: t('conv.new') });
  ui.close = el('button', { type: 'button', class: 'conv-close', attrs: { 'aria-label': t('conv.close') }, text: '×' });
  ui.title = el('h2', { class: 'conv-title', id: 'conversation_title', text: t('conv.title') });
  ui.report = el('div', { class: 'conv-report-box', hidden: true });
  ui.body = el('div', { class: 'conv-body' }, ui.report, ui.older, ui.empty, ui.list);
  ui.panel = el('section', {
    id: 'conversation', class: 'conv-panel', hidden: true,
    attrs: { role: 'region', 'aria-labelledby': 'conversation_title' },
  },
  el('header', { class: 'conv-head' }, ui.title, ui.close),
  el('div', { class: 'conv-bar' }, ui.sessions, ui.newBtn),
  topics.init(),
  ui.error,
  ui.body);
  document.body.appendChild(ui.panel);

  ui.toggle.addEventListener('click', () => toggle());
  ui.close.addEventListener('click', () => toggle(false));
  ui.newBtn.addEventListener('click', newConversation);
  ui.sessions.addEventListener('change', () => switchTo(ui.sessions.value));
  ui.body.addEventListener('scroll', () => {
    if (ui.body.scrollTop <= SCROLL_TOP_PX) loadOlder();
  });
  // One listener for every entry's buttons (links to windows, retry, card answers).
  ui.list.addEventListener('click', onListClick);
  ui.report.addEventListener('click', onReportClick);
  ui.list.addEventListener('submit', onInputSubmit);
  stream.init(ui.list, follow);
  ui.panel.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      ev.stopPropagation();
      toggle(false);
    }
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.ctrlKey && !ev.altKey && !ev.metaKey && ev.key === '.') {
      ev.preventDefault();
      toggle();
    }
  });
  if (storedOpen()) toggle(true);
}

function storedOpen() {
  try {
    return sessionStorage.getItem(OPEN_KEY) === '1';
  } catch {
    return false;
  }
}

function storeOpen(open) {
  try {
    sessionStorage.setItem(OPEN_KEY, open ? '1' : '0');
  } catch {
    // storage disabled: a reload starts with the panel closed
  }
}

export function isOpen() {
  return !!ui.panel && !ui.panel.hidden;
}

/** Show or hide the panel (flip when ``show`` is omitted). */
export function toggle(show = !isOpen()) {
  ui.panel.hidden = !show;
  ui.toggle.setAttribute('aria-expanded', String(show));
  ui.toggle.classList.toggle('is-active', show);
  storeOpen(show);
  if (show) {
    ui.list.focus({ preventScroll: true });
    loadSessions();
    if (stale) reload();
  } else if (ui.panel.contains(document.activeElement) || document.activeElement === document.body) {
    ui.toggle.focus();
  }
}

/** Something the timeline shows may have changed: read it again soon (now if shown). */
export function refresh() {
  stale = true;
  if (!isOpen()) return;
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(loadNewest, REFRESH_DELAY_MS);
}

/** A streamed reply grew: stay at the bottom if the user was reading there. */
function follow() {
  drawEmpty();
  if (ui.body.scrollHeight - ui.body.scrollTop - ui.body.clientHeight < SCROLL_TOP_PX * 4) {
    ui.body.scrollTop = ui.body.scrollHeight;
  }
}

/** Server events: runs, cards and views of this session change the timeline; a reply the
 * model is writing grows its bubble (stream.js). */
export function onEvent(msg) {
  if (topics.onEvent(msg)) return;
  if (stream.onEvent(msg)) return;
  if (!isObject(msg) || !LIVE_EVENTS.has(msg.type)) return;
  if (msg.type === 'view' && (msg.pushed === true || msg.interim === true)) return; // not in the history
  if (typeof msg.session_id === 'string' && state.sessionId && msg.session_id !== state.sessionId) return;
  refresh();
}

/** The page's language changed: static texts and the entries are drawn again. */
export function relabel() {
  if (!ui.panel) return;
  ui.title.textContent = t('conv.title');
  ui.empty.textContent = t('conv.empty');
  ui.older.textContent = t('conv.loading_older');
  ui.newBtn.textContent = t('conv.new');
  ui.close.setAttribute('aria-label', t('conv.close'));
  ui.sessions.setAttribute('aria-label', t('conv.sessions'));
  topics.relabel();
  for (const item of shown.values()) {
    const node = render(item.entry);
    item.node.replaceWith(node);
    item.node = node;
  }
  if (isOpen()) loadSessions();
}

// ------------------------------------------------------------------ loading

function showError(err) {
  ui.error.textContent = err ? t('conv.failed', { error: err.message }) : '';
  ui.error.hidden = !err;
}

async function fetchPage(before) {
  const sid = state.sessionId;
  if (!sid) return { entries: [], has_more: false, next_before: null };
  try {
    return await api.timeline(sid, { before, limit: PAGE });
  } catch (err) {
    // A session this data dir never had (a fresh install, another data dir): nothing yet.
    if (err.status === 404) return { entries: [], has_more: false, next_before: null };
    throw err;
  }
}

function reload() {
  loading = loadFirst();
  topics.load();
  return loading;
}

async function loadFirst() {
  const mine = ++generation;
  stale = false;
  try {
    const page = await fetchPage(null);
    if (mine !== generation) return;
    shown = new Map();
    ui.list.replaceChildren();
    place(page.entries, 'end');
    stream.settle(Array.isArray(page.entries) ? page.entries : [], nodeOf);
    olderCursor = page.has_more ? page.next_before : null;
    showError(null);
    drawEmpty();
    ui.body.scrollTop = ui.body.scrollHeight;
    // A first page shorter than the panel cannot be scrolled up: fetch older ones at once.
    if (olderCursor && ui.body.scrollHeight <= ui.body.clientHeight) loadOlder();
  } catch (err) {
    if (mine === generation) showError(err);
  }
}

/** The newest page, merged in: known entries are drawn again, new ones appended. */
async function loadNewest() {
  const mine = generation;
  stale = false;
  try {
    const page = await fetchPage(null);
    if (mine !== generation) return;
    const entries = Array.isArray(page.entries) ? page.entries.filter(isObject) : [];
    if (shown.size && entries.length && page.has_more && !shown.has(entries[0].id)) {
      // More happened than one page holds: start again from the newest.
      await reload();
      return;
    }
    const atBottom = ui.body.scrollHeight - ui.body.scrollTop - ui.body.clientHeight < SCROLL_TOP_PX;
    const fresh = [];
    for (const entry of entries) {
      const known = shown.get(entry.id);
      if (!known) {
        fresh.push(entry);
        continue;
      }
      if (JSON.stringify(known.entry) === JSON.stringify(entry)) continue;
      const node = render(entry);
      const hadFocus = known.node.contains(document.activeElement);
      known.node.replaceWith(node);
      shown.set(entry.id, { entry, node });
      if (hadFocus) ui.list.focus({ preventScroll: true });
    }
    place(fresh, 'end');
    stream.settle(entries, nodeOf);
    if (!shown.size) olderCursor = null;
    showError(null);
    drawEmpty();
    if (atBottom || fresh.length) ui.body.scrollTop = ui.body.scrollHeight;
  } catch (err) {
    if (mine === generation) showError(err);
  }
}

/** The page before the oldest entry shown (one request at a time: a second call joins it). */
function loadOlder() {
  if (!olderCursor) return Promise.resolve();
  if (!loadingOlder) loadingOlder = fetchOlder().finally(() => { loadingOlder = null; });
  return loadingOlder;
}

async function fetchOlder() {
  const mine = generation;
  ui.older.hidden = false;
  try {
    const page = await fetchPage(olderCursor);
    if (mine !== generation) return;
    const before = ui.body.scrollHeight;
    place(page.entries, 'start');
    olderCursor = page.has_more ? page.next_before : null;
    // Keep what the user was looking at in place while older entries appear above it.
    ui.body.scrollTop += ui.body.scrollHeight - before;
  } catch (err) {
    showError(err);
  } finally {
    ui.older.hidden = true;
  }
}

function place(entries, where) {
  const list = Array.isArray(entries) ? entries.filter((e) => isObject(e) && typeof e.id === 'string') : [];
  const nodes = [];
  const items = [];
  for (const entry of list) {
    if (shown.has(entry.id)) continue;
    const node = render(entry);
    nodes.push(node);
    items.push([entry.id, { entry, node }]);
  }
  if (where === 'start') {
    ui.list.prepend(...nodes);
    shown = new Map([...items, ...shown]);
  } else {
    ui.list.append(...nodes);
    for (const [id, item] of items) shown.set(id, item);
  }
}

function nodeOf(entryId) {
  const item = shown.get(entryId);
  return item ? item.node : null;
}

function drawEmpty() {
  ui.empty.hidden = ui.list.childElementCount > 0; // the entries, and a reply being written
}

// ------------------------------------------------------------------ sessions

async function loadSessions() {
  let list;
  try {
    list = await api.sessions(SESSIONS_SHOWN);
  } catch (err) {
    showError(err);
    return;
  }
  const sessions = Array.isArray(list) ? list.filter((s) => isObject(s) && typeof s.session_id === 'string') : [];
  const current = state.sessionId;
  if (current && !sessions.some((s) => s.session_id === current)) {
    sessions.unshift({ session_id: current, title: null, turns: 0, updated: Date.now() / 1000 });
  }
  ui.sessions.replaceChildren(...sessions.map((s) => el('option', {
    value: s.session_id, selected: s.session_id === current, text: sessionLabel(s),
  })));
  if (!current) ui.sessions.prepend(el('option', { value: '', selected: true, text: t('conv.untitled') }));
}

function sessionLabel(s) {
  const when = typeof s.updated === 'number' ? new Date(s.updated * 1000).toLocaleString(state.lang) : '';
  const title = typeof s.title === 'string' && s.title ? s.title : t('conv.untitled');
  return when ? `${title} · ${when}` : title;
}

async function newConversation() {
  ui.newBtn.disabled = true;
  try {
    const reply = await api.newSession();
    switchTo(toText(reply && reply.session_id));
    showReport(isObject(reply) ? reply.report : null);
  } catch (err) {
    showError(err);
  } finally {
    ui.newBtn.disabled = false;
  }
}

/** The report of the conversation just left, above the new one's timeline (DESIGN §16). */
function showReport(r) {
  const node = report(r);
  ui.report.replaceChildren(...(node ? [node] : []));
  ui.report.hidden = !node;
}

function onReportClick(ev) {
  const why = ev.target.closest('[data-report-session]');
  if (why) emit('trace:session', { session_id: why.dataset.reportSession, leftOf: ui.panel.getBoundingClientRect().left });
  else if (ev.target.closest('.conv-report-close')) showReport(null);
}

function switchTo(sid) {
  if (!sid || sid === state.sessionId) return;
  showReport(null);
  rememberSession(sid);
  olderCursor = null;
  shown = new Map();
  stream.clear();
  ui.list.replaceChildren();
  drawEmpty();
  emit('session:changed', { session_id: sid });
  reload();
  loadSessions();
}

/**
 * Open the panel on session ``sid`` with its entry ``entryId`` (a timeline id: "h12" is history
 * row 12) in view and marked: where a memory came from (DESIGN §15). Older pages are read until
 * the entry is found. A session that is gone is said, and the current one kept.
 */
export async function showEntry(sid, entryId) {
  if (!ui.panel) return false;
  if (typeof sid === 'string' && sid && sid !== state.sessionId) {
    try {
      await api.timeline(sid, { limit: 1 });
    } catch (err) {
      if (!isOpen()) toggle(true);
      ui.error.textContent = err.status === 404 ? t('conv.session_gone') : t('conv.failed', { error: err.message });
      ui.error.hidden = false;
      return false;
    }
    switchTo(sid);
  }
  if (!isOpen()) toggle(true);
  else if (stale) reload();
  await loading;
  if (!entryId) return true;
  let item = shown.get(entryId);
  for (let pages = 0; !item && olderCursor && pages < SEEK_PAGES_MAX; pages++) {
    const cursor = olderCursor;
    await loadOlder();
    if (olderCursor === cursor) break; // the page failed (its error is shown)
    item = shown.get(entryId);
  }
  for (const node of ui.list.querySelectorAll('.is-highlighted')) node.classList.remove('is-highlighted');
  if (!item) {
    ui.error.textContent = t('conv.entry_gone');
    ui.error.hidden = false;
    return false;
  }
  item.node.classList.add('is-highlighted');
  item.node.scrollIntoView({ block: 'center' });
  return true;
}

// ------------------------------------------------------------------ acting

function entryOf(node) {
  const li = node.closest('[data-entry]');
  return li ? shown.get(li.dataset.entry) : null;
}

function onListClick(ev) {
  if (sendSuggestion(ev.target)) return;
  const why = ev.target.closest('[data-why]');
  if (why) {
    emit('trace:open', { session_id: state.sessionId, run_id: why.dataset.why, ts: Number(why.dataset.ts),
      leftOf: ui.panel.getBoundingClientRect().left });
    return;
  }
  const link = ev.target.closest('[data-app]');
  if (link) {
    emit('app:activate', { id: link.dataset.app });
    return;
  }
  const retry = ev.target.closest('[data-retry]');
  if (retry && !retry.disabled) {
    retryRun(retry);
    return;
  }
  const btn = ev.target.closest('.conv-card-btn[data-decision], .conv-card-btn[data-value]');
  if (!btn || btn.disabled) return;
  const item = entryOf(btn);
  if (!item) return;
  if (btn.dataset.decision) answer(item, btn, () => api.answerInteraction(item.entry.interaction.id, btn.dataset.decision));
  else answer(item, btn, () => api.answerQuestion(item.entry.interaction.id, JSON.parse(btn.dataset.value)));
}

function onInputSubmit(ev) {
  ev.preventDefault();
  const item = entryOf(ev.target);
  const field = ev.target.querySelector('.conv-card-input');
  if (!item || !field || field.disabled) return;
  answer(item, field, () => api.answerQuestion(item.entry.interaction.id, field.value));
}

async function answer(item, control, send) {
  const card = item.node;
  const controls = [...card.querySelectorAll('button, input')];
  for (const c of controls) c.disabled = true;
  card.setAttribute('aria-busy', 'true');
  try {
    const reply = await send();
    if (isObject(reply)) redrawCard(item, reply);
  } catch (err) {
    const current = isObject(err.body) && isObject(err.body.current) ? err.body.current : null;
    if (err.status === 409 && current) {
      redrawCard(item, current); // answered elsewhere first (or expired): show the first answer
      return;
    }
    for (const c of controls) c.disabled = false;
    card.removeAttribute('aria-busy');
    const box = card.querySelector('.conv-card-error');
    box.textContent = t('conv.answer_failed', { error: err.message });
    box.hidden = false;
    control.focus();
  }
  refresh();
}

function redrawCard(item, ia) {
  const entry = { ...item.entry, interaction: { ...item.entry.interaction, ...ia } };
  const node = render(entry);
  item.node.replaceWith(node);
  shown.set(entry.id, { entry, node });
  ui.list.focus({ preventScroll: true });
}

async function retryRun(button) {
  button.disabled = true;
  try {
    await api.retryRun(button.dataset.retry);
  } catch (err) {
    button.disabled = false;
    showError(err);
  }
  refresh();
}
