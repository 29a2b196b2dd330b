// image: {url, caption?, alt?}
import { el, isObject, toText } from '../core/safe.js';

export function render(data, ctx) {
  if (!isObject(data) || typeof data.url !== 'string') throw new Error('image view needs data.url');
  const caption = data.caption !== undefined ? el('figcaption', { class: 'image-caption', text: toText(data.caption) }) : null;
  const url = ctx.url(data.url, 'img');
  if (!url) return el('figure', { class: 'view view-image' }, ctx.blocked(data.url), caption);
  const img = el('img', { class: 'image-main', src: url, alt: toText(data.alt ?? data.caption ?? ''),
    referrerPolicy: 'no-referrer' });
  const problem = el('p', { class: 'media-error', hidden: true, text: ctx.t('view.image_error') });
  img.addEventListener('error', () => { problem.hidden = false; img.hidden = true; });
  return el('figure', { class: 'view view-image' }, img, problem, caption);
}
