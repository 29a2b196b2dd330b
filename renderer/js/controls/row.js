// Controls of one list item / table row / card (data.items[].actions, data.rows[].actions,
// data.row_actions): the item's own, as opposed to the reply's action bar. Each sends what
// its control sends plus params.id = the item's id and, for a control with a value
// (checkbox, toggle, select…), params.value = that value. A checkbox without options is a
// single box (a to-do's "done"); it is drawn before the item's text, the rest after it.
import { el, isObject, toText } from '../core/safe.js';
import { renderControl } from './index.js';

/** The value a control's payload carries, if any. */
function payloadValue(payload) {
  for (const key of ['on', 'value', 'selected', 'checked']) {
    if (payload[key] !== undefined) return payload[key];
  }
  return undefined;
}

/** The ctx.send of a row control: its params gain the row's id and the control's value. */
export function rowSend(action, id, send) {
  return (payload) => {
    const params = {
      ...(isObject(action.params) ? action.params : {}),
      ...(isObject(payload.params) ? payload.params : {}),
      id,
    };
    const value = payloadValue(payload);
    if (value !== undefined) params.value = value;
    return send({ ...payload, params });
  };
}

/** One box, checked when action.value is true; its label is for screen readers (and a tooltip). */
function singleBox(action, ctx, fallbackLabel) {
  const label = toText(action.label || fallbackLabel || action.action_id);
  const box = el('input', { type: 'checkbox', class: 'chk', checked: action.value === true,
    disabled: !!action.disabled, title: label, attrs: { 'aria-label': label } });
  box.addEventListener('change', () => ctx.send({ params: { value: box.checked } }));
  return el('span', { class: 'row-check' }, box);
}

/** True for the controls drawn before the item's text. */
export function leads(action) {
  return isObject(action) && action.type === 'checkbox' && !Array.isArray(action.options);
}

export function renderRowControl(action, ctx, itemLabel) {
  if (leads(action)) return singleBox(action, ctx, itemLabel);
  return renderControl(action, ctx);
}
