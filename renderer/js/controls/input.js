// input: {label, placeholder?, value?, multiline?, monospace? | code?, rows?} → sends {value}
// A single line sends on Enter or the send button; a multiline input (a text area) keeps Enter
// for new lines and sends on Ctrl+Enter or the button. monospace / code: a code editor
// (controls/codearea.js: Tab indents, Escape then Tab leaves); code implies multiline.
import { icon } from '../core/icons.js';
import { el, toText } from '../core/safe.js';
import { uniqueId } from '../views/formvalues.js';
import { codeArea, wantsCode } from './codearea.js';

/** Rows of a multiline input that does not say. */
const DEFAULT_ROWS = 6;

export function render(action, ctx) {
  const id = uniqueId('inp');
  const multiline = action.multiline === true || action.code === true;
  const common = { id, class: 'inp', placeholder: toText(action.placeholder ?? action.label ?? ''),
    disabled: !!action.disabled };
  const input = multiline
    ? el('textarea', { ...common, rows: Number.isInteger(action.rows) && action.rows > 0 ? action.rows : DEFAULT_ROWS })
    : el('input', { ...common, type: 'text' });
  input.value = toText(action.value ?? '');
  if (wantsCode(action)) {
    if (multiline) codeArea(input);
    else input.classList.add('inp-mono');
  }
  const send = el('button', { type: 'submit', class: 'btn btn-icon', title: ctx.t('control.send'),
    disabled: !!action.disabled, attrs: { 'aria-label': ctx.t('control.send') } }, icon('send'));
  const form = el('form', { class: ['ctl-input', multiline ? 'ctl-input-multi' : ''], autocomplete: 'off' },
    action.label ? el('label', { class: 'ctl-label ui-label', htmlFor: id, text: toText(action.label) }) : null,
    el('span', { class: 'ctl-input-row' }, input, send));
  if (multiline) {
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        form.requestSubmit();
      }
    });
  }
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.send({ value: input.value });
  });
  return form;
}
