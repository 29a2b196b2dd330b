// Settings → Memory (DESIGN §15): the assistant's four self files — SOUL.md, USER.md, AGENTS.md
// and MEMORY.md — one tab each, a text editor beside a Markdown preview (core/markdown.js),
// Save (PUT /api/self/<name>) with the server's refusal shown in the page. MEMORY.md is
// written by the system from the memories; an edit saved here changes the memories (the server
// parses it back), which the note above the editor says.
// What the user typed and has not saved is kept per file while the page lives, across tab
// switches and a language change's redraw; a file with no unsaved edit follows the server
// (MEMORY.md is read again after every `memory` event).
import { api } from '../core/api.js';
import { DEFAULTS } from '../core/defaults.js';
import { t } from '../core/i18n.js';
import { render as markdown } from '../core/markdown.js';
import { el, isObject } from '../core/safe.js';

export const FILES = ['SOUL', 'USER', 'AGENTS', 'MEMORY'];
const MEMORY = 'MEMORY';

let current = FILES[0];
/** name -> the text the server last gave. */
const loaded = new Map();
/** name -> what the user typed since (only while it differs). */
const drafts = new Map();
/** The page on screen (its nodes), or null. */
let ui = null;
let previewTimer = null;

function textOf(name) {
  return drafts.has(name) ? drafts.get(name) : loaded.get(name) ?? '';
}

function tabLabel(name) {
  return drafts.has(name) ? `${name}.md •` : `${name}.md`;
}

function tabs() {
  const buttons = FILES.map((name) => el('button', {
    type: 'button', id: `self_tab_${name}`, class: 'settings-tab self-tab', text: tabLabel(name),
    tabIndex: name === current ? 0 : -1, dataset: { file: name },
    title: drafts.has(name) ? t('self.unsaved') : '',
    attrs: { role: 'tab', 'aria-selected': name === current ? 'true' : 'false', 'aria-controls': 'self_panel' },
    on: { click: () => choose(name) },
  }));
  const bar = el('div', { class: 'settings-tabs self-tabs', attrs: { role: 'tablist', 'aria-label': t('self.files') } }, buttons);
  bar.addEventListener('keydown', (ev) => {
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[ev.key];
    if (!step) return;
    ev.preventDefault();
    const next = FILES[(FILES.indexOf(current) + step + FILES.length) % FILES.length];
    choose(next);
    document.getElementById(`self_tab_${next}`)?.focus();
  });
  return bar;
}

function choose(name) {
  if (!FILES.includes(name) || !ui) return;
  current = name;
  draw();
}

/** The page's element; the current file is read when it has not been yet. */
export function render() {
  ui = { root: el('div', { id: 'self_page', class: 'self-page' }) };
  draw();
  return ui.root;
}

function draw() {
  const name = current;
  const text = el('textarea', { id: 'self_text', class: 'inp inp-mono self-text', spellcheck: false,
    value: textOf(name), disabled: !loaded.has(name),
    attrs: { 'aria-label': t('self.editor', { name: `${name}.md` }) } });
  const preview = el('div', { id: 'self_preview', class: 'self-preview', attrs: { 'aria-live': 'off' } });
  const error = el('p', { id: 'self_error', class: 'form-error', hidden: true, attrs: { role: 'alert' } });
  const status = el('p', { id: 'self_status', class: 'muted perm-status', attrs: { role: 'status', 'aria-live': 'polite' } });
  const revert = el('button', { id: 'self_revert', type: 'button', class: 'btn', text: t('self.revert'),
    disabled: !drafts.has(name) });
  const save = el('button', { id: 'self_save', type: 'button', class: 'btn btn-primary', text: t('self.save'),
    disabled: !loaded.has(name) });
  Object.assign(ui, { text, preview, error, status, revert, save, name });

  text.addEventListener('input', () => {
    const was = drafts.has(name);
    if (text.value === loaded.get(name)) drafts.delete(name);
    else drafts.set(name, text.value);
    if (was !== drafts.has(name)) markTab(name);
    revert.disabled = !drafts.has(name);
    clearTimeout(previewTimer);
    previewTimer = setTimeout(() => drawPreview(text.value), DEFAULTS.selfPreviewDelayMs);
  });
  text.addEventListener('keydown', (ev) => {
    if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === 's') {
      ev.preventDefault();
      saveFile();
    }
  });
  save.addEventListener('click', saveFile);
  revert.addEventListener('click', () => {
    drafts.delete(name);
    draw();
  });

  ui.root.replaceChildren(
    el('p', { class: 'muted self-intro', text: t('self.intro') }),
    tabs(),
    el('div', { id: 'self_panel', class: 'self-panel', attrs: { role: 'tabpanel', 'aria-labelledby': `self_tab_${name}` } },
      el('p', { class: 'field-hint', text: t(`self.hint.${name}`) }),
      name === MEMORY ? el('p', { id: 'self_memory_note', class: 'self-note', text: t('self.memory_note') }) : null,
      el('div', { class: 'self-editor' },
        el('div', { class: 'self-pane' }, text),
        el('section', { class: 'self-pane self-preview-box', attrs: { 'aria-label': t('self.preview') } },
          el('h3', { class: 'self-preview-title', text: t('self.preview') }), preview)),
      error, status,
      el('div', { class: 'settings-actions self-actions' }, revert, save)));
  if (loaded.has(name)) drawPreview(text.value);
  else fetchFile(name);
}

function markTab(name) {
  const tab = document.getElementById(`self_tab_${name}`);
  if (!tab) return;
  tab.textContent = tabLabel(name);
  tab.title = drafts.has(name) ? t('self.unsaved') : '';
}

function drawPreview(text) {
  if (!ui || !ui.preview) return;
  const doc = markdown(text);
  ui.preview.replaceChildren(doc.childNodes.length ? doc : el('p', { class: 'muted', text: t('self.preview_empty') }));
}

function shows(name) {
  return !!ui && ui.name === name && ui.root.isConnected;
}

async function fetchFile(name) {
  if (shows(name)) ui.status.textContent = t('self.loading');
  try {
    const reply = await api.selfFile(name);
    loaded.set(name, isObject(reply) && typeof reply.text === 'string' ? reply.text : '');
    if (drafts.get(name) === loaded.get(name)) drafts.delete(name);
    if (shows(name)) draw();
  } catch (err) {
    if (!shows(name)) return;
    ui.status.textContent = '';
    ui.error.textContent = t('self.load_failed', { name: `${name}.md`, error: err.message });
    ui.error.hidden = false;
  }
}

async function saveFile() {
  if (!ui || !loaded.has(ui.name)) return;
  const { name } = ui;
  ui.save.disabled = true;
  ui.error.hidden = true;
  ui.status.textContent = t('self.saving');
  try {
    const sent = ui.text.value;
    const reply = await api.saveSelfFile(name, sent);
    // the server's text: MEMORY.md comes back rewritten from the memories it now holds
    loaded.set(name, isObject(reply) && typeof reply.text === 'string' ? reply.text : sent);
    const typedSince = shows(name) && ui.text.value !== sent ? ui.text.value : null;
    if (typedSince === null) drafts.delete(name);
    else drafts.set(name, typedSince);
    markTab(name);
    if (!shows(name)) return;
    if (typedSince === null) showText(loaded.get(name));
    ui.status.textContent = t('self.saved', { name: `${name}.md` });
  } catch (err) {
    if (!shows(name)) return;
    ui.status.textContent = '';
    ui.error.textContent = t('self.failed', { error: err.message });
    ui.error.hidden = false;
  } finally {
    if (ui) ui.save.disabled = !loaded.has(ui.name);
  }
}

/** The shown file's editor and preview now hold ``text`` (focus and status stay). */
function showText(text) {
  ui.text.value = text;
  ui.revert.disabled = !drafts.has(ui.name);
  drawPreview(text);
}

/** The memories changed (a `memory` event): MEMORY.md is read again unless the user is editing it. */
export async function onMemoryChanged() {
  if (!loaded.has(MEMORY) || drafts.has(MEMORY)) return;
  let reply;
  try {
    reply = await api.selfFile(MEMORY);
  } catch {
    loaded.delete(MEMORY); // read again when next shown
    return;
  }
  const text = isObject(reply) && typeof reply.text === 'string' ? reply.text : '';
  if (drafts.has(MEMORY) || text === loaded.get(MEMORY)) return;
  loaded.set(MEMORY, text);
  if (shows(MEMORY)) showText(text);
}
