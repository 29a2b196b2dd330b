// Listening while the user types (DESIGN §18, aios/duplex/listener.py): the command bar's
// draft goes to the server over the events WebSocket a moment after each keystroke, and
// the answer is drawn above the bar — a route chip ("→ Files", or the two apps that tie)
// and at most one interjection bubble. Neither ever takes the focus or touches the draft:
// they are not focusable, a click on them keeps the caret in the command bar, and going
// on typing answers them. Nothing is kept of a draft until Enter.
import { sendOnEvents } from '../core/api.js';
import { on } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';

/** The draft goes out this long after the last keystroke unless config.duplex.debounce_ms says. */
const DEBOUNCE_MS = 150;
/** Gap in px between the command bar and what is drawn above it. */
const GAP_PX = 8;
const TAB_KEY = 'aios.duplex.tab';
const STYLES = new Set(['gentle', 'question', 'excited', 'firm']);

const ui = {};
/** The id of the last draft sent: older previews are stale and dropped. */
let sentId = 0;
let sentText = '';
let lastPaused = false;
let debounceTimer = null;
let pauseTimer = null;
let tab = null;
/** Mute was asked and the server has not said so yet: previews already on their way
 *  still carry interjections, which are not drawn. */
let muting = false;
/** Interjections the user closed: one still on its way is not drawn again. */
const dismissed = new Set();

function tabId() {
  if (tab) return tab;
  try {
    tab = sessionStorage.getItem(TAB_KEY);
  } catch {
    tab = null;
  }
  if (!tab) {
    tab = `t_${Math.random().toString(36).slice(2, 12)}`;
    try {
      sessionStorage.setItem(TAB_KEY, tab);
    } catch {
      // memory only
    }
  }
  return tab;
}

function debounceMs() {
  const ms = state.config && isObject(state.config.duplex) ? Number(state.config.duplex.debounce_ms) : NaN;
  return Number.isFinite(ms) && ms >= 0 ? ms : DEBOUNCE_MS;
}

function enabled() {
  return !(state.config && isObject(state.config.duplex) && state.config.duplex.enabled === false);
}

function ids() {
  return { session_id: state.sessionId || undefined, tab: tabId() };
}

export function init() {
  ui.bar = document.getElementById('command_bar');
  ui.input = document.getElementById('command_input');
  ui.chip = el('div', { id: 'draft_route', class: 'draft-route', hidden: true, attrs: { 'aria-live': 'polite' } });
  ui.text = el('p', { class: 'draft-bubble-text' });
  ui.mute = el('button', { type: 'button', class: 'draft-bubble-mute', text: t('duplex.mute'),
    attrs: { tabindex: '-1' }, dataset: { act: 'mute' } });
  ui.close = el('button', { type: 'button', class: 'draft-bubble-close', text: '×',
    attrs: { tabindex: '-1', 'aria-label': t('duplex.dismiss') }, dataset: { act: 'dismiss' } });
  ui.bubble = el('section', { id: 'draft_bubble', class: 'draft-bubble', hidden: true,
    attrs: { role: 'status', 'aria-live': 'polite' } }, ui.close, ui.text, el('div', { class: 'draft-bubble-actions' }, ui.mute));
  // The desktop's own voice: no app's UI operation may retitle, move or show it (uiops.js).
  ui.stack = el('div', { id: 'draft_preview', class: 'draft-preview', dataset: { systemChrome: '' } },
    ui.bubble, ui.chip);
  document.body.appendChild(ui.stack);
  // A press on the bubble or the chip must not move the focus out of the command bar.
  ui.stack.addEventListener('pointerdown', (ev) => ev.preventDefault());
  ui.stack.addEventListener('mousedown', (ev) => ev.preventDefault());
  ui.stack.addEventListener('click', onClick);
  ui.input.addEventListener('input', onInput);
  // An input method's composition (pinyin) is not the draft yet: only its result is.
  ui.input.addEventListener('compositionend', onInput);
  ui.bar.addEventListener('submit', () => end());
  window.addEventListener('resize', place);
  on('lang:changed', relabel);
}

function onInput(ev) {
  if (ev && ev.isComposing) return;
  clearTimeout(debounceTimer);
  clearTimeout(pauseTimer);
  // Typing on answers an interjection; rewriting what it was about takes it away at once
  // (the next preview says whether it still holds).
  const value = ui.input.value;
  if (!value.trim()) hideAll();
  else if (!ui.bubble.hidden && !value.startsWith(ui.bubble.dataset.about || '')) hideBubble();
  if (!enabled()) return;
  debounceTimer = setTimeout(() => send(false), debounceMs());
}

function send(paused) {
  const text = ui.input.value;
  if (!text.trim()) {
    end();
    return;
  }
  sentId += 1;
  sentText = text;
  lastPaused = paused;
  sendOnEvents({ type: 'draft', id: sentId, text, paused, lang: state.lang, ...ids() });
}

/** The draft was sent (Enter) or emptied: the server forgets it, the preview goes. */
function end() {
  clearTimeout(debounceTimer);
  clearTimeout(pauseTimer);
  sentId += 1;
  sentText = '';
  sendOnEvents({ type: 'draft_end', ...ids() });
  hideAll();
}

function hideAll() {
  ui.chip.hidden = true;
  hideBubble();
}

function hideBubble() {
  ui.bubble.hidden = true;
  delete ui.bubble.dataset.id;
}

/** A server message for this module: true when it was one. */
export function onMessage(msg) {
  switch (msg.type) {
    case 'draft_preview':
      onPreview(msg);
      return true;
    case 'duplex_muted':
      muting = false;
      ui.stack.dataset.muted = String(msg.muted === true);
      if (msg.muted) hideBubble();
      return true;
    case 'duplex_error':
      console.warn('draft preview refused:', msg.error);
      return true;
    default:
      return false;
  }
}

function onPreview(msg) {
  if (msg.id !== sentId || ui.input.value !== sentText) return; // the user typed on
  // What the preview is of, for whoever waits on it (a test, a screen reader's log).
  ui.stack.dataset.draft = sentText;
  ui.stack.dataset.paused = String(lastPaused);
  drawRoute(isObject(msg.route) ? msg.route : null);
  const ij = isObject(msg.interjection) ? msg.interjection : null;
  drawInterjection(ij && !muting && !dismissed.has(ij.id) ? ij : null);
  ui.stack.dataset.muted = String(msg.muted === true);
  clearTimeout(pauseTimer);
  const wait = Number(msg.pause_after_ms);
  if (Number.isFinite(wait) && wait > 0) {
    // Say nothing more until the user pauses; then the same draft again, as a pause.
    pauseTimer = setTimeout(() => {
      if (ui.input.value === sentText) send(true);
    }, wait);
  }
  place();
}

function appName(id) {
  const app = state.apps.get(id);
  return app ? toText(app.name) : toText(id);
}

function drawRoute(route) {
  const tie = route && Array.isArray(route.tie) ? route.tie.filter((a) => typeof a === 'string') : [];
  const apps = route && Array.isArray(route.apps) ? route.apps.filter((a) => typeof a === 'string') : [];
  let label = '';
  if (tie.length > 1) {
    label = t('duplex.tie', { apps: tie.map(appName).join(' / ') });
  } else if (apps.length) {
    label = `→ ${apps.map(appName).join(' → ')}`;
  } else if (route && typeof route.system === 'string') {
    label = t(`duplex.system_${route.system}`);
  }
  ui.chip.textContent = label;
  ui.chip.dataset.apps = apps.join(',');
  ui.chip.dataset.tie = tie.join(',');
  ui.chip.classList.toggle('is-tie', tie.length > 1);
  ui.chip.hidden = !label;
}

function drawInterjection(ij) {
  if (!ij || typeof ij.text !== 'string' || !ij.text) {
    hideBubble();
    return;
  }
  if (ui.bubble.dataset.id === ij.id && !ui.bubble.hidden) return; // the same, still true
  ui.text.textContent = ij.text;
  ui.bubble.dataset.about = sentText;
  ui.bubble.dataset.id = toText(ij.id);
  ui.bubble.dataset.kind = toText(ij.kind);
  ui.bubble.dataset.level = String(Number(ij.level) || 0);
  ui.bubble.dataset.style = STYLES.has(ij.style) ? ij.style : 'gentle';
  ui.bubble.title = toText(ij.reason);
  ui.bubble.hidden = false;
}

function onClick(ev) {
  const button = ev.target.closest ? ev.target.closest('[data-act]') : null;
  if (!button) return;
  if (button.dataset.act === 'mute') {
    muting = true;
    sendOnEvents({ type: 'duplex_mute', muted: true, ...ids() });
    hideBubble();
  } else if (button.dataset.act === 'dismiss') {
    dismissed.add(ui.bubble.dataset.id);
    sendOnEvents({ type: 'duplex_dismiss', id: ui.bubble.dataset.id, ...ids() });
    hideBubble();
  }
}

/** Above the command bar, its left edges aligned, inside the viewport. */
function place() {
  if (!ui.bar) return;
  const bar = ui.bar.getBoundingClientRect();
  const width = ui.stack.offsetWidth;
  const left = Math.max(GAP_PX, Math.min(bar.left, window.innerWidth - width - GAP_PX));
  ui.stack.style.left = `${left}px`;
  ui.stack.style.bottom = `${window.innerHeight - bar.top + GAP_PX}px`;
}

function relabel() {
  ui.mute.textContent = t('duplex.mute');
  ui.close.setAttribute('aria-label', t('duplex.dismiss'));
}
