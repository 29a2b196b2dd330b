// link: {label, href} → opens in a new tab (when the URL policy allows it) and sends {href}
import { el, toText } from '../core/safe.js';

export function render(action, ctx) {
  const href = ctx.url(action.href, 'link');
  const label = toText(action.label || action.href);
  if (!href) {
    return el('span', { class: 'ctl-link ctl-link-blocked' },
      el('span', { class: 'ui-label', text: label }), ctx.blocked(action.href));
  }
  const a = el('a', { class: 'ctl-link ui-label', href, target: '_blank', rel: 'noopener noreferrer', text: label,
    referrerPolicy: 'no-referrer' });
  if (action.disabled) a.setAttribute('aria-disabled', 'true');
  a.addEventListener('click', (ev) => {
    if (a.getAttribute('aria-disabled') === 'true') {
      ev.preventDefault();
      return;
    }
    ctx.send({ href: action.href });
  });
  return a;
}
