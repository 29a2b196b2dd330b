// UI operations from the system-control app (spec §9.4), applied to the DOM, and taken back.
// The system has already checked each op against aios.protocol.UIOp (fields, types, lengths)
// and keeps the log of the changes still applied (GET /api/ui/ops): the page re-applies it on
// load (restoreLog), `undo` takes back the last change, `reset` every change or those of one
// element. What is checked here needs the page or is DOM safety (unknown op, missing element,
// a number off the screen, a colour the browser does not know, text too long): refused with a
// toast naming the problem.
//
// Taking back works from the originals: before an element's first change its inline style,
// classes, text and place in the document are remembered; undo/reset put the originals of the
// affected elements back and re-apply what is left of the log for them.
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { toText } from '../core/safe.js';
import { toast } from './notify.js';
import { setPopup } from './taskbar.js';
import * as wm from './wm.js';

export const CHANGES = Object.freeze(['move', 'resize', 'hide', 'show', 'change_color', 'change_text', 'rotate']);
export const OPS = Object.freeze([...CHANGES, 'undo', 'reset']);
const FIELDS = ['op', 'id', 'window', 'x', 'y', 'width', 'height', 'color', 'text', 'degrees'];
const POPUPS = new Set(['start_menu', 'calendar']);
const REVERT = 'revert-layer';
/** Relative luminance above which a background gets dark text (WCAG's midpoint of black/white). */
const LIGHT_BACKGROUND = 0.179;

class Refused extends Error {}

/** The changes still applied, oldest first: the mirror of the system's log. */
let log = [];
/** key (id, or id@window) -> what the element was before its first change. */
const originals = new Map();

function finite(msg, key) {
  const v = msg[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Refused(`${key} must be a finite number (got ${toText(v)})`);
  return v;
}

function within(v, key, lo, hi) {
  if (v < lo || v > hi) throw new Refused(`${key} ${v} is outside the screen (${lo}–${hi})`);
  return v;
}

/**
 * The system's own UI (DESIGN §14.3): its windows, the cards, the conversation panel, dialogs.
 * No UI operation reaches into it: an app could otherwise retitle a card, hide it, move its
 * own content over it or recolour a system window.
 */
const SYSTEM_CHROME = '[data-system-chrome], #conversation, #modal_layer, #intent_reply';

/** desktop ids via getElementById; btn_* inside #win_<window> when a window is given. */
export function lookup(id, windowId) {
  if (typeof id !== 'string' || !id) return null;
  let node;
  if (id.startsWith('btn_')) {
    const scope = windowId ? document.getElementById(`win_${windowId}`) : document;
    node = scope ? scope.querySelector(`[data-id="${CSS.escape(id)}"]`) : null;
  } else {
    node = document.getElementById(id);
  }
  if (node && (node.closest(SYSTEM_CHROME) || node.querySelector(SYSTEM_CHROME))) {
    throw new Refused(`${id} is part of the system's own UI: no app may change it`);
  }
  return node;
}

function keyOf(op) {
  return typeof op.window === 'string' && op.window ? `${op.id}@${op.window}` : op.id;
}

/** Same rule as the system's log (aios/ui_log.py): a reset without a window names the id anywhere. */
function named(op, reset) {
  return op.id === reset.id && (!reset.window || reset.window === op.window);
}

function windowIdOf(node) {
  return node.classList.contains('window') ? node.dataset.winId : null;
}

function labelTarget(node) {
  if (node.classList.contains('ui-label')) return node;
  const label = node.querySelector('.ui-label');
  if (label) return label;
  if (!node.firstElementChild) return node;
  throw new Refused(`element ${node.id || node.dataset.id} has no text to change`);
}

function layer() {
  // Moved desktop parts live here, outside their containers: a rotated taskbar is then not the
  // containing block of a moved clock, and .uiop-pinned (desktop.css) stacks them above toasts.
  let node = document.getElementById('uiop_layer');
  if (!node) {
    node = document.createElement('div');
    node.id = 'uiop_layer';
    document.body.appendChild(node);
  }
  return node;
}

// Through the CSSOM, property by property: the page's CSP (style-src 'self') refuses a style attribute.
function inlineStyle(node) {
  return [...node.style].map((p) => [p, node.style.getPropertyValue(p), node.style.getPropertyPriority(p)]);
}

function setInlineStyle(node, saved, only = null) {
  for (const p of [...node.style]) if (!only || only.some((o) => p === o || p.startsWith(`${o}-`))) node.style.removeProperty(p);
  for (const [p, v, prio] of saved) if (!only || only.some((o) => p === o || p.startsWith(`${o}-`))) node.style.setProperty(p, v, prio);
}

function remember(key, node) {
  if (originals.has(key)) return originals.get(key);
  const winId = windowIdOf(node);
  const w = winId ? wm.get(winId) : null;
  const entry = { node, winId, style: inlineStyle(node), hidden: node.classList.contains('uiop-hidden'),
    minimized: !!(w && w.minimized), background: node.style.background, color: node.style.color,
    marker: null, text: null };
  originals.set(key, entry);
  return entry;
}

function rememberText(entry, target) {
  if (entry.text) return;
  const node = entry.node;
  entry.text = { target, value: target ? target.textContent : null, placeholder: node.placeholder,
    label: node.dataset.label };
}

function pinAt(entry, x, y) {
  const node = entry.node;
  if (!entry.winId && !entry.marker && !node.closest('.window')) {
    // Its place is kept by a marker, so that taking the move back puts it exactly there.
    entry.marker = document.createComment(`uiop:${node.id}`);
    const size = { width: node.offsetWidth, height: node.offsetHeight };
    node.replaceWith(entry.marker);
    layer().appendChild(node);
    Object.assign(node.style, { width: `${size.width}px`, height: `${size.height}px` });
  } else if (!node.style.width) {
    Object.assign(node.style, { width: `${node.offsetWidth}px`, height: `${node.offsetHeight}px` });
  }
  node.classList.add('uiop-pinned');
  Object.assign(node.style, { position: 'fixed', left: `${Math.round(x)}px`, top: `${Math.round(y)}px`,
    right: 'auto', bottom: 'auto', margin: '0' });
}

function luminance(rgb) {
  const m = /rgba?\(([^)]+)\)/.exec(rgb);
  if (!m) return null;
  const [r, g, b, a = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
  if (!(a > 0)) return null;
  const lin = (c) => { const s = c / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

function paint(entry, c) {
  const node = entry.node;
  if (c === REVERT) {
    node.style.background = entry.background;
    node.style.color = entry.color;
    return;
  }
  // The shorthand: a stylesheet's gradient (the start button's) would hide a background-color.
  node.style.background = c;
  const lum = luminance(getComputedStyle(node).backgroundColor);
  if (lum !== null) node.style.color = lum > LIGHT_BACKGROUND ? '#111' : '#fff';
}

function applyChange(msg) {
  if (!OPS.includes(msg.op)) throw new Refused(`unknown op ${toText(msg.op)} (known: ${OPS.join(', ')})`);
  const node = lookup(msg.id, typeof msg.window === 'string' ? msg.window : null);
  if (!node) return { notFound: true };
  const entry = remember(keyOf(msg), node);
  const winId = entry.winId;
  const sw = window.innerWidth;
  const sh = window.innerHeight;
  switch (msg.op) {
    case 'move': {
      const x = within(finite(msg, 'x'), 'x', 0, sw);
      const y = within(finite(msg, 'y'), 'y', 0, sh);
      if (winId) wm.moveTo(winId, x, y);
      else pinAt(entry, Math.min(x, Math.max(0, sw - node.offsetWidth)), Math.min(y, Math.max(0, sh - node.offsetHeight)));
      break;
    }
    case 'resize': {
      const w = within(finite(msg, 'width'), 'width', 1, sw);
      const h = within(finite(msg, 'height'), 'height', 1, sh);
      if (winId) wm.resizeTo(winId, w, h);
      else Object.assign(node.style, { width: `${Math.round(w)}px`, height: `${Math.round(h)}px` });
      break;
    }
    case 'hide':
      if (winId) wm.minimize(winId);
      else if (POPUPS.has(node.id)) setPopup(node.id, false);
      else node.classList.add('uiop-hidden');
      break;
    case 'show':
      node.classList.remove('uiop-hidden');
      if (winId) wm.restore(winId);
      else if (POPUPS.has(node.id)) setPopup(node.id, true);
      break;
    case 'change_color': {
      const c = msg.color;
      if (typeof c !== 'string' || !c.trim() || c.length > 100 || !CSS.supports('color', c)) {
        throw new Refused(`color must be a CSS colour (got ${toText(c)})`);
      }
      paint(entry, c);
      break;
    }
    case 'change_text': {
      if (typeof msg.text !== 'string') throw new Refused('text must be a string');
      if (msg.text.length > DEFAULTS.uiTextMax) {
        throw new Refused(`text is ${msg.text.length} characters; the limit is ${DEFAULTS.uiTextMax}`);
      }
      if (!winId && node.matches('input, textarea')) {
        rememberText(entry, null);
        node.placeholder = msg.text; // an input's visible text is its placeholder
        break;
      }
      const target = winId ? wm.get(winId).titleEl : labelTarget(node);
      rememberText(entry, target);
      target.textContent = msg.text;
      if (node.dataset.label !== undefined) node.dataset.label = msg.text;
      break;
    }
    case 'rotate': {
      const deg = finite(msg, 'degrees');
      if (Math.abs(deg) > 3600) throw new Refused(`degrees ${deg} is out of range (±3600)`);
      // Upright again is no rotation at all: any rotate value makes the element the
      // containing block of its fixed children.
      node.style.rotate = deg % 360 === 0 ? '' : `${deg}deg`;
      break;
    }
    default:
      break;
  }
  return { ok: true };
}

/** Put an element back as it was before its first change (the originals are forgotten). */
function putBack(key) {
  const entry = originals.get(key);
  if (!entry) return;
  originals.delete(key);
  const { node } = entry;
  if (entry.marker) {
    if (entry.marker.isConnected) entry.marker.replaceWith(node);
    else node.remove(); // its container is gone (a re-rendered view): so is it
  }
  if (entry.winId) {
    // A window's place is the window manager's (and the saved layout's): only what the ops
    // changed is put back, not its stacking order.
    setInlineStyle(node, entry.style, ['left', 'top', 'width', 'height', 'rotate', 'background', 'color']);
    const w = wm.get(entry.winId);
    if (w && w.minimized !== entry.minimized) (entry.minimized ? wm.minimize : wm.restore)(entry.winId);
  } else setInlineStyle(node, entry.style);
  node.classList.toggle('uiop-hidden', entry.hidden);
  node.classList.remove('uiop-pinned');
  if (entry.text) {
    if (entry.text.target) entry.text.target.textContent = entry.text.value;
    if (node.matches('input, textarea')) node.placeholder = entry.text.placeholder;
    if (entry.text.label !== undefined) node.dataset.label = entry.text.label;
  }
}

/** Put back the elements of `keys` and re-apply what is left of the log for them. */
function rebuild(keys) {
  for (const key of keys) putBack(key);
  for (const op of log) {
    if (!keys.has(keyOf(op))) continue;
    try {
      applyChange(op);
    } catch (err) {
      console.warn('ui change not re-applied', op, err.message);
    }
  }
}

function clean(msg) {
  return Object.fromEntries(FIELDS.filter((f) => msg[f] !== undefined && msg[f] !== null).map((f) => [f, msg[f]]));
}

function takeBack(msg) {
  if (msg.op === 'undo') {
    const last = log.pop();
    if (last) rebuild(new Set([keyOf(last)]));
    return;
  }
  if (typeof msg.id === 'string' && msg.id) {
    const keys = new Set([...log.filter((o) => named(o, msg)).map(keyOf),
      ...[...originals.keys()].filter((k) => named({ id: k.split('@')[0], window: k.split('@')[1] }, msg))]);
    log = log.filter((o) => !named(o, msg));
    rebuild(keys);
    return;
  }
  const keys = new Set(originals.keys());
  log = [];
  rebuild(keys);
}

/** Apply one ui_op event; returns true when it was applied. */
export function apply(msg) {
  try {
    if (msg && (msg.op === 'undo' || msg.op === 'reset')) {
      takeBack(msg);
      emit('layout:changed');
      return true;
    }
    if (msg && CHANGES.includes(msg.op)) log.push(clean(msg)); // the system logged it
    const res = applyChange(msg || {});
    if (res.notFound) {
      toast(t('uiop.not_found', { id: toText(msg.id) }), { level: 'error' });
      return false;
    }
    emit('layout:changed');
    return true;
  } catch (err) {
    if (!(err instanceof Refused)) console.error('ui_op failed', err);
    toast(t('uiop.invalid', { reason: err.message }), { level: 'error' });
    return false;
  }
}

/** Re-applied on load: a window's place and visibility are the saved layout's, a popup's open state is not kept. */
function replayed(op) {
  const transient = op.op === 'hide' || op.op === 'show' || op.op === 'move' || op.op === 'resize';
  if (transient && typeof op.id === 'string' && op.id.startsWith('win_')) return false;
  return !((op.op === 'hide' || op.op === 'show') && POPUPS.has(op.id));
}

/** After the desktop is built: put back what changed, then apply the system's log quietly. */
export async function restoreLog() {
  let ops;
  try {
    const reply = await api.uiOps();
    ops = Array.isArray(reply && reply.ops) ? reply.ops : [];
  } catch (err) {
    console.warn('UI changes not restored:', err.message);
    return;
  }
  log = [];
  rebuild(new Set(originals.keys())); // the log is empty: every element as it was
  for (const op of ops) {
    if (!op || !CHANGES.includes(op.op)) continue;
    log.push(clean(op));
    if (!replayed(op)) continue;
    try {
      applyChange(op);
    } catch (err) {
      console.warn('ui change not re-applied', op, err.message);
    }
  }
  document.documentElement.dataset.uiops = 'restored';
  emit('layout:changed');
}
