// The trace window (win_trace, DESIGN §16): "why?" on a reply in the conversation panel or
// on an app window's title bar opens it on that run. From GET /api/traces/<session> it shows
// the run's timeline (a waterfall of spans with durations), the route (the router's best
// candidates with their scores and matched words, or the planner's source and notes), the
// context given to each app (memories used, sizes), every model call (its prompt and its
// answer, folded), every step (arguments, risk, rule, decision, result), tokens and cost.
// A filter by event kind, a search through everything drawn, and an export of the JSONL.
// Only the system opens this window (a system window: wm.systemId); what a trace holds —
// prompts, answers, tool results — is untrusted text and is drawn as text only.
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import * as wm from '../desk/wm.js';
import * as model from './tracemodel.js';

/** The window's name (DOM id win_trace); an app can never be named so. */
export const WIN_NAME = 'trace';
export const WIN_ID = wm.systemId(WIN_NAME);
/** Characters of a value shown in a table cell before it is folded. */
const CELL_MAX = 160;
/** The window's size when the desktop has room for it. */
const WIDTH = 920;
const HEIGHT = 620;
/** Narrower than this beside the conversation panel, the panel steps aside instead. */
const MIN_WIDTH = 560;
const GAP = 8;

let target = null;
let loaded = null;
let generation = 0;
let ui = null;

// ------------------------------------------------------------------ small parts

function appName(id) {
  const app = state.apps.get(id);
  return app ? toText(app.name) || id : toText(id);
}

function ms(seconds) {
  const v = seconds * 1000;
  return v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`;
}

function money(cost) {
  return typeof cost === 'number' ? `$${cost < 0.01 ? cost.toFixed(6) : cost.toFixed(4)}` : t('trace.no_price');
}

/** A run's state in the page's language ("done" → "已完成"), else as it is. */
function stateText(st) {
  const text = t(`conv.run_${st}`);
  return text === `conv.run_${st}` ? st : text;
}

function json(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** A value as text: short ones in place, long ones folded behind their first characters. */
function valueText(value, cls = '') {
  const text = json(value ?? '');
  if (text.length <= CELL_MAX) return el('pre', { class: ['trace-pre', cls], text });
  return el('details', { class: 'trace-fold' },
    el('summary', { text: `${text.slice(0, CELL_MAX).replace(/\s+/g, ' ')}… (${text.length})` }),
    el('pre', { class: ['trace-pre', cls], text }));
}

/** A block the kind filter and the search act on. */
function row(kinds, ...children) {
  return el('div', { class: 'trace-row', dataset: { kinds: kinds.join(' ') } }, ...children);
}

function section(id, titleKey, kinds, rows) {
  if (!rows.length) return null;
  return el('section', { class: 'trace-section', id: `trace_${id}`, dataset: { kinds: kinds.join(' ') } },
    el('h3', { class: 'trace-heading', text: t(titleKey) }), ...rows);
}

function pill(text, cls = '') {
  return el('span', { class: ['trace-pill', cls], text });
}

// ------------------------------------------------------------------ sections

function summary(events, sum) {
  const first = events.find((e) => e.event === 'instruction') || events.find((e) => e.event === 'run_start') || {};
  const end = [...events].reverse().find((e) => e.event === 'run_end' || e.event === 'reply') || {};
  const apps = [...new Set(events.map((e) => e.app).filter((a) => typeof a === 'string' && a))];
  return el('div', { class: 'trace-summary', id: 'trace_summary' },
    el('p', { class: 'trace-said', text: toText(first.text) || t('trace.no_text') }),
    el('p', { class: 'trace-facts' },
      pill(apps.length ? apps.map(appName).join(', ') : t('conv.system')),
      end.state ? pill(stateText(toText(end.state)), `state-${toText(end.state)}`) : null,
      pill(t('trace.took', { time: ms(sum.seconds) })),
      pill(t('trace.tokens', { prompt: sum.prompt, completion: sum.completion, cached: sum.cached }), 'trace-tokens'),
      pill(t('trace.calls', { n: sum.calls })),
      pill(money(sum.cost), 'trace-cost')));
}

function waterfall(events) {
  const spans = model.spans(events);
  if (!spans.length) return null;
  const total = Math.max(...spans.map((s) => s.end), 0.001);
  const rows = spans.map((s) => {
    const bar = el('span', { class: ['trace-bar', `is-${s.end > s.start ? 'span' : 'moment'}`, s.status === 'error' ? 'is-error' : ''] });
    bar.style.left = `${(s.start / total) * 100}%`;
    bar.style.width = s.end > s.start ? `max(2px, ${((s.end - s.start) / total) * 100}%)` : '';
    return row([s.kind], el('div', { class: 'trace-span', dataset: { kind: s.kind } },
      el('span', { class: 'trace-span-label', text: s.label, title: s.label }),
      el('span', { class: 'trace-track' }, bar),
      el('span', { class: 'trace-span-time', text: s.end > s.start ? ms(s.end - s.start) : `+${ms(s.start)}` })));
  });
  return section('timeline', 'trace.timeline', [...new Set(spans.map((s) => s.kind))], rows);
}

function routeRows(events) {
  const rows = [];
  for (const e of events) {
    if (e.event === 'intent') {
      rows.push(row(['intent'], el('p', { class: 'trace-line', text: t('trace.intent', { kind: toText(e.kind) }) })));
    }
    if (e.event !== 'route') continue;
    const candidates = Array.isArray(e.candidates) ? e.candidates.filter(Array.isArray) : [];
    const tasks = Array.isArray(e.tasks) ? e.tasks.filter(isObject) : [];
    const notes = Array.isArray(e.notes) ? e.notes.map(toText) : [];
    rows.push(row(['route'],
      el('p', { class: 'trace-line' }, t('trace.source'), ' ', pill(toText(e.source), 'trace-source')),
      candidates.length ? el('table', { class: 'trace-table trace-candidates' },
        el('thead', null, el('tr', null, el('th', { text: t('trace.app') }), el('th', { text: t('trace.score') }),
          el('th', { text: t('trace.matched') }))),
        el('tbody', null, candidates.map(([app, score, words]) => el('tr', { dataset: { app: toText(app) } },
          el('td', { text: appName(toText(app)) }),
          el('td', { class: 'trace-num', text: typeof score === 'number' ? score.toFixed(3) : toText(score) }),
          el('td', { text: Array.isArray(words) ? words.map(toText).join(', ') : '' }))))) : null,
      tasks.length ? el('ol', { class: 'trace-tasks' }, tasks.map((task) => el('li', null,
        pill(appName(toText(task.app))), ' ', toText(task.instruction)))) : null,
      notes.length ? el('ul', { class: 'trace-notes' }, notes.map((n) => el('li', { text: n }))) : null));
  }
  return rows;
}

function contextRows(events) {
  return events.filter((e) => e.event === 'context_built').map((e) => {
    const sizes = isObject(e.sizes) ? Object.entries(e.sizes) : [];
    const memories = Array.isArray(e.memories) ? e.memories.map(toText) : [];
    return row(['context_built'],
      el('p', { class: 'trace-line' }, pill(appName(toText(e.app))), ' ',
        t('trace.context_size', { tokens: toText(e.tokens_est ?? 0) }), ' · ',
        memories.length ? t('trace.memories', { n: memories.length, ids: memories.join(', ') }) : t('trace.no_memories')),
      sizes.length ? el('p', { class: 'trace-sizes muted', text: sizes.map(([k, v]) => `${k} ${toText(v)}`).join(' · ') }) : null);
  });
}

function messagesText(messages) {
  if (!Array.isArray(messages)) return json(messages);
  return messages.map((m) => (isObject(m) ? `[${toText(m.role)}]\n${typeof m.content === 'string' ? m.content : json(m.content)}` : json(m)))
    .join('\n\n');
}

function modelRows(events) {
  return model.modelCalls(events).map(({ request, response }) => {
    const req = request || {};
    const res = response || {};
    const usage = isObject(res.usage) ? res.usage : {};
    const answer = [typeof res.content === 'string' ? res.content : '', res.tool_calls ? json(res.tool_calls) : '']
      .filter(Boolean).join('\n');
    return row(['llm_request', 'llm_response'],
      el('p', { class: 'trace-line' },
        pill(toText(res.model || req.model)), ' ', toText(req.purpose || ''), ' ',
        res.ok === false ? pill(toText(res.error), 'is-error')
          : pill(t('trace.tokens', { prompt: usage.prompt_tokens ?? 0, completion: usage.completion_tokens ?? 0,
            cached: usage.cached_tokens ?? 0 }), 'trace-tokens'),
        ' ', pill(ms(Number(res.latency_ms || 0) / 1000)), ' ', pill(money(res.cost), 'trace-cost')),
      el('details', { class: 'trace-fold trace-prompt' }, el('summary', { text: t('trace.prompt') }),
        el('pre', { class: 'trace-pre', text: messagesText(req.messages) })),
      el('details', { class: 'trace-fold trace-answer' }, el('summary', { text: t('trace.answer') }),
        el('pre', { class: 'trace-pre', text: answer || toText(res.finish_reason) })));
  });
}

function stepRows(events) {
  const rows = model.steps(events);
  if (!rows.length) return [];
  const head = el('tr', null, ['step', 'tool', 'args', 'risk', 'rule', 'decision', 'result']
    .map((k) => el('th', { text: t(`trace.col_${k}`) })));
  const body = rows.map(({ step, result }) => {
    const s = step || {};
    const r = result || {};
    const outcome = result ? [toText(r.code || r.status), ms(Number(r.duration_ms || 0) / 1000)].join(' · ') : t('trace.not_run');
    return el('tr', { class: 'trace-step', dataset: { tool: toText(s.tool || r.tool) } },
      el('td', { text: toText(s.step_id || r.step_id) }),
      el('td', { class: 'trace-tool', text: toText(s.tool || r.tool) }),
      el('td', null, valueText(s.args)),
      el('td', null, s.risk ? pill(toText(s.risk), `risk-${toText(s.risk)}`) : null),
      el('td', { text: toText(s.rule) }),
      el('td', { class: 'trace-decision' }, toText(s.decision), s.why ? el('div', { class: 'muted', text: toText(s.why) }) : null),
      el('td', null, el('div', { class: ['trace-outcome', r.status === 'error' ? 'is-error' : ''], text: outcome }),
        r.error ? el('div', { class: 'trace-error', text: toText(r.error) }) : null,
        result && r.result !== undefined && r.result !== null ? valueText(r.result, 'trace-result') : null));
  });
  return [row(['step', 'tool_call', 'tool_result'], el('div', { class: 'trace-table-wrap' },
    el('table', { class: 'trace-table trace-steps' }, el('thead', null, head), el('tbody', null, body))))];
}

function otherRows(events) {
  return events.filter((e) => e.event === 'approval' || e.event === 'error').map((e) => row([e.event],
    el('p', { class: ['trace-line', e.event === 'error' ? 'is-error' : ''] }, pill(e.event),
      ' ', e.event === 'error' ? `${toText(e.where)}: ${toText(e.error)}`
        : [toText(e.state), toText(e.decision), Array.isArray(e.tools) ? e.tools.map(toText).join(', ') : ''].filter(Boolean).join(' · '))));
}

const QUIET = new Set(['seq', 'ts', 'event', 'session_id', 'run_id', 'app']);

function eventRows(events) {
  const t0 = events.length ? Number(events[0].ts) || 0 : 0;
  return events.map((e) => {
    const rest = Object.fromEntries(Object.entries(e).filter(([k]) => !QUIET.has(k)));
    return row([e.event], el('details', { class: 'trace-event', dataset: { kind: e.event, seq: toText(e.seq) } },
      el('summary', null, el('span', { class: 'trace-seq', text: `#${toText(e.seq)}` }),
        el('span', { class: 'trace-offset', text: `+${ms((Number(e.ts) || 0) - t0)}` }),
        pill(e.event, 'trace-kind'), e.app ? ` ${appName(toText(e.app))}` : ''),
      el('pre', { class: 'trace-pre', text: json(rest) })));
  });
}

// ------------------------------------------------------------------ filter, search, export

function applyFilter() {
  if (!ui) return;
  const kind = ui.kind.value;
  const q = ui.search.value.trim().toLowerCase();
  let shown = 0;
  for (const node of ui.body.querySelectorAll('.trace-row')) {
    const kinds = node.dataset.kinds.split(' ');
    const text = q ? node.textContent.toLowerCase() : '';
    const visible = (!kind || kinds.includes(kind)) && (!q || text.includes(q));
    node.hidden = !visible;
    if (visible) shown += 1;
    if (visible && q) for (const d of node.querySelectorAll('details')) d.open = d.textContent.toLowerCase().includes(q);
  }
  for (const sec of ui.body.querySelectorAll('.trace-section')) {
    sec.hidden = !sec.querySelector('.trace-row:not([hidden])');
  }
  ui.count.textContent = t('trace.shown', { n: shown });
}

function exportJsonl() {
  if (!loaded) return;
  const blob = new Blob([loaded.text], { type: 'application/x-ndjson' });
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: `${loaded.sid}.jsonl`, hidden: true });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

function toolbar(kinds) {
  const kind = el('select', { id: 'trace_kind', class: 'inp inp-small', attrs: { 'aria-label': t('trace.kind') } },
    el('option', { value: '', text: t('trace.all_kinds') }),
    kinds.map((k) => el('option', { value: k, text: k })));
  const search = el('input', { id: 'trace_search', class: 'inp inp-small trace-search', type: 'search',
    placeholder: t('trace.search'), attrs: { 'aria-label': t('trace.search') } });
  const exp = el('button', { id: 'trace_export', type: 'button', class: 'btn btn-secondary btn-small', text: t('trace.export') });
  const count = el('span', { id: 'trace_count', class: 'muted trace-count' });
  kind.addEventListener('change', applyFilter);
  search.addEventListener('input', applyFilter);
  exp.addEventListener('click', exportJsonl);
  return { bar: el('div', { class: 'trace-toolbar' }, kind, search, exp, count), kind, search, count };
}

// ------------------------------------------------------------------ drawing

function draw(w, events) {
  const sum = model.totals(events);
  const kinds = [...new Set(events.map((e) => e.event))];
  const tools = toolbar(kinds);
  const body = el('div', { class: 'trace-scroll' },
    summary(events, sum),
    waterfall(events),
    section('route', 'trace.route', ['route', 'intent'], routeRows(events)),
    section('context', 'trace.context', ['context_built'], contextRows(events)),
    section('model', 'trace.model', ['llm_request', 'llm_response'], modelRows(events)),
    section('steps', 'trace.steps', ['step', 'tool_call', 'tool_result'], stepRows(events)),
    section('other', 'trace.approvals_errors', ['approval', 'error'], otherRows(events)),
    section('events', 'trace.events', kinds, eventRows(events)));
  ui = { ...tools, body };
  w.body.replaceChildren(el('div', { class: 'win-content trace-content', dataset: { runId: toText(target.runId) } },
    tools.bar, body));
  applyFilter();
}

function message(w, text, cls = 'muted') {
  ui = null;
  w.body.replaceChildren(el('div', { class: 'win-content trace-content' },
    el('p', { class: ['trace-message', cls], attrs: { role: cls === 'form-error' ? 'alert' : 'status' }, text })));
}

async function load() {
  const w = wm.get(WIN_ID);
  if (!w || !target) return;
  const mine = ++generation;
  message(w, t('trace.loading'));
  try {
    const text = await api.trace(target.sid);
    if (mine !== generation || wm.get(WIN_ID) !== w) return;
    const parsed = model.parse(text);
    const entries = target.all ? parsed : model.select(parsed, target);
    loaded = { sid: target.sid, text: entries.map((x) => x.line).join('\n') + (entries.length ? '\n' : '') };
    if (!entries.length) message(w, t('trace.empty'));
    else draw(w, entries.map((x) => x.event));
  } catch (err) {
    if (mine !== generation) return;
    loaded = null;
    message(w, err.status === 404 ? t('trace.none') : t('trace.failed', { error: err.message }), 'form-error');
  }
}

/** Open the window on a run: {session_id, run_id?, ts?} (ts: a reply of the system's own), or
 * on a whole session: {session_id, all: true} (the report of a conversation that ended). */
export function open(detail) {
  if (!isObject(detail) || typeof detail.session_id !== 'string' || !detail.session_id) return;
  target = { sid: detail.session_id, runId: typeof detail.run_id === 'string' ? detail.run_id : '',
    ts: Number.isFinite(detail.ts) ? detail.ts : null, all: detail.all === true };
  const w = wm.open(WIN_ID, { title: t('trace.title'), icon: 'activity', system: true, width: WIDTH, height: HEIGHT });
  if (Number.isFinite(detail.leftOf)) besides(w, detail.leftOf);
  load();
}

/** Opened from the conversation panel (its left edge at ``leftOf``): the window goes to the
 * panel's left, or, where that leaves too little room, the panel steps aside. */
function besides(w, leftOf) {
  const room = leftOf - GAP;
  if (room < MIN_WIDTH) {
    emit('conversation:hide');
    return;
  }
  const width = Math.min(WIDTH, room - GAP);
  wm.resizeTo(WIN_ID, width, w.el.offsetHeight || HEIGHT);
  wm.moveTo(WIN_ID, Math.max(GAP, room - width), w.el.offsetTop);
}

/** Re-draw after a language change. */
export function refresh() {
  if (!wm.get(WIN_ID)) return;
  wm.setTitle(WIN_ID, t('trace.title'));
  load();
}
