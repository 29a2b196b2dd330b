// slider: {label, min, max, step, value} → sends {value: number} when released
import { el, toText } from '../core/safe.js';
import { uniqueId } from '../views/formvalues.js';

function finite(v, d) {
  return typeof v === 'number' && Number.isFinite(v) ? v : d;
}

export function render(action, ctx) {
  const min = finite(action.min, 0);
  const max = finite(action.max, 100);
  const step = finite(action.step, 1);
  const value = finite(action.value, min);
  const id = uniqueId('rng');
  const input = el('input', { id, type: 'range', class: 'range', min: String(min), max: String(max),
    step: String(step), disabled: !!action.disabled });
  input.value = String(value);
  const out = el('output', { class: 'range-value', htmlFor: id, text: input.value });
  input.addEventListener('input', () => { out.textContent = input.value; });
  input.addEventListener('change', () => ctx.send({ value: Number(input.value) }));
  return el('div', { class: 'ctl-field ctl-slider' },
    action.label ? el('label', { class: 'ctl-label ui-label', htmlFor: id, text: toText(action.label) }) : null,
    input, out);
}
