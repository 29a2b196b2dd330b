// The one card module (DESIGN §12, §13, §14.3): what an approval or question card shows, drawn
// the same in the app's window (runs/runs.js) and in the conversation panel
// (conversation/conversation.js).
//
// - Only the system draws a card: it carries the system's mark and the app it is for (its
//   icon and name), and it comes from the system's own interaction objects (an app's reply or
//   push never carries one: aios/protocol.py without_system_fields).
// - Every step is shown with its risk and its whole text: never cut, never inside a folded
//   <details>; a long one scrolls inside its box and says how long it is (DESIGN §14.2).
// - The files an interpreter of a step runs (`files`, pinned by their hash) are shown with
//   their content in a scrolling box, never folded; one the system could not read says why.
//   A step reviewed once an earlier result is known (`later`) says it is not approved here.
// - Work another app started (`chain`, DESIGN §14.4) names both apps in the UI's language:
//   "Code, asked by Evil, wants to …" (the server's step text is the step's own).
// - A question card (choice / confirm / input) is the app's question: it says so, with the
//   app's name and icon, and an input card reminds the user that the system never asks for a
//   key or a password there.
// Elements keep the classes and data attributes tests and assistive tools find them by:
// data-interaction on the card, data-decision / data-value on the buttons.
import { t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import { appIcon } from '../desk/appicon.js';

export const RISKS = new Set(['safe', 'low', 'medium', 'high']);
export const DECISIONS = ['allow', 'allow_session', 'allow_always', 'deny'];
/** Interaction kinds that are questions of a plan's `ask` step, answered with {value}. */
export const QUESTIONS = new Set(['choice', 'confirm', 'input']);
/** A step text longer than this says its length (it may scroll inside its box). */
export const LONG_STEP_CHARS = 160;

export function isQuestion(ia) {
  return isObject(ia) && QUESTIONS.has(ia.kind);
}

/** A choice option's value: an option is `{value, label}` or the bare value. */
export function optionValue(option) {
  return isObject(option) && 'value' in option ? option.value : option;
}

/** What a choice option shows: its label, else its value. */
export function optionLabel(option) {
  if (isObject(option) && option.label !== undefined && option.label !== null) return toText(option.label);
  return toText(optionValue(option));
}

/** The app's display name (its id while the app list is not loaded). */
export function appName(id) {
  const app = state.apps.get(toText(id));
  return app ? toText(app.name) : toText(id);
}

/** The system's mark: only the system's windows and cards carry it (wm.systemMark's twin). */
export function systemMark() {
  return el('span', { class: 'sys-mark', title: t('sys.mark_title'), attrs: { 'aria-label': t('sys.mark_title') } },
    icon('shield'), el('span', { class: 'sys-mark-text', text: t('sys.mark') }));
}

/** The app a card is for: its icon and name (the id beside a name that is not unique). */
export function appLabel(id) {
  const app = state.apps.get(toText(id)) || { id: toText(id), name: toText(id), icon: '' };
  return el('span', { class: 'card-app', dataset: { app: toText(id) } },
    appIcon({ id: toText(id), name: toText(app.name), icon: toText(app.icon) }, 'app-tile-small'),
    el('span', { class: 'card-app-name', text: toText(app.name) || toText(id) }));
}

export function riskBadge(risk) {
  const r = RISKS.has(risk) ? risk : 'none';
  return el('span', { class: `risk-badge risk-${r}`, dataset: { risk: r }, text: t(`risk.${r}`) });
}

/** A step's text, whole: a long one scrolls in its box and states its length. */
function stepText(step) {
  const text = toText(step.text || step.tool);
  const chars = [...text].length;
  const node = el('code', { class: 'run-step-text', text, dataset: { length: String(chars) } });
  if (chars <= LONG_STEP_CHARS) return [node];
  node.classList.add('is-long');
  node.tabIndex = 0; // a scrolling box the keyboard can scroll too
  return [node, el('span', { class: 'run-step-length muted', text: t('runs.chars', { n: chars }) })];
}

/** How many bytes, in words ("12 bytes", "3.2 KB"). */
function sizeText(n) {
  const bytes = Number(n) || 0;
  if (bytes < 1024) return t('runs.bytes', { n: bytes });
  const kb = bytes / 1024;
  return kb < 1024 ? `${kb.toFixed(1)} KB` : `${(kb / 1024).toFixed(1)} MB`;
}

/** Why the system did not read a pinned file, in the UI's language (its own words else). */
function notReadWhy(f) {
  const key = `runs.file_why_${toText(f.reason)}`;
  const said = t(key);
  return said === key ? toText(f.note) : said;
}

/** One workdir file the step's interpreter runs: its name, size, short hash and content. */
function fileBox(f) {
  const path = toText(f.path);
  const target = toText(f.target);
  const hash = toText(f.sha256);
  const unread = !!toText(f.note);
  const content = toText(f.content);
  const chars = [...content].length;
  let body;
  if (unread) {
    body = el('p', { class: 'run-file-unread', text: t('runs.file_not_read', { why: notReadWhy(f) }) });
  } else {
    body = [
      // the content as the system read it, whole: it scrolls in its box (keyboard too)
      el('pre', { class: 'run-file-content', text: content, tabIndex: 0,
        dataset: { length: String(chars) }, attrs: { 'aria-label': t('runs.file_content', { path }) } }),
      chars ? null : el('p', { class: 'run-file-empty muted', text: t('runs.file_empty') }),
      f.whole === false ? el('p', { class: 'run-file-cut', text: t('runs.file_cut', { n: chars }) }) : null,
    ];
  }
  return el('figure', { class: ['run-file', unread ? 'is-unread' : ''], dataset: { path, hash } },
    el('figcaption', { class: 'run-file-head' },
      el('code', { class: 'run-file-path', text: target && target !== path ? `${path} → ${target}` : path }),
      el('span', { class: 'run-file-facts muted',
        text: [unread ? null : sizeText(f.size), hash ? `sha256 ${hash.slice(0, 12)}` : null]
          .filter(Boolean).join(' · ') })),
    body);
}

/** The files a step's interpreter runs, with what a yes to them means. */
function stepFiles(step) {
  const files = Array.isArray(step.files) ? step.files.filter(isObject) : [];
  if (!files.length) return null;
  return el('div', { class: 'run-step-files' },
    el('p', { class: 'run-files-note muted', text: t('runs.files_note', { n: files.length }) }),
    files.map(fileBox));
}

/** "1, 2": the card's numbers of the steps a `later` step waits for (their ids else). */
function stepNumbers(ids, all) {
  const list = Array.isArray(ids) ? ids : [];
  return list.map((id) => {
    const i = all.findIndex((s) => s.step_id === id);
    return i >= 0 ? String(i + 1) : toText(id);
  }).join(', ');
}

/** Why a request or command asks (DESIGN §14.5): a destination not granted, what the run
 * read before it. The server's words are English; the page says them in its language. */
function dataNote(step) {
  const lines = [];
  if (typeof step.destination === 'string' && step.destination) {
    lines.push(el('p', { class: 'run-step-dest', dataset: { destination: step.destination },
      text: t('runs.not_granted', { host: step.destination }) }));
  }
  if (typeof step.tainted === 'string' && step.tainted) {
    const reads = Array.isArray(step.reads) ? step.reads.filter((r) => typeof r === 'string') : [];
    lines.push(el('p', { class: 'run-step-why', dataset: { why: step.tainted },
      text: reads.length ? t('runs.tainted', { what: reads.join(', ') }) : step.tainted }));
  }
  return lines.length ? lines : null;
}

export function stepItem(step, index = 0, all = [step]) {
  const rule = toText(step.rule);
  const detail = el('details', { class: 'run-step-detail' },
    el('summary', { text: t('runs.detail') }),
    el('dl', { class: 'run-step-facts' },
      el('dt', { text: t('runs.tool') }), el('dd', { text: toText(step.tool) }),
      el('dt', { text: t('runs.step_id') }), el('dd', { text: toText(step.step_id) }),
      step.hash ? [el('dt', { text: t('runs.hash') }), el('dd', { class: 'run-step-hash', text: toText(step.hash) })] : null,
      step.args !== undefined ? [el('dt', { text: t('runs.args') }),
        el('dd', null, el('pre', { class: 'run-step-args', text: JSON.stringify(step.args, null, 2) }))] : null));
  return el('li', { class: ['run-step', `rule-${rule || 'allow'}`], dataset: { stepId: toText(step.step_id), rule } },
    el('div', { class: 'run-step-head' },
      riskBadge(step.risk),
      ...stepText(step),
      rule === 'ask' ? el('span', { class: 'run-step-mark', text: t('runs.needs_approval') }) : null,
      rule === 'never' ? el('span', { class: 'run-step-mark is-never', text: t('runs.never') }) : null,
      rule === 'later' ? el('span', { class: 'run-step-mark is-later',
        text: t('runs.later', { steps: stepNumbers(step.deferred, all) }) }) : null,
      step.blocked ? el('span', { class: 'run-step-mark is-never', text: t('runs.blocked') }) : null),
    step.blocked ? el('p', { class: 'run-step-blocked', text: toText(step.blocked) }) : null,
    dataNote(step),
    stepFiles(step),
    detail);
}

/** The steps a card is about: an approval's plan, or the calls a confirm's yes approves. */
export function cardSteps(ia) {
  const all = Array.isArray(ia.steps) ? ia.steps.filter(isObject) : [];
  if (!isQuestion(ia)) return all;
  const step = all[0];
  return step && Array.isArray(step.covers) ? step.covers.filter(isObject) : [];
}

export function stepList(ia) {
  const steps = cardSteps(ia);
  if (!steps.length) return null;
  return el('ol', { class: ['run-steps', isQuestion(ia) ? 'ask-covers' : ''] }, steps.map(stepItem));
}

/**
 * The apps of work another app started (DESIGN §14.4): [{id, name}], the outermost launcher
 * first, the card's app last; [] when the app acts for the user. From the card, or from its
 * steps (a listing after a reload carries the steps' only); names as the system sent them
 * in the UI's language, else the desktop's.
 */
export function chainOf(ia) {
  const steps = Array.isArray(ia.steps) ? ia.steps.filter(isObject) : [];
  const long = (x) => Array.isArray(x.chain) && x.chain.length > 1;
  const from = long(ia) ? ia : steps.find(long);
  if (!from) return [];
  const names = Array.isArray(from.chain_names) ? from.chain_names : [];
  return from.chain.map((id, i) => {
    const known = isObject(names[i]) ? toText(names[i][state.lang]) : '';
    return { id: toText(id), name: known || appName(id) };
  });
}

/** "Code, asked by Evil" / "代码（由 Evil 请求）" (and "for X" further up a longer chain). */
export function askedBy(chain) {
  const names = chain.map((c) => c.name);
  const first = names.slice(0, -2).join(' → ');
  return t(first ? 'runs.asked_by_for' : 'runs.asked_by',
    { app: names[names.length - 1], by: names[names.length - 2], first });
}

/** An approval's prompt in the page's language (the server's own words are English). */
export function promptText(ia) {
  const steps = cardSteps(ia);
  if (ia.kind !== 'approval' || !steps.length) return toText(ia.prompt);
  const asked = steps.filter((s) => s.rule === 'ask');
  const chain = chainOf(ia);
  const vars = { app: appName(ia.app), n: steps.length, k: asked.length,
    tools: [...new Set(asked.map((s) => toText(s.tool)))].join(', ') };
  if (chain.length > 1) return t('runs.prompt_chain', { ...vars, who: askedBy(chain) });
  return t('runs.prompt', vars);
}

/** What a drawn card's words depend on besides the card: the language and the apps' names
 * (a card drawn before the app list was loaded names an app by its id until then). */
export function cardWords(ia) {
  return [state.lang, appName(ia.app), ...chainOf(ia).map((c) => c.name)].join('\n');
}

/** Beside the app a card is for: the apps that asked it to work (launched work only). */
function chainLabel(ia) {
  const chain = chainOf(ia);
  if (chain.length < 2) return null;
  const by = chain.slice(0, -1).map((c) => c.name).join(' → ');
  return el('span', { class: 'card-chain', dataset: { chain: chain.map((c) => c.id).join(' ') },
    text: t('runs.chain_label', { by }) });
}

/** The card's title line: the system's mark, the app it is for, the title. */
export function cardHead(ia, { titleId, titleClass = 'run-card-title' } = {}) {
  const title = isQuestion(ia) ? t(`ask.title_${ia.kind}`) : t('runs.card_title', { n: cardSteps(ia).length });
  return el('header', { class: 'card-head' },
    systemMark(),
    appLabel(ia.app),
    chainLabel(ia),
    el('h3', { class: titleClass, id: titleId || null, text: title }));
}

/**
 * The card's words: the prompt (an app's question says it is the app's) and every step.
 * ``promptClass`` keeps each place's class for the prompt (tests and styles find it by it).
 */
export function cardText(ia, { promptId, promptClass }) {
  const question = isQuestion(ia);
  return [
    question ? el('p', { class: 'ask-from muted', text: t('ask.from_app', { app: appName(ia.app) }) }) : null,
    el('p', { class: promptClass, id: promptId || null, text: promptText(ia) }),
    ia.kind === 'input' ? el('p', { class: 'ask-no-secrets', text: t('ask.no_secrets') }) : null,
    stepList(ia),
  ];
}

/** An approval's decision buttons (data-decision), in the order of DECISIONS. */
export function decisionButtons(ia, { cls = 'run-card-btn', disabled = false } = {}) {
  const options = Array.isArray(ia.options) ? DECISIONS.filter((d) => ia.options.includes(d)) : DECISIONS;
  return options.map((d) => el('button', {
    type: 'button', class: [cls, `decision-${d}`], dataset: { decision: d }, text: t(`runs.decision_${d}`),
    disabled, attrs: disabled ? { 'aria-disabled': 'true' } : null,
  }));
}
