// One memory in the memory window (./memory.js), drawn: its text and tags, its scope, where it
// came from (you, an app, or a conversation — the session and turn, as a link), when, whether
// it is pinned, and its buttons; and the same row as an editor (text and tags). Drawing only:
// the buttons carry data-act and the window acts on them (one listener on the list).
// Everything from the server reaches the page as text.
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';

export const USER_SCOPE = 'user';
const APP_PREFIX = 'app:';
const EXTRACTED_PREFIX = 'extracted:';
/** Characters of a session id shown when its title is unknown (the whole id is the tooltip). */
const SESSION_SHOWN = 8;

export function appName(id) {
  const app = state.apps.get(id);
  return app && app.name ? toText(app.name) : id;
}

export function scopeLabel(scope) {
  return scope === USER_SCOPE ? t('memory.in_user') : t('memory.in_app', { app: appName(scope) });
}

function when(seconds) {
  const d = new Date(Number(seconds) * 1000);
  if (Number.isNaN(d.getTime())) return '';
  return d.toLocaleString(state.lang, { year: 'numeric', month: 'numeric', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** The session and turn an extracted memory came from, when it says. */
export function origin(m) {
  const source = toText(m.source);
  if (!source.startsWith(EXTRACTED_PREFIX)) return null;
  const session = toText(m.session_id) || source.slice(EXTRACTED_PREFIX.length);
  const turn = Number.isInteger(m.turn) ? m.turn : null;
  return session ? { session, turn } : null;
}

/** A session id as a short label ("sess_3f9a…" → "3f9a0c1d"): the title is used when known. */
function shortSession(id) {
  return id.replace(/^sess_/, '').slice(0, SESSION_SHOWN);
}

function originNode(m, titles) {
  const source = toText(m.source);
  if (source === 'user') return el('span', { class: 'memory-origin', text: t('memory.from_user') });
  if (source.startsWith(APP_PREFIX)) {
    return el('span', { class: 'memory-origin', text: t('memory.from_app', { app: appName(source.slice(APP_PREFIX.length)) }) });
  }
  const from = origin(m);
  if (!from) return el('span', { class: 'memory-origin', text: source });
  const title = titles && titles.get(from.session);
  const label = title ? t('memory.from_session', { title }) : t('memory.from_session_id', { session: shortSession(from.session) });
  return el('button', { type: 'button', class: 'link-btn memory-origin memory-source-link', text: label,
    title: t(from.turn === null ? 'memory.open_session' : 'memory.open_turn', { session: from.session }),
    dataset: { act: 'source', session: from.session, ...(from.turn === null ? {} : { turn: String(from.turn) }) } });
}

function button(act, key, cls = '') {
  return el('button', { type: 'button', class: ['btn btn-small', cls], dataset: { act }, text: t(key) });
}

function tagsOf(m) {
  return Array.isArray(m.tags) ? m.tags.map(toText).filter(Boolean) : [];
}

function actions(m) {
  if (m.state === 'proposed') {
    return [button('accept', 'memory.accept', 'btn-primary'), button('reject', 'memory.reject'),
      button('edit', 'memory.edit')];
  }
  if (m.state !== 'active') return [];
  const pin = el('button', { type: 'button', class: 'btn btn-small', dataset: { act: 'pin' },
    text: t(m.pinned ? 'memory.unpin' : 'memory.pin'), attrs: { 'aria-pressed': m.pinned ? 'true' : 'false' } });
  return [button('edit', 'memory.edit'), pin, button('delete', 'memory.delete', 'btn-danger')];
}

function frame(m, ...children) {
  return el('li', {
    class: ['memory-item', m.pinned ? 'is-pinned' : '', `is-${toText(m.state)}`],
    dataset: { id: toText(m.id), state: toText(m.state), scope: toText(m.scope), source: toText(m.source) },
  }, ...children, el('p', { class: 'memory-error form-error', hidden: true, attrs: { role: 'alert' } }));
}

/** A memory as its list item; ``titles`` (session id -> title) names the conversations. */
export function render(m, titles = null) {
  if (!isObject(m)) throw new Error('a memory must be an object');
  const tags = tagsOf(m);
  return frame(m,
    el('div', { class: 'memory-main' },
      m.pinned ? el('span', { class: 'memory-pin', text: '📌', title: t('memory.pinned'),
        attrs: { role: 'img', 'aria-label': t('memory.pinned') } }) : null,
      el('p', { class: 'memory-text', text: toText(m.text) })),
    tags.length ? el('ul', { class: 'memory-tags', attrs: { 'aria-label': t('memory.tags') } },
      tags.map((tag) => el('li', { class: 'memory-tag', text: `#${tag}` }))) : null,
    el('div', { class: 'memory-meta' },
      el('span', { class: 'memory-scope', text: scopeLabel(toText(m.scope)) }),
      originNode(m, titles),
      el('time', { class: 'memory-when', text: when(m.updated ?? m.created) })),
    el('div', { class: 'memory-actions' }, actions(m)));
}

/** A memory as an editor of its text and tags (Save / Cancel; Ctrl+Enter and Escape too). */
export function editor(m) {
  const id = toText(m.id).replace(/[^A-Za-z0-9_-]/g, '_');
  const text = el('textarea', { id: `memory_edit_${id}`, class: 'inp memory-edit-text', rows: 3,
    value: toText(m.text), attrs: { 'aria-label': t('memory.text_label') } });
  const tags = el('input', { id: `memory_tags_${id}`, class: 'inp inp-small memory-edit-tags', type: 'text',
    value: tagsOf(m).join(' '), placeholder: t('memory.tags_hint') });
  return frame(m,
    el('div', { class: 'memory-editor' },
      el('label', { class: 'field-label', htmlFor: text.id, text: t('memory.text_label') }), text,
      el('label', { class: 'field-label', htmlFor: tags.id, text: t('memory.tags_label') }), tags),
    el('div', { class: 'memory-actions' }, button('save', 'memory.save', 'btn-primary'), button('cancel', 'memory.cancel')));
}

/** What an editor holds: {text, tags}. Tags are split on spaces and commas, "#" dropped. */
export function edited(node) {
  const text = node.querySelector('.memory-edit-text');
  const tags = node.querySelector('.memory-edit-tags');
  return {
    text: text ? text.value.trim() : '',
    tags: tags ? tags.value.split(/[\s,，、]+/).map((s) => s.replace(/^#+/, '')).filter(Boolean) : [],
  };
}

/** Show ``message`` (or nothing) in the row's error line. */
export function showError(node, message) {
  const box = node.querySelector('.memory-error');
  if (!box) return;
  box.textContent = message || '';
  box.hidden = !message;
}
