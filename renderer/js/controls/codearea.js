// Editing keys for a monospace text area (an input or form field with "monospace" / "code"):
// Tab indents by INDENT (the selected lines when the selection spans lines), Shift+Tab
// outdents them, and Escape hands Tab back to the browser once, so a keyboard user can
// always leave the field (Escape, then Tab or Shift+Tab).
// Not a control of its own: controls/input.js and formvalues.js use it.

/** What one Tab inserts (and one Shift+Tab removes at most). */
export const INDENT = '    ';

function lineStart(text, pos) {
  return text.lastIndexOf('\n', pos - 1) + 1;
}

function replace(area, start, end, text, selStart, selEnd) {
  area.setSelectionRange(start, end);
  // insertText keeps the edit on the undo stack (Ctrl+Z) and fires the input event.
  const done = text !== '' && typeof document.execCommand === 'function'
    && document.execCommand('insertText', false, text);
  if (!done) {
    area.setRangeText(text, start, end);
    area.dispatchEvent(new Event('input', { bubbles: true }));
  }
  area.setSelectionRange(selStart, selEnd);
}

function indent(area) {
  const { value, selectionStart: s, selectionEnd: e } = area;
  if (!value.slice(s, e).includes('\n')) {
    replace(area, s, e, INDENT, s + INDENT.length, s + INDENT.length);
    return;
  }
  const from = lineStart(value, s);
  const lines = value.slice(from, e).split('\n');
  const out = lines.map((l) => INDENT + l).join('\n');
  replace(area, from, e, out, s + INDENT.length, e + INDENT.length * lines.length);
}

function outdent(area) {
  const { value, selectionStart: s, selectionEnd: e } = area;
  const from = lineStart(value, s);
  const lines = value.slice(from, e).split('\n');
  let removedFirst = 0;
  let removed = 0;
  const out = lines.map((l, i) => {
    const n = l.length - l.replace(new RegExp(`^ {1,${INDENT.length}}`), '').length;
    if (i === 0) removedFirst = n;
    removed += n;
    return l.slice(n);
  }).join('\n');
  if (!removed) return;
  replace(area, from, e, out, Math.max(from, s - removedFirst), Math.max(from, e - removed));
}

/** Make a <textarea> a code editor: monospace class, Tab / Shift+Tab indent, Escape releases Tab. */
export function codeArea(area) {
  area.classList.add('inp-mono');
  area.spellcheck = false;
  area.dataset.code = '1';
  let released = false;
  area.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      released = true;
      return;
    }
    if (ev.key !== 'Tab' || ev.ctrlKey || ev.altKey || ev.metaKey) {
      if (ev.key !== 'Shift') released = false;
      return;
    }
    if (released) {
      released = false;
      return; // the browser moves the focus on
    }
    ev.preventDefault();
    if (ev.shiftKey) outdent(area);
    else indent(area);
  });
  area.addEventListener('blur', () => { released = false; });
  return area;
}

/** True when a field or input spec asks for a code editor. */
export function wantsCode(spec) {
  return !!spec && (spec.monospace === true || spec.code === true);
}
