// App icons that render on every machine (no emoji font needed): a manifest's "icon" names
// one of the vendored Lucide icons ("music"), an image file in the app folder ("icon.png",
// served by /apps/<id>/icon) or a short text such as an emoji. Anything else, an unknown
// name or an image that fails to load falls back to the app's initial on a coloured tile.
import { NAMES } from '../../vendor/lucide/names.js';
import { signedAppUrl } from '../core/api.js';
import { el, toText } from '../core/safe.js';

const SET_NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const IMAGE_FILE = /\.(?:png|svg|jpe?g|gif|webp)$/i;
const MAX_TEXT_CHARS = 4;
/** Saturation and lightness of the tile colours: white glyphs stay readable on every hue. */
const TILE_SL = '55% 40%';
/** Image URLs that failed to load: later tiles go straight to the initial. */
const failed = new Set();

/** "set" | "file" | "text" | "initial": how an icon string is drawn. */
export function iconKind(iconValue) {
  const value = toText(iconValue).trim();
  if (!value) return 'initial';
  if (SET_NAME.test(value)) return NAMES.has(value) ? 'set' : 'initial';
  if (IMAGE_FILE.test(value) && !value.includes('..') && !value.startsWith('/')) return 'file';
  return [...value].length <= MAX_TEXT_CHARS ? 'text' : 'initial';
}

/** A stable hue per app id, so an app keeps its colour across reloads and machines. */
function hue(id) {
  let h = 0;
  for (const c of toText(id)) h = (h * 31 + c.codePointAt(0)) % 360;
  return h;
}

function initial(app) {
  const name = toText(app.name).trim() || toText(app.id).trim();
  return ([...name][0] || '?').toUpperCase();
}

function showInitial(tile, app) {
  tile.dataset.iconKind = 'initial';
  tile.replaceChildren(el('span', { class: 'app-tile-initial', text: initial(app) }));
}

/**
 * The icon of ``app`` ({id, name, icon}) on a tile; ``cls`` adds a size class.
 * Tiles carry data-icon-kind so that what was drawn can be checked.
 */
export function appIcon(app, cls = '') {
  const tile = el('span', { class: `app-tile ${cls}`.trim(), attrs: { 'aria-hidden': 'true' } });
  tile.style.backgroundColor = `hsl(${hue(app.id)} ${TILE_SL})`;
  const value = toText(app.icon).trim();
  const kind = iconKind(value);
  tile.dataset.iconKind = kind;
  if (kind === 'set' || kind === 'file') {
    const src = kind === 'set' ? `/static/vendor/lucide/icons/${value}.svg`
      : signedAppUrl(toText(app.id), `/apps/${encodeURIComponent(toText(app.id))}/icon`);
    if (failed.has(src)) {
      showInitial(tile, app);
      return tile;
    }
    const img = el('img', { class: `app-tile-img app-tile-${kind}`, attrs: { src, alt: '', draggable: 'false' } });
    // The tile on the page, not the one built here: a redraw in place (core/morph.js) may
    // have moved this img into the tile already shown, or given that tile's img a new src.
    img.addEventListener('error', () => {
      failed.add(img.getAttribute('src') || src);
      const shown = img.parentElement;
      if (shown) showInitial(shown, app);
    });
    tile.appendChild(img);
  } else if (kind === 'text') {
    tile.appendChild(el('span', { class: 'app-tile-text', text: value }));
  } else {
    showInitial(tile, app);
  }
  return tile;
}
