// Window manager: one window per app (or system panel), drag, resize, minimise, maximise,
// close, z-order. Windows live in #desktop; listeners are delegated on it once.
// Emits "wm:changed" {id, state} and "layout:changed" for the snapshot.
import { emit } from '../core/bus.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { icon, setIcon } from '../core/icons.js';
import { el } from '../core/safe.js';
import { systemMark } from '../runs/cards.js';
import { appIcon } from './appicon.js';

const windows = new Map();
let desktop = null;
let zTop = 10;
let openCount = 0;

const DIRS = ['n', 'e', 's', 'w', 'ne', 'nw', 'se', 'sw'];

export function init(desktopEl) {
  desktop = desktopEl;
  desktop.addEventListener('pointerdown', onPointerDown);
  desktop.addEventListener('click', onClick);
  desktop.addEventListener('dblclick', onDblClick);
  window.addEventListener('resize', () => {
    for (const w of windows.values()) clampIntoView(w);
    emit('layout:changed');
  });
}

/**
 * App windows and system windows live in separate id spaces (DESIGN §14.3): a system window's
 * id is `sys:<name>` (renderer/js/system/*.js WIN_ID), which no app id can be (app ids have no
 * colon), so an app can never reach, draw into or share a system window, whatever its id.
 * Both keep the DOM ids of DESIGN §10: `win_<app_id>` / `win_<name>`.
 */
export const SYSTEM_PREFIX = 'sys:';

/** The window id of the system window `name` ("settings" -> "sys:settings"). */
export function systemId(name) {
  return `${SYSTEM_PREFIX}${name}`;
}

/** The name a window has in the DOM ids and the saved layout (`settings`, or the app id). */
export function nameOf(id) {
  return id.startsWith(SYSTEM_PREFIX) ? id.slice(SYSTEM_PREFIX.length) : id;
}

export function get(id) {
  return windows.get(id) || null;
}

export function list() {
  return [...windows.values()];
}

/** Window state for the taskbar: "closed" | "minimized" | "active" | "open". */
export function stateOf(id) {
  const w = windows.get(id);
  if (!w) return 'closed';
  if (w.minimized) return 'minimized';
  return w.el.classList.contains('active') ? 'active' : 'open';
}

function titleButton(cmd, iconName, labelKey) {
  const b = el('button', { class: `win-btn win-${cmd}`, type: 'button', dataset: { winCmd: cmd },
    title: t(labelKey), attrs: { 'aria-label': t(labelKey) } });
  b.appendChild(icon(iconName));
  return b;
}

/** Shown while the window's app has an active run (setRunActive); a click asks to stop it. */
function stopButton() {
  const b = titleButton('stop', 'stop', 'runs.stop');
  b.dataset.action = 'stop-run';
  b.hidden = true;
  return b;
}

/** Shown once the window's view came from a run (setLastRun); a click opens that run's trace. */
function whyButton() {
  const b = titleButton('why', 'why', 'trace.why_window');
  b.hidden = true;
  return b;
}

/** The run (of session `sid`) whose view the app window `id` shows last: its "why?" opens
 * that run's trace (DESIGN §16). The button is the system's, in the title bar: no app draws it. */
export function setLastRun(id, sid, runId) {
  const w = windows.get(id);
  if (!w || w.system) return;
  const b = w.el.querySelector('.win-why');
  b.hidden = !(sid && runId);
  b.dataset.sessionId = sid || '';
  b.dataset.runId = runId || '';
}

/** Show the title bar's stop button for run `runId`, or hide it (null). */
export function setRunActive(id, runId) {
  const w = windows.get(id);
  if (!w) return;
  const b = w.el.querySelector('.win-stop');
  b.hidden = !runId;
  b.dataset.runId = runId || '';
  b.title = t('runs.stop');
  b.setAttribute('aria-label', t('runs.stop'));
  w.el.classList.toggle('has-run', !!runId);
}

/**
 * Open (or restore and raise) the window `id`.
 * opts: {title, icon (a manifest icon: set name, image file or text), system: bool, width?, height?}
 */
export function open(id, opts = {}) {
  if (!!opts.system !== id.startsWith(SYSTEM_PREFIX)) {
    // an app's window under a system id (or the reverse) is a bug, never a shared window
    throw new Error(`window ${id}: ${opts.system ? 'a system window' : 'an app window'} in the wrong id space`);
  }
  let w = windows.get(id);
  if (w) {
    if (opts.title) setTitle(id, opts.title, opts.icon);
    if (w.minimized) restore(id);
    raise(id);
    return w;
  }
  const iconEl = el('span', { class: 'win-icon' });
  const titleEl = el('span', { class: 'win-title ui-label', text: opts.title || id });
  const statusEl = el('span', { class: 'win-status' });
  const openerEl = el('span', { class: 'win-opener', hidden: true });
  const bar = el('header', { class: 'win-titlebar' }, iconEl, titleEl, openerEl, statusEl,
    el('span', { class: 'win-buttons' },
      opts.system ? null : whyButton(),
      stopButton(),
      titleButton('min', 'minimize', 'win.minimize'),
      titleButton('max', 'maximize', 'win.maximize'),
      titleButton('close', 'close', 'win.close')));
  const banner = el('div', { class: 'win-banner', hidden: true });
  if (opts.system) bar.insertBefore(systemMark(), titleEl.nextSibling);
  const name = nameOf(id);
  const body = el('div', { class: 'win-body', id: `winbody_${name}` });
  const frame = el('section', {
    class: ['window', opts.system ? 'window-system' : ''],
    id: `win_${name}`,
    dataset: { winId: id, ...(opts.system ? { systemChrome: '' } : {}) },
    attrs: { role: 'dialog', 'aria-label': opts.title || id },
  }, bar, banner, body, DIRS.map((d) => el('div', { class: `win-resize win-resize-${d}`, dataset: { dir: d } })));

  const rect = initialRect(opts.width, opts.height);
  Object.assign(frame.style, { left: `${rect.x}px`, top: `${rect.y}px`, width: `${rect.w}px`, height: `${rect.h}px` });
  w = { id, name, el: frame, body, banner, titleEl, iconEl, statusEl, openerEl, minimized: false, maximized: false,
    cleanups: [], system: !!opts.system, icon: opts.icon || '', response: null };
  windows.set(id, w);
  setTitle(id, '', opts.icon || '');
  desktop.appendChild(frame);
  frame.classList.add('win-opening');
  // With reduced motion there is no animation and so no animationend: the timer clears it.
  const clearOpening = () => frame.classList.remove('win-opening');
  frame.addEventListener('animationend', clearOpening, { once: true });
  setTimeout(clearOpening, 400);
  raise(id);
  emit('wm:changed', { id, state: 'open' });
  emit('layout:changed');
  return w;
}

function initialRect(width = DEFAULTS.windowWidth, height = DEFAULTS.windowHeight) {
  const dw = desktop.clientWidth;
  const dh = desktop.clientHeight;
  const w = Math.min(width, Math.max(DEFAULTS.windowMinWidth, dw - 40));
  const h = Math.min(height, Math.max(DEFAULTS.windowMinHeight, dh - 40));
  const step = DEFAULTS.cascadeStep;
  const slots = Math.max(1, Math.floor(Math.min(dw - w, dh - h) / step));
  const n = openCount++ % Math.min(slots, 8);
  const x = Math.max(0, Math.round((dw - w) / 2) - 3 * step + n * step);
  const y = Math.max(0, Math.round((dh - h) / 3) - 2 * step + n * step);
  return { x: Math.min(x, Math.max(0, dw - w)), y: Math.min(Math.max(0, y), Math.max(0, dh - h)), w, h };
}

/** ``icon`` is the manifest's icon string (see appicon.js); the tile falls back to the title's initial. */
export function setTitle(id, title, icon) {
  const w = windows.get(id);
  if (!w) return;
  if (title) {
    w.titleEl.textContent = title;
    w.el.setAttribute('aria-label', title);
  }
  if (icon !== undefined) {
    w.iconEl.replaceChildren(appIcon({ id, name: w.titleEl.textContent, icon }, 'app-tile-small'));
  }
}

/** A short line in the title bar (app status, push updates); empty clears it. */
export function setStatus(id, text, level = '') {
  const w = windows.get(id);
  if (!w) return;
  w.statusEl.textContent = text || '';
  w.statusEl.dataset.level = level;
  w.statusEl.title = text || '';
}

/** Which app opened this window's app (a launched child, DESIGN §13); empty hides the line. */
export function setOpener(id, text) {
  const w = windows.get(id);
  if (!w) return;
  w.openerEl.textContent = text || '';
  w.openerEl.hidden = !text;
}

/** The window is on screen (open and not minimised or hidden by a UI op). */
export function isVisible(id) {
  const w = windows.get(id);
  return !!w && !w.minimized && !w.el.classList.contains('uiop-hidden');
}

export function raise(id) {
  const w = windows.get(id);
  if (!w) return;
  for (const other of windows.values()) other.el.classList.toggle('active', other === w);
  w.el.style.zIndex = String(++zTop);
  emit('wm:changed', { id, state: 'active' });
}

export function minimize(id) {
  const w = windows.get(id);
  if (!w || w.minimized) return;
  w.minimized = true;
  w.el.classList.add('minimized');
  w.el.classList.remove('active');
  emit('wm:changed', { id, state: 'minimized' });
  emit('layout:changed');
}

export function restore(id) {
  const w = windows.get(id);
  if (!w) return;
  w.minimized = false;
  w.el.classList.remove('minimized', 'uiop-hidden');
  raise(id);
  emit('layout:changed');
}

export function toggleMaximize(id) {
  const w = windows.get(id);
  if (!w) return;
  w.maximized = !w.maximized;
  w.el.classList.toggle('maximized', w.maximized);
  const btn = w.el.querySelector('.win-max');
  setIcon(btn, w.maximized ? 'restore' : 'maximize');
  const label = t(w.maximized ? 'win.restore' : 'win.maximize');
  btn.title = label;
  btn.setAttribute('aria-label', label);
  emit('layout:changed');
}

/** Taskbar click: open → raise; minimised → restore; active → minimise. */
export function toggleFromTaskbar(id) {
  const s = stateOf(id);
  if (s === 'minimized' || s === 'open') restore(id);
  else if (s === 'active') minimize(id);
}

export function addCleanup(id, fn) {
  const w = windows.get(id);
  if (w) w.cleanups.push(fn);
}

/** Run and forget the cleanups of the current content (before a re-render or on close). */
export function runCleanups(id) {
  const w = windows.get(id);
  if (!w) return;
  const fns = w.cleanups.splice(0);
  for (const fn of fns) {
    try {
      fn();
    } catch (err) {
      console.error('window cleanup failed', err);
    }
  }
}

/** Close destroys the window only; the app process keeps running (spec §5.3). */
export function close(id) {
  const w = windows.get(id);
  if (!w) return;
  runCleanups(id);
  windows.delete(id);
  w.el.remove();
  emit('wm:changed', { id, state: 'closed' });
  emit('layout:changed');
}

/** Apply a position/size from a ui_op, with the same limits as dragging. */
export function moveTo(id, x, y) {
  const w = windows.get(id);
  if (!w) return;
  if (w.maximized) toggleMaximize(id);
  w.el.style.left = `${Math.round(x)}px`;
  w.el.style.top = `${Math.round(y)}px`;
  clampIntoView(w);
}

export function resizeTo(id, width, height) {
  const w = windows.get(id);
  if (!w) return;
  if (w.maximized) toggleMaximize(id);
  w.el.style.width = `${Math.max(DEFAULTS.windowMinWidth, Math.round(width))}px`;
  w.el.style.height = `${Math.max(DEFAULTS.windowMinHeight, Math.round(height))}px`;
  clampIntoView(w);
}

function clampIntoView(w) {
  // Keep the title bar reachable: a window can hang off the sides but not lose its handle.
  const dw = desktop.clientWidth;
  const dh = desktop.clientHeight;
  const left = parseFloat(w.el.style.left) || 0;
  const top = parseFloat(w.el.style.top) || 0;
  const width = w.el.offsetWidth || parseFloat(w.el.style.width) || 0;
  const keep = 96;
  w.el.style.left = `${Math.round(Math.min(Math.max(left, keep - width), dw - keep))}px`;
  w.el.style.top = `${Math.round(Math.min(Math.max(top, 0), Math.max(0, dh - 40)))}px`;
}

// ------------------------------------------------------------ layout (DESIGN §13)

const px = (value) => Math.round((parseFloat(value) || 0) * 100) / 100;

/**
 * Where the windows are, bottom first: [{app, x, y, w, h, z, minimized, maximized}].
 * x/y/w/h are the normal (not maximised) rectangle; z is the rank in the stack from 1, so
 * the stored numbers stay small however often windows were raised.
 */
export function layout() {
  return [...windows.values()]
    .map((w) => ({ w, z: Number(w.el.style.zIndex) || 0 }))
    .sort((a, b) => a.z - b.z)
    .map(({ w }, i) => ({
      app: w.name,
      x: px(w.el.style.left),
      y: px(w.el.style.top),
      w: px(w.el.style.width),
      h: px(w.el.style.height),
      z: i + 1,
      minimized: w.minimized,
      maximized: w.maximized,
    }));
}

/**
 * Put the open window `id` where a saved layout had it and raise it (call bottom first), then
 * minimise or maximise it as saved. The limits of dragging apply: a window the desktop has
 * become too small for is pulled back until its title bar can be reached.
 */
export function place(id, rect) {
  const w = windows.get(id);
  if (!w) return;
  Object.assign(w.el.style, {
    left: `${rect.x}px`,
    top: `${rect.y}px`,
    width: `${Math.max(DEFAULTS.windowMinWidth, rect.w)}px`,
    height: `${Math.max(DEFAULTS.windowMinHeight, rect.h)}px`,
  });
  clampIntoView(w);
  if (!!rect.maximized !== w.maximized) toggleMaximize(id);
  if (rect.minimized) {
    raise(id);
    minimize(id);
  } else if (w.minimized) {
    restore(id);
  } else {
    raise(id);
  }
}

// ------------------------------------------------------------ pointer handling

function winOf(target) {
  const frame = target.closest && target.closest('.window');
  return frame ? windows.get(frame.dataset.winId) : null;
}

function onClick(ev) {
  const btn = ev.target.closest('[data-win-cmd]');
  if (!btn) return;
  const w = winOf(btn);
  if (!w) return;
  const cmd = btn.dataset.winCmd;
  if (cmd === 'min') minimize(w.id);
  else if (cmd === 'max') toggleMaximize(w.id);
  else if (cmd === 'close') close(w.id);
  else if (cmd === 'stop') emit('run:stop', { id: w.id, runId: btn.dataset.runId || null });
  else if (cmd === 'why') emit('trace:open', { session_id: btn.dataset.sessionId, run_id: btn.dataset.runId });
}

function onDblClick(ev) {
  if (!ev.target.closest('.win-titlebar') || ev.target.closest('.win-btn')) return;
  const w = winOf(ev.target);
  if (w) toggleMaximize(w.id);
}

function onPointerDown(ev) {
  const w = winOf(ev.target);
  if (!w) return;
  if (!w.el.classList.contains('active')) raise(w.id);
  if (ev.button !== 0) return;
  const handle = ev.target.closest('.win-resize');
  if (handle && !w.maximized) {
    startGesture(ev, w, handle.dataset.dir);
  } else if (ev.target.closest('.win-titlebar') && !ev.target.closest('.win-btn') && !w.maximized) {
    startGesture(ev, w, 'move');
  }
}

function startGesture(ev, w, mode) {
  ev.preventDefault();
  const start = { x: ev.clientX, y: ev.clientY, left: w.el.offsetLeft, top: w.el.offsetTop,
    width: w.el.offsetWidth, height: w.el.offsetHeight };
  const target = ev.target;
  target.setPointerCapture(ev.pointerId);
  w.el.classList.add('win-dragging');
  const move = (e) => {
    const dx = e.clientX - start.x;
    const dy = e.clientY - start.y;
    if (mode === 'move') {
      w.el.style.left = `${start.left + dx}px`;
      w.el.style.top = `${start.top + dy}px`;
      clampIntoView(w);
      return;
    }
    let { left, top, width, height } = start;
    const minW = DEFAULTS.windowMinWidth;
    const minH = DEFAULTS.windowMinHeight;
    if (mode.includes('e')) width = Math.max(minW, start.width + dx);
    if (mode.includes('s')) height = Math.max(minH, start.height + dy);
    if (mode.includes('w')) {
      width = Math.max(minW, start.width - dx);
      left = start.left + (start.width - width);
    }
    if (mode.includes('n')) {
      height = Math.max(minH, start.height - dy);
      top = Math.max(0, start.top + (start.height - height));
      height = start.top + start.height - top;
    }
    Object.assign(w.el.style, { left: `${left}px`, top: `${top}px`, width: `${width}px`, height: `${height}px` });
  };
  const end = () => {
    target.removeEventListener('pointermove', move);
    target.removeEventListener('pointerup', end);
    target.removeEventListener('pointercancel', end);
    w.el.classList.remove('win-dragging');
    emit('layout:changed');
  };
  target.addEventListener('pointermove', move);
  target.addEventListener('pointerup', end);
  target.addEventListener('pointercancel', end);
}
