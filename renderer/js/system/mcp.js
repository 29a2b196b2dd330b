// Settings → MCP (DESIGN §17): the MCP servers whose tools apps may use. Add a server by
// command (stdio: started confined in its own folder, no network unless granted: then its
// own namespace with user-mode NAT, never the host's loopback) or URL (streamable HTTP,
// an optional bearer token stored like the LLM key: masked, sent only to that URL); turn it
// on or off; grant it to apps (per server, and per tool); override a tool's risk class; see
// its status, why it failed and its stderr tail, and its tools with their annotations.
// GET/POST /api/mcp/servers, PATCH/DELETE /api/mcp/servers/<name>; `mcp_status` events
// redraw the page.
import { api } from '../core/api.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';

const RISKS = ['', 'safe', 'low', 'medium', 'high'];
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];
let box = null;
let status = null; // kept across redraws: what the user's last change did

const list = (v) => (Array.isArray(v) ? v.map(toText) : []);
const words = (text) => text.split(/[\s,，]+/).map((w) => w.trim()).filter(Boolean);

/** A command line as an argv: a JSON array as is, else split on spaces ("quotes" kept together). */
function argv(text) {
  const s = text.trim();
  if (s.startsWith('[')) {
    try { const a = JSON.parse(s); if (Array.isArray(a)) return a.map(toText); } catch { /* below */ }
  }
  return [...s.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}

function say(status, key, vars) {
  status.textContent = t(key, vars);
}

async function change(name, fields, status) {
  say(status, 'mcp.saving');
  try {
    await api.changeMcpServer(name, fields);
    say(status, 'mcp.saved', { name });
    reload();
  } catch (err) {
    say(status, 'mcp.failed', { error: err.message });
  }
}

function addForm(status) {
  const name = el('input', { id: 'mcp_new_name', class: 'inp', type: 'text', placeholder: 'time' });
  const kind = el('select', { id: 'mcp_new_kind', class: 'inp' },
    el('option', { value: 'command', text: t('mcp.by_command') }), el('option', { value: 'url', text: t('mcp.by_url') }));
  const where = el('input', { id: 'mcp_new_where', class: 'inp', type: 'text', placeholder: t('mcp.command_hint') });
  const token = el('input', { id: 'mcp_new_token', class: 'inp', type: 'password', autocomplete: 'new-password',
    placeholder: t('mcp.token_hint'), hidden: true });
  const apps = el('input', { id: 'mcp_new_apps', class: 'inp', type: 'text', placeholder: 'assistant' });
  kind.addEventListener('change', () => {
    token.hidden = kind.value !== 'url';
    where.placeholder = t(kind.value === 'url' ? 'mcp.url_hint' : 'mcp.command_hint');
  });
  const add = el('button', { id: 'mcp_add', type: 'submit', class: 'btn btn-primary', text: t('mcp.add') });
  const form = el('form', { class: 'settings-group mcp-add', autocomplete: 'off', noValidate: true },
    el('legend', { text: t('mcp.add_title') }),
    el('div', { class: 'field' }, el('label', { class: 'field-label', htmlFor: name.id, text: t('mcp.name') }), name),
    el('div', { class: 'field' }, el('label', { class: 'field-label', htmlFor: kind.id, text: t('mcp.kind') }), kind),
    el('div', { class: 'field' }, el('label', { class: 'field-label', htmlFor: where.id, text: t('mcp.where') }), where),
    token,
    el('div', { class: 'field' }, el('label', { class: 'field-label', htmlFor: apps.id, text: t('mcp.apps') }), apps,
      el('span', { class: 'field-hint', text: t('mcp.apps_hint') })),
    el('div', { class: 'settings-actions' }, add));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { name: name.value.trim(), apps: words(apps.value) };
    if (kind.value === 'url') {
      body.url = where.value.trim();
      if (token.value) body.token = token.value;
    } else {
      body.command = argv(where.value);
    }
    add.disabled = true;
    say(status, 'mcp.saving');
    try {
      await api.addMcpServer(body);
      say(status, 'mcp.added', { name: body.name });
      reload();
    } catch (err) {
      say(status, 'mcp.failed', { error: err.message });
    } finally {
      add.disabled = false;
    }
  });
  return form;
}

function notes(annotations) {
  const a = isObject(annotations) ? annotations : {};
  const on = HINTS.filter((h) => a[h] === true).map((h) => t(`mcp.hint.${h}`));
  return on.length ? on.join(' · ') : t('mcp.hint.none');
}

function toolRow(server, tool, status) {
  const own = isObject(server.config?.tools?.[tool.tool]) ? server.config.tools[tool.tool] : {};
  const id = `mcp_${server.name}_${toText(tool.tool).replace(/[^a-z0-9_-]/gi, '_')}`;
  const risk = el('select', { id: `${id}_risk`, class: 'inp mcp-risk', attrs: { 'aria-label': t('mcp.risk') } },
    ...RISKS.map((r) => el('option', { value: r, text: r ? t(`risk.${r}`) : t('mcp.risk_auto', { risk: t(`risk.${tool.risk}`) }) })));
  risk.value = own.risk || '';
  risk.addEventListener('change', () => change(server.name, { tools: { [tool.tool]: { risk: risk.value || null } } }, status));
  const apps = el('input', { id: `${id}_apps`, class: 'inp mcp-tool-apps', type: 'text',
    value: Array.isArray(own.apps) ? list(own.apps).join(', ') : '',
    placeholder: t('mcp.tool_apps_hint'), attrs: { 'aria-label': t('mcp.tool_apps') } });
  apps.addEventListener('change', () => {
    const v = apps.value.trim();
    change(server.name, { tools: { [tool.tool]: { apps: v ? words(v) : null } } }, status);
  });
  const on = el('input', { id: `${id}_on`, type: 'checkbox', class: 'chk', checked: own.enabled !== false,
    attrs: { 'aria-label': t('mcp.tool_on') } });
  on.addEventListener('change', () => change(server.name, { tools: { [tool.tool]: { enabled: on.checked } } }, status));
  return el('li', { class: 'mcp-tool', attrs: { 'data-tool': toText(tool.name) } },
    el('div', { class: 'mcp-tool-head' }, on, el('code', { text: toText(tool.name) }),
      el('span', { class: 'muted mcp-notes', text: notes(tool.annotations) })),
    tool.description ? el('p', { class: 'field-hint', text: toText(tool.description) }) : null,
    el('div', { class: 'mcp-tool-rules' }, risk, apps));
}

function serverItem(server, status) {
  const cfg = isObject(server.config) ? server.config : {};
  const on = el('input', { id: `mcp_${server.name}_enabled`, class: 'switch-input', type: 'checkbox',
    checked: server.enabled !== false, attrs: { role: 'switch' } });
  on.addEventListener('change', () => change(server.name, { enabled: on.checked }, status));
  const apps = el('input', { id: `mcp_${server.name}_apps`, class: 'inp', type: 'text', value: list(server.apps).join(', '),
    attrs: { 'aria-label': t('mcp.apps') } });
  apps.addEventListener('change', () => change(server.name, { apps: words(apps.value) }, status));
  const net = Array.isArray(cfg.command) ? el('input', { id: `mcp_${server.name}_network`, class: 'chk',
    type: 'checkbox', checked: cfg.network === true }) : null;
  net?.addEventListener('change', () => change(server.name, { network: net.checked }, status));
  const remove = el('button', { type: 'button', class: 'btn', text: t('mcp.remove'), on: { click: async () => {
    say(status, 'mcp.saving');
    try {
      await api.removeMcpServer(server.name);
      say(status, 'mcp.removed', { name: server.name });
      reload();
    } catch (err) { say(status, 'mcp.failed', { error: err.message }); }
  } } });
  const failure = isObject(server.last_failure) ? server.last_failure : null;
  const stderr = toText(server.stderr || failure?.stderr || '');
  const where = Array.isArray(cfg.command) ? list(cfg.command).join(' ') : toText(cfg.url);
  const tools = Array.isArray(server.tools) ? server.tools.filter(isObject) : [];
  return el('li', { class: `mcp-server is-${toText(server.status)}`, attrs: { 'data-server': toText(server.name) } },
    el('div', { class: 'mcp-server-head' },
      el('label', { class: 'switch', htmlFor: on.id }, on, el('span', { class: 'switch-track' }),
        el('span', { class: 'mcp-name', text: toText(server.name) })),
      el('span', { class: `mcp-status badge is-${toText(server.status)}`, text: t(`mcp.status.${server.status}`) }),
      remove),
    el('code', { class: 'muted mcp-where', text: where }),
    server.error || failure
      ? el('p', { class: 'form-error mcp-error', text: t('mcp.failure', { reason: toText(server.error || failure.reason) }) })
      : null,
    stderr ? el('details', { class: 'mcp-stderr' }, el('summary', { text: t('mcp.stderr') }), el('pre', { text: stderr })) : null,
    el('div', { class: 'field' }, el('label', { class: 'field-label', htmlFor: apps.id, text: t('mcp.apps') }), apps),
    net ? el('div', { class: 'field' }, el('label', { htmlFor: net.id }, net, ` ${t('mcp.network')}`),
      el('p', { class: 'field-hint', text: t('mcp.network_hint') })) : null,
    tools.length
      ? el('ul', { class: 'mcp-tools', attrs: { 'aria-label': t('mcp.tools') } }, ...tools.map((tl) => toolRow(server, tl, status)))
      : el('p', { class: 'muted', text: t('mcp.no_tools') }));
}

function fill(servers) {
  box.replaceChildren(el('div', { class: 'mcp-page', id: 'mcp_page' },
    el('p', { class: 'muted', text: t('mcp.intro') }),
    servers.length ? el('ul', { class: 'mcp-servers' }, ...servers.map((s) => serverItem(s, status)))
      : el('p', { class: 'muted', text: t('mcp.none') }),
    addForm(status), status));
}

function reload() {
  if (!box) return;
  const mine = box;
  api.mcpServers().then((reply) => {
    if (box === mine && box.isConnected) fill(Array.isArray(reply?.servers) ? reply.servers.filter(isObject) : []);
  }).catch((err) => {
    mine.replaceChildren(el('p', { class: 'form-error', attrs: { role: 'alert' }, text: t('mcp.load_failed', { error: err.message }) }));
  });
}

/** The page's element; it fills itself once GET /api/mcp/servers answers. */
export function render() {
  status = el('p', { id: 'mcp_status', class: 'muted', attrs: { role: 'status', 'aria-live': 'polite' } });
  box = el('div', { class: 'mcp-page-box' }, el('p', { class: 'muted', text: t('mcp.loading') }));
  reload();
  return box;
}

/** An `mcp_status` event: a server started, is ready or failed; redraw the open page
 *  (unless the user is typing in it). */
export function onEvent() {
  if (!box || !box.isConnected) return;
  if (box.contains(document.activeElement) && document.activeElement?.tagName === 'INPUT') return;
  reload();
}
