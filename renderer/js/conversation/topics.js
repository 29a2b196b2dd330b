// The conversation panel's "Topics" section (DESIGN §18 "Topics"): the session's turns as a
// tree — one line per app the user worked with, its sub-topics beneath — from
// GET /api/sessions/<sid>/topics. The topic the user is on is highlighted; a paused one is a
// button that resumes it (its window comes up with its last view, as "back to …" does);
// archived ones are folded away. A `topics` event of this session says "look again".
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';

/** Events arrive in bursts (a turn, then its view): one read after the burst. */
const REFRESH_DELAY_MS = 150;
/** Whether the section was folded, kept for this tab. */
const FOLDED_KEY = 'aios.topics.folded';

const ui = {};
let tree = null;
let timer = null;
let generation = 0;

/** Build the section; the caller puts ``node()`` in the panel. */
export function init() {
  ui.count = el('span', { class: 'topics-count muted' });
  ui.label = el('span', { class: 'topics-label', text: t('topics.title') });
  ui.summary = el('summary', { class: 'topics-summary' }, ui.label, ui.count);
  ui.list = el('ol', { class: 'topic-tree', attrs: { 'aria-label': t('topics.title') } });
  ui.empty = el('p', { class: 'topics-empty muted', text: t('topics.empty') });
  ui.error = el('p', { class: 'topics-error', hidden: true, attrs: { role: 'alert' } });
  ui.section = el('details', { id: 'conv_topics', class: 'conv-topics' },
    ui.summary, ui.error, ui.empty, ui.list);
  ui.section.open = !storedFolded();
  ui.section.addEventListener('toggle', () => storeFolded(!ui.section.open));
  ui.list.addEventListener('click', onClick);
  return ui.section;
}

function storedFolded() {
  try {
    return sessionStorage.getItem(FOLDED_KEY) === '1';
  } catch {
    return false;
  }
}

function storeFolded(folded) {
  try {
    sessionStorage.setItem(FOLDED_KEY, folded ? '1' : '0');
  } catch {
    // storage disabled: a reload shows the section open
  }
}

/** Read the session's tree again (soon: events come in bursts). */
export function refresh() {
  clearTimeout(timer);
  timer = setTimeout(load, REFRESH_DELAY_MS);
}

/** A `topics` event: this session's tree changed. True when the event was one. */
export function onEvent(msg) {
  if (!isObject(msg) || msg.type !== 'topics') return false;
  if (typeof msg.session_id === 'string' && msg.session_id === state.sessionId) refresh();
  return true;
}

export async function load() {
  const mine = ++generation;
  const sid = state.sessionId;
  if (!ui.section) return;
  if (!sid) {
    draw(null);
    return;
  }
  try {
    const got = await api.topics(sid);
    if (mine !== generation) return;
    ui.error.hidden = true;
    draw(got);
  } catch (err) {
    if (mine !== generation) return;
    if (err.status === 404) {
      draw(null); // a session with nothing said yet
      return;
    }
    ui.error.textContent = t('topics.failed', { error: err.message });
    ui.error.hidden = false;
  }
}

function appName(app) {
  const meta = state.apps.get(app);
  return toText((meta && meta.name) || app);
}

function draw(got) {
  tree = isObject(got) && Array.isArray(got.topics) ? got : null;
  const roots = tree ? tree.topics.filter(isObject) : [];
  const live = roots.filter((r) => r.state !== 'archived');
  const archived = roots.filter((r) => r.state === 'archived');
  ui.count.textContent = live.length ? `(${live.length})` : '';
  ui.empty.hidden = roots.length > 0;
  const items = live.map((r) => item(r, true));
  if (archived.length) {
    const folded = el('details', { class: 'topics-archived' },
      el('summary', { class: 'muted', text: t('topics.archived', { n: archived.length }) }),
      el('ol', { class: 'topic-tree' }, archived.map((r) => item(r, true))));
    items.push(el('li', { class: 'topic-archived-group' }, folded));
  }
  ui.list.replaceChildren(...items);
}

function item(topic, isRoot) {
  const stateName = ['active', 'paused', 'archived'].includes(topic.state) ? topic.state : 'paused';
  const label = toText(topic.label);
  const app = appName(toText(topic.app));
  const children = Array.isArray(topic.children) ? topic.children.filter(isObject) : [];
  const head = el(stateName === 'active' ? 'span' : 'button', {
    class: 'topic-head',
    ...(stateName === 'active' ? {} : { type: 'button' }),
    dataset: stateName === 'active' ? {} : { resume: toText(topic.id) },
    title: stateName === 'active' ? t('topics.active') : t('topics.resume', { label }),
  },
  el('span', { class: 'topic-label', text: label }),
  isRoot && label !== app ? el('span', { class: 'topic-app muted', text: app }) : null,
  el('span', { class: `topic-state is-${stateName}`, text: t(`topics.state_${stateName}`) }));
  return el('li', {
    class: `topic is-${stateName}`,
    dataset: { topic: toText(topic.id), app: toText(topic.app) },
    attrs: stateName === 'active' ? { 'aria-current': 'true' } : {},
  },
  head,
  children.length ? el('ol', { class: 'topic-children' }, children.map((c) => item(c, false))) : null);
}

async function onClick(ev) {
  const button = ev.target.closest ? ev.target.closest('[data-resume]') : null;
  if (!button || !state.sessionId) return;
  button.disabled = true;
  try {
    const reply = await api.resumeTopic(state.sessionId, button.dataset.resume, state.lang);
    emit('topics:resumed', reply);
  } catch (err) {
    ui.error.textContent = t('topics.failed', { error: err.message });
    ui.error.hidden = false;
  } finally {
    button.disabled = false;
    load();
  }
}

/** The page's language changed: the section's own words follow. */
export function relabel() {
  if (!ui.section) return;
  ui.label.textContent = t('topics.title');
  ui.empty.textContent = t('topics.empty');
  ui.list.setAttribute('aria-label', t('topics.title'));
  draw(tree);
}
