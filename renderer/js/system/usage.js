// Settings → Usage (DESIGN §16): the model calls' tokens and cost of the last DAYS days, per
// day and per app, as bars (CSS, no chart library), with the totals; from GET /api/usage.
// The planner's own calls and the conversation's memory reading belong to no app: "the system".
import { api } from '../core/api.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';

/** Days the page looks back. */
export const DAYS = 30;

function tokens(g) {
  return (Number(g.prompt_tokens) || 0) + (Number(g.completion_tokens) || 0);
}

function money(cost) {
  return typeof cost === 'number' ? `$${cost.toFixed(4)}` : t('trace.no_price');
}

function appName(key) {
  if (key === null || key === undefined || key === '') return t('usage.system');
  const app = state.apps.get(key);
  return app ? toText(app.name) || key : toText(key);
}

function groupsOf(reply) {
  return isObject(reply) && Array.isArray(reply.groups) ? reply.groups.filter(isObject) : [];
}

/** One bar chart: a row per group, the bar's length its share of the largest. */
function chart(id, titleKey, groups, label) {
  const max = Math.max(1, ...groups.map(tokens));
  const rows = groups.map((g) => {
    const bar = el('div', { class: 'usage-bar' });
    bar.style.width = `${(tokens(g) / max) * 100}%`;
    return el('div', { class: 'usage-row', dataset: { key: toText(g.key), tokens: String(tokens(g)) } },
      el('span', { class: 'usage-key', text: label(g.key), title: label(g.key) }),
      el('div', { class: 'usage-track', attrs: { role: 'presentation' } }, bar),
      el('span', { class: 'usage-value', text: t('usage.value', { tokens: tokens(g), calls: toText(g.calls ?? 0), cost: money(g.cost) }) }));
  });
  return el('section', { class: 'usage-chart', id },
    el('h3', { class: 'trace-heading', text: t(titleKey) }),
    rows.length ? rows : el('p', { class: 'muted', text: t('usage.none') }));
}

/** The page: a loading line at once, the charts when /api/usage answered. */
export function render() {
  const page = el('div', { class: 'usage-page', id: 'settings_usage' },
    el('p', { class: 'muted', text: t('usage.loading') }));
  load(page);
  return page;
}

async function load(page) {
  const since = Math.floor(Date.now() / 1000) - DAYS * 86400;
  try {
    const [days, apps] = await Promise.all([api.usage('day', since), api.usage('app', since)]);
    const byDay = groupsOf(days);
    const byApp = groupsOf(apps);
    const prices = byApp.filter((g) => typeof g.cost === 'number');
    const total = {
      tokens: byApp.reduce((n, g) => n + tokens(g), 0),
      calls: byApp.reduce((n, g) => n + (Number(g.calls) || 0), 0),
      cost: prices.length ? prices.reduce((n, g) => n + g.cost, 0) : null,
    };
    page.replaceChildren(
      el('p', { class: 'field-hint', text: t('usage.hint', { days: DAYS }) }),
      el('p', { class: 'usage-totals', id: 'usage_totals' },
        el('span', { text: t('usage.total_tokens', { n: total.tokens }) }),
        el('span', { text: t('usage.total_calls', { n: total.calls }) }),
        el('span', { text: t('usage.total_cost', { cost: money(total.cost) }) })),
      chart('usage_by_day', 'usage.by_day', byDay, (key) => toText(key)),
      chart('usage_by_app', 'usage.by_app', byApp, appName));
  } catch (err) {
    page.replaceChildren(el('p', { class: 'form-error', attrs: { role: 'alert' }, text: t('usage.failed', { error: err.message }) }));
  }
}
