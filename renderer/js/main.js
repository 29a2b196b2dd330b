// Wiring: creates every part of the desktop and connects them through the bus.
// This is the only module that knows all the others; each of them only draws or reports.
import * as conversation from './conversation/conversation.js';
import { initAuth, setErrorText, setUnauthorizedHandler } from './core/api.js';
import { on } from './core/bus.js';
import { applyStatic, t } from './core/i18n.js';
import { toText } from './core/safe.js';
import { state } from './core/state.js';
import * as apps from './desk/apps.js';
import * as bargein from './desk/bargein.js';
import * as commands from './desk/commands.js';
import * as connection from './desk/connection.js';
import * as conversationMode from './desk/conversation_mode.js';
import * as duplex from './desk/duplex.js';
import * as health from './desk/health.js';
import * as instances from './desk/instances.js';
import * as intents from './desk/intents.js';
import * as layout from './desk/layout.js';
import * as modal from './desk/modal.js';
import * as notify from './desk/notify.js';
import { applyPush, renderResponse, setActionHandler } from './desk/render.js';
import * as snapshot from './desk/snapshot.js';
import * as taskbar from './desk/taskbar.js';
import * as thinker from './desk/thinker.js';
import * as tray from './desk/tray.js';
import * as uiops from './desk/uiops.js';
import * as voice from './desk/voice.js';
import * as wm from './desk/wm.js';
import * as runs from './runs/runs.js';
import * as audit from './system/audit.js';
import * as mcp from './system/mcp.js';
import * as memory from './system/memory.js';
import * as selffiles from './system/selffiles.js';
import * as settings from './system/settings.js';
import * as traces from './system/traces.js';

// ------------------------------------------------------------------ server events

function onEvent(msg) {
  if (duplex.onMessage(msg)) return; // a draft's preview: not a bus event
  conversation.onEvent(msg);
  if (thinker.onEvent(msg)) return;
  if (runs.onEvent(msg)) return;
  if (instances.onEvent(msg)) return;
  switch (msg.type) {
    case 'app_status':
      apps.onAppStatus(msg);
      return;
    case 'view':
      apps.onView(msg);
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
    case 'mcp_status':
      mcp.onEvent(msg);
      return;
    case 'memory':
      memory.onEvent(msg);
      selffiles.onMemoryChanged();
      return;
    case 'speak':
      voice.speak(msg.text, msg.lang);
      return;
    case 'log':
      console.debug('server log', msg);
      return;
    case 'reply_stream':
      return; // the conversation panel's typing bubble (conversation/stream.js)
    case 'hello':
      return; // the stream's cursor is api.js's business; the apps come from /api/apps
    default:
      console.debug('unhandled event', msg.type);
  }
}

// ------------------------------------------------------------------ boot

function wire() {
  on('layout:changed', snapshot.schedule);
  on('layout:changed', layout.schedule);
  on('wm:changed', layout.schedule);
  on('app:activate', apps.activateApp);
  on('command:submit', commands.submitInstruction);
  on('topics:resumed', (reply) => commands.showReply(reply, 'topics'));
  on('voice:listen', () => { voice.stopSpeaking(); voice.listen(); }); // barge-in by the mic button
  on('voice:mute', voice.setMuted);
  on('voice:volume', (v) => voice.setVolume(v));
  on('app:close', ({ id }) => wm.close(id));
  on('app:minimize', ({ id }) => wm.minimize(id));
  on('app:restart', apps.restartApp);
  on('voice:state', tray.renderSpeech);
  on('system:settings', settings.open);
  on('system:audit', audit.open);
  on('system:memory', memory.open);
  on('trace:open', traces.open); // "why?" on a reply or a window: that run's trace
  on('trace:session', ({ session_id: sid, leftOf }) => traces.open({ session_id: sid, all: true, leftOf }));
  on('conversation:hide', () => conversation.toggle(false));
  on('conversation:show', ({ session_id: sid, entry }) => conversation.showEntry(sid, entry));
  on('system:about', () => modal.info(t('about.title'), [t('about.body'),
    ...(state.version ? [t('about.version', { version: state.version })] : []),
    t('about.apps', { n: state.apps.size })]));
  on('apps:refresh', apps.loadApps);
  on('config:changed', health.onConfig);
  on('lang:changed', () => {
    tray.render();
    settings.refresh();
    audit.refresh();
    memory.refresh();
    traces.refresh();
    apps.onLangChanged();
    runs.relabel(); // after the apps' names: the cards name the apps
    conversation.relabel();
  });
  on('runs:error', ({ message }) => notify.toast(message, { level: 'error' }));
  // The player's own requests (a track's end, the now-playing bar's next) answered by a view.
  on('player:render', ({ winId, response }) => {
    if (wm.get(winId)) renderResponse(winId, response, { app: winId, fromUser: true });
  });
  setActionHandler(apps.runAction);

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
  setUnauthorizedHandler(connection.onUnauthorized);
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
  thinker.init();
  runs.init({ openWindow: apps.ensureWindow });
  layout.init();
  instances.init({ openWindow: apps.ensureWindow, name: (id) => apps.appMeta(id).title });
  conversation.init();
  intents.init();
  duplex.init();
  bargein.init();
  conversationMode.init();
  wire();
  health.loadConfig().then(() => health.pollHealth());
  apps.loadApps().then(uiops.restoreLog); // the UI changes still applied, once the taskbar is built
  connection.connect(onEvent);
  connection.reloadRunsState('load');
  memory.refreshCount();
  snapshot.schedule();
}

boot();
