// media: {url, type: audio|video, title?, artist?, cover?, autoplay?, start?, id?, on_end?, on_next?}
// A window's top-level media view plays through its window's one player (player.js): the
// element outlives re-renders, so a volume change or a pause goes on where the track is, and a
// playlist view keeps it playing in the now-playing bar. start (seconds) restarts the track
// there; a different url starts at 0. on_end / on_next name the app's actions for the end of
// the track and the bar's next button. A media view nested in a dashboard plays on its own.
import { icon } from '../core/icons.js';
import { el, isObject, toText } from '../core/safe.js';
import { claim, mediaElement, release, trackOf, volumeOf } from '../desk/player.js';

const VIDEO_EXT = /\.(mp4|webm|ogv|mov|m4v)(\?|#|$)/i;

export function render(data, ctx) {
  if (!isObject(data) || typeof data.url !== 'string') throw new Error('media view needs data.url');
  const kind = data.type === 'video' || (data.type !== 'audio' && VIDEO_EXT.test(data.url)) ? 'video' : 'audio';
  const title = toText(data.title ?? '');
  const sub = toText(data.artist ?? data.sub ?? data.subtitle ?? '');
  const head = el('div', { class: 'media-head' },
    el('div', { class: 'media-art' }, icon(kind === 'video' ? 'film' : 'music')),
    el('div', { class: 'media-info' },
      el('div', { class: 'media-title', text: title }),
      sub ? el('div', { class: 'media-sub', text: sub }) : null));
  if (typeof data.cover === 'string') {
    const cover = ctx.url(data.cover, 'img');
    if (cover) head.firstChild.replaceWith(el('img', { class: 'media-cover', src: cover, alt: '', referrerPolicy: 'no-referrer' }));
  }
  const url = ctx.url(data.url, 'media');
  if (!url) return el('div', { class: 'view view-media' }, head, ctx.blocked(data.url));
  const problem = el('p', { class: 'media-error', hidden: true, text: ctx.t('view.media_error') });
  const track = trackOf({ ...data, type: kind }, ctx.app, ctx.fromUser);
  if (ctx.depth === 0 && track && typeof ctx.app === 'string') {
    // Drawn where the slot is once the view is in the page: the element never leaves the page.
    const player = claim(ctx.app, track);
    player.setProblem(problem);
    const slot = el('div', { class: 'media-slot' });
    ctx.afterMount(() => player.mount(slot));
    ctx.onCleanup(() => release(ctx.app));
    return el('div', { class: 'view view-media' }, head, slot, problem);
  }
  const player = mediaElement(kind);
  player.src = url;
  player.addEventListener('error', () => { problem.hidden = false; });
  const volume = volumeOf(data.volume);
  if (volume !== null) player.volume = volume;
  if (data.autoplay === true || (ctx.fromUser && data.autoplay !== false)) {
    ctx.afterMount(() => player.play().catch(() => {}));
  }
  ctx.onCleanup(() => {
    player.pause();
    player.removeAttribute('src');
    player.load();
  });
  return el('div', { class: 'view view-media' }, head, player, problem);
}
