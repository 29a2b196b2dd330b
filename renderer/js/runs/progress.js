// A run's progress line in its window, the window's run note, and the command bar's stop button:
// drawn from the runs' state (state.js).
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import * as wm from '../desk/wm.js';
import { isQuestion } from './cards.js';
import { ACTIVE, model } from './state.js';

export function removePart(w, selector) {
  const node = w.el.querySelector(`:scope > ${selector}`);
  if (node) node.remove();
}

export function part(w, cls, before) {
  let node = w.el.querySelector(`:scope > .${cls}`);
  if (!node) {
    node = el('div', { class: cls });
    before.before(node);
  }
  return node;
}

export function elapsed(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  return s < 60 ? t('runs.seconds', { n: s }) : t('runs.minutes', { m: Math.floor(s / 60), s: String(s % 60).padStart(2, '0') });
}

function bytesText(n) {
  if (!Number.isFinite(n)) return '';
  const units = ['B', 'KB', 'MB', 'GB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

export function drawProgress(run) {
  for (const app of run.apps) {
    const w = wm.get(app);
    if (!w) continue;
    if (!ACTIVE.has(run.state)) {
      removePart(w, '.run-progress');
      continue;
    }
    const line = part(w, 'run-progress', w.body);
    line.dataset.runId = run.run_id;
    line.setAttribute('role', 'status');
    const parts = [];
    if (run.state === 'waiting') {
      const asks = [...model.cards.values()].some((ia) => ia.run_id === run.run_id && isQuestion(ia));
      parts.push(t(asks ? 'ask.waiting' : 'runs.waiting'));
    } else if (run.current && run.steps.has(run.current)) {
      const s = run.steps.get(run.current);
      const i = run.plan.indexOf(run.current) + 1;
      parts.push(t('runs.step_of', { i, n: run.plan.length }), toText(s.tool));
      if (s.text) parts.push(toText(s.text));
      if (s.status === 'started') parts.push(elapsed(Date.now() - (run.stepSince || run.since)));
      const p = run.progress;
      if (isObject(p) && p.step_id === s.step_id && typeof p.bytes === 'number') {
        parts.push(typeof p.total === 'number' && p.total > 0
          ? t('runs.bytes_of', { done: bytesText(p.bytes), total: bytesText(p.total) })
          : bytesText(p.bytes));
      }
    } else {
      parts.push(t('runs.working'), elapsed(Date.now() - run.since));
    }
    const text = el('span', { class: 'run-progress-text', text: parts.join(' · ') });
    const tail = isObject(run.progress) && run.progress.step_id === run.current
      ? toText(run.progress.tail ?? run.progress.output ?? '') : '';
    const tailLines = tail ? tail.split('\n').slice(-DEFAULTS.runTailLines).join('\n') : '';
    if (tailLines) line.replaceChildren(text, el('pre', { class: 'run-tail', text: tailLines }));
    else line.replaceChildren(text);
  }
}

export function setNote(app, text, level) {
  const w = wm.get(app);
  if (!w) return;
  const note = part(w, 'run-note', w.body);
  note.dataset.level = level;
  note.setAttribute('role', 'status');
  note.replaceChildren(el('span', { class: 'run-note-text', text }),
    el('button', { type: 'button', class: 'run-note-close', text: '×', attrs: { 'aria-label': t('win.close') },
      on: { click: () => note.remove() } }));
}

/** Remove the window's note (only one of that level when given). */
export function clearNote(app, level) {
  const w = wm.get(app);
  const note = w && w.el.querySelector(':scope > .run-note');
  if (note && (!level || note.dataset.level === level)) note.remove();
}

export function drawCommandStop() {
  const stop = document.getElementById('command_stop');
  if (!stop) return;
  const run = model.commandRun && model.runs.get(model.commandRun);
  stop.hidden = !(run && ACTIVE.has(run.state));
  stop.dataset.runId = model.commandRun || '';
  stop.title = t('runs.stop');
  stop.setAttribute('aria-label', t('runs.stop'));
}
