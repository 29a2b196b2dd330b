// The desktop's element snapshot (spec §9.3, DESIGN §10), posted to the server at start and
// after every layout change (debounced), so the system-control app knows what is on screen.
import { api } from '../core/api.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { toText } from '../core/safe.js';
import { state } from '../core/state.js';
import * as wm from './wm.js';

const DESKTOP = [
  ['taskbar', 'taskbar', () => 'taskbar'],
  ['start_button', 'button', () => t('start.title')],
  ['start_menu', 'menu', () => t('start.title')],
  ['tray', 'tray', () => t('tray.title')],
  ['clock', 'clock', (n) => n.textContent],
  ['calendar', 'calendar', () => 'calendar'],
  ['command_input', 'input', () => t('command.placeholder')],
  ['mic_button', 'button', () => t('mic.title')],
  ['notifications', 'notifications', () => t('notify.title')],
];

let timer = null;

function visible(node, rect) {
  if (rect.width === 0 || rect.height === 0) return false;
  if (typeof node.checkVisibility === 'function') return node.checkVisibility({ visibilityProperty: true });
  return true;
}

function item(node, id, type, label, windowId) {
  const r = node.getBoundingClientRect();
  const entry = { id, type, label: toText(label).slice(0, 200), x: Math.round(r.left), y: Math.round(r.top),
    width: Math.round(r.width), height: Math.round(r.height), visible: visible(node, r) };
  if (windowId) entry.window = windowId;
  return entry;
}

export function collect() {
  const out = [];
  for (const [id, type, label] of DESKTOP) {
    const node = document.getElementById(id);
    if (node) out.push(item(node, id, type, label(node)));
  }
  for (const app of state.apps.values()) {
    for (const [prefix, type] of [['menu_', 'menu_item'], ['icon_', 'icon']]) {
      const node = document.getElementById(`${prefix}${app.id}`);
      if (node) out.push(item(node, `${prefix}${app.id}`, type, app.name));
    }
  }
  for (const w of wm.list()) {
    out.push(item(w.el, `win_${w.name}`, 'window', w.titleEl.textContent));
    out.push(item(w.body, `winbody_${w.name}`, 'panel', w.titleEl.textContent, w.name));
    for (const ctl of w.el.querySelectorAll('[data-id^="btn_"]')) {
      out.push(item(ctl, ctl.dataset.id, ctl.dataset.actionType || 'control', ctl.dataset.label || '', w.id));
    }
  }
  return out;
}

async function send() {
  timer = null;
  try {
    await api.snapshot(collect());
  } catch (err) {
    // Not user-facing (the server may be restarting); the next change sends a fresh one.
    console.warn('snapshot not delivered:', err.message);
  }
}

export function schedule() {
  if (timer) clearTimeout(timer);
  timer = setTimeout(send, DEFAULTS.snapshotDebounceMs);
}

export function sendNow() {
  if (timer) clearTimeout(timer);
  return send();
}
