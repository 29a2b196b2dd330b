// The apps' windows on the desktop: the app list, opening and re-asking an app, a control's
// action, the system windows a control may open instead, an app's status line and the views
// the server sends. Each request is tracked per window, so an interim view is drawn only while
// one is pending.
import * as conversation from '../conversation/conversation.js';
import { api, refreshFileGrants } from '../core/api.js';
import { statusText, t } from '../core/i18n.js';
import { isObject, toText } from '../core/safe.js';
import { localizeApps, rememberSession, state } from '../core/state.js';
import * as runs from '../runs/runs.js';
import * as audit from '../system/audit.js';
import * as memory from '../system/memory.js';
import * as settings from '../system/settings.js';
import * as traces from '../system/traces.js';
import * as instances from './instances.js';
import * as layout from './layout.js';
import * as notify from './notify.js';
import { renderResponse, showBanner } from './render.js';
import * as taskbar from './taskbar.js';
import * as voice from './voice.js';
import * as wm from './wm.js';

export const SYSTEM_WINDOWS = new Set([settings.WIN_ID, audit.WIN_ID, memory.WIN_ID, traces.WIN_ID]);
/** System windows by the name the saved layout knows them by. */
export const SYSTEM_NAMES = new Map([[settings.WIN_NAME, settings], [audit.WIN_NAME, audit],
  [memory.WIN_NAME, memory]]);
let appsLoaded = false;

/** The app list has been asked for once the system was ready (health.js). */
export function loaded() {
  return appsLoaded;
}

export function markLoaded() {
  appsLoaded = true;
}

// Requests this desktop has in flight, per app window ('*': instructions, whose apps are known
// only from the reply). An interim view (the "loading" of a step plan, sent over the WebSocket)
// is drawn only while one is pending: the event races the HTTP reply, and arriving after it
// it would replace the final view with a loading view that never ends.
export const ANY_APP = '*';
const pending = new Map();

export async function tracked(key, work) {
  pending.set(key, (pending.get(key) || 0) + 1);
  try {
    return await work();
  } finally {
    const left = (pending.get(key) || 1) - 1;
    if (left) pending.set(key, left);
    else pending.delete(key);
  }
}

function awaitsReply(app) {
  return pending.has(app) || pending.has(ANY_APP);
}

export function errorReply(title, message, body) {
  const detail = isObject(body) ? Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'error')) : null;
  return { status: 'error', view_type: 'error',
    data: { title, message, ...(detail && Object.keys(detail).length ? { detail } : {}) }, actions: [] };
}

export function appMeta(id) {
  const app = state.apps.get(id);
  return { title: app ? toText(app.name) : id, icon: app ? toText(app.icon) : '' };
}

export function statusLine(id) {
  const app = state.apps.get(id);
  // an idle app starts when its window asks it: "starting" follows at once
  if (!app || app.status === 'running' || app.status === 'idle') {
    wm.setStatus(id, '');
    return;
  }
  const error = app.error ? ` — ${toText(app.error)}` : '';
  wm.setStatus(id, t('win.app_failed', { status: statusText(app.status), error }),
    app.status === 'failed' || app.status === 'invalid' ? 'error' : 'warn');
}

/** Make sure the app's window exists (opening it shows a loading view until content arrives). */
export function ensureWindow(id) {
  // A system window's name is never an app's window (the system refuses such app ids too).
  if (SYSTEM_NAMES.has(id)) return null;
  const existing = wm.get(id);
  if (existing) {
    if (existing.minimized) wm.restore(id);
    return existing;
  }
  const w = wm.open(id, appMeta(id));
  renderResponse(id, { view_type: 'loading', data: {} });
  statusLine(id);
  return w;
}

// ------------------------------------------------------------------ apps

export async function loadApps({ announce = false } = {}) {
  try {
    // Grants first: the icons and the views drawn next load app files with them.
    await refreshFileGrants();
    const list = await api.apps();
    const apps = Array.isArray(list) ? list : isObject(list) && Array.isArray(list.apps) ? list.apps : [];
    state.apps = new Map(apps.filter((a) => isObject(a) && typeof a.id === 'string').map((a) => [a.id, a]));
    localizeApps();
    relabelWindows();
    taskbar.renderApps();
    layout.restore({ openWindow: reopenWindow, known: (id) => SYSTEM_NAMES.has(id) || state.apps.has(id) });
    runs.relabel(); // so do the cards, drawn from the listing before the apps were known
    conversation.relabel(); // the entries name apps: now with their display names
    if (announce) notify.toast(t('apps.refreshed'), { level: 'success' });
  } catch (err) {
    notify.toast(t('apps.failed', { error: err.message }), { level: 'error' });
  }
}

/** Title bars and status lines of the open app windows, from state.apps. */
function relabelWindows() {
  for (const w of wm.list()) {
    if (!SYSTEM_WINDOWS.has(w.id) && state.apps.has(w.id)) {
      const meta = appMeta(w.id);
      wm.setTitle(w.id, meta.title, meta.icon);
      statusLine(w.id);
    }
  }
}

/** A language switch: names and titles at once, and each open app's view asked again, now
 * in the new language (the server passes config.language to the app as context.locale). */
export function onLangChanged() {
  localizeApps();
  relabelWindows();
  taskbar.renderApps();
  if (!appsLoaded) return;
  for (const w of wm.list()) {
    if (!SYSTEM_WINDOWS.has(w.id) && state.apps.has(w.id) && !w.openFailed) openApp(w.id, { restore: false });
  }
}

/** Open (or re-ask) an app's window; ``restore: false`` leaves a minimised one minimised. */
async function openApp(id, { restore = true } = {}) {
  if (restore || !wm.get(id)) ensureWindow(id);
  try {
    const reply = await instances.own(id, () => tracked(id, () => api.open(id, state.sessionId)));
    rememberSession(reply && reply.session_id);
    runs.adoptReply(reply);
    if (wm.get(id)) renderResponse(id, reply && reply.response, { runId: runOf(reply) });
  } catch (err) {
    const w = wm.get(id);
    if (w) {
      renderResponse(id, errorReply(t('open.failed_title'), err.message, err.body));
      // Remembered so that the window fills itself once the app reports "running".
      w.openFailed = true;
    }
  }
}

/** The taskbar icon's "restart": the app's process starts afresh; its window shows the new one. */
export async function restartApp({ id }) {
  const name = appMeta(id).title;
  try {
    await api.restartApp(id);
    notify.toast(t('appmenu.restarted', { app: name }), { level: 'success' });
    if (wm.isVisible(id)) openApp(id); // a minimised window stays minimised
  } catch (err) {
    notify.toast(t('appmenu.restart_failed', { app: name, error: err.message }), { level: 'error' });
  }
}

/** A window of a saved layout (layout.js): a system panel or an app's window, filled; its id. */
export function reopenWindow(name) {
  const system = SYSTEM_NAMES.get(name);
  if (system) {
    system.open();
    return system.WIN_ID;
  }
  openApp(name);
  return name;
}

export function activateApp({ id, fromTaskbar }) {
  if (SYSTEM_NAMES.has(id)) return;
  if (wm.get(id)) {
    if (fromTaskbar) wm.toggleFromTaskbar(id);
    else wm.restore(id);
    return;
  }
  openApp(id);
}

// An app's control may open a window of the desktop itself instead of calling the app:
// `"desktop": "<target>"` on an action (docs/renderer.md). Only these targets exist.
const DESKTOP_TARGETS = {
  settings: () => settings.open({ page: 'general' }),
  'settings#llm': async () => {
    await settings.open({ page: 'general' });
    const field = document.getElementById('set_llm_base_url');
    if (field) {
      field.scrollIntoView({ block: 'center' });
      field.focus();
    }
  },
  'settings#permissions': () => settings.open({ page: 'permissions' }),
  'settings#approvals': () => settings.open({ page: 'approvals' }),
  audit: () => audit.open(),
};

export async function runAction(winId, action, payload) {
  if (isObject(action) && typeof action.desktop === 'string') {
    const open = Object.hasOwn(DESKTOP_TARGETS, action.desktop) ? DESKTOP_TARGETS[action.desktop] : null;
    if (open) await open();
    else showBanner(winId, t('desktop.unknown_target', { target: action.desktop }));
    return;
  }
  const body = { app: winId, action_id: action.action_id, ...payload };
  if (state.sessionId) body.session_id = state.sessionId;
  const w = wm.get(winId);
  if (w) w.el.classList.add('is-busy');
  try {
    const reply = await tracked(winId, () => api.action(body));
    rememberSession(reply && reply.session_id);
    runs.adoptReply(reply);
    const response = reply && reply.response;
    if (wm.get(winId)) renderResponse(winId, response, { app: winId, fromUser: true, runId: runOf(reply) });
    if (isObject(response) && response.message) voice.speakReply(response.message, 'click');
  } catch (err) {
    showBanner(winId, err.message, isObject(err.body) && Object.keys(err.body).length > 1 ? err.body : undefined);
  } finally {
    const still = wm.get(winId);
    if (still) still.el.classList.remove('is-busy');
  }
}

/** An `app_status` event: the app's entry, its taskbar icon, its window's status line. */
export function onAppStatus(msg) {
  const app = state.apps.get(msg.app);
  if (!app) {
    loadApps();
    return;
  }
  app.status = toText(msg.status);
  if (msg.error !== undefined) app.error = msg.error;
  else if (app.status === 'running') delete app.error;
  taskbar.renderApps();
  const w = wm.get(msg.app);
  if (w) {
    statusLine(msg.app);
    if (app.status === 'running' && w.openFailed) {
      w.openFailed = false;
      openApp(msg.app);
    }
  }
}

/** A `view` event: drawn in the app's window when something awaits it. */
export function onView(msg) {
  if (typeof msg.app !== 'string') return;
  // A run that waited for the user has no request awaiting its views: they come as events.
  if (msg.interim === true && !awaitsReply(msg.app) && !runs.ownsInterim(msg)) return;
  // A pushed view refreshes an open window; it never reopens one the user closed.
  if (msg.pushed === true && !wm.get(msg.app)) return;
  ensureWindow(msg.app);
  // a run's final view names its run (a pushed or interim one does not: the last run stays)
  const runId = msg.pushed === true || msg.interim === true ? undefined : msg.run_id;
  renderResponse(msg.app, msg.response, { app: msg.app, runId });
}

/** The run an open or action reply ended: the system sets response.run_id over the app's. */
function runOf(reply) {
  return isObject(reply) && isObject(reply.response) && typeof reply.response.run_id === 'string'
    ? reply.response.run_id : undefined;
}
