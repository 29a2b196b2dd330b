// In-page modal dialogs (window.confirm would block the page and cannot be styled or tested).
import { t } from '../core/i18n.js';
import { el } from '../core/safe.js';

let layer = null;

export function init() {
  layer = document.getElementById('modal_layer');
}

function show(dialog, onKey) {
  layer.replaceChildren(dialog);
  layer.hidden = false;
  const keyHandler = (ev) => onKey(ev);
  document.addEventListener('keydown', keyHandler, true);
  return () => {
    document.removeEventListener('keydown', keyHandler, true);
    layer.hidden = true;
    layer.replaceChildren();
  };
}

/** Ask a yes/no question; resolves true for OK. */
export function confirm(question, { title } = {}) {
  return new Promise((resolve) => {
    let hide = null;
    const done = (answer) => {
      hide();
      resolve(answer);
    };
    const ok = el('button', { class: 'btn btn-primary', type: 'button', id: 'modal_ok', text: t('confirm.ok'),
      on: { click: () => done(true) } });
    const cancel = el('button', { class: 'btn', type: 'button', id: 'modal_cancel', text: t('confirm.cancel'),
      on: { click: () => done(false) } });
    const dialog = el('div', { class: 'modal', attrs: { role: 'alertdialog', 'aria-modal': 'true' } },
      el('h2', { class: 'modal-title', text: title || t('confirm.title') }),
      el('p', { class: 'modal-text', text: String(question) }),
      el('div', { class: 'modal-buttons' }, cancel, ok));
    hide = show(dialog, (ev) => {
      if (ev.key === 'Escape') { ev.preventDefault(); done(false); }
    });
    ok.focus();
  });
}

/** An information dialog with a title and lines of text. */
export function info(title, lines) {
  return new Promise((resolve) => {
    let hide = null;
    const ok = el('button', { class: 'btn btn-primary', type: 'button', id: 'modal_ok', text: t('confirm.ok'),
      on: { click: () => { hide(); resolve(); } } });
    const dialog = el('div', { class: 'modal', attrs: { role: 'dialog', 'aria-modal': 'true' } },
      el('h2', { class: 'modal-title', text: title }),
      lines.map((line) => el('p', { class: 'modal-text', text: line })),
      el('div', { class: 'modal-buttons' }, ok));
    hide = show(dialog, (ev) => {
      if (ev.key === 'Escape' || ev.key === 'Enter') { ev.preventDefault(); hide(); resolve(); }
    });
    ok.focus();
  });
}

/** A dialog that cannot be dismissed, only answered by reloading the page. */
export function reloadOffer(title, lines, label) {
  const reload = el('button', { class: 'btn btn-primary', type: 'button', id: 'modal_reload', text: label,
    on: { click: () => location.reload() } });
  const dialog = el('div', { class: 'modal', id: 'auth_lost', attrs: { role: 'alertdialog', 'aria-modal': 'true' } },
    el('h2', { class: 'modal-title', text: title }),
    lines.map((line) => el('p', { class: 'modal-text', text: line })),
    el('div', { class: 'modal-buttons' }, reload));
  show(dialog, () => {});
  reload.focus();
}
