// Tray: connection state, volume/mute (a click mutes, the slider above it sets the volume),
// LLM indicator, memory (opens the memory window; a badge counts the proposals); the clock (time, and the date as a second line where there is room) and its
// month calendar.
import { emit, on } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { icon, setIcon } from '../core/icons.js';
import { el } from '../core/safe.js';
import { state } from '../core/state.js';
import { drawCount, registerPopup, togglePopup } from './taskbar.js';

const $ = (id) => document.getElementById(id);
let nodes = null;
let shownMonth = null;

export function init() {
  nodes = { net: $('tray_net'), volume: $('tray_volume'), llm: $('tray_llm'), speech: $('tray_speech'),
    clock: $('clock'), calendar: $('calendar'), slider: $('tray_volume_slider'),
    memory: $('tray_memory'), memoryCount: $('tray_memory_count') };
  nodes.slider.addEventListener('input', () => {
    emit('voice:volume', Number(nodes.slider.value) / 100);
    renderVolume();
  });
  on('volume:changed', renderVolume);
  nodes.llm.appendChild(icon('chip'));
  nodes.speech.appendChild(icon('speechOff'));
  nodes.memory.prepend(icon('memory'));
  nodes.memory.addEventListener('click', () => emit('system:memory'));
  on('memory:count', renderMemory);
  nodes.volume.addEventListener('click', () => {
    state.muted = !state.muted;
    renderVolume();
    emit('voice:mute', state.muted);
  });
  registerPopup('calendar', nodes.calendar, nodes.clock, () => {
    const now = new Date();
    shownMonth = new Date(now.getFullYear(), now.getMonth(), 1);
    renderCalendar();
  });
  nodes.clock.addEventListener('click', () => togglePopup('calendar'));
  nodes.calendar.addEventListener('click', (ev) => {
    const nav = ev.target.closest('[data-month]');
    if (!nav) return;
    const delta = Number(nav.dataset.month);
    shownMonth = delta === 0 ? new Date(new Date().getFullYear(), new Date().getMonth(), 1)
      : new Date(shownMonth.getFullYear(), shownMonth.getMonth() + delta, 1);
    renderCalendar();
  });
  tick();
  render();
}

export function render() {
  renderNet();
  renderVolume();
  renderLLM();
  renderSpeech();
  renderMemory();
  renderClock();
  if (!nodes.calendar.hidden) renderCalendar();
}

export function renderNet() {
  const s = state.wsState;
  setIcon(nodes.net, s === 'open' ? 'net' : 'netOff');
  nodes.net.dataset.state = s;
  const label = t(s === 'open' ? 'net.open' : s === 'connecting' ? 'net.connecting'
    : s === 'unauthorized' ? 'net.unauthorized' : 'net.closed');
  nodes.net.title = label;
  nodes.net.setAttribute('aria-label', label);
}

function renderVolume() {
  setIcon(nodes.volume, state.muted ? 'mute' : 'volume');
  nodes.volume.setAttribute('aria-pressed', String(state.muted));
  nodes.volume.classList.toggle('is-muted', state.muted);
  const label = t(state.muted ? 'volume.off' : 'volume.on');
  nodes.volume.title = label;
  nodes.volume.setAttribute('aria-label', label);
  const pct = Math.round((typeof state.volume === 'number' ? state.volume : 1) * 100);
  if (document.activeElement !== nodes.slider) nodes.slider.value = String(pct);
  const sliderLabel = t('volume.level', { pct });
  nodes.slider.title = sliderLabel;
  nodes.slider.setAttribute('aria-label', sliderLabel);
  nodes.slider.setAttribute('aria-valuetext', `${pct}%`);
}

export function renderLLM() {
  const llm = state.llm;
  const on = !!(llm && llm.enabled);
  nodes.llm.dataset.state = llm ? (on ? 'on' : 'off') : 'unknown';
  const label = llm ? (on ? t('llm.on', { model: llm.model || '' }) : t('llm.off')) : t('llm.unknown');
  nodes.llm.title = label;
  nodes.llm.setAttribute('aria-label', label);
}

/** The server's speech engine failing: a tray state whose tooltip says why (hidden when it works). */
export function renderSpeech() {
  const error = state.speechError;
  nodes.speech.hidden = !error;
  nodes.speech.dataset.state = error ? 'failed' : 'ok';
  const label = error ? t('speech.failed', { error }) : '';
  nodes.speech.title = label;
  nodes.speech.setAttribute('aria-label', label);
}

/** The memory button: its badge counts the proposals waiting for the user's yes. */
function renderMemory() {
  const n = state.memoryProposed;
  drawCount(nodes.memory, nodes.memoryCount, n, n > 0 ? t('memory.badge', { n }) : t('memory.title'));
}

// ------------------------------------------------------------------ clock

function pad(n) {
  return String(n).padStart(2, '0');
}

function renderClock() {
  const now = new Date();
  nodes.clock.textContent = `${pad(now.getHours())}:${pad(now.getMinutes())}`;
  const locale = state.lang === 'en' ? 'en-US' : 'zh-CN';
  nodes.clock.title = now.toLocaleDateString(locale, { year: 'numeric', month: 'long', day: 'numeric', weekday: 'long' });
  nodes.clock.setAttribute('aria-label', `${nodes.clock.textContent}, ${nodes.clock.title}`);
  // Drawn by CSS (::after) as a second line: the clock's text stays the time.
  nodes.clock.dataset.date = now.toLocaleDateString(locale, { year: 'numeric', month: 'numeric', day: 'numeric' });
}

function tick() {
  renderClock();
  // Wake at the next minute boundary rather than polling every second.
  const now = new Date();
  setTimeout(tick, (60 - now.getSeconds()) * 1000 - now.getMilliseconds() + 50);
}

function renderCalendar() {
  const locale = state.lang === 'en' ? 'en-US' : 'zh-CN';
  const y = shownMonth.getFullYear();
  const m = shownMonth.getMonth();
  const today = new Date();
  const monthName = shownMonth.toLocaleDateString(locale, { month: 'long' });
  const head = el('header', { class: 'cal-head' },
    el('button', { type: 'button', class: 'cal-nav', dataset: { month: '-1' }, title: t('calendar.prev'),
      attrs: { 'aria-label': t('calendar.prev') } }, icon('left')),
    el('button', { type: 'button', class: 'cal-title', dataset: { month: '0' }, title: t('calendar.today'),
      text: t('calendar.month', { y, m: m + 1, monthName }) }),
    el('button', { type: 'button', class: 'cal-nav', dataset: { month: '1' }, title: t('calendar.next'),
      attrs: { 'aria-label': t('calendar.next') } }, icon('right')));
  const grid = el('div', { class: 'cal-grid', attrs: { role: 'grid' } });
  for (const wd of t('calendar.weekdays').split(',')) grid.appendChild(el('span', { class: 'cal-wd', text: wd }));
  // Weeks start on Monday.
  const offset = (new Date(y, m, 1).getDay() + 6) % 7;
  const days = new Date(y, m + 1, 0).getDate();
  for (let i = 0; i < offset; i++) grid.appendChild(el('span', { class: 'cal-day cal-empty' }));
  for (let d = 1; d <= days; d++) {
    const isToday = d === today.getDate() && m === today.getMonth() && y === today.getFullYear();
    const weekday = (offset + d - 1) % 7;
    grid.appendChild(el('span', { class: ['cal-day', isToday ? 'cal-today' : '', weekday >= 5 ? 'cal-weekend' : ''],
      text: String(d), attrs: { role: 'gridcell' } }));
  }
  const full = today.toLocaleDateString(locale, { year: 'numeric', month: 'long', day: 'numeric', weekday: 'long' });
  nodes.calendar.replaceChildren(el('div', { class: 'cal-today-line', text: full }), head, grid);
}
