// media: {url, type: audio|video, title?, artist?, cover?, autoplay?}
import { el, isObject, toText } from '../safe.js';

const VIDEO_EXT = /\.(mp4|webm|ogv|mov|m4v)(\?|#|$)/i;

// Where each URL's playback was when its view was last replaced: a reply that
// re-renders the same track (a volume change, say) continues instead of restarting.
const resume = new Map();

/** data.volume as 0..1: accepts 0..1 or 0..100. */
function volumeOf(value) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  return Math.min(1, value > 1 ? value / 100 : value);
}

export function render(data, ctx) {
  if (!isObject(data) || typeof data.url !== 'string') throw new Error('media view needs data.url');
  const kind = data.type === 'video' || (data.type !== 'audio' && VIDEO_EXT.test(data.url)) ? 'video' : 'audio';
  const title = toText(data.title ?? '');
  const sub = toText(data.artist ?? data.sub ?? data.subtitle ?? '');
  const url = ctx.url(data.url, 'media');
  const head = el('div', { class: 'media-head' },
    el('div', { class: 'media-art', text: kind === 'video' ? '🎬' : '🎵' }),
    el('div', { class: 'media-info' },
      el('div', { class: 'media-title', text: title }),
      sub ? el('div', { class: 'media-sub', text: sub }) : null));
  if (typeof data.cover === 'string') {
    const cover = ctx.url(data.cover, 'img');
    if (cover) head.firstChild.replaceWith(el('img', { class: 'media-cover', src: cover, alt: '', referrerPolicy: 'no-referrer' }));
  }
  if (!url) return el('div', { class: 'view view-media' }, head, ctx.blocked(data.url));
  const player = el(kind, { class: `media-player media-${kind}`, controls: true, preload: 'metadata', src: url });
  const problem = el('p', { class: 'media-error', hidden: true, text: ctx.t('view.media_error') });
  player.addEventListener('error', () => { problem.hidden = false; });
  const volume = volumeOf(data.volume);
  if (volume !== null) player.volume = volume;
  const before = resume.get(url);
  resume.delete(url);
  if (before) {
    player.addEventListener('loadedmetadata', () => { player.currentTime = before.time; }, { once: true });
    if (before.playing) ctx.afterMount(() => player.play().catch(() => {}));
  }
  // Started by the user's click ("播放"), playback should start; an autoplay refusal
  // by the browser is not an error: the controls stay for a manual start.
  if (data.autoplay === true || (ctx.fromUser && data.autoplay !== false)) {
    ctx.afterMount(() => player.play().catch(() => {}));
  }
  ctx.onCleanup(() => {
    if (player.currentTime > 0) {
      resume.set(url, { time: player.currentTime, playing: !player.paused });
      if (resume.size > 20) resume.delete(resume.keys().next().value);
    }
    player.pause();
    player.removeAttribute('src');
    player.load();
  });
  return el('div', { class: 'view view-media' }, head, player, problem);
}
