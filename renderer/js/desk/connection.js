// The event stream and what a gap in it means: the runs' state read again, a lost token offered
// a reload, a reconnect (the server may have restarted) refreshes apps, config, the memory
// proposals' count and snapshot.
import * as conversation from '../conversation/conversation.js';
import { api, connectEvents } from '../core/api.js';
import { t } from '../core/i18n.js';
import { state } from '../core/state.js';
import * as memory from '../system/memory.js';
import * as apps from './apps.js';
import * as health from './health.js';
import * as modal from './modal.js';
import * as snapshot from './snapshot.js';
import * as tray from './tray.js';
import * as uiops from './uiops.js';

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

export async function reloadRunsState(reason = 'load') {
  const [interactions, active] = await Promise.all([
    fetchList(api.pendingInteractions),
    fetchList(api.activeRuns),
  ]);
  const detail = { interactions, runs: active, reason };
  document.dispatchEvent(new CustomEvent('aios:runs-state', { detail }));
  conversation.refresh();
}

/** The server refused this page's token (it restarted with a new one): say so once, offer a reload. */
export function onUnauthorized() {
  if (state.wsState === 'unauthorized') return;
  stopEvents();
  state.wsState = 'unauthorized';
  tray.renderNet();
  modal.reloadOffer(t('auth.lost_title'), [t('auth.lost_body')], t('auth.reload'));
}

export function onSocketState(s, isReconnect) {
  if (state.wsState === 'unauthorized') return;
  state.wsState = s;
  tray.renderNet();
  snapshot.schedule();
  if (s === 'open' && isReconnect) {
    // The server may have restarted: apps, their statuses, the snapshot and the UI changes
    // (events of an earlier server are not replayed) are stale.
    apps.loadApps().then(uiops.restoreLog);
    health.loadConfig();
    memory.refreshCount(); // memory events of the gap were not replayed
    snapshot.sendNow();
  }
}

/** Listen to the server's events (each handed to onMessage) until the token is refused. */
export function connect(onMessage) {
  stopEvents = connectEvents({ onMessage, onState: onSocketState, onResync: reloadRunsState });
}
