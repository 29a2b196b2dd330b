// The control registry: action type → module with render(action, ctx) -> Element.
// renderControl never throws: a control that cannot be built shows its definition instead.
import { el, jsonTree } from '../core/safe.js';
import * as button from './button.js';
import * as checkbox from './checkbox.js';
import * as datetime from './datetime.js';
import * as input from './input.js';
import * as link from './link.js';
import * as radio from './radio.js';
import * as select from './select.js';
import * as slider from './slider.js';
import * as submitForm from './submit_form.js';
import * as toggle from './toggle.js';

export const CONTROLS = Object.freeze({ button, submit_form: submitForm, select, checkbox, radio, input, link,
  toggle, slider, datetime });

export function renderControl(action, ctx) {
  const type = action && typeof action === 'object' ? action.type : undefined;
  const control = typeof type === 'string' && Object.prototype.hasOwnProperty.call(CONTROLS, type)
    ? CONTROLS[type] : null;
  try {
    if (!control) throw new Error(`unknown control type ${String(type)}`);
    const node = control.render(action, ctx);
    if (!(node instanceof Node)) throw new Error('control returned no element');
    return node;
  } catch (err) {
    console.warn('control fell back to JSON:', err && err.message);
    return el('div', { class: 'ctl-fallback', title: err && err.message ? err.message : '' },
      el('p', { class: 'view-note', text: ctx.t('control.fallback') }),
      jsonTree(action, (n) => ctx.t('view.more', { n }), 0));
  }
}
