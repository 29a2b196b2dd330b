// checkbox: {label, options, value?: [...]} → sends {checked: [...]} on every change
import { el, toText } from '../core/safe.js';
import { normOptions } from '../views/formvalues.js';

export function render(action, ctx) {
  const opts = normOptions(action.options);
  const initial = Array.isArray(action.value) ? action.value : [];
  const boxes = opts.map((o) => el('input', { type: 'checkbox', class: 'chk', value: toText(o.value),
    checked: initial.includes(o.value),
    disabled: !!action.disabled }));
  const group = el('fieldset', { class: 'ctl-group' },
    action.label ? el('legend', { class: 'ctl-label ui-label', text: toText(action.label) }) : null,
    opts.map((o, i) => el('label', { class: 'check-label' }, boxes[i], el('span', { text: o.label }))));
  group.addEventListener('change', () => {
    ctx.send({ checked: opts.filter((_, i) => boxes[i].checked).map((o) => o.value) });
  });
  return group;
}
