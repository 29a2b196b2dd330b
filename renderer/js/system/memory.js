// The memory window (win_memory, DESIGN §15): what the system keeps about the user, to see and
// correct. A search field and filters by scope (you / each app) and source (you / apps /
// conversations) over GET /api/memories; the proposals waiting for the user's yes on top
// (Accept / Reject); then the active memories, each editable in place (text and tags), pinned
// or deleted (asked first). A memory taken from a conversation links to that turn (the
// conversation panel opens on it: bus "conversation:show").
// Also the number of proposals (state.memoryProposed, bus "memory:count"), which the tray and
// the start menu show as a badge; the server's `memory` event keeps it and the window current.
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import { confirm } from '../desk/modal.js';
import * as wm from '../desk/wm.js';
import * as item from './memoryitem.js';

/** The window's name (DOM id win_memory, the saved layout); an app can never be named so. */
export const WIN_NAME = 'memory';
export const WIN_ID = wm.systemId(WIN_NAME);
/** The source filter's choices: the prefix GET /api/memories?source= matches. */
const SOURCES = [['', 'memory.source_all'], ['user', 'memory.source_user'], ['app:', 'memory.source_app'],
  ['extracted:', 'memory.source_extracted']];

let filter = { q: '', scope: '', source: '' };
let limit = DEFAULTS.memoryPage;
/** Scopes seen in any listing, so the filter offers an app's memories after the app is gone. */
const seenScopes = new Set();
/** Rows being edited (id -> their editor), kept across the redraws a memory event causes. */
const editors = new Map();
/** The memories drawn, by id. */
let shown = new Map();
/** Session id -> its title (GET /api/sessions), to name the conversation a memory came from. */
let titles = new Map();
let ui = null;
let generation = 0;
let reloadTimer = null;
let searchTimer = null;

// ------------------------------------------------------------------ the proposals' count

function setCount(n) {
  const count = Number.isInteger(n) && n > 0 ? n : 0;
  if (count === state.memoryProposed) return;
  state.memoryProposed = count;
  emit('memory:count', count);
}

/** Read the number of proposals (at load and after a reconnect). */
export async function refreshCount() {
  try {
    const reply = await api.memories({ state: 'proposed', limit: 1 });
    if (isObject(reply)) setCount(reply.proposed);
  } catch (err) {
    if (err.status !== 404) console.warn('memory count unavailable:', err.message);
  }
}

/** The server's `memory` event ({proposed}): the badge, and the window if it is open. */
export function onEvent(msg) {
  if (isObject(msg) && typeof msg.proposed === 'number') setCount(msg.proposed);
  if (wm.get(WIN_ID)) scheduleLoad(DEFAULTS.memoryReloadDelayMs);
}

// ------------------------------------------------------------------ the window

function select(id, labelKey, options, value) {
  const node = el('select', { id, class: 'inp inp-small', attrs: { 'aria-label': t(labelKey) } },
    options.map(([v, text]) => el('option', { value: v, text })));
  node.value = options.some(([v]) => v === value) ? value : '';
  return node;
}

function scopeOptions() {
  const apps = new Set([...state.apps.keys(), ...seenScopes, ...(filter.scope ? [filter.scope] : [])]);
  apps.delete(item.USER_SCOPE);
  return [['', t('memory.scope_all')], [item.USER_SCOPE, t('memory.in_user')],
    ...[...apps].sort().map((id) => [id, t('memory.in_app', { app: item.appName(id) })])];
}

function build(w) {
  const search = el('input', { id: 'memory_search', class: 'inp inp-small memory-search', type: 'search',
    value: filter.q, placeholder: t('memory.search'), attrs: { 'aria-label': t('memory.search') } });
  const scope = select('memory_scope', 'memory.scope', scopeOptions(), filter.scope);
  const source = select('memory_source', 'memory.source', SOURCES.map(([v, key]) => [v, t(key)]), filter.source);
  const selfFiles = el('button', { id: 'memory_self', type: 'button', class: 'link-btn', text: t('memory.self_files') });
  search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => setFilter({ q: search.value.trim() }), DEFAULTS.memorySearchDelayMs);
  });
  search.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      clearTimeout(searchTimer);
      setFilter({ q: search.value.trim() });
    }
  });
  scope.addEventListener('change', () => setFilter({ scope: scope.value }));
  source.addEventListener('change', () => setFilter({ source: source.value }));
  selfFiles.addEventListener('click', () => emit('system:settings', { page: 'memory' }));

  ui = {
    search, scope, source,
    status: el('p', { id: 'memory_status', class: 'muted memory-status', attrs: { role: 'status', 'aria-live': 'polite' } }),
    error: el('p', { id: 'memory_error', class: 'form-error', hidden: true, attrs: { role: 'alert' } }),
    proposedTitle: el('h3', { id: 'memory_proposed_title', class: 'memory-heading' }),
    proposed: el('ul', { id: 'memory_proposed_list', class: 'memory-list', attrs: { 'aria-labelledby': 'memory_proposed_title' } }),
    listTitle: el('h3', { id: 'memory_list_title', class: 'memory-heading' }),
    list: el('ul', { id: 'memory_list', class: 'memory-list', attrs: { 'aria-labelledby': 'memory_list_title' } }),
    empty: el('p', { id: 'memory_empty', class: 'muted memory-empty', hidden: true }),
    more: el('button', { id: 'memory_more', type: 'button', class: 'btn btn-small memory-more', hidden: true,
      text: t('memory.more') }),
  };
  ui.proposedBox = el('section', { id: 'memory_proposed', class: 'memory-proposed', hidden: true },
    ui.proposedTitle, el('p', { class: 'field-hint', text: t('memory.proposed_hint') }), ui.proposed);
  ui.more.addEventListener('click', () => {
    limit += DEFAULTS.memoryPage;
    load();
  });
  const content = el('div', { class: 'win-content memory-content' },
    el('div', { class: 'memory-toolbar' }, search, scope, source, selfFiles),
    ui.error, ui.status,
    el('div', { class: 'memory-scroll' }, ui.proposedBox,
      el('section', { class: 'memory-active' }, ui.listTitle, ui.list, ui.empty, ui.more)));
  content.addEventListener('click', onClick);
  content.addEventListener('keydown', onKey);
  ui.content = content;
  w.body.replaceChildren(content);
}

function setFilter(change) {
  const next = { ...filter, ...change };
  if (next.q === filter.q && next.scope === filter.scope && next.source === filter.source) return;
  filter = next;
  limit = DEFAULTS.memoryPage;
  load();
}

function scheduleLoad(delay) {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(load, delay);
}

async function load() {
  clearTimeout(reloadTimer);
  const w = wm.get(WIN_ID);
  if (!w || !ui) return;
  const mine = ++generation;
  const query = { scope: filter.scope, source: filter.source, q: filter.q };
  try {
    const [proposed, active, sessions] = await Promise.all([
      api.memories({ ...query, state: 'proposed', limit }),
      api.memories({ ...query, state: 'active', limit }),
      api.sessions(DEFAULTS.memorySessionTitles).catch(() => null), // titles are a courtesy
    ]);
    if (Array.isArray(sessions)) {
      titles = new Map(sessions.filter((x) => isObject(x) && typeof x.title === 'string' && x.title)
        .map((x) => [x.session_id, x.title]));
    }
    if (mine !== generation || wm.get(WIN_ID) !== w) return;
    setCount(isObject(active) ? active.proposed : 0);
    draw(listOf(proposed), listOf(active));
    ui.error.hidden = true;
  } catch (err) {
    if (mine !== generation) return;
    ui.error.textContent = t('memory.load_failed', { error: err.message });
    ui.error.hidden = false;
  }
}

function listOf(reply) {
  const rows = isObject(reply) && Array.isArray(reply.memories) ? reply.memories : [];
  return rows.filter((m) => isObject(m) && typeof m.id === 'string');
}

function draw(proposed, active) {
  for (const m of [...proposed, ...active]) seenScopes.add(toText(m.scope));
  const focus = focusedPlace();
  shown = new Map([...proposed, ...active].map((m) => [m.id, m]));
  for (const id of editors.keys()) if (!shown.has(id)) editors.delete(id);
  const rows = (list) => list.map((m) => editors.get(m.id) || item.render(m, titles));
  ui.proposed.replaceChildren(...rows(proposed));
  ui.list.replaceChildren(...rows(active));
  ui.proposedBox.hidden = !proposed.length;
  ui.proposedTitle.textContent = t('memory.proposed_title', { n: proposed.length });
  ui.listTitle.textContent = t('memory.list_title', { n: active.length });
  const filtered = !!(filter.q || filter.scope || filter.source);
  ui.empty.textContent = t(filtered ? 'memory.none_found' : 'memory.empty');
  ui.empty.hidden = active.length > 0;
  ui.more.hidden = proposed.length < limit && active.length < limit;
  // the scope filter learns the scopes this listing showed
  const scopes = scopeOptions();
  if (scopes.length !== ui.scope.options.length) {
    ui.scope.replaceChildren(...scopes.map(([v, text]) => el('option', { value: v, text })));
    ui.scope.value = filter.scope;
  }
  restoreFocus(focus);
}

/** The button (row id and data-act) that has the focus, to give it back after a redraw. */
function focusedPlace() {
  const node = document.activeElement;
  if (!node || !ui.content.contains(node)) return null;
  const row = node.closest('[data-id]');
  return row ? { id: row.dataset.id, act: node.dataset.act || '' } : null;
}

function restoreFocus(place) {
  if (!place) return;
  const row = [...ui.proposed.children, ...ui.list.children].find((r) => r.dataset.id === place.id);
  const target = row && (row.querySelector(`[data-act="${place.act}"]`) || row.querySelector('button'));
  if (target) target.focus();
  else ui.search.focus();
}

// ------------------------------------------------------------------ acting on a memory

function rowOf(node) {
  const row = node.closest('.memory-item');
  return row && shown.has(row.dataset.id) ? { row, memory: shown.get(row.dataset.id) } : null;
}

function onClick(ev) {
  const btn = ev.target.closest('[data-act]');
  if (!btn || btn.disabled) return;
  const found = rowOf(btn);
  if (!found) return;
  act(btn.dataset.act, found.row, found.memory, btn);
}

function onKey(ev) {
  const field = ev.target.closest('.memory-editor .inp');
  if (!field) return;
  const found = rowOf(field);
  if (!found) return;
  if (ev.key === 'Escape') {
    ev.stopPropagation();
    act('cancel', found.row, found.memory);
  } else if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey || field.tagName === 'INPUT')) {
    ev.preventDefault();
    act('save', found.row, found.memory);
  }
}

function replaceRow(row, node) {
  row.replaceWith(node);
  return node;
}

async function act(what, row, m, btn) {
  switch (what) {
    case 'source': {
      const from = item.origin(m);
      if (from) emit('conversation:show', { session_id: from.session, entry: from.turn === null ? null : `h${from.turn}` });
      return;
    }
    case 'edit': {
      const node = replaceRow(row, item.editor(m));
      editors.set(m.id, node);
      node.querySelector('.memory-edit-text').focus();
      return;
    }
    case 'cancel': {
      editors.delete(m.id);
      replaceRow(row, item.render(m, titles)).querySelector('[data-act="edit"]')?.focus();
      return;
    }
    case 'save': {
      const fields = item.edited(row);
      if (!fields.text) {
        item.showError(row, t('memory.text_required'));
        return;
      }
      await send(row, () => api.editMemory(m.id, fields), (saved) => {
        editors.delete(m.id);
        const node = replaceRow(row, item.render(isObject(saved) ? saved : m, titles));
        node.querySelector('[data-act="edit"]')?.focus();
        return t('memory.saved');
      });
      return;
    }
    case 'pin':
      await send(row, () => api.editMemory(m.id, { pinned: !m.pinned }),
        (saved) => t(isObject(saved) && saved.pinned ? 'memory.pinned_done' : 'memory.unpinned_done'));
      return;
    case 'delete': {
      const yes = await confirm(t('memory.delete_confirm', { text: toText(m.text) }), { title: t('memory.delete_title') });
      if (!yes) {
        btn?.focus();
        return;
      }
      await send(row, () => api.deleteMemory(m.id), () => t('memory.deleted'));
      return;
    }
    case 'accept':
      await send(row, () => api.acceptMemory(m.id), () => t('memory.accepted'));
      return;
    case 'reject':
      await send(row, () => api.rejectMemory(m.id), () => t('memory.rejected'));
      return;
    default:
  }
}

/** One request for a row: its buttons wait, the answer is said, the list read again. */
async function send(row, request, said) {
  const buttons = [...row.querySelectorAll('button, textarea, input')];
  for (const b of buttons) b.disabled = true;
  row.setAttribute('aria-busy', 'true');
  item.showError(row, '');
  try {
    const reply = await request();
    ui.status.textContent = said(reply);
    scheduleLoad(0);
  } catch (err) {
    for (const b of buttons) b.disabled = false;
    row.removeAttribute('aria-busy');
    item.showError(row, t('memory.failed', { error: err.message }));
    if (err.status === 404 || err.status === 409) scheduleLoad(0); // changed meanwhile: show what is
  }
}

// ------------------------------------------------------------------ open, relabel

export function open() {
  const already = wm.get(WIN_ID);
  const w = wm.open(WIN_ID, { title: t('memory.title'), icon: 'brain', system: true, width: 760, height: 580 });
  if (!already || !ui) {
    editors.clear();
    build(w);
  }
  load();
}

/** Re-draw after a language change, keeping the filters and the window where it is. */
export function refresh() {
  const w = wm.get(WIN_ID);
  if (!w) return;
  wm.setTitle(WIN_ID, t('memory.title'));
  editors.clear();
  build(w);
  load();
}
