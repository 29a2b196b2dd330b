// Toasts (top right) and the notification list in the tray (#notifications).
// toast() is the one way the desktop tells the user something went wrong outside a window.
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { el, toText } from '../core/safe.js';
import { state } from '../core/state.js';

const LEVELS = new Set(['info', 'success', 'warning', 'error']);
const items = [];
let unread = 0;
let nodes = null;

export function init() {
  nodes = {
    toasts: document.getElementById('toasts'),
    button: document.getElementById('notifications_button'),
    count: document.getElementById('notifications_count'),
    panel: document.getElementById('notifications_panel'),
    list: document.getElementById('notifications_list'),
    empty: document.getElementById('notifications_empty'),
    clear: document.getElementById('notifications_clear'),
  };
  nodes.button.prepend(icon('bell'));
  nodes.clear.addEventListener('click', () => {
    items.length = 0;
    renderList();
  });
  nodes.toasts.addEventListener('click', (ev) => {
    const close = ev.target.closest('[data-toast-close]');
    if (close) close.closest('.toast').remove();
  });
  renderList();
}

/** The panel opened: everything in it counts as read. */
export function markRead() {
  unread = 0;
  renderCount();
}

export function isPanelOpen() {
  return nodes && !nodes.panel.hidden;
}

function level(v) {
  return LEVELS.has(v) ? v : 'info';
}

/** Show a toast. text may be a string; opts: {title, level, ms}. */
export function toast(text, opts = {}) {
  const lvl = level(opts.level);
  const node = el('div', { class: `toast toast-${lvl}`, attrs: { role: lvl === 'error' ? 'alert' : 'status' } },
    el('div', { class: 'toast-text' },
      opts.title ? el('strong', { class: 'toast-title', text: opts.title }) : null,
      el('span', { class: 'toast-body', text: toText(text) })),
    el('button', { class: 'toast-close', type: 'button', dataset: { toastClose: '1' },
      attrs: { 'aria-label': t('win.close') } }, icon('close')));
  nodes.toasts.appendChild(node);
  while (nodes.toasts.children.length > DEFAULTS.maxToasts) nodes.toasts.firstElementChild.remove();
  const ms = opts.ms ?? (lvl === 'error' ? DEFAULTS.toastErrorMs : DEFAULTS.toastMs);
  setTimeout(() => {
    node.classList.add('toast-leaving');
    setTimeout(() => node.remove(), 250);
  }, ms);
  return node;
}

/** The server's name of the sender in the UI language, when it sent one per language. */
function localName(names) {
  return names && typeof names === 'object' && !Array.isArray(names) ? toText(names[state.lang]) : '';
}

/**
 * A notify event from the server: {app, app_name, app_names, title, body, level, id, ts}.
 * The toast is titled with the sending app's name (the server's app_name, which is
 * unique), never the app's own title: an app cannot pose as the system or another app.
 */
export function notify(ev, appName) {
  const entry = {
    id: toText(ev.id),
    title: toText(ev.title),
    body: toText(ev.body),
    level: level(ev.level),
    app: localName(ev.app_names) || toText(ev.app_name) || appName || toText(ev.app),
    ts: typeof ev.ts === 'number' ? new Date(ev.ts * (ev.ts < 1e12 ? 1000 : 1)) : new Date(),
  };
  items.unshift(entry);
  items.length = Math.min(items.length, DEFAULTS.maxNotifications);
  if (!isPanelOpen()) unread += 1;
  renderList();
  const text = entry.body ? `${entry.title}: ${entry.body}` : entry.title;
  toast(text, { title: entry.app, level: entry.level });
}

function renderCount() {
  nodes.count.hidden = unread === 0;
  nodes.count.textContent = unread > 99 ? '99+' : String(unread);
}

function renderList() {
  const frag = document.createDocumentFragment();
  for (const n of items) {
    const time = n.ts.toLocaleTimeString(state.lang === 'en' ? 'en-GB' : 'zh-CN', { hour: '2-digit', minute: '2-digit' });
    frag.appendChild(el('li', { class: `notify-item notify-${n.level}` },
      el('div', { class: 'notify-meta' },
        el('span', { class: 'notify-app', text: n.app }),
        el('time', { class: 'notify-time', text: time, dateTime: n.ts.toISOString() })),
      el('strong', { class: 'notify-title', text: n.title }),
      n.body ? el('p', { class: 'notify-body', text: n.body }) : null));
  }
  nodes.list.replaceChildren(frag);
  nodes.empty.hidden = items.length > 0;
  renderCount();
}
