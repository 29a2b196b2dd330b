// error: {title, message, detail?} — the system's (and apps') error view.
import { el, isObject, jsonTree, toText } from '../safe.js';

export function render(data, ctx) {
  const obj = isObject(data) ? data : { message: toText(data) };
  const detail = obj.detail;
  let detailEl = null;
  if (typeof detail === 'string' && detail) detailEl = el('pre', { class: 'error-detail', text: detail });
  else if (detail !== undefined && detail !== null) detailEl = jsonTree(detail, (n) => ctx.t('view.more', { n }));
  return el('div', { class: 'view view-error', attrs: { role: 'alert' } },
    el('div', { class: 'error-icon', text: '!' }),
    el('div', { class: 'error-main' },
      el('h2', { class: 'error-title', text: toText(obj.title ?? obj.error ?? '错误 / Error') }),
      el('p', { class: 'error-message', text: toText(obj.message ?? obj.error ?? '') }),
      detailEl ? el('details', { class: 'error-more' }, el('summary', { text: '…' }), detailEl) : null));
}
