// Taskbar: start button and start menu, app icons, desktop shortcuts, command bar,
// mic button, right-click menu, and the "one popup at a time" rule.
// It only draws and reports intents on the bus (app:activate, command:submit, voice:listen,
// system:settings|audit|about, apps:refresh); main.js acts on them.
import { appIcon } from './appicon.js';
import { emit, on } from './bus.js';
import { statusText, t } from './i18n.js';
import { icon } from './icons.js';
import { el, toText } from './safe.js';
import { state } from './state.js';
import * as wm from './wm.js';

const $ = (id) => document.getElementById(id);
let nodes = null;
const popups = {};

export function init() {
  nodes = {
    taskbar: $('taskbar'), start: $('start_button'), menu: $('start_menu'), apps: $('start_apps'),
    filter: $('start_filter'), icons: $('taskbar_icons'), shortcuts: $('desktop_shortcuts'),
    form: $('command_bar'), input: $('command_input'), busy: $('command_busy'), mic: $('mic_button'),
    context: $('context_menu'),
  };
  nodes.start.appendChild(icon('start'));
  nodes.mic.appendChild(icon('mic'));

  registerPopup('start_menu', nodes.menu, nodes.start, () => {
    nodes.filter.value = '';
    renderStartMenu();
    nodes.filter.focus();
  });
  registerPopup('context_menu', nodes.context, null);

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

  nodes.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const text = nodes.input.value.trim();
    if (!text || nodes.form.classList.contains('is-busy')) return;
    emit('command:submit', { text, source: 'keyboard' });
  });
  nodes.mic.addEventListener('click', () => emit('voice:listen'));

  nodes.taskbar.addEventListener('contextmenu', (ev) => {
    ev.preventDefault();
    openContextMenu(ev.clientX);
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

function openContextMenu(x) {
  setPopup('context_menu', true);
  const width = nodes.context.offsetWidth || 180;
  nodes.context.style.left = `${Math.max(4, Math.min(x, window.innerWidth - width - 4))}px`;
  const first = nodes.context.querySelector('button');
  if (first) first.focus();
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
  const icons = document.createDocumentFragment();
  const shortcuts = document.createDocumentFragment();
  for (const app of sortedApps()) {
    const usable = app.status !== 'invalid';
    const tip = `${toText(app.name)} — ${statusText(app.status)}${app.error ? `: ${toText(app.error)}` : ''}`;
    if (usable) {
      icons.appendChild(el('button', {
        id: `icon_${app.id}`, class: `tb-app status-${toText(app.status)}`, type: 'button',
        dataset: { app: app.id }, title: tip, attrs: { 'aria-label': toText(app.name) },
      }, appTile(app), el('span', { class: 'tb-app-dot' })));
    }
    shortcuts.appendChild(el('button', {
      class: `desk-app status-${toText(app.status)}`, type: 'button', dataset: { app: app.id }, title: tip,
      attrs: { role: 'listitem' },
    }, appTile(app, 'app-tile-large'), el('span', { class: 'desk-app-name', text: toText(app.name) })));
  }
  nodes.icons.replaceChildren(icons);
  nodes.shortcuts.replaceChildren(shortcuts);
  renderIconStates();
  emit('layout:changed');
}

function renderIconStates() {
  for (const node of nodes.icons.querySelectorAll('[data-app]')) {
    const s = wm.stateOf(node.dataset.app);
    node.classList.toggle('is-open', s !== 'closed');
    node.classList.toggle('is-active', s === 'active');
    node.classList.toggle('is-minimized', s === 'minimized');
  }
}

function renderStartMenu() {
  const q = nodes.filter.value.trim().toLowerCase();
  const frag = document.createDocumentFragment();
  for (const app of sortedApps()) {
    const hay = `${toText(app.id)} ${toText(app.name)} ${toText(app.description)}`.toLowerCase();
    if (q && !hay.includes(q)) continue;
    const bad = app.status === 'failed' || app.status === 'invalid';
    frag.appendChild(el('li', { attrs: { role: 'none' } },
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
  if (!frag.childNodes.length) frag.appendChild(el('li', { class: 'muted start-empty', text: t('start.empty') }));
  nodes.apps.replaceChildren(frag);
}

// ------------------------------------------------------------------ command bar

export function setCommandBusy(busy) {
  nodes.form.classList.toggle('is-busy', busy);
  nodes.busy.hidden = !busy;
  nodes.input.setAttribute('aria-busy', String(busy));
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
