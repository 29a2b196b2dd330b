// Renders an app reply ({status, view_type, data, actions, message}) into its window:
// the view, the action controls (each with data-id="btn_<action_id>"), the message line,
// and each item's own controls (controls/row.js). Also applies live "push" data to a window.
// A re-render of the same view (same view_type and title: a live refresh, a push, a click
// that redraws the list) keeps the scroll positions and the view's memory (a table's sort).
// Sending an action is delegated to the handler main.js installs (render.js knows nothing
// about the server).
import { renderControl } from '../controls/index.js';
import { leads, renderRowControl, rowSend } from '../controls/row.js';
import { emit, on } from '../core/bus.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { blockedBox, el, isObject, resolveUrl, toText } from '../core/safe.js';
import { state as shared } from '../core/state.js';
import { collect, validate } from '../views/formvalues.js';
import { renderView } from '../views/index.js';
import { confirm } from './modal.js';
import { toast } from './notify.js';
import * as wm from './wm.js';

let actionHandler = async () => {};

/** handler(winId, action, payload) → Promise; it shows errors itself and re-renders on success. */
export function setActionHandler(handler) {
  actionHandler = handler;
}

/** data-id per action: btn_<id>, then btn_<id>_2, _3… when an action_id repeats
 * (`seen` carries the count on to the items' own controls of the same view). */
export function controlIds(actions, seen = new Map()) {
  return actions.map((a) => {
    const base = `btn_${isObject(a) ? toText(a.action_id) : ''}`;
    const n = (seen.get(base) || 0) + 1;
    seen.set(base, n);
    return n === 1 ? base : `${base}_${n}`;
  });
}

/** Elements whose scroll position a re-render of the same view keeps, matched by their order. */
const SCROLLERS = '.win-content, .table-wrap, .dash-widget, .code-pre, .text-content, .list';
/** The rows a kept scroll position is anchored to: the first one in sight stays where it was
 * (list items are laid out lazily, so a new list's estimated heights differ from the old's). */
const ANCHORS = '.list-item, tbody tr, .card, .dash-widget';

/** The first row whose bottom is below the scroller's top (rows run down the page: a binary search). */
function anchorIn(scroller) {
  const top = scroller.getBoundingClientRect().top;
  const rows = scroller.querySelectorAll(ANCHORS);
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].getBoundingClientRect().bottom > top) hi = mid;
    else lo = mid + 1;
  }
  return lo < rows.length ? { index: lo, offset: rows[lo].getBoundingClientRect().top - top } : null;
}

function scrollPositions(root) {
  return [...root.querySelectorAll(SCROLLERS)].map((n) => ({
    top: n.scrollTop, left: n.scrollLeft, anchor: n.scrollTop ? anchorIn(n) : null,
  }));
}

function restoreScroll(root, saved) {
  if (!saved || !saved.some((s) => s.top || s.left)) return;
  const nodes = root.querySelectorAll(SCROLLERS);
  saved.forEach(({ top, left, anchor }, i) => {
    const node = nodes[i];
    if (!node || !(top || left)) return;
    node.scrollTop = top;
    node.scrollLeft = left;
    const row = anchor && node.querySelectorAll(ANCHORS)[anchor.index];
    if (row) node.scrollTop += row.getBoundingClientRect().top - node.getBoundingClientRect().top - anchor.offset;
  });
}

/**
 * A minimised window's body is not laid out, so its scroll positions read 0: each window
 * remembers them as the user scrolls (w.lastScroll), and a re-render while hidden restores
 * them when the window is shown again (w.pendingScroll).
 */
function watchScroll(w) {
  if (w.scrollWatched) return;
  w.scrollWatched = true;
  let queued = false;
  w.body.addEventListener('scroll', () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      if (isShown(w)) w.lastScroll = scrollPositions(w.body);
    });
  }, { capture: true, passive: true });
}

function isShown(w) {
  return w.body.getClientRects().length > 0;
}

on('wm:changed', ({ id, state: s }) => {
  const w = wm.get(id);
  if (!w || !w.pendingScroll || s === 'minimized' || s === 'closed' || !isShown(w)) return;
  restoreScroll(w.body, w.pendingScroll);
  w.pendingScroll = null;
  const content = w.body.querySelector('.win-content.is-redraw');
  if (content) endRedraw(content);
});

/** Lazily laid out items again (they remember the sizes they were laid out at). */
function endRedraw(content) {
  requestAnimationFrame(() => setTimeout(() => content.classList.remove('is-redraw'), 0));
}

/**
 * A list item not yet laid out (content-visibility: auto) stands in at an estimated height;
 * when it is laid out for real, everything below it moves (a row scrolled to with its
 * neighbours still estimated, 80 px instead of 61.75 px, jumps by a row's worth for each).
 * So each list takes its estimate from its first item laid out for real (--item-h), before
 * the frame is painted: the items still to be laid out then stand in at that height.
 */
function sizeLazyItems(winId, content) {
  if (typeof ResizeObserver !== 'function') return;
  const lists = [...content.querySelectorAll('.list')].filter((l) => l.querySelector(':scope > .list-item'));
  if (!lists.length) return;
  const pending = new Set(lists);
  const laidOut = (item) => (typeof item.checkVisibility === 'function'
    ? item.checkVisibility({ contentVisibilityAuto: true })
    : getComputedStyle(item).contentVisibility !== 'auto');
  const observer = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const item = entry.target;
      const list = item.parentElement;
      if (!pending.has(list) || !item.isConnected || !laidOut(item)) continue;
      const height = entry.contentRect.height;
      if (!(height > 0)) continue;
      list.style.setProperty('--item-h', `${height}px`);
      pending.delete(list);
      observer.unobserve(item);
    }
    if (!pending.size) observer.disconnect();
  });
  for (const list of lists) observer.observe(list.querySelector(':scope > .list-item'));
  wm.addCleanup(winId, () => observer.disconnect());
}

/** Two replies show "the same view" when view_type and title agree. */
function viewKey(reply) {
  const title = isObject(reply.data) && typeof reply.data.title === 'string' ? reply.data.title : '';
  return `${toText(reply.view_type)}\u0000${title}`;
}

function displayLabel(item) {
  if (!isObject(item)) return toText(item);
  return toText(item.title ?? item.name ?? item.label ?? item.text ?? item.id);
}

function setBusy(node, busy) {
  if (!node || !node.isConnected) return;
  node.classList.toggle('is-busy', busy);
  node.setAttribute('aria-busy', String(busy));
  const inputs = node.matches('button, input, select, textarea') ? [node]
    : [...node.querySelectorAll('button, input, select, textarea')];
  for (const input of inputs) {
    if (busy) {
      input.dataset.wasDisabled = String(input.disabled);
      input.disabled = true;
    } else if (input.dataset.wasDisabled !== undefined) {
      input.disabled = input.dataset.wasDisabled === 'true';
      delete input.dataset.wasDisabled;
    }
  }
}

function viewContext(winId, app, state) {
  const ctx = {
    app,
    t,
    depth: 0,
    fromUser: !!state.fromUser,
    url: (raw, kind) => resolveUrl(raw, app, kind),
    blocked: (raw) => blockedBox(t, raw),
    notice: (text, level) => toast(text, { level }),
    onCleanup: (fn) => wm.addCleanup(winId, fn),
    afterMount: (fn) => state.mounted.push(fn),
    itemActions: (item) => itemControls(item, state).trail,
    itemControls: (item) => itemControls(item, state),
    // The text for an empty list / table / card view: the app's data.empty if it gave one
    // (an empty string: none), none when the reply's message is there to say it, else ours.
    emptyText: (data, fallback = 'view.no_rows') => {
      if (isObject(data) && typeof data.empty === 'string') return data.empty;
      return state.message ? '' : t(fallback);
    },
    // An object the view keeps across re-renders of the same view (one per name and call order).
    memo: (name) => {
      const key = `${name}#${(state.memoCalls[name] = (state.memoCalls[name] || 0) + 1)}`;
      if (!state.memo[key]) state.memo[key] = {};
      return state.memo[key];
    },
    redraw: !!state.redraw,
    submitViewForm: () => {
      const w = wm.get(winId);
      if (!w) return;
      // Prefer the submit_form that posts the view's fields (no fields of its own).
      const forms = [...w.body.querySelectorAll('.ctl-submit_form')];
      const target = forms.find((f) => !f.classList.contains('ctl-form-fields')) || forms[0];
      const submit = target && target.querySelector('[data-submit]');
      if (submit && !submit.disabled) submit.click();
    },
  };
  // Each nesting level gets its own ctx so that the depth limit really holds.
  const atDepth = (depth) => {
    const level = { ...ctx, depth };
    level.render = (type, data) => (depth + 1 > DEFAULTS.dashboardMaxDepth
      ? renderView('__json__', data, level)
      : renderView(type, data, atDepth(depth + 1)));
    return level;
  };
  return atDepth(0);
}

function controlContext(winId, app, entry) {
  const ref = { node: null };
  return {
    ctx: {
      app,
      t,
      url: (raw, kind) => resolveUrl(raw, app, kind),
      blocked: (raw) => blockedBox(t, raw),
      confirm: (question) => confirm(question),
      collectForms: (own) => collect(...viewForms(winId), own),
      validateForms: (own) => validate(...viewForms(winId), own),
      send: async (payload) => {
        setBusy(ref.node, true);
        try {
          await actionHandler(winId, entry.action, payload);
        } finally {
          setBusy(ref.node, false);
        }
      },
    },
    ref,
  };
}

function mark(node, entry) {
  node.dataset.id = entry.dataId;
  node.dataset.actionType = toText(entry.action && entry.action.type);
  node.dataset.label = toText(entry.action && (entry.action.label || entry.action.action_id));
  node.classList.add('ctl', `ctl-${toText(entry.action && entry.action.type)}`);
}

function viewForms(winId) {
  const w = wm.get(winId);
  return w ? [...w.body.querySelectorAll('form.view-form')] : [];
}

function buildControl(winId, app, entry) {
  const { ctx, ref } = controlContext(winId, app, entry);
  const node = renderControl(entry.action, ctx);
  ref.node = node;
  mark(node, entry);
  entry.claimed = true;
  return node;
}

/** One of an item's own controls: its requests carry params.id (and params.value). */
function buildRowControl(state, item, action) {
  const [dataId] = controlIds([action], state.seen);
  const entry = { action, dataId };
  const { ctx, ref } = controlContext(state.winId, state.app, entry);
  ctx.send = rowSend(action, item.id, ctx.send);
  const node = renderRowControl(action, ctx, displayLabel(item));
  ref.node = node;
  mark(node, entry);
  node.dataset.rowId = toText(item.id);
  return node;
}

function hasId(item) {
  return isObject(item) && (typeof item.id === 'string' || typeof item.id === 'number');
}

/**
 * An item's controls: {lead, trail} elements (or null). Its own `actions` (a single checkbox
 * leads, the rest trail), then the reply's buttons whose params name the item's id (spec
 * §6.5's per-song "播放"), which are drawn in the item instead of the action bar.
 */
function itemControls(item, state) {
  if (!hasId(item)) return { lead: null, trail: null };
  const own = Array.isArray(item.actions) ? item.actions.filter(isObject) : [];
  const lead = own.filter(leads).map((a) => buildRowControl(state, item, a));
  const trail = own.filter((a) => !leads(a)).map((a) => buildRowControl(state, item, a));
  const claimed = state.entries.filter((e) => !e.claimed && isObject(e.action) && e.action.type === 'button'
    && isObject(e.action.params) && Object.values(e.action.params).some((v) => v === item.id));
  trail.push(...claimed.map((e) => buildControl(state.winId, state.app, e)));
  return {
    lead: lead.length ? el('span', { class: 'item-lead' }, lead) : null,
    trail: trail.length ? el('span', { class: 'item-actions' }, trail) : null,
  };
}

/**
 * Render a reply into the window `winId` (which must be open).
 * opts: {fromUser} — the reply answers a click, so media may start playing; {runId} — the run
 * the system says the view ends (never read from the app's reply): the title bar's "why?".
 */
export function renderResponse(winId, response, opts = {}) {
  const w = wm.get(winId);
  if (!w) return;
  const app = opts.app || winId;
  wm.runCleanups(winId);
  hideBanner(winId);
  // A new view ends whatever the progress bar was tracking; data merged by a push does not.
  if (!opts.keepProgress) clearProgress(winId);
  w.openFailed = false;
  const reply = isObject(response) ? response : { view_type: '__json__', data: response };
  let actions = Array.isArray(reply.actions) ? reply.actions.slice() : [];
  // A form view without a submit_form action can name its own action_id.
  const data = reply.data;
  if (reply.view_type === 'form' && isObject(data) && typeof data.action_id === 'string'
      && !actions.some((a) => isObject(a) && a.type === 'submit_form')) {
    actions.push({ type: 'submit_form', action_id: data.action_id, label: data.submit_label || t('control.submit') });
  }
  actions = actions.filter((a) => a !== null && a !== undefined);
  const seen = new Map();
  const ids = controlIds(actions, seen);
  const key = viewKey(reply);
  const same = w.viewKey === key;
  watchScroll(w);
  const shown = isShown(w);
  const scroll = !same ? null : shown ? scrollPositions(w.body) : (w.pendingScroll || w.lastScroll || null);
  if (!same || !w.viewMemo) w.viewMemo = {};
  const state = {
    winId, app, fromUser: opts.fromUser, mounted: [], seen, memo: w.viewMemo, memoCalls: {}, redraw: same,
    message: typeof reply.message === 'string' ? reply.message.trim() : '',
    entries: actions.map((action, i) => ({ action, dataId: ids[i], claimed: false })),
  };
  const ctx = viewContext(winId, app, state);
  const view = renderView(typeof reply.view_type === 'string' ? reply.view_type : String(reply.view_type), data, ctx);

  const content = el('div', { class: 'win-content' }, view);
  const bar = el('div', { class: 'win-actions' });
  for (const entry of state.entries) {
    if (entry.claimed) continue;
    const node = buildControl(winId, app, entry);
    // Controls with their own fields read better under the view than in the button row.
    if (isObject(entry.action) && entry.action.type === 'submit_form' && Array.isArray(entry.action.fields)
        && entry.action.fields.length) {
      content.appendChild(node);
    } else {
      bar.appendChild(node);
    }
  }
  const parts = [content];
  if (bar.childElementCount) parts.push(bar);
  if (typeof reply.message === 'string' && reply.message) {
    parts.push(el('p', { class: ['win-message', reply.status === 'error' ? 'is-error' : ''], text: reply.message }));
  }
  // Lazily laid out items (content-visibility) would sit at estimated heights: for a kept
  // scroll position they are laid out for real once, which "auto" then remembers.
  if (same) content.classList.add('is-redraw');
  w.body.replaceChildren(...parts);
  sizeLazyItems(winId, content);
  if (shown) restoreScroll(w.body, scroll);
  w.pendingScroll = shown ? null : scroll;
  w.lastScroll = shown ? scrollPositions(w.body) : scroll;
  if (same && shown) endRedraw(content);
  w.viewKey = key;
  w.body.dataset.viewType = toText(reply.view_type);
  w.el.classList.toggle('has-error', reply.status === 'error');
  w.response = reply;
  if (typeof opts.runId === 'string' && opts.runId) wm.setLastRun(winId, shared.sessionId, opts.runId);
  for (const fn of state.mounted) {
    try {
      fn();
    } catch (err) {
      console.error('after-mount hook failed', err);
    }
  }
  emit('layout:changed');
}

/** An error shown above the current view (the view stays usable). */
export function showBanner(winId, message, detail, title = t('action.failed_title')) {
  const w = wm.get(winId);
  if (!w) return;
  const view = renderView('error', { title, message, detail }, { t, depth: 0 });
  const close = el('button', { type: 'button', class: 'win-banner-close', text: '×',
    attrs: { 'aria-label': t('win.close') } });
  close.addEventListener('click', () => hideBanner(winId));
  w.banner.replaceChildren(view, close);
  w.banner.hidden = false;
  emit('layout:changed');
}

export function hideBanner(winId) {
  const w = wm.get(winId);
  if (!w || w.banner.hidden) return;
  w.banner.hidden = true;
  w.banner.replaceChildren();
}

/** Remove the progress bar and the status line it wrote (other status lines stay). */
export function clearProgress(winId) {
  const w = wm.get(winId);
  if (!w) return;
  const bar = w.el.querySelector(':scope > .win-progress');
  if (bar) bar.remove();
  if (w.progressStatus) {
    w.progressStatus = false;
    wm.setStatus(winId, '');
  }
}

function progressPct(value) {
  return Math.round(Math.min(1, Math.max(0, value > 1 ? value / 100 : value)) * 100);
}

function setProgress(w, value) {
  let bar = w.el.querySelector(':scope > .win-progress');
  if (!bar) {
    bar = el('div', { class: 'win-progress' }, el('div', { class: 'win-progress-fill' }));
    w.banner.before(bar);
  }
  const pct = progressPct(value);
  bar.firstChild.style.width = `${pct}%`;
  bar.title = t('view.progress', { pct });
  bar.setAttribute('role', 'progressbar');
  bar.setAttribute('aria-valuenow', String(pct));
}

/**
 * Live data for the app's current view (WebSocket "push"):
 * a full reply (has view_type) replaces the view and ends the progress bar;
 * {progress: 0..1 or 1..100} draws a progress bar, {progress: null} removes it;
 * {widget: index|title, …} or {data: {…}} merges into the current view's data;
 * any other scalar fields show as a status line in the title bar.
 */
export function applyPush(winId, data) {
  const w = wm.get(winId);
  if (!w) return false;
  if (isObject(data) && typeof data.view_type === 'string') {
    renderResponse(winId, data, { app: winId });
    return true;
  }
  if (!isObject(data)) {
    wm.setStatus(winId, toText(data));
    return true;
  }
  // A finished progress (100 %) ends the bar and its status line: nothing stale stays behind.
  const finished = typeof data.progress === 'number' && progressPct(data.progress) >= 100;
  const hasProgress = typeof data.progress === 'number' && Number.isFinite(data.progress) && !finished;
  if (hasProgress) setProgress(w, data.progress);
  else if (data.progress === null || finished) clearProgress(winId);
  const current = w.response;
  const merged = { app: winId, keepProgress: true };
  if (current && isObject(current.data)) {
    if (isObject(data.data)) {
      renderResponse(winId, { ...current, data: { ...current.data, ...data.data } }, merged);
    } else if (data.widget !== undefined && Array.isArray(current.data.widgets)) {
      const widgets = current.data.widgets.slice();
      const i = typeof data.widget === 'number' ? data.widget
        : widgets.findIndex((x) => isObject(x) && (x.id === data.widget || x.title === data.widget));
      if (i >= 0 && i < widgets.length) {
        const { widget: _w, ...rest } = data;
        widgets[i] = { ...widgets[i], ...rest };
        renderResponse(winId, { ...current, data: { ...current.data, widgets } }, merged);
      }
    }
  }
  const line = data.message ?? data.status ?? data.text;
  if (line !== undefined && line !== null) {
    w.progressStatus = false;
    wm.setStatus(winId, toText(line));
  } else if (hasProgress) {
    w.progressStatus = true;
    wm.setStatus(winId, t('view.progress', { pct: progressPct(data.progress) }));
  } else if (!isObject(data.data) && data.widget === undefined && !finished) {
    const summary = Object.entries(data)
      .filter(([k, v]) => k !== 'progress' && v !== null && v !== undefined && typeof v !== 'object')
      .map(([k, v]) => `${k}: ${toText(v)}`).join(' · ');
    if (summary) {
      w.progressStatus = false;
      wm.setStatus(winId, summary);
    }
  }
  return true;
}

/** A view context for system windows (settings, audit) that draw views without a reply. */
export function plainContext(winId) {
  const mounted = [];
  const ctx = viewContext(winId, winId, { winId, app: winId, mounted, entries: [], fromUser: false, seen: new Map(),
    memo: {}, memoCalls: {}, message: '' });
  ctx.flush = () => mounted.splice(0).forEach((fn) => fn());
  return ctx;
}
