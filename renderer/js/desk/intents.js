// System intents' replies (aios/intents.py, docs/protocol.md "System intents"): the
// controller answers "你好", "what can you do?", "打开设置", "关闭音乐", "现在几点" itself.
// Its reply's `desktop` operations are carried out here (open / close / focus an app's
// window, open or close a system window, open the start menu searching for a text), and an
// answer no window shows is drawn in a small card above the command bar, with its
// `suggestions` as chips; a chip sends its instruction like the command bar does.
import { emit, on } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import * as audit from '../system/audit.js';
import * as memory from '../system/memory.js';
import * as settings from '../system/settings.js';
import * as taskbar from './taskbar.js';
import * as wm from './wm.js';

/** System windows a reply may name, and how each is opened. */
const WINDOWS = {
  settings: { id: settings.WIN_ID, open: 'system:settings' },
  audit: { id: audit.WIN_ID, open: 'system:audit' },
  memory: { id: memory.WIN_ID, open: 'system:memory' },
};
/** Suggestions drawn per answer (the server sends a handful; more would crowd the card). */
const CHIPS_MAX = 8;
/** Gap in px between the card and the command bar. */
const CARD_GAP_PX = 8;

const ui = {};

export function init() {
  ui.bar = document.getElementById('command_bar');
  ui.text = el('p', { class: 'intent-text' });
  ui.chips = el('div', { class: 'intent-chips' });
  ui.close = el('button', { type: 'button', class: 'intent-close', text: '×',
    attrs: { 'aria-label': t('intents.close') } });
  ui.card = el('section', {
    id: 'intent_reply', class: 'intent-reply', hidden: true,
    attrs: { role: 'status', 'aria-live': 'polite', 'aria-label': t('intents.answer') },
  }, ui.close, ui.text, ui.chips);
  document.body.appendChild(ui.card);
  ui.close.addEventListener('click', hide);
  ui.card.addEventListener('click', onChipClick);
  // The card goes away like a popup: a click elsewhere (not on the command bar) or Escape.
  document.addEventListener('pointerdown', (ev) => {
    if (ui.card.hidden || ui.card.contains(ev.target) || (ui.bar && ui.bar.contains(ev.target))) return;
    hide();
  }, true);
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') hide();
  });
  window.addEventListener('resize', place);
  on('lang:changed', relabel);
}

/** Suggestion chips (`[{label, instruction}]`) as buttons that send their instruction. */
export function chips(list) {
  const items = Array.isArray(list)
    ? list.filter((s) => isObject(s) && typeof s.instruction === 'string' && s.instruction.trim()).slice(0, CHIPS_MAX)
    : [];
  if (!items.length) return null;
  return el('div', { class: 'suggestions', attrs: { role: 'group', 'aria-label': t('intents.suggestions') } },
    items.map((s) => el('button', {
      type: 'button', class: 'suggestion-chip', dataset: { suggest: s.instruction },
      title: s.instruction, text: toText(s.label) || s.instruction,
    })));
}

/** A chip was clicked (here or in the conversation panel): send its instruction. */
export function sendSuggestion(node) {
  const chip = node && node.closest ? node.closest('[data-suggest]') : null;
  if (!chip) return false;
  hide();
  emit('command:submit', { text: chip.dataset.suggest, source: 'suggestion' });
  return true;
}

function onChipClick(ev) {
  sendSuggestion(ev.target);
}

/**
 * An /api/instruction reply: carry out its desktop operations; true when this module
 * showed its message (then nothing else should, C6), false for replies it leaves alone.
 */
export function handleReply(reply) {
  hide();
  if (!isObject(reply) || reply.source !== 'system') return false;
  const ops = Array.isArray(reply.desktop) ? reply.desktop.filter(isObject) : [];
  for (const op of ops) apply(op);
  // An app answered (an opened app's view, the system control app's undo): its window shows it.
  if (Array.isArray(reply.results) && reply.results.length) return false;
  const message = typeof reply.message === 'string' ? reply.message.trim() : '';
  const suggestionChips = chips(reply.suggestions);
  // A window that opened, closed or came to the front says it by itself.
  if (!suggestionChips && ops.some((op) => op.op !== 'search_menu')) return true;
  if (!message && !suggestionChips) return false;
  show(message, suggestionChips);
  return true;
}

function apply(op) {
  const app = typeof op.app === 'string' ? op.app : '';
  const win = typeof op.window === 'string' && Object.hasOwn(WINDOWS, op.window) ? WINDOWS[op.window] : null;
  switch (op.op) {
    case 'open_app':
    case 'focus_app':
      if (!app) return;
      if (wm.get(app)) {
        wm.restore(app); // un-minimises and raises
      } else {
        emit('app:activate', { id: app });
      }
      return;
    case 'close_app':
      if (app && wm.get(app)) wm.close(app); // the window only: the app keeps running
      return;
    case 'open_window':
      if (win) emit(win.open);
      return;
    case 'close_window':
      if (win && wm.get(win.id)) wm.close(win.id);
      return;
    case 'search_menu':
      searchMenu(toText(op.query));
      return;
    default:
      console.debug('unknown desktop op', op.op);
  }
}

function searchMenu(query) {
  taskbar.setPopup('start_menu', true);
  const filter = document.getElementById('start_filter');
  if (!filter) return;
  filter.value = query;
  filter.dispatchEvent(new Event('input', { bubbles: true }));
}

function show(message, chipNode) {
  ui.text.textContent = message;
  ui.text.hidden = !message;
  ui.chips.replaceChildren(...(chipNode ? [chipNode] : []));
  ui.card.hidden = false;
  place();
}

export function hide() {
  if (ui.card) ui.card.hidden = true;
}

/** Above the command bar, its left edges aligned, inside the viewport. */
function place() {
  if (!ui.card || ui.card.hidden || !ui.bar) return;
  const bar = ui.bar.getBoundingClientRect();
  const width = ui.card.offsetWidth;
  const left = Math.max(CARD_GAP_PX, Math.min(bar.left, window.innerWidth - width - CARD_GAP_PX));
  ui.card.style.left = `${left}px`;
  ui.card.style.bottom = `${window.innerHeight - bar.top + CARD_GAP_PX}px`;
}

/** The page's language changed: the card's own labels follow. */
export function relabel() {
  if (!ui.card) return;
  ui.close.setAttribute('aria-label', t('intents.close'));
  ui.card.setAttribute('aria-label', t('intents.answer'));
}
