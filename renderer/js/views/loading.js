// loading: {message?, progress? (0..1)} — the interim view while an app's steps run.
import { el, isObject, toText } from '../core/safe.js';

export function render(data, ctx) {
  const message = isObject(data) ? (data.message ?? data.text) : data;
  const progress = isObject(data) && typeof data.progress === 'number' ? data.progress : null;
  return el('div', { class: 'view view-loading', attrs: { role: 'status' } },
    el('div', { class: 'spinner' }),
    el('p', { class: 'loading-text', text: message ? toText(message) : ctx.t('win.loading') }),
    progress !== null ? el('progress', { class: 'loading-progress', max: 1, value: Math.min(1, Math.max(0, progress)) }) : null);
}
