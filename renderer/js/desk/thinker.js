// The desktop that speaks first (DESIGN §18, aios/duplex/thinker.py), as the page sees it:
// where the user looks (the session the panel shows, whether the page is visible) goes to
// POST /api/attention, so that what ends elsewhere is announced; a `said` event (the
// desktop's own message, already in the conversation's timeline) is read aloud as the
// voice setting says (in voice mode: after a spoken instruction, or always) and shown as a
// toast while the conversation panel is closed; the tray's do-not-disturb button flips
// duplex.dnd (POST /api/config), which silences all of it.
import * as conversation from '../conversation/conversation.js';
import { api } from '../core/api.js';
import { emit, on } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import * as notify from './notify.js';
import * as voice from './voice.js';

let button = null;
/** How the user gave the last instruction ('voice' or 'typed'): voice mode reads aloud. */
let lastSource = 'typed';

function dnd() {
  return Boolean(isObject(state.config) && isObject(state.config.duplex) && state.config.duplex.dnd);
}

function report() {
  api.attention(state.sessionId, document.visibilityState === 'visible').catch(() => {});
}

export function init() {
  button = document.createElement('button');
  button.id = 'tray_dnd';
  button.type = 'button';
  button.className = 'tray-item tray-btn tray-dnd';
  button.appendChild(icon('moon'));
  const tray = document.getElementById('tray');
  tray.insertBefore(button, document.getElementById('notifications'));
  button.addEventListener('click', toggle);
  on('config:changed', render);
  on('lang:changed', render);
  on('session:remembered', report);
  on('command:submit', ({ source }) => { lastSource = source === 'voice' ? 'voice' : 'typed'; });
  document.addEventListener('visibilitychange', report);
  render();
  report();
}

function render() {
  if (!button) return;
  const on_ = dnd();
  button.setAttribute('aria-pressed', String(on_));
  button.classList.toggle('is-on', on_);
  const label = t(on_ ? 'dnd.on' : 'dnd.off');
  button.title = label;
  button.setAttribute('aria-label', label);
}

async function toggle() {
  const want = !dnd();
  button.setAttribute('aria-busy', 'true');
  try {
    const reply = await api.saveConfig({ duplex: { dnd: want } });
    if (isObject(reply) && isObject(reply.config)) state.config = reply.config;
    emit('config:changed', state.config);
    notify.toast(t(want ? 'dnd.turned_on' : 'dnd.turned_off'), { level: 'info' });
  } catch (err) {
    notify.toast(t('dnd.failed', { error: err.message }), { level: 'error' });
  } finally {
    button.removeAttribute('aria-busy');
  }
}

/** A `said` event: the desktop spoke first (its entry is in the timeline already). */
export function onEvent(msg) {
  if (!isObject(msg) || msg.type !== 'said' || typeof msg.message !== 'string') return false;
  if (state.sessionId && msg.session_id !== state.sessionId) return true;
  if (msg.quiet !== true) voice.speakReply(msg.message, lastSource);
  if (!conversation.isOpen()) notify.toast(toText(msg.message), { level: 'info', title: t('conv.desktop') });
  return true;
}
