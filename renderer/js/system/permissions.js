// Settings → App permissions (DESIGN §11.7): each app with the permissions its manifest
// requests, one switch per permission (on = granted). A change posts
// POST /api/apps/<id>/permissions {grant|revoke} and shows the server's answer; a refusal
// puts the switch back and says why.
import { api } from '../core/api.js';
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';

function requestedOf(app) {
  const p = isObject(app.permissions) ? app.permissions : {};
  const list = (v) => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : []);
  return { requested: list(p.requested), granted: new Set(list(p.granted)) };
}

function permLabel(name) {
  // a destination (DESIGN §14.5) is a grant too: domain:<host>
  if (name.startsWith('domain:')) return t('perm.domain', { host: name.slice('domain:'.length) });
  const key = `perm.${name}`;
  const text = t(key);
  return text === key ? name : text;
}

function permSwitch(app, name, granted, status) {
  const id = `perm_${app.id}_${name.replace(/[^a-z0-9_-]/gi, '_')}`;
  const input = el('input', { id, class: 'switch-input', type: 'checkbox', checked: granted,
    attrs: { role: 'switch', 'data-app': toText(app.id), 'data-permission': name } });
  let pending = false;
  input.addEventListener('change', async () => {
    const want = input.checked;
    // not input.disabled: disabling the focused switch would drop keyboard focus
    if (pending) { input.checked = !want; return; }
    pending = true;
    input.setAttribute('aria-busy', 'true');
    status.textContent = t('perms.saving');
    try {
      const reply = await api.setPermissions(app.id, want ? { grant: [name] } : { revoke: [name] });
      const now = requestedOf(reply).granted.has(name);
      input.checked = now;
      status.textContent = t(now ? 'perms.granted' : 'perms.revoked',
        { perm: permLabel(name), app: toText(app.name) });
    } catch (err) {
      input.checked = !want;
      status.textContent = t('perms.failed', { error: err.message });
    } finally {
      pending = false;
      input.removeAttribute('aria-busy');
    }
  });
  return el('label', { class: 'switch perm-switch', htmlFor: id }, input, el('span', { class: 'switch-track' }),
    el('span', { class: 'perm-name', text: permLabel(name) }),
    el('code', { class: 'perm-id muted', text: name }));
}

function renderList(apps) {
  const status = el('p', { id: 'perms_status', class: 'muted perm-status', attrs: { role: 'status', 'aria-live': 'polite' } });
  const asking = apps.filter((a) => isObject(a) && requestedOf(a).requested.length);
  const items = asking.map((app) => {
    const { requested, granted } = requestedOf(app);
    return el('li', { class: 'perm-app', attrs: { 'data-app': toText(app.id) } },
      el('div', { class: 'perm-app-name', text: toText(app.name) || toText(app.id) }),
      el('div', { class: 'perm-switches' }, ...requested.map((name) => permSwitch(app, name, granted.has(name), status))));
  });
  return el('div', { class: 'perm-page', id: 'perms_page' },
    el('p', { class: 'muted', text: t('perms.intro') }),
    items.length ? el('ul', { class: 'perm-list' }, ...items) : el('p', { class: 'muted', text: t('perms.none') }),
    status);
}

/** The page's element; it fills itself once GET /api/apps answers. */
export function render() {
  const box = el('div', { class: 'perm-page-box' }, el('p', { class: 'muted', text: t('perms.loading') }));
  api.apps().then((apps) => {
    box.replaceChildren(renderList(Array.isArray(apps) ? apps : []));
  }).catch((err) => {
    box.replaceChildren(el('p', { class: 'form-error', attrs: { role: 'alert' }, text: t('perms.load_failed', { error: err.message }) }));
  });
  return box;
}
