// What the trace window shows of a session's trace (DESIGN §16), without the DOM: the JSONL
// parsed, the events of one run picked out (with the instruction's own events, which the
// planner emits before the run starts and so carry no run id), the spans of its timeline and
// its totals. The window (system/traces.js) draws what these return.
import { isObject } from '../core/safe.js';

/** The JSONL text as [{line, event}], in the file's order; lines that are no object are skipped. */
export function parse(text) {
  const out = [];
  for (const line of String(text || '').split('\n')) {
    if (!line.trim()) continue;
    try {
      const event = JSON.parse(line);
      if (isObject(event) && typeof event.event === 'string') out.push({ line, event });
    } catch {
      // a line cut short (a full disk) is not an event
    }
  }
  return out;
}

/**
 * The turns of a session: an instruction and what it caused until its reply (the events
 * without a run id, the runs it started), or a run started by a click (open, action).
 * Each {events: [entry], runs: Set<run id>, ts}.
 */
function turns(entries) {
  const out = [];
  let open = null;
  for (const entry of entries) {
    const e = entry.event;
    if (e.event === 'instruction') {
      open = { events: [entry], runs: new Set(), ts: Number(e.ts) || 0 };
      out.push(open);
      continue;
    }
    if (e.event === 'run_start' && typeof e.run_id === 'string') {
      if (open) open.runs.add(e.run_id);
      else out.push({ events: [], runs: new Set([e.run_id]), ts: Number(e.ts) || 0 });
      continue;
    }
    if (!open || e.run_id) continue;
    open.events.push(entry);
    if (e.event === 'reply') {
      if (typeof e.run_id === 'string') open.runs.add(e.run_id);
      open = null;
    }
  }
  return out;
}

/**
 * The entries of the turn that ``runId`` belongs to (else the last turn begun at or before
 * ``ts``, for a reply of the system's own that started no run), oldest first. Empty when
 * neither is found.
 */
export function select(entries, { runId = '', ts = null } = {}) {
  const all = turns(entries);
  let turn = runId ? all.filter((t) => t.runs.has(runId)).pop() : null;
  if (!turn && ts !== null) turn = all.filter((t) => t.ts <= Number(ts) + 0.001).pop();
  if (!turn) return runId ? entries.filter((x) => x.event.run_id === runId) : [];
  const mine = new Set(turn.events);
  return entries.filter((x) => mine.has(x) || (x.event.run_id && turn.runs.has(x.event.run_id)));
}

function num(v) {
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
}

/**
 * The timeline of ``events``: [{kind, label, start, end, status}] in seconds from the first
 * event. Runs last from run_start to run_end, model calls and tool steps their measured time
 * up to their event, an app's call from its context to its view, a wait for the user from the
 * card to the answer; an instruction, a route, a reply or an error is a moment.
 */
export function spans(events) {
  if (!events.length) return [];
  const t0 = num(events[0].ts);
  const at = (e) => num(e.ts) - t0;
  const out = [];
  const openRuns = new Map();
  const openApps = new Map();
  const asked = new Map();
  const last = at(events[events.length - 1]);
  for (const e of events) {
    const app = typeof e.app === 'string' ? e.app : '';
    switch (e.event) {
      case 'run_start': {
        const span = { kind: 'run_start', label: `run ${e.kind || ''}`.trim(), start: at(e), end: last, status: 'open' };
        openRuns.set(e.run_id, span);
        out.push(span);
        break;
      }
      case 'run_end': {
        const span = openRuns.get(e.run_id);
        if (span) Object.assign(span, { end: at(e), status: String(e.state || '') });
        break;
      }
      case 'context_built': {
        const span = { kind: 'context_built', label: `app ${app}`, start: at(e), end: last, status: 'open' };
        openApps.set(`${e.run_id}/${app}`, span);
        out.push(span);
        break;
      }
      case 'view': {
        const span = openApps.get(`${e.run_id}/${app}`);
        if (span) Object.assign(span, { end: at(e), status: String(e.status || '') });
        openApps.delete(`${e.run_id}/${app}`);
        break;
      }
      case 'llm_response': {
        const secs = num(e.latency_ms) / 1000;
        out.push({ kind: 'llm_response', label: `model ${e.model || ''}`.trim(), start: Math.max(0, at(e) - secs),
          end: at(e), status: e.ok === false ? 'error' : 'ok' });
        break;
      }
      case 'tool_result': {
        const secs = num(e.duration_ms) / 1000;
        out.push({ kind: 'tool_result', label: `${e.tool || 'tool'} · ${e.step_id || ''}`, start: Math.max(0, at(e) - secs),
          end: at(e), status: String(e.code || e.status || '') });
        break;
      }
      case 'approval':
        if (e.state === 'asked') {
          const span = { kind: 'approval', label: 'approval', start: at(e), end: last, status: 'open' };
          asked.set(e.interaction || e.run_id, span);
          out.push(span);
        } else {
          const span = asked.get(e.interaction) || asked.get(e.run_id);
          if (span) Object.assign(span, { end: at(e), status: String(e.decision || e.state || '') });
        }
        break;
      case 'instruction':
      case 'intent':
      case 'route':
      case 'reply':
      case 'error':
        out.push({ kind: e.event, label: e.event, start: at(e), end: at(e), status: e.event === 'error' ? 'error' : '' });
        break;
      default:
    }
  }
  return out;
}

/** Tokens, cost, model calls and the time from the first event to the last. */
export function totals(events) {
  const sum = { calls: 0, prompt: 0, completion: 0, cached: 0, cost: null, seconds: 0 };
  for (const e of events) {
    if (e.event !== 'llm_response' || e.ok === false) continue;
    const u = isObject(e.usage) ? e.usage : {};
    sum.calls += 1;
    sum.prompt += num(u.prompt_tokens);
    sum.completion += num(u.completion_tokens);
    sum.cached += num(u.cached_tokens);
    if (typeof e.cost === 'number') sum.cost = (sum.cost || 0) + e.cost;
  }
  if (events.length) sum.seconds = num(events[events.length - 1].ts) - num(events[0].ts);
  return sum;
}

/** The model calls: each request with the response that followed it in the same run. */
export function modelCalls(events) {
  const out = [];
  const waiting = new Map();
  for (const e of events) {
    const key = e.run_id || '';
    if (e.event === 'llm_request') {
      const call = { request: e, response: null };
      out.push(call);
      waiting.set(key, call);
    } else if (e.event === 'llm_response') {
      const call = waiting.get(key);
      if (call && !call.response) call.response = e;
      else out.push({ request: null, response: e });
      waiting.delete(key);
    }
  }
  return out;
}

/** The steps: each reviewed step ({step}) with its result ({result}) by step id and app. */
export function steps(events) {
  const out = [];
  const byKey = new Map();
  for (const e of events) {
    const key = `${e.run_id}/${e.app}/${e.step_id}`;
    if (e.event === 'step') {
      const row = { step: e, result: null };
      out.push(row);
      byKey.set(key, row);
    } else if (e.event === 'tool_result') {
      const row = byKey.get(key);
      if (row && !row.result) row.result = e;
      else out.push({ step: null, result: e });
    }
  }
  return out;
}
