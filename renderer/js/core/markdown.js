// A small Markdown preview built as DOM (never HTML): headings, paragraphs, lists, block
// quotes, rules, fenced code, **bold**, *italic*, `code` and [links](…) — a link is shown as
// its text with the address as a tooltip, never followed. HTML comments are dropped (the self
// files keep their guidance there, DESIGN §15); any other markup stays literal text.
// The desktop vendors no Markdown library (renderer/vendor/VERSIONS.md): this is for the user's
// own self files, not for app data.
import { el } from './safe.js';

const COMMENT = /<!--[\s\S]*?(?:-->|$)/g;
const FENCE = /^\s{0,3}(```|~~~)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(?:\s*\1){2,}\s*$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const NUMBERED = /^(\s*)\d{1,9}[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
/** Inline spans, first match wins: code, bold, italic, a link. */
const INLINE = /(`+)([\s\S]+?)\1|\*\*(?=\S)([\s\S]+?)\*\*|__(?=\S)([\s\S]+?)__|\*(?=\S)([^*]+?)\*|_(?=\S)([^_]+?)_|\[([^\]]+)\]\(([^)\s]*)(?:\s+"[^"]*")?\)/g;
const WORD = /[\p{L}\p{N}]/u;

/** The inline Markdown of ``text`` as nodes (text nodes and a few elements). */
export function inline(text) {
  const out = [];
  let last = 0;
  const spans = new RegExp(INLINE.source, 'g'); // its own: the calls below nest
  for (let m = spans.exec(text); m; m = spans.exec(text)) {
    const [whole] = m;
    // snake_case and 2*3*4 are not emphasis: a delimiter inside a word stays literal
    const underscore = whole.startsWith('_');
    const star = whole.startsWith('*') && !whole.startsWith('**');
    if ((underscore || star) && (WORD.test(text[m.index - 1] || '') || WORD.test(text[m.index + whole.length] || ''))) {
      spans.lastIndex = m.index + 1;
      continue;
    }
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(el('code', { class: 'md-code', text: m[2] }));
    else if (m[3] || m[4]) out.push(el('strong', {}, inline(m[3] || m[4])));
    else if (m[5] || m[6]) out.push(el('em', {}, inline(m[5] || m[6])));
    else out.push(el('span', { class: 'md-link', title: m[8] }, inline(m[7])));
    last = m.index + whole.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function paragraph(lines) {
  // Line breaks inside a paragraph are kept (CSS white-space: pre-line): Chinese text
  // wrapped over lines must not gain spaces, and the user sees the lines they wrote.
  return el('p', { class: 'md-p' }, inline(lines.map((l) => l.trim()).join('\n')));
}

/** ``text`` (Markdown) as one element with the preview inside. */
export function render(text) {
  const root = el('div', { class: 'md' });
  const lines = String(text ?? '').replace(COMMENT, '').replace(/\r\n?/g, '\n').split('\n');
  let para = [];
  let list = null;
  let quote = null;
  const flush = () => {
    if (para.length) root.appendChild(paragraph(para));
    para = [];
  };
  const endList = () => {
    list = null;
    quote = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      endList();
      const code = [];
      for (i += 1; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      root.appendChild(el('pre', { class: 'md-pre' }, el('code', { text: code.join('\n') })));
      continue;
    }
    if (!line.trim()) {
      flush();
      endList();
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      endList();
      const level = heading[1].length;
      root.appendChild(el(`h${level}`, { class: `md-h md-h${level}` }, inline(heading[2])));
      continue;
    }
    if (RULE.test(line)) {
      flush();
      endList();
      root.appendChild(el('hr', { class: 'md-hr' }));
      continue;
    }
    const item = BULLET.exec(line) || NUMBERED.exec(line);
    if (item) {
      flush();
      const tag = BULLET.test(line) ? 'ul' : 'ol';
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = el(tag, { class: 'md-list' });
        root.appendChild(list);
      }
      const li = el('li', {}, inline(item[2]));
      if (item[1].length >= 2) li.classList.add('md-nested');
      list.appendChild(li);
      continue;
    }
    const quoted = QUOTE.exec(line);
    if (quoted) {
      flush();
      list = null;
      if (!quote) quote = root.appendChild(el('blockquote', { class: 'md-quote' }));
      quote.appendChild(el('p', { class: 'md-p' }, inline(quoted[1])));
      continue;
    }
    if (list && /^\s+\S/.test(line)) {
      // a continuation line of the list item above
      list.lastElementChild.append('\n', ...inline(line.trim()));
      continue;
    }
    endList();
    para.push(line);
  }
  flush();
  return root;
}
