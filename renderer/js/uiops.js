// UI operations from the system-control app (spec §9.4), applied to the DOM. The system has
// already checked each op against aios.protocol.UIOp (fields, types, lengths); what is checked
// here needs the page or is DOM safety (unknown op, missing element, a number off the screen,
// a colour the browser does not know, text too long): refused with a toast naming the problem.
import { emit } from './bus.js';
import { DEFAULTS } from './defaults.js';
import { t } from './i18n.js';
import { toast } from './notify.js';
import { toText } from './safe.js';
import { setPopup } from './taskbar.js';
import * as wm from './wm.js';

export const OPS = Object.freeze(['move', 'resize', 'hide', 'show', 'change_color', 'change_text', 'rotate']);
const POPUPS = new Set(['start_menu', 'calendar']);

class Refused extends Error {}

function finite(msg, key) {
  const v = msg[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Refused(`${key} must be a finite number (got ${toText(v)})`);
  return v;
}

function within(v, key, lo, hi) {
  if (v < lo || v > hi) throw new Refused(`${key} ${v} is outside the screen (${lo}–${hi})`);
  return v;
}

/** desktop ids via getElementById; btn_* inside #win_<window> when a window is given. */
export function lookup(id, windowId) {
  if (typeof id !== 'string' || !id) return null;
  if (id.startsWith('btn_')) {
    const scope = windowId ? document.getElementById(`win_${windowId}`) : document;
    return scope ? scope.querySelector(`[data-id="${CSS.escape(id)}"]`) : null;
  }
  return document.getElementById(id);
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

function pinAt(node, x, y) {
  // Fixed positioning takes the element out of scrolling/clipping containers so that it is
  // really seen where it was asked to go; its size is kept.
  const r = node.getBoundingClientRect();
  Object.assign(node.style, { position: 'fixed', left: `${Math.round(x)}px`, top: `${Math.round(y)}px`,
    right: 'auto', bottom: 'auto', margin: '0', width: `${Math.round(r.width)}px`, height: `${Math.round(r.height)}px`,
    zIndex: '9000' });
}

function applyOp(msg) {
  if (!OPS.includes(msg.op)) throw new Refused(`unknown op ${toText(msg.op)} (known: ${OPS.join(', ')})`);
  const node = lookup(msg.id, typeof msg.window === 'string' ? msg.window : null);
  if (!node) return { notFound: true };
  const winId = windowIdOf(node);
  const sw = window.innerWidth;
  const sh = window.innerHeight;
  switch (msg.op) {
    case 'move': {
      const x = within(finite(msg, 'x'), 'x', 0, sw);
      const y = within(finite(msg, 'y'), 'y', 0, sh);
      if (winId) wm.moveTo(winId, x, y);
      else pinAt(node, x, y);
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
      node.style.backgroundColor = c;
      break;
    }
    case 'change_text': {
      if (typeof msg.text !== 'string') throw new Refused('text must be a string');
      if (msg.text.length > DEFAULTS.uiTextMax) {
        throw new Refused(`text is ${msg.text.length} characters; the limit is ${DEFAULTS.uiTextMax}`);
      }
      if (!winId && node.matches('input, textarea')) {
        node.placeholder = msg.text; // an input's visible text is its placeholder
        break;
      }
      const target = winId ? wm.get(winId).titleEl : labelTarget(node);
      target.textContent = msg.text;
      if (node.dataset.label !== undefined) node.dataset.label = msg.text;
      break;
    }
    case 'rotate': {
      const deg = finite(msg, 'degrees');
      if (Math.abs(deg) > 3600) throw new Refused(`degrees ${deg} is out of range (±3600)`);
      node.style.rotate = `${deg}deg`;
      break;
    }
    default:
      break;
  }
  return { ok: true };
}

/** Apply one ui_op event; returns true when it was applied. */
export function apply(msg) {
  try {
    const res = applyOp(msg || {});
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
