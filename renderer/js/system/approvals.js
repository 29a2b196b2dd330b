// Settings → Approvals (DESIGN §12 "Policy"): when a plan waits for the user.
// - The mode (auto / smart / manual), one radio each with its rule in a line, saved at once
//   with POST /api/config {updates: {approvals: {mode}}}.
// - Per app, the ten atomic tools with their risk class, the rule the mode gives them, and
//   the user's own choice (allow / ask / never / default) from GET /api/apps/<id>/policy;
//   "Always allow" answers given on approval cards are there as "allow", and "default"
//   revokes them (POST {tool: null}). Every reply redraws from the server's answer.
import { api } from '../core/api.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';

export const MODES = ['auto', 'smart', 'manual'];
const RULES = ['allow', 'ask', 'never'];
const DEFAULT = 'default';

// The tools' risk classes and the classes each mode asks about are the server's
// (GET /api/approvals/catalog, from each tool's ToolSpec and aios/runs/approvals.py ASKED_AT):
// no copy here. The catalog: {modes: {mode: [risk]}, tools: [{tool, risks}]}, riskiest first.

function label(key, fallback) {
  const text = t(key);
  return text === key ? fallback : text;
}

/** The mode's rule for a tool: 'allow' | 'ask', or 'split' (reads allowed, writes asked).
 *  ``askedAt``: the catalog's modes ({mode: [risks it asks about]}). */
export function modeRule(mode, risks, askedAt) {
  const asked = askedAt[mode] || askedAt.smart || [];
  const rules = risks.map((r) => (asked.includes(r) ? 'ask' : 'allow'));
  return rules.every((r) => r === rules[0]) ? rules[0] : 'split';
}

function defaultText(mode, tool, risks, askedAt) {
  const rule = modeRule(mode, risks, askedAt);
  return rule === 'split' ? t(`approvals.split.${tool}`) : t(`approvals.rule.${rule}`);
}

// ------------------------------------------------------------------ the mode

function modeSection(config, adoptConfig, onMode) {
  const approvals = isObject(config) && isObject(config.approvals) ? config.approvals : {};
  let current = MODES.includes(approvals.mode) ? approvals.mode : 'smart';
  const status = el('p', { id: 'approvals_mode_status', class: 'muted perm-status',
    attrs: { role: 'status', 'aria-live': 'polite' } });
  const radios = MODES.map((mode) => el('input', { type: 'radio', name: 'approvals_mode', value: mode,
    id: `approvals_mode_${mode}`, class: 'approvals-radio', checked: mode === current,
    attrs: { 'aria-describedby': `approvals_mode_${mode}_hint` } }));
  const options = MODES.map((mode, i) => el('label', { class: 'approvals-mode', htmlFor: radios[i].id },
    radios[i],
    el('span', { class: 'approvals-mode-text' },
      el('span', { class: 'approvals-mode-name', text: t(`approvals.mode.${mode}`) }),
      el('span', { id: `approvals_mode_${mode}_hint`, class: 'field-hint', text: t(`approvals.mode.${mode}_hint`) }))));

  // Arrow keys check the next radio at once: the last choice wins, one request at a time.
  let saving = false;
  let wanted = null;
  async function save() {
    if (saving) return;
    saving = true;
    try {
      while (wanted !== null && wanted !== current) {
        const mode = wanted;
        status.textContent = t('approvals.saving');
        try {
          const reply = await api.saveConfig({ approvals: { mode } });
          adoptConfig(reply);
          const saved = isObject(reply) && isObject(reply.config) && isObject(reply.config.approvals)
            ? reply.config.approvals.mode : mode;
          current = MODES.includes(saved) ? saved : mode;
          status.textContent = t('approvals.mode_saved', { mode: t(`approvals.mode.${current}`) });
        } catch (err) {
          wanted = null;
          status.textContent = t('approvals.failed', { error: err.message });
        }
      }
    } finally {
      saving = false;
      wanted = null;
      for (const r of radios) r.checked = r.value === current;
      onMode(current);
    }
  }
  for (const r of radios) {
    r.addEventListener('change', () => {
      if (!r.checked) return;
      wanted = r.value;
      save();
    });
  }
  const timeout = Number(approvals.timeout);
  return el('fieldset', { id: 'approvals_mode', class: 'settings-group approvals-modes',
    attrs: { role: 'radiogroup', 'aria-labelledby': 'approvals_mode_legend' } },
    el('legend', { id: 'approvals_mode_legend', text: t('approvals.mode_title') }),
    ...options,
    Number.isFinite(timeout) && timeout > 0
      ? el('p', { class: 'field-hint', text: t('approvals.timeout', { n: String(Math.round(timeout)) }) }) : null,
    status);
}

// ------------------------------------------------------------------ per app

function riskCell(tool, risks) {
  const badges = risks.map((r) => el('span', { class: `risk-badge risk-${r}`, dataset: { risk: r },
    text: t(`risk.${r}`) }));
  const cell = el('td', { class: 'policy-risk', dataset: { risks: risks.join(' ') } },
    el('span', { class: 'policy-badges' }, badges));
  if (risks.length > 1) cell.appendChild(el('span', { class: 'field-hint', text: t(`approvals.risk_note.${tool}`) }));
  return cell;
}

function ruleSelect(app, tool) {
  const id = `policy_${app.id}_${tool}`.replace(/[^a-z0-9_-]/gi, '_');
  const s = el('select', { id, class: 'inp policy-select',
    dataset: { app: toText(app.id), tool },
    attrs: { 'aria-label': t('approvals.choice_for', { tool, app: toText(app.name) || toText(app.id) }) } });
  s.appendChild(el('option', { value: DEFAULT, text: t('approvals.choice.default') }));
  for (const rule of RULES) s.appendChild(el('option', { value: rule, text: t(`approvals.choice.${rule}`) }));
  return s;
}

function appSection(app, policy, catalog, getMode, status) {
  const appName = toText(app.name) || toText(app.id);
  const count = el('span', { class: 'policy-count muted' });
  const reset = el('button', { type: 'button', class: 'btn policy-reset', text: t('approvals.reset'),
    dataset: { app: toText(app.id) } });
  const rows = new Map();
  let shown = isObject(policy) ? policy : {};

  function draw(next) {
    shown = isObject(next) ? next : {};
    const mine = Object.keys(shown).filter((tool) => rows.has(tool));
    count.textContent = mine.length ? t('approvals.count', { n: String(mine.length) }) : t('approvals.count_none');
    reset.hidden = !mine.length;
    for (const [tool, row] of rows) {
      const rule = RULES.includes(shown[tool]) ? shown[tool] : DEFAULT;
      if (!row.busy) row.select.value = rule;
      row.tr.dataset.rule = rule;
    }
  }

  function drawDefaults() {
    for (const [tool, row] of rows) {
      row.defaultCell.textContent = defaultText(getMode(), tool, row.risks, catalog.modes);
    }
  }

  async function post(body, what) {
    status.textContent = t('approvals.saving');
    try {
      const reply = await api.setPolicy(app.id, body);
      draw(reply);
      status.textContent = what(reply);
    } catch (err) {
      draw(shown);
      status.textContent = t('approvals.failed', { error: err.message });
    }
  }

  for (const { tool, risks } of catalog.tools) {
    const select = ruleSelect(app, tool);
    const defaultCell = el('td', { class: 'policy-default' });
    const tr = el('tr', { class: 'policy-row', dataset: { tool } },
      el('th', { scope: 'row', class: 'policy-tool' },
        el('code', { text: tool }),
        el('span', { class: 'field-hint', text: label(`approvals.tool.${tool}`, '') })),
      riskCell(tool, risks), defaultCell, el('td', {}, select));
    const row = { tr, select, defaultCell, risks, busy: false, wanted: null };
    rows.set(tool, row);
    // One request at a time per tool, the last choice wins (arrow keys change a closed select).
    select.addEventListener('change', async () => {
      row.wanted = select.value;
      if (row.busy) return;
      row.busy = true;
      select.setAttribute('aria-busy', 'true');
      try {
        while (row.wanted !== null) {
          const value = row.wanted;
          row.wanted = null;
          if ((RULES.includes(shown[tool]) ? shown[tool] : DEFAULT) === value) continue;
          await post({ [tool]: value === DEFAULT ? null : value }, (reply) => {
            const now = isObject(reply) && RULES.includes(reply[tool]) ? reply[tool] : DEFAULT;
            return t('approvals.policy_saved', { tool, app: appName, rule: t(`approvals.choice.${now}`) });
          });
        }
      } finally {
        row.busy = false;
        select.removeAttribute('aria-busy');
        draw(shown);
      }
    });
  }

  reset.addEventListener('click', () => {
    const body = Object.fromEntries(Object.keys(shown).filter((tool) => rows.has(tool)).map((tool) => [tool, null]));
    if (!Object.keys(body).length) return;
    post(body, () => t('approvals.reset_done', { app: appName }));
  });

  const table = el('table', { class: 'table policy-table' },
    el('caption', { class: 'sr-only', text: t('approvals.table_caption', { app: appName }) }),
    el('thead', {}, el('tr', {},
      ...['tool', 'risk', 'default', 'choice'].map((c) => el('th', { scope: 'col', text: t(`approvals.col.${c}`) })))),
    el('tbody', {}, [...rows.values()].map((r) => r.tr)));
  const hasMine = Object.keys(shown).some((tool) => rows.has(tool));
  const section = el('details', { class: 'policy-app perm-app', open: hasMine, dataset: { app: toText(app.id) } },
    el('summary', { class: 'policy-summary' },
      el('span', { class: 'perm-app-name', text: appName }), count),
    el('div', { class: 'table-wrap policy-wrap' }, table),
    el('div', { class: 'policy-actions' }, reset));
  drawDefaults();
  draw(shown);
  return { node: section, drawDefaults };
}

async function loadApps(box, getMode, status) {
  const [listed, catalog] = await Promise.all([api.apps(), api.approvalsCatalog()]);
  const apps = listed.filter((a) => isObject(a) && typeof a.id === 'string');
  const policies = await Promise.all(apps.map((a) => api.policy(a.id).catch(() => ({}))));
  const sections = apps.map((app, i) => appSection(app, policies[i], catalog, getMode, status));
  box.replaceChildren(sections.length
    ? el('div', { class: 'policy-apps' }, sections.map((s) => s.node))
    : el('p', { class: 'muted', text: t('approvals.no_apps') }));
  return sections;
}

/** The page's element for ``config`` (GET /api/config's); ``adoptConfig`` takes a saved reply. */
export function render(config, { adoptConfig = () => {} } = {}) {
  const approvals = isObject(config) && isObject(config.approvals) ? config.approvals : {};
  let mode = MODES.includes(approvals.mode) ? approvals.mode : 'smart';
  let sections = [];
  const status = el('p', { id: 'policy_status', class: 'muted perm-status', attrs: { role: 'status', 'aria-live': 'polite' } });
  const box = el('div', { class: 'policy-box' }, el('p', { class: 'muted', text: t('approvals.loading') }));
  const modes = modeSection(config, adoptConfig, (m) => {
    mode = m;
    for (const s of sections) s.drawDefaults();
  });
  loadApps(box, () => mode, status).then((s) => { sections = s; }).catch((err) => {
    box.replaceChildren(el('p', { class: 'form-error', attrs: { role: 'alert' },
      text: t('approvals.load_failed', { error: err.message }) }));
  });
  return el('div', { class: 'approvals-page', id: 'approvals_page' },
    el('p', { class: 'muted', text: t('approvals.intro') }),
    modes,
    el('fieldset', { id: 'approvals_apps', class: 'settings-group' },
      el('legend', { text: t('approvals.apps_title') }),
      el('p', { class: 'field-hint', text: t('approvals.apps_intro') }),
      box, status));
}
