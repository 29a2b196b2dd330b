// select: {label, options: [str | number | {label, value}], value?} → sends {selected: <the option's value>}
import { el, toText } from '../core/safe.js';
import { normOptions, optionIndex, optionNodes, rememberOptions, selectedValue, uniqueId } from '../views/formvalues.js';

export function render(action, ctx) {
  const opts = normOptions(action.options);
  const id = uniqueId('sel');
  const select = el('select', { id, class: 'inp', disabled: !!action.disabled });
  const current = optionIndex(opts, action.value);
  if (current < 0) {
    // No current value: a placeholder, so that choosing the first option is a change too.
    select.appendChild(el('option', { value: '', text: '—', disabled: true, selected: true }));
  }
  select.append(...optionNodes(opts));
  if (current >= 0) select.selectedIndex = current;
  rememberOptions(select, opts);
  select.addEventListener('change', () => {
    const value = selectedValue(select);
    if (value !== undefined) ctx.send({ selected: value });
  });
  return el('div', { class: 'ctl-field' },
    action.label ? el('label', { class: 'ctl-label ui-label', htmlFor: id, text: toText(action.label) }) : null,
    select);
}
