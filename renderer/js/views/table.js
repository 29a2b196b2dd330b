// table: {title?, columns: [str | {key, label}], rows: [[…]] | [{…}]}
// Rows are built in a DocumentFragment; a long table shows its first rows with the window
// and the rest one task after the first paint (see fill()); the header sticks;
// clicking a header sorts by that column (numbers numerically).
import { DEFAULTS } from '../defaults.js';
import { el, isObject, toText } from '../safe.js';

function normColumns(columns, rows) {
  if (Array.isArray(columns) && columns.length) {
    return columns.map((c, i) => (isObject(c)
      ? { key: c.key ?? c.name ?? c.field ?? i, label: toText(c.label ?? c.title ?? c.name ?? c.key ?? i) }
      : { key: c, label: toText(c) }));
  }
  if (rows.length && isObject(rows[0])) {
    const keys = [];
    for (const r of rows.slice(0, 50)) {
      if (isObject(r)) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
    }
    return keys.map((k) => ({ key: k, label: k }));
  }
  const width = rows.reduce((m, r) => Math.max(m, Array.isArray(r) ? r.length : 1), 0);
  return Array.from({ length: width }, (_, i) => ({ key: i, label: String(i + 1) }));
}

function cellValue(row, col, index) {
  if (Array.isArray(row)) return row[index];
  if (isObject(row)) return row[col.key];
  return index === 0 ? row : undefined;
}

function compare(a, b) {
  const na = typeof a === 'number' ? a : (typeof a === 'string' && a.trim() !== '' ? Number(a) : NaN);
  const nb = typeof b === 'number' ? b : (typeof b === 'string' && b.trim() !== '' ? Number(b) : NaN);
  if (Number.isFinite(na) && Number.isFinite(nb)) return na - nb;
  if (a === undefined || a === null) return 1;
  if (b === undefined || b === null) return -1;
  return toText(a).localeCompare(toText(b));
}

export function render(data, ctx) {
  if (!isObject(data) || !Array.isArray(data.rows)) throw new Error('table view needs data.rows (an array)');
  const rows = data.rows;
  const cols = normColumns(data.columns, rows);
  // Per-row controls are claimed once and re-attached after a sort.
  const rowActions = new Map();
  rows.forEach((r) => {
    if (isObject(r)) {
      const node = ctx.itemActions(r);
      if (node) rowActions.set(r, node);
    }
  });
  const hasActions = rowActions.size > 0;
  const tbody = el('tbody');
  const rowsFragment = (order) => {
    const frag = document.createDocumentFragment();
    for (const r of order) {
      const tr = document.createElement('tr');
      cols.forEach((c, i) => {
        const td = document.createElement('td');
        td.textContent = toText(cellValue(r, c, i));
        tr.appendChild(td);
      });
      if (hasActions) {
        const td = document.createElement('td');
        td.className = 'table-actions';
        const node = rowActions.get(r);
        if (node) td.appendChild(node);
        tr.appendChild(td);
      }
      frag.appendChild(tr);
    }
    return frag;
  };
  // An auto-layout table costs style and layout for every cell before anything is painted
  // (~90 ms for 1,000 rows × 7 columns here). The first rows fill the window at once; the
  // rest are appended one task after the first paint. A re-sort, re-render or close
  // abandons a fill in progress. Tables with per-row controls are drawn whole, so that the
  // desktop's snapshot lists every control at once.
  let generation = 0;
  const fill = (order) => {
    const gen = ++generation;
    const first = hasActions ? order.length : DEFAULTS.tableFirstRows;
    tbody.replaceChildren(rowsFragment(order.slice(0, first)));
    if (order.length <= first) return;
    requestAnimationFrame(() => setTimeout(() => {
      if (gen === generation) tbody.appendChild(rowsFragment(order.slice(first)));
    }, 0));
  };
  if (typeof ctx.onCleanup === 'function') ctx.onCleanup(() => { generation += 1; });
  fill(rows);

  let sortIndex = -1;
  let sortDir = 1;
  const headRow = el('tr');
  cols.forEach((c, i) => {
    const th = el('th', { scope: 'col', attrs: { 'aria-sort': 'none' } },
      el('button', { type: 'button', class: 'th-sort', dataset: { col: String(i) }, text: c.label }));
    headRow.appendChild(th);
  });
  if (hasActions) headRow.appendChild(el('th', { scope: 'col' }));
  const thead = el('thead', null, headRow);
  thead.addEventListener('click', (ev) => {
    const btn = ev.target.closest('[data-col]');
    if (!btn) return;
    const i = Number(btn.dataset.col);
    sortDir = sortIndex === i ? -sortDir : 1;
    sortIndex = i;
    const order = rows.slice().sort((a, b) => sortDir * compare(cellValue(a, cols[i], i), cellValue(b, cols[i], i)));
    for (const th of headRow.children) th.setAttribute('aria-sort', 'none');
    headRow.children[i].setAttribute('aria-sort', sortDir > 0 ? 'ascending' : 'descending');
    fill(order);
  });

  return el('div', { class: 'view view-table' },
    el('div', { class: 'view-head' },
      typeof data.title === 'string' ? el('h2', { class: 'view-title', text: data.title }) : null,
      el('span', { class: 'muted table-count', text: ctx.t('view.rows', { n: rows.length }) })),
    el('div', { class: 'table-wrap' }, el('table', { class: 'table' }, thead, tbody)));
}
