// Settings → Automations (DESIGN §18): the reminders and scheduled runs (GET /api/automations),
// each with when it is due in words, its next time and how its last due time went; pause or
// resume it, change its time (a one-off time, or a cron expression for a repeating one) and
// delete it (PATCH / DELETE /api/automations/<id>). A refusal (a time in the past, a bad
// cron) is shown beside the automation, naming what the server found wrong.
import { api } from '../core/api.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';

let box = null;
let status = null;

function localTime(unix) {
  const d = new Date(Number(unix) * 1000);
  return d.toLocaleString(state.lang, { weekday: 'short', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** A Date as the value of an <input type="datetime-local"> (local time, minutes). */
function inputValue(unix) {
  const d = new Date(Number(unix) * 1000);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function whenText(a) {
  const when = isObject(a.when) ? a.when : {};
  return toText(when[state.lang] ?? when['zh-CN'] ?? a.cron ?? '');
}

function stateLine(a) {
  const parts = [];
  if (a.paused) parts.push(t('auto.paused'));
  else if (a.next_due != null) parts.push(t('auto.next', { when: localTime(a.next_due) }));
  else parts.push(t('auto.spent'));
  if (a.last_state) parts.push(t('auto.last', { state: toText(a.last_state) }));
  return parts.join(' · ');
}

async function change(a, action, errorNode) {
  errorNode.hidden = true;
  try {
    if (action === 'delete') {
      await api.deleteAutomation(a.id);
      status.textContent = t('auto.deleted', { what: toText(a.what) });
    } else {
      await api.editAutomation(a.id, action);
      status.textContent = t('auto.saved', { what: toText(a.what) });
    }
    load();
  } catch (err) {
    errorNode.textContent = t('auto.failed', { error: err.message });
    errorNode.hidden = false;
  }
}

function editor(a, item, errorNode) {
  const isCron = Boolean(a.cron);
  const input = isCron
    ? el('input', { class: 'inp auto-cron', type: 'text', value: toText(a.cron), attrs: { 'aria-label': t('auto.cron') } })
    : el('input', { class: 'inp auto-at', type: 'datetime-local', value: inputValue(a.next_due ?? a.at),
      attrs: { 'aria-label': t('auto.time') } });
  const form = el('form', { class: 'auto-edit' }, input,
    el('button', { type: 'submit', class: 'btn btn-primary auto-save', text: t('auto.save') }),
    el('button', { type: 'button', class: 'btn auto-cancel', text: t('auto.cancel'), on: { click: () => form.remove() } }));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const value = input.value.trim();
    const body = isCron ? { cron: value } : { at: new Date(value).getTime() / 1000 };
    change(a, body, errorNode);
  });
  item.appendChild(form);
  input.focus();
}

function itemOf(a) {
  const error = el('p', { class: 'form-error auto-error', hidden: true, attrs: { role: 'alert' } });
  const item = el('li', { class: ['auto-item', a.paused ? 'is-paused' : ''], dataset: { automation: toText(a.id) } });
  const spent = a.next_due == null && !a.paused; // a one-off that is over: only a new time
  const buttons = el('div', { class: 'auto-buttons' },
    spent ? null : el('button', { type: 'button', class: 'btn auto-toggle', text: t(a.paused ? 'auto.resume' : 'auto.pause'),
      on: { click: () => change(a, { paused: !a.paused }, error) } }),
    el('button', { type: 'button', class: 'btn auto-edit-btn', text: t('auto.edit'),
      on: { click: () => { if (!item.querySelector('.auto-edit')) editor(a, item, error); } } }),
    el('button', { type: 'button', class: 'btn btn-danger auto-delete', text: t('auto.delete'),
      on: { click: () => change(a, 'delete', error) } }));
  item.append(
    el('div', { class: 'auto-head' },
      el('span', { class: 'auto-kind', text: t(`auto.kind_${a.kind === 'reminder' ? 'reminder' : 'run'}`) }),
      el('span', { class: 'auto-what', text: toText(a.what) || '—' })),
    el('div', { class: 'auto-when muted' }, el('span', { class: 'auto-rule', text: whenText(a) }), ' · ',
      el('span', { class: 'auto-state', text: stateLine(a) })),
    buttons, error);
  return item;
}

function load() {
  api.automations().then((list) => {
    const items = (Array.isArray(list) ? list : []).filter(isObject).map(itemOf);
    box.replaceChildren(items.length
      ? el('ul', { class: 'auto-list', attrs: { 'aria-label': t('settings.page_automations') } }, items)
      : el('p', { class: 'muted auto-none', text: t('auto.none') }));
  }).catch((err) => {
    box.replaceChildren(el('p', { class: 'form-error', attrs: { role: 'alert' }, text: t('auto.load_failed', { error: err.message }) }));
  });
}

/** The page's element; it fills itself once GET /api/automations answers. */
export function render() {
  box = el('div', { class: 'auto-box' }, el('p', { class: 'muted', text: t('auto.loading') }));
  status = el('p', { id: 'auto_status', class: 'muted', attrs: { role: 'status', 'aria-live': 'polite' } });
  load();
  return el('div', { id: 'automations_page', class: 'auto-page' },
    el('p', { class: 'muted', text: t('auto.intro') }), box, status);
}
