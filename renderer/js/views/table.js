// table: {title?, empty?, count?, columns: [str | {key, label, align?, nowrap?}], rows: [[…]] | [{…, id?, done?, actions?}],
//   row_ids?: [id per row], row_actions?: [action…] | [[action…] per row]}
// Rows are built in a DocumentFragment; a long table shows its first rows with the window
// and the rest one task after the first paint (see fill()); the header sticks;
// clicking a header sorts by that column (numbers numerically), and the sort survives a
// re-render of the same view. A column of numbers is right-aligned and one of dates / times
// does not wrap (or as its spec says: align "left" | "right" | "center", nowrap true).
// Per-row controls (controls/row.js): an object row's own "actions" (its "id" goes into
// params.id), or for array rows data.row_ids with data.row_actions (the same controls for
// every row, or a list per row).
import { DEFAULTS } from '../core/defaults.js';
import { el, isObject, toText } from '../core/safe.js';
import { emptyNote } from './list.js';

const ALIGNS = new Set(['left', 'right', 'center']);
/** A number as text: "1,234", "-3.5", "45%", "12.5 MB", "¥30", "1.2k". */
const NUMERIC = /^[+\-−]?[¥$€£]?\s?\d[\d,]*(\.\d+)?\s?(%|[A-Za-z]{1,3}|[KMGT]i?B)?$/;
/** An ISO-like date or time: "2026-01-31", "2026-01-31 09:30", "2026-01-31T09:30:00Z", "09:30". */
const DATE_LIKE = new RegExp('^(\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?)?'
  + '|\\d{1,2}:\\d{2}(:\\d{2})?)$');
/** Keys of an object row that are not columns. */
const NOT_COLUMNS = new Set(['actions', 'done']);

function normColumns(columns, rows) {
  if (Array.isArray(columns) && columns.length) {
    return columns.map((c, i) => (isObject(c)
      ? { key: c.key ?? c.name ?? c.field ?? i, label: toText(c.label ?? c.title ?? c.name ?? c.key ?? i),
        align: ALIGNS.has(c.align) ? c.align : undefined, nowrap: c.nowrap === true ? true : undefined }
      : { key: c, label: toText(c) }));
  }
  if (rows.length && isObject(rows[0])) {
    const keys = [];
    for (const r of rows.slice(0, 50)) {
      if (isObject(r)) for (const k of Object.keys(r)) if (!keys.includes(k) && !NOT_COLUMNS.has(k)) keys.push(k);
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

/** 'num' when every filled cell of the column is a number, 'date' when every one is a date / time. */
function columnKind(rows, col, i) {
  let num = true;
  let date = true;
  let filled = 0;
  for (const r of rows) {
    const v = cellValue(r, col, i);
    if (v === undefined || v === null || v === '') continue;
    filled += 1;
    if (typeof v === 'number') {
      date = false;
    } else if (typeof v === 'string') {
      const text = v.trim();
      if (num && !NUMERIC.test(text)) num = false;
      if (date && !DATE_LIKE.test(text)) date = false;
    } else {
      num = false;
      date = false;
    }
    if (!num && !date) break;
  }
  if (!filled) return '';
  return num ? 'num' : date ? 'date' : '';
}

function cellClass(col, kind) {
  const align = col.align ?? (kind === 'num' ? 'right' : undefined);
  return [align && align !== 'left' ? `cell-${align}` : '', col.nowrap || kind === 'date' ? 'cell-nowrap' : '']
    .filter(Boolean).join(' ');
}

/** Each row's {id, actions} for its own controls, or null. */
function rowControlSpecs(data, rows) {
  const ids = Array.isArray(data.row_ids) ? data.row_ids : null;
  const template = Array.isArray(data.row_actions) && data.row_actions.every(isObject) ? data.row_actions : null;
  const perRow = Array.isArray(data.row_actions) && !template ? data.row_actions : null;
  return rows.map((r, i) => {
    if (isObject(r)) return r;
    const id = ids ? ids[i] : undefined;
    if (id === undefined) return null;
    const actions = template || (perRow && Array.isArray(perRow[i]) ? perRow[i] : []);
    return { id, actions };
  });
}

export function render(data, ctx) {
  if (!isObject(data) || !Array.isArray(data.rows)) throw new Error('table view needs data.rows (an array)');
  const rows = data.rows;
  const cols = normColumns(data.columns, rows);
  const classes = cols.map((c, i) => cellClass(c, columnKind(rows, c, i)));
  // Per-row controls are claimed once and re-attached after a sort.
  const rowActions = new Map();
  const specs = rowControlSpecs(data, rows);
  rows.forEach((r, i) => {
    const spec = specs[i];
    if (!spec) return;
    const { lead, trail } = ctx.itemControls(spec);
    if (lead || trail) rowActions.set(r, [lead, trail]);
  });
  const hasActions = rowActions.size > 0;
  const tbody = el('tbody');
  const rowsFragment = (order) => {
    const frag = document.createDocumentFragment();
    for (const r of order) {
      const tr = document.createElement('tr');
      if (isObject(r) && r.done === true) tr.className = 'is-done';
      cols.forEach((c, i) => {
        const td = document.createElement('td');
        td.textContent = toText(cellValue(r, c, i));
        if (classes[i]) td.className = classes[i];
        tr.appendChild(td);
      });
      if (hasActions) {
        const td = document.createElement('td');
        td.className = 'table-actions';
        const nodes = rowActions.get(r);
        if (nodes) for (const node of nodes) if (node) td.appendChild(node);
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
  // desktop's snapshot lists every control at once; so is a re-render of the same view
  // (a live refresh), so that the kept scroll position has its rows to land on.
  let generation = 0;
  const fill = (order) => {
    const gen = ++generation;
    const first = hasActions || ctx.redraw ? order.length : DEFAULTS.tableFirstRows;
    tbody.replaceChildren(rowsFragment(order.slice(0, first)));
    if (order.length <= first) return;
    requestAnimationFrame(() => setTimeout(() => {
      if (gen === generation) tbody.appendChild(rowsFragment(order.slice(first)));
    }, 0));
  };
  if (typeof ctx.onCleanup === 'function') ctx.onCleanup(() => { generation += 1; });

  const memo = typeof ctx.memo === 'function' ? ctx.memo('table') : {};
  const headRow = el('tr');
  cols.forEach((c, i) => {
    const th = el('th', { scope: 'col', class: classes[i] || undefined, attrs: { 'aria-sort': 'none' } },
      el('button', { type: 'button', class: 'th-sort', dataset: { col: String(i) }, text: c.label }));
    headRow.appendChild(th);
  });
  if (hasActions) headRow.appendChild(el('th', { scope: 'col' }));
  const sorted = (i, dir) => rows.slice()
    .sort((a, b) => dir * compare(cellValue(a, cols[i], i), cellValue(b, cols[i], i)));
  const showSort = (i, dir) => {
    for (const th of headRow.children) th.setAttribute('aria-sort', 'none');
    headRow.children[i].setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
  };
  if (Number.isInteger(memo.sortIndex) && memo.sortIndex < cols.length) {
    showSort(memo.sortIndex, memo.sortDir);
    fill(sorted(memo.sortIndex, memo.sortDir));
  } else {
    fill(rows);
  }
  const thead = el('thead', null, headRow);
  thead.addEventListener('click', (ev) => {
    const btn = ev.target.closest('[data-col]');
    if (!btn) return;
    const i = Number(btn.dataset.col);
    memo.sortDir = memo.sortIndex === i ? -memo.sortDir : 1;
    memo.sortIndex = i;
    showSort(i, memo.sortDir);
    fill(sorted(i, memo.sortDir));
  });

  return el('div', { class: 'view view-table' },
    el('div', { class: 'view-head' },
      typeof data.title === 'string' ? el('h2', { class: 'view-title', text: data.title }) : null,
      // data.count: the app's own words for the count ("5 项" in a file list), else "5 rows"
      el('span', { class: 'muted table-count',
        text: typeof data.count === 'string' && data.count ? data.count : ctx.t('view.rows', { n: rows.length }) })),
    // Without rows: the header still names the columns the app gave, and one empty line says why.
    rows.length || Array.isArray(data.columns)
      ? el('div', { class: 'table-wrap' }, el('table', { class: 'table' }, thead, tbody)) : null,
    rows.length ? null : emptyNote(data, ctx));
}
