// Form fields shared by the form view and the submit_form control: building inputs from
// field specs, and reading typed values back (number → number, checkbox → bool,
// select → the option's original value, whatever its JSON type).
import { codeArea, wantsCode } from '../controls/codearea.js';
import { el, isObject, toText } from '../core/safe.js';

// Option values keep their JSON type (number, bool…): each <option> carries its value as
// text (what the page, the snapshot and a test see) and its index here, so what is sent is
// the app's own value, never an index.
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

/** <option> elements for opts: value = the option's value as text, data-index = its place. */
export function optionNodes(opts) {
  return opts.map((o, i) => el('option', { value: toText(o.value), text: o.label, dataset: { index: String(i) } }));
}

/** The index into opts of a current value (a number matches its text too: "2" ~ 2). */
export function optionIndex(opts, value) {
  const exact = opts.findIndex((o) => o.value === value);
  if (exact >= 0 || value === null || value === undefined) return exact;
  return opts.findIndex((o) => toText(o.value) === toText(value));
}

/** The app's value of the selected option of a <select> built with optionNodes. */
export function selectedValue(select) {
  const opts = optionValues.get(select) || [];
  const option = select.selectedOptions[0];
  const i = option && option.dataset.index !== undefined ? Number(option.dataset.index) : -1;
  return opts[i] ? opts[i].value : undefined;
}

let uid = 0;
export function uniqueId(prefix) {
  uid += 1;
  return `${prefix}_${uid}`;
}

/** Rows of a textarea field that does not say. */
const TEXTAREA_ROWS = 4;

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
    input = el('textarea', { ...common, class: 'inp', rows: Number.isInteger(field.rows) && field.rows > 0
      ? field.rows : TEXTAREA_ROWS, value: toText(field.value), placeholder: toText(field.placeholder) });
    input.dataset.kind = 'text';
    if (wantsCode(field)) codeArea(input);
  } else if (type === 'select') {
    const opts = normOptions(field.options);
    input = el('select', { ...common, class: 'inp' });
    input.append(...optionNodes(opts));
    const idx = optionIndex(opts, field.value);
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
      return selectedValue(input) ?? null;
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
