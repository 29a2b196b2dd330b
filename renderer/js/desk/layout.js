// Layout recovery (DESIGN §13): where the windows are (position, size, z-order, minimised and
// maximised) is saved per session shortly after a change ends and when the page goes away,
// and put back when the page loads, so a refresh or a restart of the system finds the desk
// as it was left.
import { api } from '../core/api.js';
import { DEFAULTS } from '../core/defaults.js';
import { isObject } from '../core/safe.js';
import { state } from '../core/state.js';
import * as wm from './wm.js';

// Nothing is saved before the stored layout was put back: the windows the page opens
// meanwhile (or none at all) would overwrite it.
let phase = 'waiting'; // 'waiting' | 'restoring' | 'restored'
let timer = null;
let dirty = false;
let lastSent = '';

export function init() {
  window.addEventListener('pagehide', () => save({ keepalive: true }));
}

/** A window moved, resized, was raised, minimised, opened or closed: save soon. */
export function schedule() {
  if (phase !== 'restored') return;
  dirty = true;
  clearTimeout(timer);
  timer = setTimeout(save, DEFAULTS.layoutSaveDebounceMs);
}

async function save({ keepalive = false } = {}) {
  clearTimeout(timer);
  if (!dirty || phase !== 'restored') return;
  const sid = state.sessionId;
  if (!sid) {
    // The first reply brings the session: until then the change waits.
    timer = setTimeout(save, DEFAULTS.layoutSaveDebounceMs);
    return;
  }
  const windows = wm.layout();
  const text = JSON.stringify([sid, windows]);
  dirty = false;
  if (text === lastSent) return;
  lastSent = text;
  try {
    await api.saveLayout(sid, windows, { keepalive });
  } catch (err) {
    if (lastSent === text) lastSent = '';
    console.warn('layout not saved:', err.message);
  }
}

const number = (v) => typeof v === 'number' && Number.isFinite(v);

function usable(win) {
  return isObject(win) && typeof win.app === 'string' && ['x', 'y', 'w', 'h', 'z'].every((k) => number(win[k]));
}

/**
 * Once the apps are known: open the windows of the session's saved layout bottom first, each
 * where it was. ``openWindow(id)`` opens (and fills) one; ``known(id)`` says whether it still
 * exists — windows of apps that are gone are skipped. Runs once per page.
 */
export async function restore({ openWindow, known }) {
  if (phase !== 'waiting') return;
  phase = 'restoring';
  const sid = state.sessionId;
  let saved = [];
  if (sid) {
    try {
      const reply = await api.layout(sid);
      if (isObject(reply) && Array.isArray(reply.windows)) saved = reply.windows.filter(usable);
    } catch (err) {
      // 404: the session is gone (pruned, another data dir); the desk starts empty.
      if (err.status !== 404) console.warn('layout not restored:', err.message);
    }
  }
  if (sid === state.sessionId) {
    for (const win of saved.sort((a, b) => a.z - b.z)) {
      if (!known(win.app)) continue;
      // the window's id (a system window's differs from its saved name, see wm.systemId)
      const id = openWindow(win.app) || win.app;
      wm.place(id, win);
    }
    lastSent = JSON.stringify([sid, wm.layout()]);
  }
  phase = 'restored';
  // a mark for tests and assistive tools: the saved windows are back
  document.documentElement.dataset.layout = 'restored';
  schedule();
}
