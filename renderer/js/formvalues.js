// Form fields shared by the form view and the submit_form control: building inputs from
// field specs, and reading typed values back (number → number, checkbox → bool,
// select → the option's original value, whatever its JSON type).
import { el, isObject, toText } from './safe.js';

// Option values keep their JSON type (number, bool…); the DOM only holds their index.
const optionValues = new WeakMap();

/** [str | {label, value}] → [{label, value}] */
export function normOptions(options) {
  if (!Array.isArray(options)) return [];
  return options.map((o) => (isObject(o)
    ? { label: toText(o.label ?? o.value), value: o.value ?? o.label }
    : { label: toText(o), value: o }));
}

export function rememberOptions(node, opts) {
  optionValues.set(node, opts);
}

export function optionValue(node, index) {
  const opts = optionValues.get(node) || [];
  return opts[index] ? opts[index].value : undefined;
}

let uid = 0;
export function uniqueId(prefix) {
  uid += 1;
  return `${prefix}_${uid}`;
}

const INPUT_TYPES = {
  text: 'text', number: 'number', password: 'password', email: 'email', url: 'url',
  date: 'date', time: 'time', datetime: 'datetime-local', 'datetime-local': 'datetime-local',
  hidden: 'hidden', tel: 'tel', color: 'color', search: 'search',
};

/** One labelled field; the input carries data-field-name and data-kind for collect(). */
export function buildField(field) {
  if (!isObject(field) || typeof field.name !== 'string' || !field.name) {
    throw new Error('a form field needs a "name"');
  }
  const type = typeof field.type === 'string' ? field.type : 'text';
  const id = uniqueId('fld');
  const label = toText(field.label ?? field.name);
  const common = { id, name: field.name, dataset: { fieldName: field.name }, required: !!field.required,
    disabled: !!field.disabled };
  let input;
  if (type === 'textarea') {
    input = el('textarea', { ...common, class: 'inp', rows: 4, value: toText(field.value),
      placeholder: toText(field.placeholder) });
    input.dataset.kind = 'text';
  } else if (type === 'select') {
    const opts = normOptions(field.options);
    input = el('select', { ...common, class: 'inp' });
    opts.forEach((o, i) => input.appendChild(el('option', { value: String(i), text: o.label })));
    const idx = opts.findIndex((o) => o.value === field.value);
    if (idx >= 0) input.selectedIndex = idx;
    rememberOptions(input, opts);
    input.dataset.kind = 'select';
  } else if (type === 'checkbox') {
    input = el('input', { ...common, type: 'checkbox', class: 'chk', checked: field.value === true });
    input.dataset.kind = 'checkbox';
    return el('div', { class: 'field field-check' },
      el('label', { class: 'check-label', htmlFor: id }, input, el('span', { class: 'ui-label', text: label })));
  } else {
    const htmlType = INPUT_TYPES[type] || 'text';
    input = el('input', { ...common, type: htmlType, class: 'inp', placeholder: toText(field.placeholder) });
    if (field.value !== null && field.value !== undefined) input.value = toText(field.value);
    for (const key of ['min', 'max', 'step']) if (typeof field[key] === 'number') input[key] = String(field[key]);
    input.dataset.kind = htmlType === 'number' ? 'number' : 'text';
    if (htmlType === 'hidden') return input;
  }
  return el('div', { class: 'field' },
    el('label', { class: 'field-label ui-label', htmlFor: id, text: label }), input);
}

function valueOf(input) {
  switch (input.dataset.kind) {
    case 'number': {
      if (input.value === '') return null;
      const n = Number(input.value);
      return Number.isFinite(n) ? n : input.value;
    }
    case 'checkbox':
      return input.checked;
    case 'select':
      return optionValue(input, input.selectedIndex) ?? null;
    default:
      return input.value;
  }
}

/** {name: value} for every field under the given roots; later roots win. */
export function collect(...roots) {
  const values = {};
  for (const root of roots) {
    if (!root) continue;
    for (const input of root.querySelectorAll('[data-field-name]')) {
      values[input.dataset.fieldName] = valueOf(input);
    }
  }
  return values;
}

/** Browser validation (required, email…) over the given roots; reports the first problem. */
export function validate(...roots) {
  for (const root of roots) {
    if (!root) continue;
    const forms = root.matches && root.matches('form') ? [root] : [...root.querySelectorAll('form')];
    for (const form of forms) {
      if (!form.checkValidity()) {
        form.reportValidity();
        return false;
      }
    }
  }
  return true;
}
