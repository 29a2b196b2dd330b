// list: {title?, empty?, items: [str | {id?, title|name|label, sub|subtitle|artist|…, duration?, image?,
//   done?, actions?}]}
// An item with "done": true is struck through; an item's own "actions" (controls/row.js) are
// drawn in its row, a single checkbox before its text.
import { el, isObject, toText } from '../core/safe.js';

const TITLE_KEYS = ['title', 'name', 'label', 'text'];
const SUB_KEYS = ['sub', 'subtitle', 'artist', 'author', 'description', 'desc', 'summary'];
const META_KEYS = ['duration', 'time', 'date', 'value', 'status', 'size'];

export function pick(obj, keys) {
  for (const k of keys) {
    const v = obj[k];
    if (v !== undefined && v !== null && v !== '') return v;
  }
  return undefined;
}

function thumb(item, ctx) {
  const raw = pick(item, ['image', 'cover', 'thumbnail', 'icon_url']);
  if (typeof raw !== 'string') return null;
  const url = ctx.url(raw, 'img');
  if (!url) return el('span', { class: 'list-thumb list-thumb-blocked', title: ctx.t('view.blocked_url') });
  return el('img', { class: 'list-thumb', src: url, alt: '', loading: 'lazy', referrerPolicy: 'no-referrer' });
}

function row(item, index, ctx) {
  if (!isObject(item)) {
    return el('li', { class: 'list-item' },
      el('div', { class: 'list-main' }, el('div', { class: 'list-title', text: toText(item) })));
  }
  const title = pick(item, TITLE_KEYS);
  const sub = pick(item, SUB_KEYS);
  const meta = pick(item, META_KEYS);
  const { lead, trail } = ctx.itemControls(item);
  return el('li', { class: ['list-item', item.done === true ? 'is-done' : ''],
    dataset: { index: String(index), ...(item.id !== undefined ? { itemId: toText(item.id) } : {}) } },
    lead,
    thumb(item, ctx),
    el('div', { class: 'list-main' },
      el('div', { class: 'list-title', text: title !== undefined ? toText(title) : toText(item) }),
      sub !== undefined ? el('div', { class: 'list-sub', text: toText(sub) }) : null),
    meta !== undefined ? el('span', { class: 'list-meta', text: toText(meta) }) : null,
    trail);
}

/** The one empty-state line (the app's data.empty, or ours unless the reply's message says it). */
export function emptyNote(data, ctx) {
  const text = ctx.emptyText ? ctx.emptyText(data) : ctx.t('view.no_rows');
  return text ? el('p', { class: 'muted view-empty', text }) : null;
}

export function render(data, ctx) {
  const items = Array.isArray(data) ? data : isObject(data) ? data.items : undefined;
  if (!Array.isArray(items)) throw new Error('list view needs data.items (an array)');
  const list = el('ul', { class: 'list' });
  const frag = document.createDocumentFragment();
  items.forEach((item, i) => frag.appendChild(row(item, i, ctx)));
  list.appendChild(frag);
  return el('div', { class: 'view view-list' },
    isObject(data) && typeof data.title === 'string' ? el('h2', { class: 'view-title', text: data.title }) : null,
    items.length ? list : emptyNote(data, ctx));
}
