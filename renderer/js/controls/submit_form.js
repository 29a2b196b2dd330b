// submit_form: {label, action_id, fields?, variant?} → sends {form_values: {...}}; primary unless it says otherwise
// Values come from the window's form view and from this control's own fields (if any).
import { el, toText } from '../core/safe.js';
import { buildField } from '../views/formvalues.js';
import { variantOf } from './button.js';

export function render(action, ctx) {
  const label = toText(action.label || ctx.t('control.submit'));
  const submit = el('button', { type: 'submit', class: `btn btn-${variantOf(action, 'primary')} ui-label`, text: label,
    disabled: !!action.disabled, dataset: { submit: '1' } });
  const fields = Array.isArray(action.fields) ? action.fields : [];
  const form = el('form', { class: ['ctl-form', fields.length ? 'ctl-form-fields' : ''], autocomplete: 'off' });
  for (const f of fields) form.appendChild(buildField(f));
  form.appendChild(submit);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (!ctx.validateForms(form)) return;
    ctx.send({ form_values: ctx.collectForms(form) });
  });
  return form;
}
