// chart: {type: bar|line|pie|doughnut, labels, values | datasets: [{label, values}], title?}
// Drawn by the vendored Chart.js (window.Chart); destroyed when the window re-renders or closes.
import { el, isObject, toText } from '../core/safe.js';

const TYPES = new Set(['bar', 'line', 'pie', 'doughnut']);
const PALETTE = ['#5b8cff', '#36c2a6', '#f5a524', '#ef5d7a', '#a78bfa', '#38bdf8', '#f97316', '#84cc16',
  '#e879f9', '#94a3b8'];

let themed = false;
function theme(Chart) {
  if (themed) return;
  themed = true;
  Chart.defaults.color = '#c6cdd8';
  Chart.defaults.borderColor = 'rgba(255,255,255,0.08)';
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
}

function num(v) {
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

/** {type, labels, datasets:[{label, values}]} from the accepted shapes. */
export function normalize(data) {
  if (!isObject(data)) throw new Error('chart view needs an object');
  const type = data.type === undefined ? 'bar' : data.type;
  if (!TYPES.has(type)) throw new Error(`chart type must be bar, line, pie or doughnut (got ${toText(type)})`);
  let datasets;
  if (Array.isArray(data.datasets)) {
    datasets = data.datasets.map((d, i) => {
      const values = isObject(d) ? (d.values ?? d.data) : d;
      if (!Array.isArray(values)) throw new Error(`chart dataset ${i} needs values (an array)`);
      return { label: isObject(d) ? toText(d.label ?? '') : '', values: values.map(num) };
    });
  } else if (Array.isArray(data.values)) {
    datasets = [{ label: toText(data.label ?? data.title ?? ''), values: data.values.map(num) }];
  } else {
    throw new Error('chart view needs data.values or data.datasets');
  }
  const longest = datasets.reduce((m, d) => Math.max(m, d.values.length), 0);
  const labels = Array.isArray(data.labels) ? data.labels.map(toText)
    : Array.from({ length: longest }, (_, i) => String(i + 1));
  return { type, labels, datasets, title: typeof data.title === 'string' ? data.title : '' };
}

function fallbackTable(spec, ctx) {
  return ctx.render('table', {
    columns: ['', ...spec.datasets.map((d, i) => d.label || String(i + 1))],
    rows: spec.labels.map((label, i) => [label, ...spec.datasets.map((d) => d.values[i])]),
  });
}

export function render(data, ctx) {
  const spec = normalize(data);
  const Chart = window.Chart;
  const title = spec.title ? el('h2', { class: 'view-title', text: spec.title }) : null;
  if (typeof Chart !== 'function') {
    return el('div', { class: 'view view-chart' }, title,
      el('p', { class: 'view-note', text: ctx.t('view.no_chart_lib') }), fallbackTable(spec, ctx));
  }
  theme(Chart);
  const round = spec.type === 'pie' || spec.type === 'doughnut';
  const canvas = el('canvas', { attrs: { role: 'img', 'aria-label': spec.title || spec.type } });
  const box = el('div', { class: 'chart-box' }, canvas);
  const reduced = window.matchMedia('(prefers-reduced-motion: reduce)').matches;
  ctx.afterMount(() => {
    const chart = new Chart(canvas, {
      type: spec.type,
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map((d, i) => ({
          label: d.label,
          data: d.values,
          backgroundColor: round ? spec.labels.map((_, j) => PALETTE[j % PALETTE.length])
            : `${PALETTE[i % PALETTE.length]}${spec.type === 'line' ? '33' : 'cc'}`,
          borderColor: round ? '#161b26' : PALETTE[i % PALETTE.length],
          borderWidth: round ? 2 : (spec.type === 'line' ? 2 : 0),
          borderRadius: spec.type === 'bar' ? 4 : 0,
          fill: spec.type === 'line',
          tension: 0.3,
        })),
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: reduced ? false : { duration: 400 },
        plugins: { legend: { display: round || spec.datasets.length > 1 || !!spec.datasets[0].label } },
        scales: round ? {} : { y: { beginAtZero: true } },
      },
    });
    ctx.onCleanup(() => chart.destroy());
  });
  return el('div', { class: 'view view-chart' }, title, box);
}
