// Line icons for the desktop chrome, built as SVG DOM (no markup strings).
// Each entry is a list of [element, attributes] drawn with stroke="currentColor".
const NS = 'http://www.w3.org/2000/svg';

const SHAPES = {
  shield: [['path', { d: 'M12 3l7 3v5c0 4.5-3 8.2-7 10-4-1.8-7-5.5-7-10V6z' }], ['path', { d: 'M9 12l2 2 4-4' }]],
  start: [['rect', { x: 3, y: 3, width: 7, height: 7, rx: 1.5 }], ['rect', { x: 14, y: 3, width: 7, height: 7, rx: 1.5 }],
    ['rect', { x: 3, y: 14, width: 7, height: 7, rx: 1.5 }], ['rect', { x: 14, y: 14, width: 7, height: 7, rx: 1.5 }]],
  mic: [['rect', { x: 9, y: 2, width: 6, height: 12, rx: 3 }], ['path', { d: 'M5 10a7 7 0 0 0 14 0' }],
    ['path', { d: 'M12 17v5M8 22h8' }]],
  volume: [['path', { d: 'M4 9h4l5-4v14l-5-4H4z' }], ['path', { d: 'M16.5 8.5a5 5 0 0 1 0 7' }],
    ['path', { d: 'M19 6a8.5 8.5 0 0 1 0 12' }]],
  speechOff: [['path', { d: 'M4 9h4l5-4v14l-5-4H4z' }], ['path', { d: 'M19 7v6' }], ['circle', { cx: 19, cy: 17, r: 0.6 }]],
  mute: [['path', { d: 'M4 9h4l5-4v14l-5-4H4z' }], ['path', { d: 'M17 9l5 6M22 9l-5 6' }]],
  net: [['path', { d: 'M2 8.5a15 15 0 0 1 20 0' }], ['path', { d: 'M5.5 12a10 10 0 0 1 13 0' }],
    ['path', { d: 'M9 15.5a5 5 0 0 1 6 0' }], ['circle', { cx: 12, cy: 19, r: 1 }]],
  netOff: [['path', { d: 'M2 8.5a15 15 0 0 1 20 0' }], ['path', { d: 'M9 15.5a5 5 0 0 1 6 0' }],
    ['path', { d: 'M3 3l18 18' }]],
  chip: [['rect', { x: 6, y: 6, width: 12, height: 12, rx: 2 }], ['path', { d: 'M9 2v4M15 2v4M9 18v4M15 18v4M2 9h4M2 15h4M18 9h4M18 15h4' }],
    ['path', { d: 'M10 10h4v4h-4z' }]],
  moon: [['path', { d: 'M20 14.5A8 8 0 1 1 9.5 4a6.5 6.5 0 0 0 10.5 10.5z' }]],
  bell: [['path', { d: 'M6 16V11a6 6 0 0 1 12 0v5l2 2H4z' }], ['path', { d: 'M10 20a2 2 0 0 0 4 0' }]],
  minimize: [['path', { d: 'M6 12h12' }]],
  maximize: [['rect', { x: 6, y: 6, width: 12, height: 12, rx: 1.5 }]],
  restore: [['rect', { x: 5, y: 9, width: 10, height: 10, rx: 1.5 }], ['path', { d: 'M9 9V6.5A1.5 1.5 0 0 1 10.5 5H17.5A1.5 1.5 0 0 1 19 6.5v7a1.5 1.5 0 0 1-1.5 1.5H15' }]],
  close: [['path', { d: 'M7 7l10 10M17 7L7 17' }]],
  left: [['path', { d: 'M15 5l-7 7 7 7' }]],
  right: [['path', { d: 'M9 5l7 7-7 7' }]],
  settings: [['circle', { cx: 12, cy: 12, r: 3 }], ['path', { d: 'M12 2v3M12 19v3M2 12h3M19 12h3M4.9 4.9l2.1 2.1M17 17l2.1 2.1M4.9 19.1L7 17M17 7l2.1-2.1' }]],
  log: [['path', { d: 'M5 4h14v16H5z' }], ['path', { d: 'M8 8h8M8 12h8M8 16h5' }]],
  memory: [['path', { d: 'M12 5a3 3 0 0 0-5.8 1A3 3 0 0 0 4 10.5a3 3 0 0 0 1 4.8A3 3 0 0 0 9 19a3 3 0 0 0 3-1.2z' }],
    ['path', { d: 'M12 5a3 3 0 0 1 5.8 1A3 3 0 0 1 20 10.5a3 3 0 0 1-1 4.8A3 3 0 0 1 15 19a3 3 0 0 1-3-1.2z' }],
    ['path', { d: 'M12 5v12.8' }]],
  send: [['path', { d: 'M4 12l16-8-6 16-2-7z' }]],
  waves: [['path', { d: 'M3 12h2M7 8v8M11 5v14M15 8v8M19 10.5v3' }]],
  chat: [['path', { d: 'M4 5h16v11H10l-5 4v-4H4z' }], ['path', { d: 'M8 9.5h8M8 12.5h5' }]],
  stop: [['rect', { x: 6.5, y: 6.5, width: 11, height: 11, rx: 2 }]],
  why: [['circle', { cx: 12, cy: 12, r: 9 }], ['path', { d: 'M9.5 9.5a2.5 2.5 0 1 1 3.5 2.3c-.6.3-1 .9-1 1.6v.6M12 17h.01' }]],
  // 13-U: the player (views/media.js, player.js)
  play: [['path', { d: 'M8 5.5v13l10-6.5z' }]],
  pause: [['path', { d: 'M9 6v12M15 6v12' }]],
  next: [['path', { d: 'M6 6l8 6-8 6z' }], ['path', { d: 'M18 6v12' }]],
  music: [['path', { d: 'M9 18V5l11-2v13' }], ['circle', { cx: 6, cy: 18, r: 3 }], ['circle', { cx: 17, cy: 16, r: 3 }]],
  film: [['rect', { x: 3, y: 5, width: 18, height: 14, rx: 2 }], ['path', { d: 'M7 5v14M17 5v14M3 12h4M17 12h4' }]],
};

export function icon(name, cls = '') {
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('fill', 'none');
  svg.setAttribute('stroke', 'currentColor');
  svg.setAttribute('stroke-width', '1.8');
  svg.setAttribute('stroke-linecap', 'round');
  svg.setAttribute('stroke-linejoin', 'round');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', `icon ${cls}`.trim());
  for (const [tag, attrs] of SHAPES[name] || []) {
    const shape = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) shape.setAttribute(k, String(v));
    svg.appendChild(shape);
  }
  return svg;
}

/** Replace an element's icon (keeps other children such as badges). */
export function setIcon(node, name) {
  const old = node.querySelector(':scope > svg.icon');
  const fresh = icon(name);
  if (old) old.replaceWith(fresh);
  else node.prepend(fresh);
}
