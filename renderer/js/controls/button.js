// button: {label, action_id, params, confirm?, variant?} → sends {params}
// variant: primary (the main action; only when the app says so) | secondary (the default) | danger (red).
import { el, toText } from '../core/safe.js';

export const VARIANTS = new Set(['primary', 'secondary', 'danger']);

/** The variant an action asks for (`style` is its older name), else `fallback`. */
export function variantOf(action, fallback = 'secondary') {
  const asked = action.variant ?? action.style;
  return VARIANTS.has(asked) ? asked : fallback;
}

export function render(action, ctx) {
  const variant = variantOf(action);
  const btn = el('button', { type: 'button', class: `btn btn-${variant} ui-label`,
    text: toText(action.label || action.action_id), disabled: !!action.disabled, dataset: { variant } });
  btn.addEventListener('click', async () => {
    if (typeof action.confirm === 'string' && action.confirm) {
      if (!(await ctx.confirm(action.confirm))) return;
    }
    ctx.send({ params: action.params && typeof action.params === 'object' ? action.params : {} });
  });
  return btn;
}
