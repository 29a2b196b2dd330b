// card: {title?, empty?, cards: [{id?, title, image, desc, done?, actions?}]} (items accepted as an alias).
import { el, isObject, toText } from '../core/safe.js';
import { emptyNote, pick } from './list.js';

function card(item, ctx) {
  if (!isObject(item)) return el('article', { class: 'card' }, el('div', { class: 'card-body', text: toText(item) }));
  const raw = pick(item, ['image', 'cover', 'thumbnail', 'img']);
  let media = null;
  if (typeof raw === 'string') {
    const url = ctx.url(raw, 'img');
    media = url
      ? el('img', { class: 'card-img', src: url, alt: toText(item.title ?? ''), loading: 'lazy',
        referrerPolicy: 'no-referrer' })
      : ctx.blocked(raw);
  }
  const desc = pick(item, ['desc', 'description', 'sub', 'subtitle', 'summary', 'text']);
  const meta = pick(item, ['meta', 'price', 'date', 'artist', 'author']);
  const { lead, trail } = ctx.itemControls(item);
  return el('article', { class: ['card', item.done === true ? 'is-done' : ''] },
    media,
    el('div', { class: 'card-body' },
      el('h3', { class: 'card-title', text: toText(pick(item, ['title', 'name', 'label']) ?? '') }),
      desc !== undefined ? el('p', { class: 'card-desc', text: toText(desc) }) : null,
      meta !== undefined ? el('p', { class: 'card-meta', text: toText(meta) }) : null,
      lead, trail));
}

export function render(data, ctx) {
  const cards = Array.isArray(data) ? data : isObject(data) ? (data.cards ?? data.items) : undefined;
  if (!Array.isArray(cards)) throw new Error('card view needs data.cards (an array)');
  const grid = el('div', { class: 'card-grid' });
  const frag = document.createDocumentFragment();
  for (const item of cards) frag.appendChild(card(item, ctx));
  grid.appendChild(frag);
  return el('div', { class: 'view view-card' },
    isObject(data) && typeof data.title === 'string' ? el('h2', { class: 'view-title', text: data.title }) : null,
    cards.length ? grid : emptyNote(data, ctx));
}
