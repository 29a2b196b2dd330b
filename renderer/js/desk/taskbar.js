// Taskbar: start button and start menu, app icons (and the open system windows'), desktop
// shortcuts, command bar (queue count, ↑/↓ history), mic button, right-click menus, and the
// "one popup at a time" rule.
// It only draws and reports intents on the bus (app:activate, app:close|minimize|restart,
// command:submit, voice:listen, system:settings|audit|memory|about, apps:refresh); main.js acts
// on them. The start menu's Memory entry carries the number of proposals (bus memory:count).
import { emit, on } from '../core/bus.js';
import { statusText, t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { syncChildren } from '../core/morph.js';
import { el, toText } from '../core/safe.js';
import { appSearchText, state } from '../core/state.js';
import { appIcon } from './appicon.js';
import * as wm from './wm.js';

const $ = (id) => document.getElementById(id);
let nodes = null;
const popups = {};

const HISTORY_KEY = 'aios.command.history';
const HISTORY_MAX = 50;
/** Instructions ↑/↓ recall (oldest first), kept across a reload in localStorage. */
let history = loadHistory();
/** How far back ↑ went (-1: not recalling) and what was typed before it. */
let recall = -1;
let draft = '';

function loadHistory() {
  try {
    const list = JSON.parse(localStorage.getItem(HISTORY_KEY) || '[]');
    return Array.isArray(list) ? list.filter((x) => typeof x === 'string').slice(-HISTORY_MAX) : [];
  } catch {
    return [];
  }
}

function remember(text) {
  if (history[history.length - 1] !== text) history.push(text);
  history = history.slice(-HISTORY_MAX);
  recall = -1;
  draft = '';
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(history));
  } catch {
    // storage full or refused: the history lasts as long as the page
  }
}

function recallStep(step) {
  if (!history.length) return false;
  if (recall === -1 && step < 0) return false;
  if (recall === -1) draft = nodes.input.value;
  recall = Math.max(-1, Math.min(history.length - 1, recall + step));
  nodes.input.value = recall === -1 ? draft : history[history.length - 1 - recall];
  const end = nodes.input.value.length;
  nodes.input.setSelectionRange(end, end);
  return true;
}

export function init() {
  nodes = {
    taskbar: $('taskbar'), start: $('start_button'), menu: $('start_menu'), apps: $('start_apps'),
    filter: $('start_filter'), icons: $('taskbar_icons'), shortcuts: $('desktop_shortcuts'),
    form: $('command_bar'), input: $('command_input'), busy: $('command_busy'), mic: $('mic_button'),
    context: $('context_menu'), appMenu: $('app_menu'), queue: $('command_queue'),
  };
  nodes.start.appendChild(icon('start'));
  nodes.mic.appendChild(icon('mic'));

  registerPopup('start_menu', nodes.menu, nodes.start, () => {
    nodes.filter.value = '';
    renderStartMenu();
    nodes.filter.focus();
  });
  registerPopup('context_menu', nodes.context, null);
  registerPopup('app_menu', nodes.appMenu, null);

  nodes.start.addEventListener('click', () => togglePopup('start_menu'));
  nodes.filter.addEventListener('input', renderStartMenu);
  nodes.filter.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      const first = nodes.apps.querySelector('.start-app');
      if (first) first.click();
    }
  });
  nodes.apps.addEventListener('click', (ev) => {
    const item = ev.target.closest('[data-app]');
    if (!item) return;
    closePopups();
    emit('app:activate', { id: item.dataset.app, fromMenu: true });
  });
  $('start_settings').addEventListener('click', () => { closePopups(); emit('system:settings'); });
  $('start_audit').addEventListener('click', () => { closePopups(); emit('system:audit'); });
  $('start_memory').addEventListener('click', () => { closePopups(); emit('system:memory'); });
  $('start_refresh').addEventListener('click', () => { closePopups(); emit('apps:refresh', { announce: true }); });

  nodes.icons.addEventListener('click', (ev) => {
    const item = ev.target.closest('[data-app]');
    if (item) emit('app:activate', { id: item.dataset.app, fromTaskbar: true });
  });
  nodes.shortcuts.addEventListener('dblclick', (ev) => {
    const item = ev.target.closest('[data-app]');
    if (item) emit('app:activate', { id: item.dataset.app });
  });
  nodes.shortcuts.addEventListener('keydown', (ev) => {
    const item = ev.target.closest('[data-app]');
    if (item && ev.key === 'Enter') emit('app:activate', { id: item.dataset.app });
  });

  // Enter always accepts: an instruction typed while another runs waits its turn (desk/commands.js).
  nodes.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = nodes.input.value.trim();
    if (!text) return;
    remember(text);
    nodes.input.value = '';
    emit('command:submit', { text, source: 'keyboard' });
  });
  nodes.input.addEventListener('keydown', (ev) => {
    if ((ev.key === 'ArrowUp' || ev.key === 'ArrowDown') && !ev.altKey && !ev.ctrlKey && !ev.metaKey
        && recallStep(ev.key === 'ArrowUp' ? 1 : -1)) {
      ev.preventDefault();
    }
  });
  nodes.input.addEventListener('input', () => { recall = -1; });
  nodes.mic.addEventListener('click', () => emit('voice:listen'));

  // Right-click: a taskbar icon offers its window's and app's commands; the taskbar and the
  // wallpaper the desktop's menu. Inside a window's content, fields and text keep the browser's.
  document.addEventListener('contextmenu', (ev) => {
    const target = ev.target instanceof Element ? ev.target : null;
    if (!target || target.closest('input, textarea, select, [contenteditable], .win-body, .win-banner, '
      + '.conversation, .toast-text, .notify-body, .modal-text')) return;
    ev.preventDefault();
    const icon = target.closest('#taskbar_icons [data-app]');
    if (icon) openAppMenu(icon.dataset.app, ev.clientX);
    else if (target.closest('#taskbar')) openContextMenu(ev.clientX);
    else if (target.closest('#desktop') && !target.closest('.window')) openContextMenu(ev.clientX, ev.clientY);
  });
  nodes.appMenu.addEventListener('click', (ev) => {
    const item = ev.target.closest('[data-cmd]');
    if (!item || item.disabled) return;
    closePopups();
    emit(`app:${item.dataset.cmd}`, { id: nodes.appMenu.dataset.app });
  });
  nodes.context.addEventListener('click', (ev) => {
    const item = ev.target.closest('[data-cmd]');
    if (!item) return;
    closePopups();
    const cmd = item.dataset.cmd;
    if (cmd === 'refresh') emit('apps:refresh', { announce: true });
    else emit(`system:${cmd}`);
  });

  // One outside-click and one Escape handler close whichever popup is open.
  document.addEventListener('pointerdown', (ev) => {
    for (const [name, p] of Object.entries(popups)) {
      if (p.node.hidden) continue;
      if (p.node.contains(ev.target) || (p.toggle && p.toggle.contains(ev.target))) continue;
      setPopup(name, false);
    }
  }, true);
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') closePopups();
  });

  on('apps:changed', renderApps);
  on('wm:changed', renderIconStates);
  on('lang:changed', renderApps);
  on('memory:count', renderMemoryCount);
  on('lang:changed', renderMemoryCount);
  renderMemoryCount();
}

/** A button's count badge: ``n`` shown (hidden at 0), in its data-count and its label. */
export function drawCount(button, badge, n, label) {
  button.dataset.count = String(n);
  badge.textContent = String(n);
  badge.hidden = n <= 0;
  button.title = label;
  button.setAttribute('aria-label', label);
}

function renderMemoryCount() {
  const n = state.memoryProposed;
  drawCount($('start_memory'), $('start_memory_count'), n,
    n > 0 ? t('memory.badge', { n }) : t('menu.memory'));
}

// ------------------------------------------------------------------ popups

/** Popups from other modules (calendar, notifications) join the same rule. */
export function registerPopup(name, node, toggle, onOpen, onClose) {
  popups[name] = { node, toggle, onOpen, onClose };
}

export function setPopup(name, show) {
  const p = popups[name];
  if (!p) return;
  if (show) {
    for (const other of Object.keys(popups)) if (other !== name) setPopup(other, false);
  }
  if (p.node.hidden === !show) return;
  p.node.hidden = !show;
  if (p.toggle) p.toggle.setAttribute('aria-expanded', String(show));
  if (show && p.onOpen) p.onOpen();
  if (!show && p.onClose) p.onClose();
  emit('layout:changed');
}

export function togglePopup(name) {
  const p = popups[name];
  if (p) setPopup(name, p.node.hidden);
}

export function closePopups() {
  for (const name of Object.keys(popups)) setPopup(name, false);
}

/** Show a menu at x (above the taskbar) or, given y, with its top-left corner at (x, y). */
function placeMenu(node, x, y) {
  const width = node.offsetWidth || 180;
  node.style.left = `${Math.max(4, Math.min(x, window.innerWidth - width - 4))}px`;
  if (y === undefined) {
    node.style.top = '';
    node.style.bottom = '';
  } else {
    const height = node.offsetHeight || 160;
    node.style.top = `${Math.max(4, Math.min(y, window.innerHeight - height - 4))}px`;
    node.style.bottom = 'auto';
  }
  const first = node.querySelector('button:not([disabled])');
  if (first) first.focus();
}

function openContextMenu(x, y) {
  setPopup('context_menu', true);
  placeMenu(nodes.context, x, y);
}

/** The menu of a taskbar icon: close / minimise its window, restart its app (not for system windows). */
function openAppMenu(id, x) {
  const s = wm.stateOf(id);
  const system = !state.apps.has(id);
  const item = (cmd, key, disabled) => el('li', { attrs: { role: 'none' } },
    el('button', { type: 'button', dataset: { cmd }, text: t(key), disabled, attrs: { role: 'menuitem' } }));
  nodes.appMenu.dataset.app = id;
  nodes.appMenu.replaceChildren(
    item('close', 'appmenu.close', s === 'closed'),
    item('minimize', 'appmenu.minimize', s === 'closed' || s === 'minimized'),
    system ? null : item('restart', 'appmenu.restart', false));
  setPopup('app_menu', true);
  placeMenu(nodes.appMenu, x);
}

// ------------------------------------------------------------------ apps

function appTile(app, cls) {
  return appIcon(app, cls || '');
}

/** Apps in the server's order (the launcher's), so icons do not jump when names change. */
function sortedApps() {
  return [...state.apps.values()];
}

export function renderApps() {
  renderStartMenu();
  const icons = [];
  const shortcuts = [];
  for (const app of sortedApps()) {
    const usable = app.status !== 'invalid';
    const tip = `${toText(app.name)} — ${statusText(app.status)}${app.error ? `: ${toText(app.error)}` : ''}`;
    if (usable) {
      icons.push(el('button', {
        id: `icon_${app.id}`, class: `tb-app status-${toText(app.status)}`, type: 'button',
        dataset: { app: app.id }, title: tip, attrs: { 'aria-label': toText(app.name) },
      }, appTile(app), el('span', { class: 'tb-app-dot' })));
    }
    shortcuts.push(el('button', {
      class: `desk-app status-${toText(app.status)}`, type: 'button', dataset: { app: app.id }, title: tip,
      attrs: { role: 'listitem' },
    }, appTile(app, 'app-tile-large'), el('span', { class: 'desk-app-name', text: toText(app.name) })));
  }
  // in place: a status event while the user clicks or focuses an icon must not swap it
  const appKey = (n) => (n.classList.contains('tb-sys') ? null : n.dataset.app);
  syncChildren(nodes.icons, icons, appKey, [...nodes.icons.querySelectorAll('.tb-sys')]);
  syncChildren(nodes.shortcuts, shortcuts, (n) => n.dataset.app);
  renderSystemIcons();
  renderIconStates();
  emit('layout:changed');
}

/** Open system windows (Settings, the audit log) get a taskbar icon like apps, while open. */
function renderSystemIcons() {
  const open = wm.list().filter((w) => w.system);
  const have = [...nodes.icons.querySelectorAll('.tb-sys')];
  if (have.length === open.length && have.every((n, i) => n.dataset.app === open[i].id
    && n.getAttribute('aria-label') === open[i].titleEl.textContent)) return;
  for (const n of have) n.remove();
  for (const w of open) {
    const title = w.titleEl.textContent;
    nodes.icons.appendChild(el('button', {
      id: `icon_${wm.nameOf(w.id)}`, class: 'tb-app tb-sys', type: 'button', dataset: { app: w.id }, title,
      attrs: { 'aria-label': title },
    }, appTile({ id: w.id, name: title, icon: w.icon || '' }), el('span', { class: 'tb-app-dot' })));
  }
}

function renderIconStates() {
  renderSystemIcons();
  for (const node of nodes.icons.querySelectorAll('[data-app]')) {
    const s = wm.stateOf(node.dataset.app);
    node.classList.toggle('is-open', s !== 'closed');
    node.classList.toggle('is-active', s === 'active');
    node.classList.toggle('is-minimized', s === 'minimized');
  }
}

function renderStartMenu() {
  const q = nodes.filter.value.trim().toLowerCase();
  const items = [];
  for (const app of sortedApps()) {
    const hay = appSearchText(app);
    if (q && !hay.includes(q)) continue;
    const bad = app.status === 'failed' || app.status === 'invalid';
    items.push(el('li', { attrs: { role: 'none' } },
      el('button', { id: `menu_${app.id}`, class: 'start-app', type: 'button', dataset: { app: app.id },
        attrs: { role: 'menuitem' } },
      appTile(app),
      el('span', { class: 'start-app-text' },
        el('span', { class: 'start-app-name' },
          el('span', { class: 'ui-label', text: toText(app.name) }),
          el('span', { class: `status-badge status-${toText(app.status)}`, text: statusText(app.status) }),
          app.confined === false ? el('span', { class: 'unconfined-mark', text: t('app.unconfined'),
            attrs: { title: t('app.unconfined_tip') } }) : null),
        app.description ? el('span', { class: 'start-app-desc', text: toText(app.description) }) : null,
        bad && app.error ? el('span', { class: 'start-app-error', text: toText(app.error) }) : null))));
  }
  if (!items.length) items.push(el('li', { class: 'muted start-empty', text: t('start.empty') }));
  syncChildren(nodes.apps, items, (n) => (n.firstElementChild ? n.firstElementChild.dataset.app : null));
}

// ------------------------------------------------------------------ command bar

/** busy: the instruction being run (its text is the spinner's tooltip), or false. */
export function setCommandBusy(busy) {
  nodes.form.classList.toggle('is-busy', !!busy);
  nodes.busy.hidden = !busy;
  nodes.busy.title = typeof busy === 'string' ? t('command.running', { text: busy }) : '';
  nodes.input.setAttribute('aria-busy', String(!!busy));
}

/** The instructions waiting for the one that runs: a small count, their texts as its tooltip. */
export function setQueue(texts) {
  nodes.queue.hidden = !texts.length;
  nodes.queue.textContent = `+${texts.length}`;
  nodes.queue.dataset.count = String(texts.length);
  const tip = t('command.queued', { n: texts.length, list: texts.join('\n') });
  nodes.queue.title = tip;
  nodes.queue.setAttribute('aria-label', tip);
}

export function clearCommand() {
  nodes.input.value = '';
}

export function setCommandText(text) {
  nodes.input.value = text;
}

export function setMicState(listening) {
  nodes.mic.classList.toggle('is-listening', listening);
  nodes.mic.setAttribute('aria-pressed', String(listening));
  nodes.mic.title = listening ? t('mic.listening') : t('mic.title');
}
