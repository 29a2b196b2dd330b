// dashboard: {title?, widgets: [{type: <view type>, title?, span?, …that view's data}]}
// A widget's data is widget.data when that is an object, else the widget's own fields.
// Because "type" names the view, a chart widget gives its kind as chart_type (or kind),
// a media widget as media_type.
import { el, isObject, toText } from '../core/safe.js';

function widgetData(w) {
  if (isObject(w.data)) return w.data;
  const { type, view_type: _vt, title: _title, span: _span, chart_type: chartType, media_type: mediaType,
    kind, ...rest } = w;
  if (type === 'chart' || w.view_type === 'chart') rest.type = chartType ?? kind ?? 'bar';
  if (type === 'media' || w.view_type === 'media') rest.type = mediaType ?? kind;
  return rest;
}

export function render(data, ctx) {
  const widgets = isObject(data) ? data.widgets : Array.isArray(data) ? data : undefined;
  if (!Array.isArray(widgets)) throw new Error('dashboard view needs data.widgets (an array)');
  const grid = el('div', { class: 'dash-grid' });
  widgets.forEach((w, i) => {
    const type = isObject(w) ? (w.view_type ?? w.type) : undefined;
    const title = isObject(w) && w.title !== undefined ? toText(w.title) : '';
    const body = isObject(w) && typeof type === 'string'
      ? ctx.render(type, widgetData(w))
      : ctx.render('__json__', w);
    const cell = el('section', { class: 'dash-widget', dataset: { widget: String(i) } },
      title ? el('h3', { class: 'dash-title', text: title }) : null, body);
    if (isObject(w) && (w.span === 2 || w.span === 'full')) cell.classList.add(w.span === 2 ? 'span-2' : 'span-full');
    grid.appendChild(cell);
  });
  return el('div', { class: 'view view-dashboard' },
    isObject(data) && typeof data.title === 'string' ? el('h2', { class: 'view-title', text: data.title }) : null,
    grid);
}
