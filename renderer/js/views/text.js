// text: {content, title?, details?, details_label?}; a bare string is accepted too. `details`
// (a string) is shown folded under the content, behind `details_label` (default "Details").
import { el, isObject } from '../core/safe.js';

export function render(data, ctx) {
  let content = data;
  let title = null;
  let details = null;
  if (isObject(data)) {
    content = data.content ?? data.text ?? data.message;
    title = typeof data.title === 'string' ? data.title : null;
    if (typeof data.details === 'string' && data.details) {
      const label = typeof data.details_label === 'string' && data.details_label ? data.details_label : ctx.t('view.details');
      details = el('details', { class: 'text-details' }, el('summary', { text: label }),
        el('div', { class: 'text-content', text: data.details }));
    }
  }
  if (Array.isArray(content) && content.every((c) => typeof c === 'string')) content = content.join('\n');
  if (typeof content === 'number' || typeof content === 'boolean') content = String(content);
  if (typeof content !== 'string') throw new Error('text view needs data.content (a string)');
  return el('div', { class: 'view view-text' },
    title ? el('h2', { class: 'view-title', text: title }) : null,
    el('div', { class: 'text-content',
      // One empty message: the app's data.empty, none when the reply's message says it, else "(empty)".
      text: content || (ctx.emptyText ? ctx.emptyText(data, 'view.empty') : ctx.t('view.empty')) }),
    details);
}
