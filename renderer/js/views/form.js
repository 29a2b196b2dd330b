// form: {title?, description?, fields: [{name, label, type, options?, value?}]}
// The values are sent by the reply's submit_form action (see controls/submit_form.js).
import { el, isObject } from '../core/safe.js';
import { buildField } from './formvalues.js';

export function render(data, ctx) {
  const fields = Array.isArray(data) ? data : isObject(data) ? data.fields : undefined;
  if (!Array.isArray(fields)) throw new Error('form view needs data.fields (an array)');
  const form = el('form', { class: 'view-form', noValidate: false, autocomplete: 'off' });
  for (const f of fields) form.appendChild(buildField(f));
  // Without a submit button, Enter only submits single-field forms; this one is invisible.
  form.appendChild(el('button', { type: 'submit', class: 'sr-only', tabIndex: -1, attrs: { 'aria-hidden': 'true' } }));
  // Enter in a field submits through the window's submit_form control (render.js listens).
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.submitViewForm(form);
  });
  return el('div', { class: 'view view-form-wrap' },
    isObject(data) && typeof data.title === 'string' ? el('h2', { class: 'view-title', text: data.title }) : null,
    isObject(data) && typeof data.description === 'string'
      ? el('p', { class: 'muted', text: data.description }) : null,
    form);
}
