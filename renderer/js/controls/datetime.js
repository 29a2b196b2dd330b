// datetime: {label, mode: datetime|date|time, value?} → sends {value: "YYYY-MM-DDTHH:MM"} (or date / time)
import { el, toText } from '../core/safe.js';
import { uniqueId } from '../views/formvalues.js';

const TYPES = { datetime: 'datetime-local', date: 'date', time: 'time' };

export function render(action, ctx) {
  const id = uniqueId('dt');
  const input = el('input', { id, type: TYPES[action.mode] || 'datetime-local', class: 'inp',
    disabled: !!action.disabled });
  if (typeof action.value === 'string') input.value = action.value;
  input.addEventListener('change', () => {
    if (input.value) ctx.send({ value: input.value });
  });
  return el('div', { class: 'ctl-field' },
    action.label ? el('label', { class: 'ctl-label ui-label', htmlFor: id, text: toText(action.label) }) : null, input);
}
