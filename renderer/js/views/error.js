// error: {title, message, detail?} — the system's (and apps') error view.
import { el, isObject, jsonTree, toText } from '../core/safe.js';

/** The system's language-neutral default title (aios.names.error_response): shown in the UI language. */
const NEUTRAL_TITLE = '错误 / Error';

function title(obj, ctx) {
  const given = toText(obj.title ?? obj.error ?? '');
  return given && given !== NEUTRAL_TITLE ? given : ctx.t('view.error_title');
}

export function render(data, ctx) {
  const obj = isObject(data) ? data : { message: toText(data) };
  const detail = obj.detail;
  let detailEl = null;
  if (typeof detail === 'string' && detail) detailEl = el('pre', { class: 'error-detail', text: detail });
  else if (detail !== undefined && detail !== null) detailEl = jsonTree(detail, (n) => ctx.t('view.more', { n }));
  return el('div', { class: 'view view-error', attrs: { role: 'alert' } },
    el('div', { class: 'error-icon', text: '!' }),
    el('div', { class: 'error-main' },
      el('h2', { class: 'error-title', text: title(obj, ctx) }),
      el('p', { class: 'error-message', text: toText(obj.message ?? obj.error ?? '') }),
      detailEl ? el('details', { class: 'error-more' }, el('summary', { text: '…' }), detailEl) : null));
}
