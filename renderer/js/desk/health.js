// The system's configuration and health: the config at load and on change, the desktop's
// status line while the system starts or cannot remember anything, the app list and the
// welcome once it is ready.
import { api } from '../core/api.js';
import { DEFAULTS } from '../core/defaults.js';
import { setLang, t } from '../core/i18n.js';
import { isObject } from '../core/safe.js';
import { state } from '../core/state.js';
import * as settings from '../system/settings.js';
import * as apps from './apps.js';
import * as tray from './tray.js';
import * as voice from './voice.js';

let welcomed = false;

export async function loadConfig() {
  try {
    settings.adoptConfig(await api.config());
  } catch (err) {
    console.warn('config not loaded:', err.message);
    tray.renderLLM();
  }
}

export function onConfig(cfg) {
  if (isObject(cfg)) {
    if (typeof cfg.language === 'string') setLang(cfg.language);
    if (typeof cfg.voice_rate === 'number' && cfg.voice_rate > 0) state.voiceRate = cfg.voice_rate;
    if (isObject(cfg.voice) && typeof cfg.voice.volume === 'number') voice.setVolume(cfg.voice.volume, { save: false });
  }
  tray.renderLLM();
}

function setDesktopStatus(text, level) {
  const node = document.getElementById('desktop_status');
  node.textContent = text;
  node.dataset.level = level || '';
  node.hidden = !text;
}

export async function pollHealth() {
  let h;
  try {
    h = await api.health();
  } catch (err) {
    state.health = 'unknown';
    if (state.wsState === 'unauthorized') return;
    setDesktopStatus(err.message, 'error');
    setTimeout(pollHealth, DEFAULTS.healthPollMs);
    return;
  }
  const status = h && typeof h.status === 'string' ? h.status : 'starting';
  if (h && typeof h.version === 'string') state.version = h.version;
  if (status === 'degraded') {
    // The system runs but cannot remember anything (full disk, damaged database):
    // say why until the store recovers, then carry on as if nothing happened.
    state.health = 'degraded';
    setDesktopStatus(t('health.degraded', { reason: String(h.store || '') }), 'error');
    setTimeout(pollHealth, DEFAULTS.healthPollMs);
    return;
  }
  const was = state.health;
  state.health = status === 'ready' ? 'ready' : 'starting';
  if (state.health !== 'ready' && apps.loaded()) {
    // An app restarting or hot-loaded later has its own status in the start menu.
    if (was === 'degraded') setDesktopStatus('');
    setTimeout(pollHealth, DEFAULTS.healthWatchMs);
    return;
  }
  if (state.health !== 'ready') {
    setDesktopStatus(t('health.starting'), 'info');
    setTimeout(pollHealth, DEFAULTS.healthPollMs);
    return;
  }
  setTimeout(pollHealth, DEFAULTS.healthWatchMs);
  if (was === 'ready' && apps.loaded()) return;
  setDesktopStatus(t('health.ready'), 'ready');
  setTimeout(() => setDesktopStatus(''), 2500);
  if (apps.loaded()) return;
  apps.markLoaded();
  await apps.loadApps();
  if (!welcomed) {
    welcomed = true;
    const voiceCfg = state.config && isObject(state.config.voice) ? state.config.voice : {};
    if (voiceCfg.welcome !== false) voice.speak(t('welcome'));
  }
}
