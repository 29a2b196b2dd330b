// button: {label, action_id, params, confirm?, style?} → sends {params}
import { el, toText } from '../safe.js';

const STYLES = new Set(['primary', 'danger', 'secondary']);

export function render(action, ctx) {
  const style = STYLES.has(action.style) ? action.style : (ctx.first ? 'primary' : 'secondary');
  const btn = el('button', { type: 'button', class: `btn btn-${style} ui-label`, text: toText(action.label || action.action_id),
    disabled: !!action.disabled });
  btn.addEventListener('click', async () => {
    if (typeof action.confirm === 'string' && action.confirm) {
      if (!(await ctx.confirm(action.confirm))) return;
    }
    ctx.send({ params: action.params && typeof action.params === 'object' ? action.params : {} });
  });
  return btn;
}
