// The safety layer between app data and the page (DESIGN §10):
// - el(): builds DOM with text going through textContent and attributes through setters;
// - resolveUrl(): the URL policy for src/href;
// - jsonTree(): a readable, collapsible view of any data, used when a view cannot render it.
// No function in the renderer parses app data as HTML.
import { signedAppUrl } from './api.js';
import { DEFAULTS } from './defaults.js';

/**
 * el('div', {class: 'x', text: 'hi', dataset: {id: 'a'}, attrs: {role: 'list'},
 *            style: {width: '10px'}, on: {click: fn}, ...properties}, ...children)
 * Strings among children become text nodes; null/false/undefined are skipped.
 */
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (value === undefined || value === null) continue;
      if (key === 'class') node.className = Array.isArray(value) ? value.filter(Boolean).join(' ') : value;
      else if (key === 'text') node.textContent = String(value);
      else if (key === 'dataset') Object.assign(node.dataset, value);
      else if (key === 'attrs') for (const [a, v] of Object.entries(value)) node.setAttribute(a, String(v));
      // CSSOM assignment is allowed by the CSP (style attributes in markup are not).
      else if (key === 'style') Object.assign(node.style, value);
      else if (key === 'on') for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
      else node[key] = value;
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

/** A scalar as display text; objects as compact JSON. */
export function toText(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

export function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

// ------------------------------------------------------------------ URL policy

const APP_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const FILES_PATH = /^\/apps\/([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})\/files\/(.+)$/;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

function hasDotSegment(path) {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return true; // malformed escapes: refuse rather than guess
  }
  return decoded.split(/[\\/]/).some((seg) => seg === '..' || seg === '.');
}

function filesUrl(appId, relPath) {
  if (!APP_ID.test(appId || '')) return null;
  const clean = relPath.replace(/^\/+/, '');
  if (!clean || hasDotSegment(clean)) return null;
  const encoded = clean.split('/').map((seg) => encodeURIComponent(seg)).join('/');
  return signedAppUrl(appId, `/apps/${appId}/files/${encoded}`);
}

/**
 * Map an app-supplied URL to one the page may load, or null (blocked).
 * kind: 'img' (also allows data:image/*), 'media', 'link'.
 * Allowed: http:, https:, data:image/* for images, the app's files (app://files/x,
 * relative paths like workspace/x.png, or /apps/<appId>/files/x of this very app), signed.
 */
export function resolveUrl(raw, appId, kind = 'link') {
  if (typeof raw !== 'string') return null;
  // The URL parser drops tabs/newlines and trims controls, so "java\tscript:" would
  // otherwise sneak past a scheme check; normalise the same way first.
  const s = raw.replace(/[\t\n\r]/g, '').replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '');
  if (!s) return null;
  const scheme = SCHEME.exec(s);
  if (scheme) {
    const name = scheme[1].toLowerCase();
    if (name === 'app') {
      const m = /^app:\/\/files\/(.*)$/i.exec(s);
      return m ? filesUrl(appId, m[1].split(/[?#]/)[0]) : null;
    }
    if (name === 'data') {
      return kind === 'img' && /^data:image\/[a-z0-9.+-]+[;,]/i.test(s) ? s : null;
    }
    if (name !== 'http' && name !== 'https') return null;
    try {
      const u = new URL(s);
      if (u.origin === location.origin) return sameOrigin(u, appId);
      return u.href;
    } catch {
      return null;
    }
  }
  if (s.startsWith('//')) return null; // protocol-relative: ambiguous, refuse
  if (s.startsWith('/')) {
    try {
      return sameOrigin(new URL(s, location.origin), appId);
    } catch {
      return null;
    }
  }
  // A bare relative path names a file in the app's workdir.
  return filesUrl(appId, s.split(/[?#]/)[0]);
}

function sameOrigin(u, appId) {
  // Our own origin serves the desktop API; only the app-files area may be loaded from it,
  // and a view only its own app's files (the signature we add opens that app's alone).
  const m = FILES_PATH.exec(u.pathname);
  if (!m || m[1] !== appId || hasDotSegment(m[2])) return null;
  return signedAppUrl(appId, u.pathname);
}

/** The placeholder shown instead of an element whose URL was refused. */
export function blockedBox(t, raw) {
  return el('div', { class: 'blocked-url', title: typeof raw === 'string' ? raw.slice(0, 300) : '' },
    t('view.blocked_url'));
}

// ------------------------------------------------------------------ JSON tree

function summary(value) {
  if (Array.isArray(value)) return `[${value.length}]`;
  if (isObject(value)) return `{${Object.keys(value).length}}`;
  return '';
}

function scalarNode(value) {
  let cls = 'jt-null';
  let text = 'null';
  if (typeof value === 'string') { cls = 'jt-str'; text = JSON.stringify(value); }
  else if (typeof value === 'number') { cls = 'jt-num'; text = String(value); }
  else if (typeof value === 'boolean') { cls = 'jt-bool'; text = String(value); }
  else if (value === undefined) { text = 'undefined'; }
  else if (typeof value !== 'object') { cls = 'jt-str'; text = String(value); }
  return el('span', { class: cls, text });
}

function treeNode(key, value, depth, moreText, openDepth = 2) {
  const keyEl = key === null ? null : el('span', { class: 'jt-key', text: `${key}: ` });
  if (value === null || typeof value !== 'object') {
    return el('div', { class: 'jt-row' }, keyEl, scalarNode(value));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  if (depth >= DEFAULTS.jsonMaxDepth) {
    return el('div', { class: 'jt-row' }, keyEl, el('span', { class: 'jt-meta', text: summary(value) }));
  }
  const details = el('details', { class: 'jt-node', open: depth < openDepth },
    el('summary', null, keyEl, el('span', { class: 'jt-meta', text: summary(value) })));
  const body = el('div', { class: 'jt-children' });
  const shown = entries.slice(0, DEFAULTS.jsonMaxEntries);
  for (const [k, v] of shown) body.appendChild(treeNode(k, v, depth + 1, moreText, openDepth));
  if (entries.length > shown.length) {
    body.appendChild(el('div', { class: 'jt-meta', text: moreText(entries.length - shown.length) }));
  }
  details.appendChild(body);
  return details;
}

/** Any value as a collapsible tree; text only. openDepth levels start unfolded. */
export function jsonTree(value, moreText = (n) => `… ${n}`, openDepth = 2) {
  return el('div', { class: 'json-tree' }, treeNode(null, value, 0, moreText, openDepth));
}
