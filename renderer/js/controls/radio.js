// radio: {label, options: [str | number | {label, value}], value?} → sends {selected: <the option's value>}
import { el, toText } from '../core/safe.js';
import { normOptions, optionIndex, uniqueId } from '../views/formvalues.js';

export function render(action, ctx) {
  const opts = normOptions(action.options);
  const name = uniqueId('radio');
  const current = optionIndex(opts, action.value);
  const radios = opts.map((o, i) => el('input', { type: 'radio', class: 'rad', name, value: toText(o.value),
    checked: i === current, disabled: !!action.disabled }));
  const group = el('fieldset', { class: 'ctl-group', attrs: { role: 'radiogroup' } },
    action.label ? el('legend', { class: 'ctl-label ui-label', text: toText(action.label) }) : null,
    opts.map((o, i) => el('label', { class: 'check-label' }, radios[i], el('span', { text: o.label }))));
  group.addEventListener('change', (ev) => {
    const i = radios.indexOf(ev.target);
    if (i >= 0) ctx.send({ selected: opts[i].value });
  });
  return group;
}
