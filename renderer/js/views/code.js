// code: {language, code, title?} — highlighted by the vendored highlight.js when it knows
// the language, plain text otherwise.
// A run's result adds {summary?, tone?: "ok"|"error", outputs?: [{title?, text, stream?}]}:
// the summary line comes first, then each output as a monospace block capped in height
// that scrolls (the app caps what it sends), then the source.
import { el, isObject, toText } from '../core/safe.js';

function summaryLine(data) {
  if (data.summary === undefined || data.summary === null) return null;
  const tone = data.tone === 'error' ? 'error' : 'ok';
  return el('p', { class: 'code-summary', dataset: { tone }, attrs: { role: 'status' }, text: toText(data.summary) });
}

function outputBlocks(data) {
  if (!Array.isArray(data.outputs)) return [];
  return data.outputs.filter(isObject).map((o) => el('section', {
    class: 'code-output',
    dataset: { stream: typeof o.stream === 'string' ? o.stream : 'stdout' },
  },
  o.title !== undefined ? el('h3', { class: 'code-output-title', text: toText(o.title) }) : null,
  // textContent only: a program's output is never markup
  el('pre', { class: 'code-output-pre', attrs: { tabindex: '0' }, text: toText(o.text ?? '') })));
}

export function render(data, ctx) {
  if (!isObject(data) || data.code === undefined) throw new Error('code view needs data.code');
  const code = typeof data.code === 'string' ? data.code : JSON.stringify(data.code, null, 2);
  const language = typeof data.language === 'string' ? data.language.toLowerCase() : '';
  const codeEl = el('code', { class: 'hljs' });
  const hljs = window.hljs;
  if (language && hljs && typeof hljs.getLanguage === 'function' && hljs.getLanguage(language)) {
    // The one innerHTML in the renderer: highlight.js escapes the source text and returns
    // markup made only of its own <span class="hljs-…"> wrappers around that escaped text.
    codeEl.innerHTML = hljs.highlight(code, { language, ignoreIllegals: true }).value;
    codeEl.classList.add(`language-${language}`);
  } else {
    codeEl.textContent = code;
  }
  const copy = el('button', { type: 'button', class: 'btn btn-small code-copy', text: ctx.t('view.copy') });
  copy.addEventListener('click', () => {
    const done = () => {
      copy.textContent = ctx.t('view.copied');
      setTimeout(() => { copy.textContent = ctx.t('view.copy'); }, 1500);
    };
    if (!navigator.clipboard) {
      ctx.notice(ctx.t('view.copy_failed', { error: 'clipboard unavailable' }), 'error');
      return;
    }
    navigator.clipboard.writeText(code).then(done,
      (err) => ctx.notice(ctx.t('view.copy_failed', { error: err && err.message ? err.message : err }), 'error'));
  });
  const source = el('div', { class: 'view view-code' },
    el('div', { class: 'code-head' },
      el('span', { class: 'code-lang', text: toText(data.title ?? (language || 'text')) }), copy),
    el('pre', { class: 'code-pre' }, codeEl));
  const summary = summaryLine(data);
  const outputs = outputBlocks(data);
  if (!summary && !outputs.length) return source;
  source.classList.add('code-source');
  return el('div', { class: 'view view-code-run' }, summary, ...outputs, source);
}
