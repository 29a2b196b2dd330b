// toggle: {label, value: bool} → sends {on: bool}
import { el, toText } from '../core/safe.js';

export function render(action, ctx) {
  const input = el('input', { type: 'checkbox', class: 'switch-input', checked: action.value === true,
    disabled: !!action.disabled, attrs: { role: 'switch' } });
  const node = el('label', { class: 'switch' }, input, el('span', { class: 'switch-track' }),
    el('span', { class: 'ui-label', text: toText(action.label || action.action_id) }));
  input.addEventListener('change', () => ctx.send({ on: input.checked }));
  return node;
}
