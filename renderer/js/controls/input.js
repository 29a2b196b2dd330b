// input: {label, placeholder?, value?} → sends {value} on Enter or the send button
import { uniqueId } from '../formvalues.js';
import { icon } from '../icons.js';
import { el, toText } from '../safe.js';

export function render(action, ctx) {
  const id = uniqueId('inp');
  const input = el('input', { id, type: 'text', class: 'inp', value: toText(action.value ?? ''),
    placeholder: toText(action.placeholder ?? action.label ?? ''), disabled: !!action.disabled });
  const send = el('button', { type: 'submit', class: 'btn btn-icon', title: ctx.t('control.send'),
    disabled: !!action.disabled, attrs: { 'aria-label': ctx.t('control.send') } }, icon('send'));
  const form = el('form', { class: 'ctl-input', autocomplete: 'off' },
    action.label ? el('label', { class: 'ctl-label ui-label', htmlFor: id, text: toText(action.label) }) : null,
    el('span', { class: 'ctl-input-row' }, input, send));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.send({ value: input.value });
  });
  return form;
}
