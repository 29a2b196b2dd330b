// The UI language: t(key, vars) over core/strings.js (zh-CN default, English). App data is never
// translated.
// Static markup carries data-i18n / data-i18n-title / data-i18n-placeholder / data-i18n-aria
// and is refreshed by applyStatic(); dynamic code calls t().
import { emit } from './bus.js';
import { state } from './state.js';
import { STRINGS } from './strings.js';

export const LANGUAGES = Object.freeze(Object.keys(STRINGS));

export function t(key, vars) {
  const table = STRINGS[state.lang] || STRINGS['zh-CN'];
  let s = table[key] ?? STRINGS['zh-CN'][key] ?? key;
  if (vars) {
    s = s.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  }
  return s;
}

/** An app status ("running", "failed"…) in the UI language; unknown ones as they are. */
export function statusText(status) {
  const key = `status.${status}`;
  const text = t(key);
  return text === key ? String(status ?? '') : text;
}

/** Speech/recognition language for the current UI language. */
export function speechLang() {
  return state.lang === 'en' ? 'en-US' : 'zh-CN';
}

export function applyStatic(root = document) {
  for (const node of root.querySelectorAll('[data-i18n]')) node.textContent = t(node.dataset.i18n);
  for (const node of root.querySelectorAll('[data-i18n-title]')) node.title = t(node.dataset.i18nTitle);
  for (const node of root.querySelectorAll('[data-i18n-placeholder]')) {
    node.placeholder = t(node.dataset.i18nPlaceholder);
  }
  for (const node of root.querySelectorAll('[data-i18n-aria]')) {
    node.setAttribute('aria-label', t(node.dataset.i18nAria));
  }
}

export function setLang(lang) {
  const next = LANGUAGES.includes(lang) ? lang : 'zh-CN';
  if (next === state.lang) return;
  state.lang = next;
  document.documentElement.lang = next;
  applyStatic();
  emit('lang:changed', next);
}
