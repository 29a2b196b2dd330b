// Instances and focus on the desktop (DESIGN §13). The system keeps which apps are open in the
// session (instances) and which one is in front (each session's focus stack); this module keeps
// the page and the system agreeing about it:
// - a `focus` event of this session raises that app's window, opening it if needed (a launched
//   child comes to the front; its parent comes back when the child ends);
// - the user raising a window is reported (POST …/focus), once the raises settle and only when
//   the front instance changes; closing an app's window closes its instance (POST …/close), so
//   a parent waiting on that child goes on with closed_by_user;
// - a launched child's title bar says which app opened it.
// The page's own requests come back as focus events too: those are not obeyed again (an open
// of a saved layout would otherwise reorder the windows it has just put back).
import { api } from '../core/api.js';
import { on } from '../core/bus.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import * as wm from './wm.js';

const OPEN_STATES = new Set(['starting', 'foreground', 'background', 'suspended']);

/** instance_id -> instance of the current session, as the last event or listing had it. */
let byId = new Map();
/** The instance the system has in front in the current session (null: none known). */
let front = null;
/** app -> number of this page's own requests in flight whose focus event is an echo. */
const ownRequests = new Map();
let reportTimer = null;
let loadSerial = 0;
let openWindow = () => {};
let appName = (id) => id;

/**
 * deps: {openWindow(app): open (and fill) an app's window, name(app): its display name}.
 * Listens to the window manager; main.js hands this module the server's events (onEvent).
 */
export function init({ openWindow: open, name }) {
  openWindow = open;
  appName = name;
  on('wm:changed', onWindow);
  // A first reply brings the session (its events came before it), a switch another one.
  on('session:remembered', reload);
  on('lang:changed', () => { for (const w of wm.list()) labelOpener(w.id); });
  // After a load and after a gap in the event stream the listing is read again.
  document.addEventListener('aios:runs-state', reload);
}

/** The app's open instance in the current session, if any. */
export function openInstance(app) {
  for (const inst of byId.values()) {
    if (inst.app === app && OPEN_STATES.has(inst.state)) return inst;
  }
  return null;
}

/** Run the page's own request about ``app`` (an open): the focus event it causes is not obeyed again. */
export async function own(app, work) {
  ownRequests.set(app, (ownRequests.get(app) || 0) + 1);
  try {
    return await work();
  } finally {
    const left = (ownRequests.get(app) || 1) - 1;
    if (left) ownRequests.set(app, left);
    else ownRequests.delete(app);
  }
}

// ------------------------------------------------------------------ the system's side

/** Handle `instance` and `focus` events; true when the event was one of them. */
export function onEvent(msg) {
  if (!isObject(msg) || (msg.type !== 'instance' && msg.type !== 'focus')) return false;
  if (msg.session_id !== state.sessionId || typeof msg.instance_id !== 'string') return true;
  if (msg.type === 'instance') {
    adopt(msg);
    return true;
  }
  front = msg.instance_id;
  const app = toText(msg.app);
  if (!app || ownRequests.has(app) || wm.stateOf(app) === 'active') return true;
  openWindow(app); // opens a missing window (raised), restores a minimised one
  wm.raise(app);
  return true;
}

function adopt(inst) {
  if (typeof inst.instance_id !== 'string' || typeof inst.app !== 'string') return;
  byId.set(inst.instance_id, inst);
  if (inst.instance_id === front && !OPEN_STATES.has(inst.state)) front = null;
  labelOpener(inst.app);
}

/** Read the session's instances again (page load, resync, another session). */
async function reload() {
  const sid = state.sessionId;
  const serial = ++loadSerial;
  if (!sid) {
    byId = new Map();
    front = null;
    return;
  }
  let list;
  try {
    list = await api.instances(sid);
  } catch (err) {
    console.warn('instances not loaded:', err.message);
    return;
  }
  if (serial !== loadSerial || sid !== state.sessionId || !Array.isArray(list)) return;
  byId = new Map();
  front = null;
  for (const inst of list) {
    if (!isObject(inst)) continue;
    adopt(inst);
    if (inst.state === 'foreground') front = inst.instance_id;
  }
  for (const w of wm.list()) labelOpener(w.id);
}

/** "opened by <parent>" in a launched child's title bar while the child is open. */
function labelOpener(app) {
  if (!wm.get(app)) return;
  const inst = openInstance(app);
  const parent = inst && inst.parent_instance_id ? byId.get(inst.parent_instance_id) : null;
  wm.setOpener(app, parent ? t('win.opened_by', { app: appName(parent.app) }) : '');
}

// ------------------------------------------------------------------ the user's side

function onWindow({ id, state: change }) {
  if (change === 'active') scheduleReport();
  else if (change === 'open') labelOpener(id);
  else if (change === 'closed') closeInstance(id);
}

/** A burst of raises (a restored layout, a click that raises) is one report, of the last. */
function scheduleReport() {
  clearTimeout(reportTimer);
  reportTimer = setTimeout(reportFocus, DEFAULTS.focusReportDebounceMs);
}

async function reportFocus() {
  const top = wm.list().find((w) => wm.stateOf(w.id) === 'active');
  const inst = top ? openInstance(top.id) : null;
  const sid = state.sessionId;
  if (!inst || !sid || inst.instance_id === front || ownRequests.has(inst.app)) return;
  front = inst.instance_id;
  try {
    await own(inst.app, () => api.focusInstance(inst.instance_id, sid));
  } catch (err) {
    // 404: the instance ended meanwhile; the listing says what is open now.
    console.warn('focus not reported:', err.message);
    reload();
  }
}

async function closeInstance(app) {
  const inst = openInstance(app);
  const sid = state.sessionId;
  if (!inst || !sid) return;
  try {
    adopt({ ...inst, state: 'stopping' });
    await api.closeInstance(inst.instance_id, sid);
  } catch (err) {
    console.warn('close not reported:', err.message);
    reload();
  }
}
