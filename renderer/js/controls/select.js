// select: {label, options: [str | {label, value}], value?} → sends {selected}
import { normOptions, optionValue, rememberOptions, uniqueId } from '../formvalues.js';
import { el, toText } from '../safe.js';

export function render(action, ctx) {
  const opts = normOptions(action.options);
  const id = uniqueId('sel');
  const select = el('select', { id, class: 'inp', disabled: !!action.disabled });
  const current = opts.findIndex((o) => o.value === action.value);
  if (current < 0) {
    // No current value: a placeholder, so that choosing the first option is a change too.
    select.appendChild(el('option', { value: '', text: '—', disabled: true, selected: true }));
  }
  opts.forEach((o, i) => select.appendChild(el('option', { value: String(i), text: o.label })));
  if (current >= 0) select.value = String(current);
  rememberOptions(select, opts);
  select.addEventListener('change', () => {
    if (select.value === '') return;
    ctx.send({ selected: optionValue(select, Number(select.value)) });
  });
  return el('div', { class: 'ctl-field' },
    action.label ? el('label', { class: 'ctl-label ui-label', htmlFor: id, text: toText(action.label) }) : null, select);
}
