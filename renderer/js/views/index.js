// The view registry: view_type → module with render(data, ctx) -> Element.
// renderView never throws: a view that cannot show its data becomes a JSON tree with a note.
import { el, jsonTree } from '../core/safe.js';
import * as card from './card.js';
import * as chart from './chart.js';
import * as code from './code.js';
import * as dashboard from './dashboard.js';
import * as error from './error.js';
import * as form from './form.js';
import * as image from './image.js';
import * as list from './list.js';
import * as loading from './loading.js';
import * as media from './media.js';
import * as table from './table.js';
import * as text from './text.js';

export const VIEWS = Object.freeze({ text, list, card, table, form, media, image, chart, code, dashboard,
  loading, error });

function fallback(note, data, ctx) {
  return el('div', { class: 'view view-json' },
    note ? el('p', { class: 'view-note', text: note }) : null,
    jsonTree(data, (n) => ctx.t('view.more', { n })));
}

export function renderView(type, data, ctx) {
  if (type === '__json__') return fallback('', data, ctx);
  const view = Object.prototype.hasOwnProperty.call(VIEWS, type) ? VIEWS[type] : null;
  if (!view) return fallback(ctx.t('view.unknown', { type: String(type) }), data, ctx);
  try {
    const node = view.render(data, ctx);
    if (!(node instanceof Node)) throw new Error('view returned no element');
    return node;
  } catch (err) {
    console.warn(`view ${type} fell back to JSON:`, err && err.message);
    const node = fallback(ctx.t('view.fallback', { type }), data, ctx);
    node.firstChild.title = err && err.message ? err.message : '';
    return node;
  }
}
