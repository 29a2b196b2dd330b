// The desktop's media player (DESIGN §10): one <audio>/<video> element per app window, kept
// across the window's re-renders. A media view borrows its window's element; when the next
// view is not a media view (a playlist, a library) the element moves into a compact
// now-playing bar at the bottom of the window and goes on playing. Closing the window stops it.
// A track that plays to its end sends the view's data.on_end action (params.id: data.id); the
// bar's next button sends data.on_next. The tray's mute mutes every media element of the page
// (unmute restores them) and its volume slider scales them.
import { api } from '../core/api.js';
import { emit, on } from '../core/bus.js';
import { t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { el, isObject, resolveUrl, toText } from '../core/safe.js';
import { state } from '../core/state.js';
import { toast } from './notify.js';
import * as wm from './wm.js';

/** window id -> {winId, kind, media, key, title, sub, volume, onEnd, onNext, id, attached, bar} */
const players = new Map();
/** window id -> {key, time}: where a closed window's track stopped (a later view of it goes on there). */
const stopped = new Map();
let master = null;

function masterVolume() {
  if (typeof master === 'number') return master;
  return typeof state.volume === 'number' && Number.isFinite(state.volume) ? state.volume : 1;
}

/** data.volume as 0..1: accepts 0..1 or 0..100; null when absent or not a number. */
export function volumeOf(value) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  return Math.min(1, value > 1 ? value / 100 : value);
}

/** A new media element, muted when the tray is. */
export function mediaElement(kind) {
  const media = el(kind, { class: `media-player media-${kind}`, controls: true, preload: 'metadata' });
  if (state.muted) {
    media.muted = true;
    media.dataset.trayMuted = '1';
  }
  return media;
}

function applyVolume(p) {
  p.media.volume = Math.max(0, Math.min(1, (p.volume ?? 1) * masterVolume()));
}

/** The track a media view's data describes; null when data.url is not playable. */
export function trackOf(data, app, fromUser) {
  const url = resolveUrl(data.url, app, 'media');
  if (!url) return null;
  const action = (v) => (typeof v === 'string' && v ? v : null);
  return {
    kind: data.type === 'video' ? 'video' : 'audio',
    key: data.url,
    url,
    title: toText(data.title ?? ''),
    sub: toText(data.artist ?? data.sub ?? data.subtitle ?? ''),
    volume: volumeOf(data.volume),
    start: typeof data.start === 'number' && Number.isFinite(data.start) && data.start >= 0 ? data.start : null,
    autoplay: typeof data.autoplay === 'boolean' ? data.autoplay : null,
    onEnd: action(data.on_end),
    onNext: action(data.on_next),
    id: typeof data.id === 'string' || typeof data.id === 'number' ? data.id : null,
    fromUser: !!fromUser,
  };
}

function create(winId, kind) {
  const p = { winId, kind, media: mediaElement(kind), key: null, volume: null, attached: false, bar: null,
    problem: null, title: '', sub: '', onEnd: null, onNext: null, id: null };
  p.media.addEventListener('error', () => {
    if (p.problem) p.problem.hidden = false;
  });
  p.media.addEventListener('ended', () => {
    if (p.onEnd) request(p, p.onEnd, p.id !== null ? { id: p.id } : undefined);
    else renderBar(p);
  });
  for (const ev of ['play', 'pause']) p.media.addEventListener(ev, () => renderBar(p));
  return p;
}

/**
 * Window ``winId``'s element, set to ``track``: a new track (another URL) starts at
 * track.start or 0, the same track keeps its place unless track.start is given. Returns
 * {media, mount(slot)}: mount puts the element where the view's slot is, then plays or
 * pauses it (autoplay true / false; absent: a new track plays when the user asked for it,
 * the same track keeps playing or paused).
 */
export function claim(winId, track) {
  let p = players.get(winId);
  if (p && p.kind !== track.kind) {
    stop(winId);
    p = null;
  }
  const fresh = !p;
  if (fresh) {
    p = create(winId, track.kind);
    players.set(winId, p);
  }
  const newTrack = fresh || p.key !== track.key;
  const wasPlaying = !fresh && !p.media.paused && !p.media.ended;
  if (newTrack) {
    const left = stopped.get(winId);
    stopped.delete(winId);
    const at = track.start ?? (fresh && left && left.key === track.key ? left.time : 0);
    p.key = track.key;
    p.media.src = track.url;
    if (at > 0) p.media.addEventListener('loadedmetadata', () => { p.media.currentTime = at; }, { once: true });
  } else if (track.start !== null) {
    p.media.currentTime = track.start;
  }
  Object.assign(p, { title: track.title, sub: track.sub, onEnd: track.onEnd, onNext: track.onNext, id: track.id,
    attached: true });
  if (track.volume !== null) p.volume = track.volume;
  applyVolume(p);
  const play = track.autoplay ?? (newTrack || (!wasPlaying && track.start !== null) ? track.fromUser : wasPlaying);
  const go = () => {
    if (play) p.media.play().catch(() => {}); // a refused autoplay leaves the controls for a manual start
    else p.media.pause();
  };
  return {
    media: p.media,
    setProblem: (node) => { p.problem = node; },
    mount: (slot) => {
      if (slot && slot.isConnected) slot.replaceWith(p.media);
      p.media.controls = true;
      if (p.bar) p.bar.hidden = true;
      go();
    },
    keepInBar: () => {
      p.attached = false;
      park(p);
      go();
      renderBar(p);
    },
  };
}

/** The media view is going away: the element waits in the window's bar (still in the page, so
 * it keeps playing); if no media view takes it back, the bar shows it, or it stops with the window. */
export function release(winId) {
  const p = players.get(winId);
  if (!p) return;
  p.attached = false;
  p.problem = null;
  park(p);
  queueMicrotask(() => {
    if (players.get(winId) !== p || p.attached) return;
    if (!wm.get(winId)) stop(winId);
    else if (p.media.paused && !p.media.currentTime) stop(winId); // never started: nothing to keep
    else renderBar(p);
  });
}

/** Stop window ``winId``'s playback and forget its element (the window closes, the track ends). */
export function stop(winId) {
  const p = players.get(winId);
  if (!p) return;
  players.delete(winId);
  if (p.key && p.media.currentTime > 0 && !p.media.ended) stopped.set(winId, { key: p.key, time: p.media.currentTime });
  p.media.pause();
  p.media.removeAttribute('src');
  p.media.load();
  if (p.bar) p.bar.remove();
}

function park(p) {
  const w = wm.get(p.winId);
  if (!w) return;
  if (!p.bar || !p.bar.isConnected) {
    p.bar = el('div', { class: 'now-playing', hidden: true, dataset: { id: 'now_playing' },
      attrs: { role: 'region', 'aria-label': t('player.now_playing') } },
    el('div', { class: 'now-playing-media', hidden: true }));
    w.body.after(p.bar);
  }
  p.media.controls = false;
  p.bar.firstChild.appendChild(p.media);
}

function button(cls, iconName, label, onClick) {
  const b = el('button', { type: 'button', class: `now-playing-btn ${cls}`, title: label,
    attrs: { 'aria-label': label } }, icon(iconName));
  b.addEventListener('click', onClick);
  return b;
}

function renderBar(p) {
  if (p.attached || !p.bar || players.get(p.winId) !== p) return;
  const media = p.media;
  const playing = !media.paused && !media.ended;
  const toggle = button('now-playing-toggle', playing ? 'pause' : 'play', t(playing ? 'player.pause' : 'player.play'), () => {
    if (media.paused || media.ended) media.play().catch(() => {});
    else media.pause();
  });
  const parts = [
    el('span', { class: 'now-playing-art' }, icon(p.kind === 'video' ? 'film' : 'music')),
    el('span', { class: 'now-playing-info' },
      el('span', { class: 'now-playing-label', text: t('player.now_playing') }),
      el('span', { class: 'now-playing-title', text: p.sub ? `${p.title} · ${p.sub}` : p.title })),
    toggle,
  ];
  if (p.onNext) parts.push(button('now-playing-next', 'next', t('player.next'), () => request(p, p.onNext)));
  p.bar.replaceChildren(p.bar.firstChild, ...parts);
  p.bar.hidden = false;
  p.bar.dataset.state = playing ? 'playing' : 'paused';
  emit('layout:changed');
}

/** Send the app an action of the player; a media reply while the window shows another view
 * only changes the track in the bar, any other reply is drawn in the window. */
async function request(p, actionId, params) {
  const body = { app: p.winId, action_id: actionId };
  if (params) body.params = params;
  if (state.sessionId) body.session_id = state.sessionId;
  try {
    const reply = await api.action(body);
    const response = isObject(reply) ? reply.response : null;
    if (!wm.get(p.winId)) return;
    const data = isObject(response) && response.view_type === 'media' && isObject(response.data) ? response.data : null;
    const track = data && !p.attached && players.get(p.winId) === p ? trackOf(data, p.winId, true) : null;
    if (track && track.kind === p.kind) claim(p.winId, track).keepInBar();
    else emit('player:render', { winId: p.winId, response });
  } catch (err) {
    toast(t('player.failed', { error: err.message }), { level: 'error' });
  }
}

function setMuted(muted) {
  const all = new Set([...document.querySelectorAll('audio.media-player, video.media-player')]);
  for (const p of players.values()) all.add(p.media);
  for (const media of all) {
    if (muted) {
      if (!media.muted) media.dataset.trayMuted = '1';
      media.muted = true;
    } else if (media.dataset.trayMuted) {
      media.muted = false;
      delete media.dataset.trayMuted;
    }
  }
}

on('voice:mute', (muted) => setMuted(!!muted));
on('lang:changed', () => {
  for (const p of players.values()) {
    if (p.bar) p.bar.setAttribute('aria-label', t('player.now_playing'));
    renderBar(p);
  }
});
on('voice:volume', (volume) => {
  if (typeof volume !== 'number' || !Number.isFinite(volume)) return;
  master = Math.max(0, Math.min(1, volume));
  for (const p of players.values()) applyVolume(p);
});
