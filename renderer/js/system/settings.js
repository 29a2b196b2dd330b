// The settings window (win_settings), eight pages behind a tab list: "General" (language, voice,
// LLM endpoint/model/key, sandbox switch, max rounds, the conversation's duplex.* keys
// (./duplexsettings.js): GET /api/config, saved with
// POST /api/config {updates}; a refusal (400) is shown in the form, naming the problem the
// server found; the read-only block list, ./blocklist.js), "App permissions"
// (./permissions.js), "Approvals" (./approvals.js: the mode and each app's tool rules), "MCP"
// (./mcp.js: the MCP servers apps may use), "Memory" (./selffiles.js: the assistant's self
// files, SOUL / USER / AGENTS / MEMORY.md), "Automations" (./automations.js: reminders and
// scheduled runs, DESIGN §18), "Usage" (./usage.js: the model calls' tokens and cost per day
// and per app) and "MCP server" (./mcpserver.js: the tokens other programs use the desktop
// with, DESIGN §17).
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { LANGUAGES, t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import { toast } from '../desk/notify.js';
import { renderResponse } from '../desk/render.js';
import * as wm from '../desk/wm.js';
import * as approvals from './approvals.js';
import * as automations from './automations.js';
import * as blocklist from './blocklist.js';
import * as duplexSettings from './duplexsettings.js';
import * as mcp from './mcp.js';
import * as mcpserver from './mcpserver.js';
import * as permissions from './permissions.js';
import * as selffiles from './selffiles.js';
import * as usage from './usage.js';

/** The window's name (DOM id win_settings, the saved layout); an app can never be named so. */
export const WIN_NAME = 'settings';
export const WIN_ID = wm.systemId(WIN_NAME);
const VOICES = ['zh-CN', 'en-US'];
const SPEAK_REPLIES = ['voice', 'always', 'never'];
const PAGES = ['general', 'permissions', 'approvals', 'mcp', 'memory', 'automations', 'usage', 'mcpserver'];
let page = 'general';

/** Remember a GET/POST /api/config reply and tell the desktop. */
export function adoptConfig(reply) {
  if (!isObject(reply)) return;
  if (isObject(reply.config)) state.config = reply.config;
  if (isObject(reply.llm)) state.llm = reply.llm;
  emit('config:changed', state.config);
}

function row(labelKey, control, hint) {
  return el('div', { class: 'field' },
    el('label', { class: 'field-label', htmlFor: control.id, text: t(labelKey) }), control,
    hint ? el('span', { class: 'field-hint', text: hint }) : null);
}

function select(id, values, current, labelOf) {
  const s = el('select', { id, class: 'inp' });
  for (const v of values) s.appendChild(el('option', { value: v, text: labelOf(v) }));
  if (values.includes(current)) s.value = current;
  return s;
}

function tabs(w) {
  const buttons = PAGES.map((name) => el('button', { type: 'button', id: `settings_tab_${name}`, class: 'settings-tab',
    text: t(`settings.page_${name}`), tabIndex: name === page ? 0 : -1,
    attrs: { role: 'tab', 'aria-selected': name === page ? 'true' : 'false', 'aria-controls': 'settings_panel' },
    on: { click: () => show(w, name) } }));
  const bar = el('div', { class: 'settings-tabs', attrs: { role: 'tablist', 'aria-label': t('settings.title') } }, buttons);
  // Arrow keys move between the tabs (WAI-ARIA tabs pattern); Tab leaves the tab list.
  bar.addEventListener('keydown', (ev) => {
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[ev.key];
    if (!step) return;
    ev.preventDefault();
    const next = PAGES[(PAGES.indexOf(page) + step + PAGES.length) % PAGES.length];
    show(w, next);
    document.getElementById(`settings_tab_${next}`)?.focus();
  });
  return bar;
}

function panel(w, content) {
  w.body.replaceChildren(el('div', { class: 'win-content' }, tabs(w),
    el('div', { id: 'settings_panel', class: 'settings-panel',
      attrs: { role: 'tabpanel', 'aria-labelledby': `settings_tab_${page}` } }, content)));
  emit('layout:changed');
}

function show(w, name) {
  page = PAGES.includes(name) ? name : 'general';
  if (page === 'permissions') panel(w, permissions.render());
  else if (page === 'approvals') panel(w, approvals.render(state.config || {}, { adoptConfig }));
  else if (page === 'mcp') panel(w, mcp.render());
  else if (page === 'memory') panel(w, selffiles.render());
  else if (page === 'usage') panel(w, usage.render());
  else if (page === 'mcpserver') panel(w, mcpserver.render());
  else if (page === 'automations') panel(w, automations.render());
  else renderForm(w);
}

function renderForm(w) {
  const cfg = state.config || {};
  const llm = isObject(cfg.llm) ? cfg.llm : {};
  const sandbox = isObject(cfg.tool_sandbox) ? cfg.tool_sandbox : {};
  const lang = select('set_language', LANGUAGES, cfg.language || state.lang, (v) => t(`lang.${v}`));
  const voice = select('set_default_voice', VOICES.includes(cfg.default_voice) ? VOICES : [...VOICES, toText(cfg.default_voice)],
    cfg.default_voice || 'zh-CN', (v) => v);
  const voiceCfg = isObject(cfg.voice) ? cfg.voice : {};
  const speak = select('set_speak_replies', SPEAK_REPLIES, voiceCfg.speak_replies || 'voice',
    (v) => t(`settings.speak.${v}`));
  const rate = el('input', { id: 'set_voice_rate', class: 'inp', type: 'number', min: '0.1', max: '4', step: '0.1',
    value: toText(cfg.voice_rate ?? 0.9) });
  const baseUrl = el('input', { id: 'set_llm_base_url', class: 'inp', type: 'url', value: toText(llm.base_url ?? '') });
  const model = el('input', { id: 'set_llm_model', class: 'inp', type: 'text', value: toText(llm.model ?? '') });
  const masked = typeof llm.api_key === 'string' && llm.api_key ? llm.api_key : t('settings.api_key_none');
  const key = el('input', { id: 'set_llm_api_key', class: 'inp', type: 'password', autocomplete: 'new-password',
    placeholder: t('settings.api_key_hint', { masked }) });
  const shell = el('input', { id: 'set_shell_whitelist', class: 'chk', type: 'checkbox',
    checked: sandbox.enable_shell_whitelist !== false });
  const rounds = el('input', { id: 'set_max_rounds', class: 'inp', type: 'number', min: '1', max: '50', step: '1',
    value: toText(cfg.max_rounds ?? 5) });
  const llmState = state.llm ? (state.llm.enabled ? t('llm.on', { model: state.llm.model || '' }) : t('llm.off'))
    : t('llm.unknown');
  const duplex = duplexSettings.fields(cfg);
  const error = el('p', { id: 'settings_error', class: 'form-error', hidden: true, attrs: { role: 'alert' } });
  const save = el('button', { id: 'settings_save', type: 'submit', class: 'btn btn-primary', text: t('settings.save') });
  // noValidate: the server's validation is the authority (it names the key and the rule, and
  // knows rules the inputs cannot express); the browser's bubbles would pre-empt its message
  // with one that differs per engine (Chromium, WebKitGTK in the pywebview window).
  const form = el('form', { class: 'settings-form', autocomplete: 'off', noValidate: true },
    el('fieldset', { class: 'settings-group' }, el('legend', { text: t('settings.title') }),
      row('settings.language', lang), row('settings.default_voice', voice), row('settings.voice_rate', rate),
      row('settings.speak_replies', speak)),
    el('fieldset', { class: 'settings-group' }, el('legend', { text: t('settings.llm') }),
      el('p', { class: `muted llm-state ${state.llm && state.llm.enabled ? 'is-on' : ''}`,
        text: t('settings.llm_state', { state: llmState }) }),
      row('settings.base_url', baseUrl), row('settings.model', model), row('settings.api_key', key)),
    el('fieldset', { class: 'settings-group' }, el('legend', { text: t('settings.sandbox') }),
      el('label', { class: 'check-label' }, shell, el('span', { text: t('settings.shell_whitelist') })),
      row('settings.max_rounds', rounds)),
    duplex.fieldset,
    blocklist.render(cfg),
    error,
    el('div', { class: 'settings-actions' }, save));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const llmUpdates = { base_url: baseUrl.value.trim(), model: model.value.trim() };
    if (key.value) llmUpdates.api_key = key.value; // empty = keep the stored key
    const updates = {
      language: lang.value,
      default_voice: voice.value,
      voice_rate: Number(rate.value),
      voice: { speak_replies: speak.value },
      max_rounds: Number(rounds.value),
      llm: llmUpdates,
      tool_sandbox: { enable_shell_whitelist: shell.checked },
      duplex: duplex.updates(),
    };
    error.hidden = true;
    save.disabled = true;
    try {
      const reply = await api.saveConfig(updates);
      adoptConfig(reply);
      toast(t('settings.saved'), { level: 'success' });
      if (wm.get(WIN_ID) && page === 'general') renderForm(wm.get(WIN_ID));
    } catch (err) {
      error.textContent = t('settings.failed', { error: err.message });
      error.hidden = false;
    } finally {
      save.disabled = false;
    }
  });
  panel(w, form);
}

/** Open the window; ``{page: 'permissions'|'approvals'|'mcp'|'memory'|'automations'|'usage'|'mcpserver'}``
 * opens that page of Settings. */
export async function open(detail) {
  if (isObject(detail) && PAGES.includes(detail.page)) page = detail.page;
  const w = wm.open(WIN_ID, { title: t('settings.title'), icon: 'settings', system: true, width: 600, height: 620 });
  renderResponse(WIN_ID, { view_type: 'loading', data: {} });
  try {
    adoptConfig(await api.config());
    if (wm.get(WIN_ID) === w) show(w, page);
  } catch (err) {
    renderResponse(WIN_ID, { status: 'error', view_type: 'error',
      data: { title: t('settings.title'), message: t('settings.load_failed', { error: err.message }) } });
  }
}

/** Re-draw after a language change, keeping the window where it is. */
export function refresh() {
  const w = wm.get(WIN_ID);
  if (!w) return;
  wm.setTitle(WIN_ID, t('settings.title'));
  if (state.config) show(w, page);
}
