// The audit log window (win_audit): the tool_calls_log rows from GET /api/audit,
// filtered by app, drawn with the table view.
import { api } from '../core/api.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import { plainContext } from '../desk/render.js';
import * as wm from '../desk/wm.js';
import { renderView } from '../views/index.js';

/** The window's name (DOM id win_audit, the saved layout); an app can never be named so. */
export const WIN_NAME = 'audit';
export const WIN_ID = wm.systemId(WIN_NAME);
const COLUMNS = ['ts', 'session_id', 'app', 'step_id', 'tool', 'args', 'status', 'duration_ms', 'error'];
const COL_KEYS = { ts: 'ts', session_id: 'session', app: 'app', step_id: 'step', tool: 'tool', args: 'args',
  status: 'status', duration_ms: 'duration', error: 'error' };
const LIMITS = [50, 200, 1000];

let filter = { app: '', limit: DEFAULTS.auditLimit };

function pad(n) {
  return String(n).padStart(2, '0');
}

/** Seconds or milliseconds since the epoch (or an ISO string) as "MM-DD HH:MM:SS". */
function when(ts) {
  const d = typeof ts === 'number' ? new Date(ts * (ts < 1e12 ? 1000 : 1))
    : typeof ts === 'string' ? new Date(ts) : null;
  if (!d || Number.isNaN(d.getTime())) return toText(ts);
  return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function cell(row, key) {
  const v = row[key];
  if (key === 'ts') return when(v);
  if (key === 'args') {
    const s = toText(v);
    return s.length > 160 ? `${s.slice(0, 160)}…` : s;
  }
  if (key === 'duration_ms' && typeof v === 'number') return Math.round(v);
  return v ?? '';
}

function toolbar() {
  const apps = el('select', { id: 'audit_app', class: 'inp inp-small' },
    el('option', { value: '', text: t('audit.all') }),
    [...state.apps.values()].map((a) => el('option', { value: a.id, text: toText(a.name || a.id) })));
  apps.value = filter.app;
  const limit = el('select', { id: 'audit_limit', class: 'inp inp-small' },
    LIMITS.map((n) => el('option', { value: String(n), text: String(n) })));
  limit.value = String(filter.limit);
  const refresh = el('button', { id: 'audit_refresh', type: 'button', class: 'btn btn-secondary btn-small',
    text: t('audit.refresh') });
  const reload = () => {
    filter = { app: apps.value, limit: Number(limit.value) };
    load();
  };
  apps.addEventListener('change', reload);
  limit.addEventListener('change', reload);
  refresh.addEventListener('click', reload);
  return el('div', { class: 'audit-toolbar' },
    el('label', { class: 'ctl-label', htmlFor: 'audit_app', text: t('audit.app') }), apps,
    el('label', { class: 'ctl-label', htmlFor: 'audit_limit', text: t('audit.limit') }), limit, refresh);
}

async function load() {
  const w = wm.get(WIN_ID);
  if (!w) return;
  const area = el('div', { class: 'audit-area' }, renderView('loading', {}, plainContext(WIN_ID)));
  w.body.replaceChildren(el('div', { class: 'win-content audit-content' }, toolbar(), area));
  try {
    const reply = await api.audit(filter);
    const rows = Array.isArray(reply) ? reply : isObject(reply) && Array.isArray(reply.rows) ? reply.rows : [];
    if (wm.get(WIN_ID) !== w) return;
    wm.runCleanups(WIN_ID);
    const ctx = plainContext(WIN_ID);
    area.replaceChildren(renderView('table', {
      columns: COLUMNS.map((c) => t(`audit.col.${COL_KEYS[c]}`)),
      rows: rows.filter(isObject).map((r) => COLUMNS.map((c) => cell(r, c))),
    }, ctx));
    ctx.flush();
  } catch (err) {
    area.replaceChildren(renderView('error', { title: t('audit.title'),
      message: t('audit.failed', { error: err.message }) }, plainContext(WIN_ID)));
  }
}

export function open() {
  wm.open(WIN_ID, { title: t('audit.title'), icon: 'scroll-text', system: true, width: 1000, height: 560 });
  load();
}

export function refresh() {
  if (!wm.get(WIN_ID)) return;
  wm.setTitle(WIN_ID, t('audit.title'));
  load();
}
