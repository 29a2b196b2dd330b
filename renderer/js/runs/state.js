// The runs' state on this page (DESIGN §12), one object: the runs, the cards pending and ended,
// and what this tab is doing with them. Every change goes through the transitions below; the
// drawing (runs.js, progress.js) reads it and never keeps state of its own.
import { toText } from '../core/safe.js';

export const ACTIVE = new Set(['running', 'waiting']);
export const FINAL = new Set(['done', 'failed', 'cancelled', 'interrupted']);
/** Outcomes of a card that the window keeps saying until the app's next run starts. */
export const LASTING = new Set(['deny', 'denied', 'expired', 'cancelled', 'withdrawn']);

export const model = {
  /** id -> interaction (pending ones only). */
  cards: new Map(),
  /** Interactions that ended: a late listing must not bring their card back. */
  closedCards: new Set(),
  /**
   * id -> {ia, state: answered | expired | withdrawn, value?, elsewhere}: question cards that
   * ended but stay in the window's record, disabled, until the app's next view replaces it.
   */
  settled: new Map(),
  /** Question cards whose answer this tab is sending. */
  answering: new Set(),
  /** Question cards the app's next view has replaced: an answer arriving late draws nothing. */
  dismissed: new Set(),
  /** run_id -> {run_id, app, apps, kind, session_id, state, since, plan: [step_id], steps: Map, current, progress} */
  runs: new Map(),
  /** Runs that ended: a late listing must not bring them back. */
  endedRuns: new Set(),
  /** The run of the instruction typed last in the command bar, while it is active. */
  commandRun: null,
};

// ------------------------------------------------------------------ transitions

export function appsOf(app) {
  return toText(app).split(',').map((a) => a.trim()).filter(Boolean);
}

export function upsertRun(src, { stepOnly = false } = {}) {
  let run = model.runs.get(src.run_id);
  if (!run) {
    run = { run_id: src.run_id, app: '', apps: [], kind: '', session_id: '', state: 'running',
      since: Date.now(), plan: [], steps: new Map(), current: null, progress: null, paused: false };
    model.runs.set(src.run_id, run);
  }
  if (typeof src.app === 'string' && src.app && (!stepOnly || !run.app)) {
    run.app = src.app;
    run.apps = appsOf(src.app);
  } else if (stepOnly && typeof src.app === 'string' && src.app && !run.apps.includes(src.app)) {
    run.apps.push(src.app); // a task of an instruction whose run named several apps
  }
  if (!stepOnly) {
    if (typeof src.kind === 'string') run.kind = src.kind;
    if (typeof src.session_id === 'string') run.session_id = src.session_id;
    if (typeof src.state === 'string') run.state = src.state;
    if (run.state === 'waiting') run.paused = true;
  }
  return run;
}

/** A step event or a listed step: the latest plan (its "pending" rows) and where the run is. */
export function stepSeen(run, s, { ts, listing = false } = {}) {
  if (s.step_id === undefined || s.step_id === null) return;
  const key = toText(s.step_id);
  const known = run.steps.get(key);
  if (s.status === 'pending' && !listing) {
    // A new round of the app's plan starts over once the previous one has begun.
    const begun = run.plan.some((k) => (run.steps.get(k) || {}).status !== 'pending');
    if (begun) {
      run.plan = [];
      run.steps = new Map();
    }
  }
  run.steps.set(key, { ...(known || {}), ...s });
  if (!run.plan.includes(key)) run.plan.push(key);
  if (s.status === 'started') {
    run.current = key;
    // A listed step has no start time of its own: the page counts from when it learnt of it.
    run.stepSince = typeof ts === 'number' && !listing ? ts * 1000 : Date.now();
    run.progress = null;
  }
}

export function activeRunsOf(app) {
  return [...model.runs.values()].filter((r) => ACTIVE.has(r.state) && r.apps.includes(app));
}
