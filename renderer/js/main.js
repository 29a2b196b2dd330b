// Wiring: creates every part of the desktop and connects them through the bus.
// This is the only module that knows all the others; each of them only draws or reports.
import { api, connectEvents, initAuth, refreshFileGrants, setErrorText, setUnauthorizedHandler } from './core/api.js';
import { on } from './core/bus.js';
import * as conversation from './conversation/conversation.js';
import { DEFAULTS } from './core/defaults.js';
import { applyStatic, setLang, statusText, t } from './core/i18n.js';
import * as instances from './desk/instances.js';
import * as intents from './desk/intents.js';
import * as layout from './desk/layout.js';
import * as modal from './desk/modal.js';
import * as notify from './desk/notify.js';
import { applyPush, renderResponse, setActionHandler, showBanner } from './desk/render.js';
import * as runs from './runs/runs.js';
import { isObject, toText } from './core/safe.js';
import * as snapshot from './desk/snapshot.js';
import { localizeApps, rememberSession, state } from './core/state.js';
import * as audit from './system/audit.js';
import * as settings from './system/settings.js';
import * as taskbar from './desk/taskbar.js';
import * as tray from './desk/tray.js';
import * as uiops from './desk/uiops.js';
import * as voice from './desk/voice.js';
import * as wm from './desk/wm.js';

const SYSTEM_WINDOWS = new Set([settings.WIN_ID, audit.WIN_ID]);
/** System windows by the name the saved layout knows them by. */
const SYSTEM_NAMES = new Map([[settings.WIN_NAME, settings], [audit.WIN_NAME, audit]]);
let welcomed = false;

// Requests this desktop has in flight, per app window ('*': instructions, whose apps are known
// only from the reply). An interim view (the "loading" of a step plan, sent over the WebSocket)
// is drawn only while one is pending: the event races the HTTP reply, and arriving after it
// it would replace the final view with a loading view that never ends.
const ANY_APP = '*';
const pending = new Map();

async function tracked(key, work) {
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

function errorReply(title, message, body) {
  const detail = isObject(body) ? Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'error')) : null;
  return { status: 'error', view_type: 'error',
    data: { title, message, ...(detail && Object.keys(detail).length ? { detail } : {}) }, actions: [] };
}

function appMeta(id) {
  const app = state.apps.get(id);
  return { title: app ? toText(app.name) : id, icon: app ? toText(app.icon) : '' };
}

function statusLine(id) {
  const app = state.apps.get(id);
  if (!app || app.status === 'running') {
    wm.setStatus(id, '');
    return;
  }
  const error = app.error ? ` — ${toText(app.error)}` : '';
  wm.setStatus(id, t('win.app_failed', { status: statusText(app.status), error }),
    app.status === 'failed' || app.status === 'invalid' ? 'error' : 'warn');
}

/** Make sure the app's window exists (opening it shows a loading view until content arrives). */
function ensureWindow(id) {
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

async function loadApps({ announce = false } = {}) {
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
function onLangChanged() {
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
    if (wm.get(id)) renderResponse(id, reply && reply.response);
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
async function restartApp({ id }) {
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
function reopenWindow(name) {
  const system = SYSTEM_NAMES.get(name);
  if (system) {
    system.open();
    return system.WIN_ID;
  }
  openApp(name);
  return name;
}

function activateApp({ id, fromTaskbar }) {
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

async function runAction(winId, action, payload) {
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
    if (wm.get(winId)) renderResponse(winId, response, { app: winId, fromUser: true });
    if (isObject(response) && response.message) voice.speakReply(response.message, 'click');
  } catch (err) {
    showBanner(winId, err.message, isObject(err.body) && Object.keys(err.body).length > 1 ? err.body : undefined);
  } finally {
    const still = wm.get(winId);
    if (still) still.el.classList.remove('is-busy');
  }
}

// Instructions typed (or spoken) while one runs wait here and run in order (C6 of issue 13).
const COMMAND_QUEUE_MAX = 10;
const queuedCommands = [];
let commandRunning = false;

function submitInstruction(detail) {
  if (queuedCommands.length >= COMMAND_QUEUE_MAX) {
    notify.toast(t('command.queue_full', { n: COMMAND_QUEUE_MAX }), { level: 'warning' });
    return;
  }
  queuedCommands.push(detail);
  taskbar.setQueue(queuedCommands.slice(commandRunning ? 0 : 1).map((q) => q.text));
  if (!commandRunning) drainCommands();
}

async function drainCommands() {
  commandRunning = true;
  try {
    while (queuedCommands.length) {
      const next = queuedCommands.shift();
      taskbar.setQueue(queuedCommands.map((q) => q.text));
      taskbar.setCommandBusy(next.text);
      await runInstruction(next);
    }
  } finally {
    commandRunning = false;
    taskbar.setCommandBusy(false);
  }
}

/** One place per message: a reply shown in a window on screen is not also a toast. */
function onScreen(apps) {
  return apps.length > 0 && apps.every((id) => wm.isVisible(id));
}

async function runInstruction({ text, source }) {
  try {
    const reply = await tracked(ANY_APP, () => api.instruction(text, state.sessionId));
    rememberSession(reply && reply.session_id);
    runs.adoptReply(reply, { instruction: true });
    const results = reply && Array.isArray(reply.results) ? reply.results : [];
    for (const r of results) {
      if (!isObject(r) || typeof r.app !== 'string') continue;
      ensureWindow(r.app);
      wm.raise(r.app);
      renderResponse(r.app, r.response, { app: r.app, fromUser: true });
    }
    const message = reply && typeof reply.message === 'string' ? reply.message.trim() : '';
    const plan = reply && Array.isArray(reply.plan) ? reply.plan.filter(isObject) : [];
    const title = plan.length > 1
      ? t('command.plan', { plan: plan.map((task) => toText((state.apps.get(task.app) || {}).name || task.app)).join(' → ') })
      : undefined;
    const answered = intents.handleReply(reply); // a system intent: its desktop ops, its answer card
    const shownIn = results.filter((r) => isObject(r) && typeof r.app === 'string').map((r) => r.app);
    if (message && !answered && (title || !onScreen(shownIn))) {
      notify.toast(message.length > DEFAULTS.messageMaxChars ? `${message.slice(0, DEFAULTS.messageMaxChars)}…` : message,
        { level: 'info', title });
    }
    if (message) voice.speakReply(message, source);
  } catch (err) {
    notify.toast(t('command.failed', { error: err.message }), { level: 'error' });
  } finally {
    conversation.refresh();
  }
}

// ------------------------------------------------------------------ config and health

async function loadConfig() {
  try {
    settings.adoptConfig(await api.config());
  } catch (err) {
    console.warn('config not loaded:', err.message);
    tray.renderLLM();
  }
}

function onConfig(cfg) {
  if (isObject(cfg)) {
    if (typeof cfg.language === 'string') setLang(cfg.language);
    if (typeof cfg.voice_rate === 'number' && cfg.voice_rate > 0) state.voiceRate = cfg.voice_rate;
    if (isObject(cfg.voice) && typeof cfg.voice.volume === 'number') voice.setVolume(cfg.voice.volume, { save: false });
  }
  tray.renderLLM();
}

function setDesktopStatus(text, level) {
  const node = document.getElementById('desktop_status');
  node.textContent = text;
  node.dataset.level = level || '';
  node.hidden = !text;
}

let appsLoaded = false;

async function pollHealth() {
  let h;
  try {
    h = await api.health();
  } catch (err) {
    state.health = 'unknown';
    if (state.wsState === 'unauthorized') return;
    setDesktopStatus(err.message, 'error');
    setTimeout(pollHealth, DEFAULTS.healthPollMs);
    return;
  }
  const status = h && typeof h.status === 'string' ? h.status : 'starting';
  if (h && typeof h.version === 'string') state.version = h.version;
  if (status === 'degraded') {
    // The system runs but cannot remember anything (full disk, damaged database):
    // say why until the store recovers, then carry on as if nothing happened.
    state.health = 'degraded';
    setDesktopStatus(t('health.degraded', { reason: String(h.store || '') }), 'error');
    setTimeout(pollHealth, DEFAULTS.healthPollMs);
    return;
  }
  const was = state.health;
  state.health = status === 'ready' ? 'ready' : 'starting';
  if (state.health !== 'ready' && appsLoaded) {
    // An app restarting or hot-loaded later has its own status in the start menu.
    if (was === 'degraded') setDesktopStatus('');
    setTimeout(pollHealth, DEFAULTS.healthWatchMs);
    return;
  }
  if (state.health !== 'ready') {
    setDesktopStatus(t('health.starting'), 'info');
    setTimeout(pollHealth, DEFAULTS.healthPollMs);
    return;
  }
  setTimeout(pollHealth, DEFAULTS.healthWatchMs);
  if (was === 'ready' && appsLoaded) return;
  setDesktopStatus(t('health.ready'), 'ready');
  setTimeout(() => setDesktopStatus(''), 2500);
  if (appsLoaded) return;
  appsLoaded = true;
  await loadApps();
  if (!welcomed) {
    welcomed = true;
    const voiceCfg = state.config && isObject(state.config.voice) ? state.config.voice : {};
    if (voiceCfg.welcome !== false) voice.speak(t('welcome'));
  }
}

// ------------------------------------------------------------------ server events

function onEvent(msg) {
  conversation.onEvent(msg);
  if (runs.onEvent(msg)) return;
  if (instances.onEvent(msg)) return;
  switch (msg.type) {
    case 'app_status': {
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
      return;
    }
    case 'view':
      if (typeof msg.app !== 'string') return;
      // A run that waited for the user has no request awaiting its views: they come as events.
      if (msg.interim === true && !awaitsReply(msg.app) && !runs.ownsInterim(msg)) return;
      // A pushed view refreshes an open window; it never reopens one the user closed.
      if (msg.pushed === true && !wm.get(msg.app)) return;
      ensureWindow(msg.app);
      renderResponse(msg.app, msg.response, { app: msg.app });
      return;
    case 'push':
      if (typeof msg.app === 'string') applyPush(msg.app, msg.data);
      return;
    case 'notify': {
      const app = state.apps.get(msg.app);
      notify.notify(msg, app ? toText(app.name) : toText(msg.app));
      return;
    }
    case 'ui_op':
      uiops.apply(msg);
      return;
    case 'speak':
      voice.speak(msg.text, msg.lang);
      return;
    case 'log':
      console.debug('server log', msg);
      return;
    case 'hello':
      return; // the stream's cursor is api.js's business; the apps come from /api/apps
    default:
      console.debug('unhandled event', msg.type);
  }
}

let stopEvents = () => {};

// Approvals and runs live in the server (DESIGN §12): after a page load, and whenever the
// event stream had a gap it could not fill (a resync, a server restart), their state is
// read again and handed to whoever draws it as one `aios:runs-state` DOM event
// ({interactions, runs, reason}). A server without these endpoints (404) has none of either.
async function fetchList(get) {
  try {
    const list = await get();
    return Array.isArray(list) ? list : [];
  } catch (err) {
    if (err.status !== 404) console.warn('runs state unavailable', err.message);
    return [];
  }
}

async function reloadRunsState(reason = 'load') {
  const [interactions, active] = await Promise.all([
    fetchList(api.pendingInteractions),
    fetchList(api.activeRuns),
  ]);
  const detail = { interactions, runs: active, reason };
  document.dispatchEvent(new CustomEvent('aios:runs-state', { detail }));
  conversation.refresh();
}

/** The server refused this page's token (it restarted with a new one): say so once, offer a reload. */
function onUnauthorized() {
  if (state.wsState === 'unauthorized') return;
  stopEvents();
  state.wsState = 'unauthorized';
  tray.renderNet();
  modal.reloadOffer(t('auth.lost_title'), [t('auth.lost_body')], t('auth.reload'));
}

function onSocketState(s, isReconnect) {
  if (state.wsState === 'unauthorized') return;
  state.wsState = s;
  tray.renderNet();
  snapshot.schedule();
  if (s === 'open' && isReconnect) {
    // The server may have restarted: apps, their statuses, the snapshot and the UI changes
    // (events of an earlier server are not replayed) are stale.
    loadApps().then(uiops.restoreLog);
    loadConfig();
    snapshot.sendNow();
  }
}

// ------------------------------------------------------------------ boot

function wire() {
  on('layout:changed', snapshot.schedule);
  on('layout:changed', layout.schedule);
  on('wm:changed', layout.schedule);
  on('app:activate', activateApp);
  on('command:submit', submitInstruction);
  on('voice:listen', voice.listen);
  on('voice:mute', voice.setMuted);
  on('voice:volume', (v) => voice.setVolume(v));
  on('app:close', ({ id }) => wm.close(id));
  on('app:minimize', ({ id }) => wm.minimize(id));
  on('app:restart', restartApp);
  on('voice:state', tray.renderSpeech);
  on('system:settings', settings.open);
  on('system:audit', audit.open);
  on('system:about', () => modal.info(t('about.title'), [t('about.body'),
    ...(state.version ? [t('about.version', { version: state.version })] : []),
    t('about.apps', { n: state.apps.size })]));
  on('apps:refresh', loadApps);
  on('config:changed', onConfig);
  on('lang:changed', () => {
    tray.render();
    settings.refresh();
    audit.refresh();
    onLangChanged();
    runs.relabel(); // after the apps' names: the cards name the apps
    conversation.relabel();
  });
  on('runs:error', ({ message }) => notify.toast(message, { level: 'error' }));
  // The player's own requests (a track's end, the now-playing bar's next) answered by a view.
  on('player:render', ({ winId, response }) => {
    if (wm.get(winId)) renderResponse(winId, response, { app: winId, fromUser: true });
  });
  setActionHandler(runAction);

  const bell = document.getElementById('notifications_button');
  taskbar.registerPopup('notifications', document.getElementById('notifications_panel'), bell, notify.markRead);
  bell.addEventListener('click', () => taskbar.togglePopup('notifications'));

  // "/" jumps to the command bar from anywhere that is not a text field.
  document.addEventListener('keydown', (ev) => {
    const tag = ev.target && ev.target.tagName;
    if (ev.key === '/' && !['INPUT', 'TEXTAREA', 'SELECT'].includes(tag) && !ev.target.isContentEditable) {
      ev.preventDefault();
      document.getElementById('command_input').focus();
    }
  });
}

function boot() {
  initAuth();
  setUnauthorizedHandler(onUnauthorized);
  setErrorText({
    network: () => t('error.network'),
    timeout: () => t('error.timeout'),
    http: (status) => t('error.http', { status }),
  });
  document.documentElement.lang = state.lang;
  applyStatic();
  wm.init(document.getElementById('desktop'));
  notify.init();
  modal.init();
  taskbar.init();
  tray.init();
  runs.init({ openWindow: ensureWindow });
  layout.init();
  instances.init({ openWindow: ensureWindow, name: (id) => appMeta(id).title });
  conversation.init();
  intents.init();
  wire();
  loadConfig().then(() => pollHealth());
  loadApps().then(uiops.restoreLog); // the UI changes still applied, once the taskbar is built
  stopEvents = connectEvents({ onMessage: onEvent, onState: onSocketState, onResync: reloadRunsState });
  reloadRunsState('load');
  snapshot.schedule();
}

boot();
