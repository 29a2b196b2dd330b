// One entry of the conversation panel's timeline, drawn: what the user typed or said, a reply
// (with a link that raises the app's window and its "why?"), a run and its state, and an
// approval or question card — the same card as the window's (runs/cards.js), answerable here while it is pending.
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import { chips } from '../desk/intents.js';
import { cardHead, cardText, decisionButtons, optionLabel, optionValue } from '../runs/cards.js';

function appName(id) {
  const app = state.apps.get(id);
  return app ? toText(app.name) : id;
}

function appLink(id) {
  return el('button', { type: 'button', class: 'conv-app', dataset: { app: id }, text: appName(id),
    title: t('conv.raise', { app: appName(id) }) });
}

function time(ts) {
  const d = new Date(Number(ts) * 1000);
  return el('time', { class: 'conv-time', dateTime: d.toISOString(), text: d.toLocaleTimeString(state.lang, { hour: '2-digit', minute: '2-digit' }) });
}

/** One timeline entry as its list item: what was said, a run, or a card. */
export function render(entry) {
  const kind = toText(entry.kind);
  const body = kind === 'user' ? userBody(entry)
    : kind === 'reply' ? replyBody(entry)
      : kind === 'run' ? runBody(entry)
        : kind === 'interaction' ? cardBody(entry.interaction)
          : null;
  const extra = kind === 'run' ? { runId: toText(entry.run_id), state: toText(entry.state) }
    : kind === 'interaction' && isObject(entry.interaction)
      ? { interaction: toText(entry.interaction.id), state: toText(entry.interaction.state), cardKind: toText(entry.interaction.kind) }
      : {};
  return el('li', { class: ['conv-entry', `conv-${kind}`], dataset: { entry: entry.id, kind, ...extra } },
    time(entry.ts), body);
}

function userBody(entry) {
  if (typeof entry.text === 'string') {
    return el('div', { class: 'conv-bubble' },
      entry.spoken ? el('span', { class: 'conv-spoken', text: t('conv.spoken') }) : null,
      // an MCP client sent it (DESIGN §17): the client's name as the user gave its token
      typeof entry.via === 'string' ? el('span', { class: 'conv-via', text: t('conv.via', { client: entry.via }) }) : null,
      el('span', { class: 'conv-text', text: entry.text }));
  }
  if (typeof entry.open === 'string') {
    return el('p', { class: 'conv-note muted' }, t('conv.opened'), ' ', appLink(entry.open));
  }
  return el('p', { class: 'conv-note muted' },
    t('conv.action', { action: toText(entry.action) }), ' ', entry.app ? appLink(toText(entry.app)) : null);
}

/** "why?": opens the trace window on the run (or, for a reply of the system's own, on the
 * instruction it answered: by its time). */
function whyButton(entry) {
  return el('button', { type: 'button', class: 'conv-why', text: t('trace.why'),
    title: t('trace.why_hint'), dataset: { why: toText(entry.run_id), ts: toText(entry.ts) } });
}

function replyBody(entry) {
  const apps = Array.isArray(entry.apps) ? entry.apps.map(toText).filter(Boolean) : [];
  const message = toText(entry.message);
  if (entry.from === 'desktop') { // the desktop spoke first (DESIGN §18)
    return el('div', { class: ['conv-bubble', 'conv-desktop'], dataset: { about: toText(entry.about) } },
      el('div', { class: 'conv-apps muted', text: t('conv.desktop') }),
      el('p', { class: 'conv-text', text: message }));
  }
  return el('div', { class: ['conv-bubble', entry.status === 'error' ? 'is-error' : ''] },
    el('div', { class: 'conv-reply-head' },
      apps.length ? el('div', { class: 'conv-apps' }, apps.map(appLink)) : el('div', { class: 'conv-apps muted', text: t('conv.system') }),
      whyButton(entry)),
    el('p', { class: 'conv-text', text: message || t('conv.no_message') }),
    chips(entry.suggestions)); // a system answer's suggestions (aios/intents.py)
}

function runBody(entry) {
  const st = toText(entry.state);
  const apps = Array.isArray(entry.apps) ? entry.apps.map(toText).filter(Boolean) : [];
  return el('div', { class: 'conv-run-line' },
    el('span', { class: ['conv-badge', `state-${st}`], text: t(`conv.run_${st}`) === `conv.run_${st}` ? st : t(`conv.run_${st}`) }),
    el('span', { class: 'conv-run-text', text: toText(entry.text) || apps.map(appName).join(', ') }),
    apps.length ? el('span', { class: 'conv-apps' }, apps.map(appLink)) : null,
    entry.retryable ? el('button', { type: 'button', class: 'conv-retry', dataset: { retry: toText(entry.run_id) }, text: t('conv.retry') }) : null,
    whyButton(entry));
}

function answerText(ia) {
  if (ia.state === 'expired') return t('conv.expired');
  if (ia.state === 'withdrawn') return t('conv.withdrawn');
  const answer = isObject(ia.answer) ? ia.answer : {};
  if (ia.kind === 'approval') {
    const d = toText(answer.decision);
    const text = t(`conv.decided_${d}`);
    return text === `conv.decided_${d}` ? d : text;
  }
  if (ia.kind === 'confirm') return answer.value === true ? t('conv.confirmed') : t('conv.declined');
  if (ia.kind === 'choice') {
    const options = Array.isArray(ia.options) ? ia.options : [];
    const picked = options.find((o) => JSON.stringify(optionValue(o)) === JSON.stringify(answer.value));
    return t('conv.chose', { value: picked !== undefined ? optionLabel(picked) : toText(answer.value) });
  }
  return t('conv.entered', { value: toText(answer.value) });
}

function cardButtons(ia, open) {
  const disabled = !open;
  const button = (props, text) => el('button', { type: 'button', class: 'conv-card-btn', disabled,
    attrs: { 'aria-disabled': String(disabled) }, ...props, text });
  if (ia.kind === 'approval') return decisionButtons(ia, { cls: 'conv-card-btn', disabled });
  if (ia.kind === 'confirm') {
    return [button({ dataset: { value: 'true' } }, t('conv.yes')), button({ dataset: { value: 'false' } }, t('conv.no'))];
  }
  if (ia.kind === 'choice') {
    const options = Array.isArray(ia.options) ? ia.options : [];
    return options.map((o) => button({ dataset: { value: JSON.stringify(optionValue(o)) } }, optionLabel(o)));
  }
  const step = Array.isArray(ia.steps) && isObject(ia.steps[0]) ? ia.steps[0] : {};
  const field = el('input', { type: 'text', class: 'conv-card-input', disabled,
    placeholder: toText(step.placeholder ?? ia.placeholder),
    value: toText(isObject(ia.answer) ? ia.answer.value : (step.default ?? ia.default ?? '')),
    attrs: { 'aria-label': toText(ia.prompt) } });
  return [el('form', { class: 'conv-card-form' }, field,
    el('button', { type: 'submit', class: 'conv-card-btn', disabled, attrs: { 'aria-disabled': String(disabled) }, text: t('conv.submit') }))];
}

function cardBody(ia) {
  if (!isObject(ia)) return null;
  const open = ia.state === 'pending';
  const app = toText(ia.app);
  // The same card as the window's (runs/cards.js): the system's mark, the app, every step.
  return el('div', { class: ['conv-card', open ? 'is-open' : 'is-closed'], dataset: { systemChrome: '' } },
    cardHead(ia, { titleClass: 'conv-card-title' }),
    el('div', { class: 'conv-apps' }, app ? appLink(app) : null),
    cardText(ia, { promptClass: 'conv-card-prompt' }),
    el('div', { class: 'conv-card-buttons' }, cardButtons(ia, open)),
    open ? null : el('p', { class: 'conv-card-answer', text: answerText(ia) }),
    el('p', { class: 'conv-card-error', hidden: true, attrs: { role: 'alert' } }));
}

/** The report of the conversation the user just left (POST /api/sessions), or null. */
export function report(r) {
  if (!isObject(r)) return null;
  const cost = typeof r.cost === 'number' ? `$${r.cost.toFixed(4)}` : t('trace.no_price');
  const tokens = (Number(r.prompt_tokens) || 0) + (Number(r.completion_tokens) || 0);
  return el('div', { class: 'conv-report', id: 'conv_report', attrs: { role: 'status' } },
    el('strong', { text: t('conv.report_title') }),
    el('p', { class: 'conv-report-text', text: t('conv.report', { turns: toText(r.turns ?? 0), runs: toText(r.runs ?? 0),
      tools: toText(r.tools ?? 0), calls: toText(r.llm_calls ?? 0), tokens, cost, memories: toText(r.memories_added ?? 0) }) }),
    el('div', { class: 'conv-report-bar' },
      el('button', { type: 'button', class: 'conv-why', text: t('trace.why'), title: t('trace.why_hint'),
        dataset: { reportSession: toText(r.session_id) } }),
      el('button', { type: 'button', class: 'conv-report-close', text: '×', attrs: { 'aria-label': t('conv.close') } })));
}
