// A reply the model is writing (reply_stream events, aios/duplex/replies.py, DESIGN §18): a
// typing bubble at the end of the conversation panel that grows as the words come, one per
// instruction (its run). The app's final reply replaces it: once the timeline holds that
// run's reply, or shows the run ended, the bubble goes (settle). A stream that broke off or
// was stopped says so in one line and stays, just above that run's reply (until the panel is
// read again from the start: it is not stored); one taken back (the answer turned into a tool
// call) goes at once. Words reach the page through textContent only.
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';

const ENDED = new Set(['done', 'failed', 'cancelled', 'interrupted']);
/** Phases whose bubble says something the reply does not: it stays beside the reply. */
const TOLD = new Set(['error', 'cancelled']);

/** run id -> {stream, node, text, note}. */
const bubbles = new Map();
let list = null;
let changed = () => {};

/** ``listEl``: the panel's list; ``onChange``: called after a bubble grew (to follow it). */
export function init(listEl, onChange) {
  list = listEl;
  if (typeof onChange === 'function') changed = onChange;
}

function draw(msg) {
  const text = el('p', { class: 'conv-text' });
  const note = el('p', { class: 'conv-stream-note muted', hidden: true, attrs: { role: 'status' } });
  const node = el('li', {
    class: ['conv-entry', 'conv-reply', 'conv-stream', 'is-typing'],
    dataset: { stream: toText(msg.stream), runId: toText(msg.run_id), app: toText(msg.app) },
    attrs: { 'aria-busy': 'true', 'aria-label': t('conv.typing') },
  }, el('div', { class: 'conv-bubble' }, text, note));
  return { stream: msg.stream, node, text, note };
}

/** A ``reply_stream`` event of this session: the bubble grows, ends or goes. True when handled. */
export function onEvent(msg) {
  if (!isObject(msg) || msg.type !== 'reply_stream') return false;
  if (typeof msg.session_id === 'string' && state.sessionId && msg.session_id !== state.sessionId) return true;
  if (!list || typeof msg.run_id !== 'string') return true;
  let b = bubbles.get(msg.run_id);
  if (msg.phase === 'retract') {
    if (b && b.stream === msg.stream) remove(msg.run_id);
    return true;
  }
  if (!b || b.stream !== msg.stream) {
    if (msg.phase !== 'delta') return true; // the end of a stream this page never saw begin
    if (b) b.node.remove();
    b = draw(msg);
    bubbles.set(msg.run_id, b);
  }
  if (msg.phase === 'delta') b.text.append(toText(msg.text));
  else finish(b, msg);
  keepLast();
  changed();
  return true;
}

function finish(b, msg) {
  b.node.classList.remove('is-typing');
  b.node.removeAttribute('aria-busy');
  b.node.removeAttribute('aria-label');
  b.node.dataset.phase = toText(msg.phase);
  if (msg.phase === 'error') {
    b.note.textContent = t('conv.stream_failed'); // the why is in the app's reply below it
    b.note.title = toText(msg.error);
    b.note.hidden = false;
    b.node.querySelector('.conv-bubble').classList.add('is-error');
  } else if (msg.phase === 'cancelled') {
    b.note.textContent = t('conv.stream_stopped');
    b.note.hidden = false;
  }
}

function remove(runId) {
  const b = bubbles.get(runId);
  if (b) b.node.remove();
  bubbles.delete(runId);
}

/** The bubbles stay below the timeline's entries while they are there. */
export function keepLast() {
  if (!list) return;
  for (const b of bubbles.values()) {
    if (b.node.parentNode !== list || b.node.nextSibling) list.append(b.node);
  }
}

/**
 * The timeline shown now: a bubble whose run has its reply there (or has ended) goes; one that
 * broke off stays just above the reply. ``nodeOf(entryId)``: the list item of a shown entry.
 */
export function settle(entries, nodeOf = () => null) {
  const over = new Map(); // run id -> the entry that ends its bubble: its reply, else its run
  for (const entry of entries) {
    if (!isObject(entry) || typeof entry.run_id !== 'string' || !bubbles.has(entry.run_id)) continue;
    if (entry.kind === 'reply' || (entry.kind === 'run' && ENDED.has(entry.state) && !over.has(entry.run_id))) {
      over.set(entry.run_id, entry);
    }
  }
  for (const entry of over.values()) {
    const b = bubbles.get(entry.run_id);
    const anchor = nodeOf(entry.id);
    if (TOLD.has(b.node.dataset.phase) && anchor && anchor.parentNode === list) {
      list.insertBefore(b.node, anchor);
      bubbles.delete(entry.run_id); // part of the list now, until it is drawn again
    } else {
      remove(entry.run_id);
    }
  }
  keepLast();
}

/** Another session is shown: its bubbles are not this one's. */
export function clear() {
  for (const id of [...bubbles.keys()]) remove(id);
}
