// Settings → "MCP server" (DESIGN §17): other programs (Claude Desktop, goose, an IDE) use
// the desktop through /mcp or `triton-aios mcp`, each with its own token made here (never
// the launch token). The page lists the tokens (GET /api/mcp/tokens: never their secrets),
// makes one with a name and scopes (POST: its secret is shown once, here), revokes one
// (DELETE: its next call is refused), and switches the memory_search tool
// (POST /api/config {mcp_server: {memory_search}}).
import { api } from '../core/api.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';

const SCOPES = ['instruction', 'app.*', 'memory_search'];
const DEFAULT_SCOPES = ['instruction', 'app.*'];

function scopeId(scope) {
  return `mcp_scope_${scope.replace(/[^a-z0-9_]/gi, '_')}`;
}

function scopeLabel(scope) {
  const key = `mcpserver.scope.${scope}`;
  const text = t(key);
  return text === key ? scope : text;
}

function tokenItem(token, status, reload) {
  const revoke = el('button', { type: 'button', class: 'btn btn-small', id: `mcp_revoke_${toText(token.id)}`,
    text: t('mcpserver.revoke') });
  revoke.addEventListener('click', async () => {
    revoke.disabled = true;
    try {
      await api.revokeMcpToken(token.id);
      status.textContent = t('mcpserver.revoked', { name: toText(token.name) });
      reload();
    } catch (err) {
      revoke.disabled = false;
      status.textContent = t('mcpserver.failed', { error: err.message });
    }
  });
  const scopes = Array.isArray(token.scopes) ? token.scopes.map(toText) : [];
  const created = Number(token.created) ? new Date(Number(token.created) * 1000).toLocaleString() : '';
  return el('li', { class: 'mcp-token', attrs: { 'data-token': toText(token.id) } },
    el('span', { class: 'mcp-token-name', text: toText(token.name) }),
    el('span', { class: 'mcp-token-scopes' }, ...scopes.map((s) => el('code', { class: 'mcp-scope', text: s }))),
    el('span', { class: 'muted mcp-token-created', text: created }),
    revoke);
}

function memorySwitch(on, status) {
  const input = el('input', { id: 'mcp_memory_search', class: 'switch-input', type: 'checkbox', checked: on,
    attrs: { role: 'switch' } });
  input.addEventListener('change', async () => {
    const want = input.checked;
    try {
      await api.saveConfig({ mcp_server: { memory_search: want } });
      status.textContent = t(want ? 'mcpserver.memory_on' : 'mcpserver.memory_off');
    } catch (err) {
      input.checked = !want;
      status.textContent = t('mcpserver.failed', { error: err.message });
    }
  });
  return el('label', { class: 'switch', htmlFor: 'mcp_memory_search' }, input, el('span', { class: 'switch-track' }),
    el('span', { text: t('mcpserver.memory_search') }));
}

function createForm(status, reload) {
  const name = el('input', { id: 'mcp_token_name', class: 'inp', type: 'text', maxLength: 60,
    placeholder: t('mcpserver.name_hint') });
  const boxes = SCOPES.map((scope) => el('label', { class: 'check-label', htmlFor: scopeId(scope) },
    el('input', { id: scopeId(scope), type: 'checkbox', checked: DEFAULT_SCOPES.includes(scope),
      attrs: { 'data-scope': scope } }),
    el('span', { text: scopeLabel(scope) })));
  const secret = el('div', { id: 'mcp_token_made', class: 'mcp-made', hidden: true });
  const create = el('button', { id: 'mcp_token_create', type: 'submit', class: 'btn btn-primary', text: t('mcpserver.create') });
  const form = el('form', { class: 'settings-form', autocomplete: 'off', noValidate: true },
    el('div', { class: 'field' }, el('label', { class: 'field-label', htmlFor: 'mcp_token_name', text: t('mcpserver.name') }), name),
    el('div', { class: 'mcp-scopes' }, ...boxes),
    el('div', { class: 'settings-actions' }, create), secret);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const scopes = boxes.map((b) => b.querySelector('input')).filter((i) => i.checked).map((i) => i.dataset.scope);
    try {
      const made = await api.createMcpToken(name.value, scopes);
      const value = el('input', { id: 'mcp_token_secret', class: 'inp', type: 'text', readOnly: true, value: toText(made.token) });
      secret.replaceChildren(el('p', { class: 'field-hint', text: t('mcpserver.copy_now', { name: toText(made.name) }) }), value);
      secret.hidden = false;
      name.value = '';
      status.textContent = t('mcpserver.created', { name: toText(made.name) });
      reload();
    } catch (err) {
      status.textContent = t('mcpserver.failed', { error: err.message });
    }
  });
  return form;
}

function renderPage(reply, status, reload) {
  const tokens = Array.isArray(reply.tokens) ? reply.tokens.filter(isObject) : [];
  return el('div', { class: 'mcp-list-box' },
    el('p', { class: 'muted', text: t('mcpserver.intro') }),
    el('p', { class: 'field-hint' }, t('mcpserver.http'), ' ', el('code', { id: 'mcp_url', text: toText(reply.url) })),
    el('p', { class: 'field-hint' }, t('mcpserver.stdio'), ' ', el('code', { text: 'AIOS_MCP_TOKEN=… triton-aios mcp' })),
    tokens.length
      ? el('ul', { id: 'mcp_tokens', class: 'mcp-tokens' }, ...tokens.map((tok) => tokenItem(tok, status, reload)))
      : el('p', { id: 'mcp_tokens', class: 'muted', text: t('mcpserver.none') }),
    memorySwitch(Boolean(reply.memory_search), status));
}

/** The page's element; it fills itself once GET /api/mcp/tokens answers. */
export function render() {
  const status = el('p', { id: 'mcp_status', class: 'muted', attrs: { role: 'status', 'aria-live': 'polite' } });
  const list = el('div', { class: 'mcp-list' }, el('p', { class: 'muted', text: t('mcpserver.loading') }));
  const reload = () => api.mcpTokens().then((reply) => {
    list.replaceChildren(renderPage(isObject(reply) ? reply : {}, status, reload));
  }).catch((err) => {
    list.replaceChildren(el('p', { class: 'form-error', attrs: { role: 'alert' }, text: t('mcpserver.failed', { error: err.message }) }));
  });
  reload();
  return el('div', { id: 'mcp_page', class: 'mcp-page' },
    list,
    el('fieldset', { class: 'settings-group' }, el('legend', { text: t('mcpserver.new') }), createForm(status, reload)),
    status);
}
