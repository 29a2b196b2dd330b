// The runs' state on this page (DESIGN §12), one object: the runs, the cards pending and ended,
// and what this tab is doing with them. Every change goes through the transitions below; the
// drawing (runs.js, progress.js) reads it and keeps none of its own.
import { isObject, toText } from '../core/safe.js';

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

/** The command bar's run: an instruction of this session, typed or listed. */
export function setCommandRun(runId) {
  model.commandRun = runId;
}

/** A `progress` event of a known run: its progress, merged; the run, or null. */
export function progressSeen(msg) {
  if (typeof msg.run_id !== 'string' || !model.runs.has(msg.run_id)) return null;
  const run = model.runs.get(msg.run_id);
  run.progress = { ...run.progress, ...msg };
  return run;
}

/** A run ended: it leaves the state for good (a late listing must not bring it back). */
export function runEnded(runId, finalState, msg) {
  model.endedRuns.add(runId);
  const run = model.runs.get(runId) || upsertRun({ ...msg, state: finalState });
  model.runs.delete(runId);
  if (model.commandRun === runId) model.commandRun = null;
  return run;
}

/** A pending interaction arrived (event, reply or listing): {app, fresh}, or null when it is
 * not one (anymore). Its run waits for the user. */
export function cardPending(ia) {
  if (!isObject(ia) || typeof ia.id !== 'string' || model.closedCards.has(ia.id)) return null;
  if (ia.state && ia.state !== 'pending') return null;
  const app = toText(ia.app);
  const fresh = !model.cards.has(ia.id);
  model.cards.set(ia.id, ia);
  if (typeof ia.run_id === 'string' && !model.endedRuns.has(ia.run_id)) {
    const run = upsertRun({ run_id: ia.run_id, app, state: 'waiting' }, { stepOnly: true });
    run.state = 'waiting';
    run.paused = true;
  }
  return { app, fresh };
}

/** A plan preview card was answered, expired or withdrawn: the interaction it showed, if known. */
export function cardClosed(id) {
  model.closedCards.add(id);
  const ia = model.cards.get(id);
  model.cards.delete(id);
  return ia;
}

/** This tab sends an answer to a question card. */
export function answerSending(id) {
  model.answering.add(id);
}

/** Sending the answer failed: the question is still pending. */
export function answerFailed(id) {
  model.answering.delete(id);
  model.dismissed.delete(id);
}

/** A question ended: {ia, wasSending} (whether this tab was sending its answer). */
export function questionEnded(id) {
  model.closedCards.add(id);
  const wasSending = model.answering.delete(id);
  const ia = model.cards.get(id) || (model.settled.get(id) || {}).ia;
  model.cards.delete(id);
  return { ia, wasSending };
}

/** Record how an ended question card ended — answered ({value}), `expired`, or withdrawn —
 * unless it already was or the app's next view replaced it; true when recorded. */
export function questionSettled(id, ia, answer, elsewhere) {
  if (model.settled.has(id) || model.dismissed.has(id)) return false;
  const outcome = isObject(answer)
    ? { state: 'answered', value: answer.value }
    : { state: answer === 'expired' ? 'expired' : 'withdrawn' };
  model.settled.set(id, { ia, ...outcome, elsewhere: elsewhere && outcome.state === 'answered' });
  return true;
}

/** The app's next view replaced the window's content: its ended (or answering) question
 * card goes; false when there was none. */
export function questionDismissed(id) {
  if (!model.settled.has(id) && !model.answering.has(id)) return false;
  model.dismissed.add(id);
  model.settled.delete(id);
  return true;
}
