// The desktop's shared state. Plain data; modules change it and emit an event.
import { emit } from './bus.js';
import { DEFAULTS } from './defaults.js';

export const state = {
  /** app id -> {id, name, icon, description, status, port, endpoint, error?} */
  apps: new Map(),
  /** One desktop session: the first reply's session_id is reused for every later call. */
  sessionId: null,
  /** Masked config from GET /api/config, and its llm summary. */
  config: null,
  llm: null,
  lang: 'zh-CN',
  muted: false,
  /** Why the server's speech engine failed last, or null while it works. */
  speechError: null,
  voiceRate: DEFAULTS.voiceRate,
  /** "connecting" | "open" | "closed" | "unauthorized" (the token is stale: no reconnecting) */
  wsState: 'connecting',
  /** "starting" | "ready" | "unknown" */
  health: 'unknown',
  /** Memories proposed and waiting for the user's yes (the memory badge, DESIGN §15). */
  memoryProposed: 0,
};

// The session outlives a reload and a restart of the system (DESIGN §13: the conversation
// and the layout are the stored session's): its id is kept in this origin's localStorage.
const SESSION_KEY = 'aios.session';

/** Use session ``id`` from now on (and after a reload); emits "session:remembered" {session_id}. */
export function rememberSession(id) {
  if (typeof id !== 'string' || !id || id === state.sessionId) return;
  state.sessionId = id;
  emit('session:remembered', { session_id: id });
  try {
    localStorage.setItem(SESSION_KEY, id);
  } catch {
    // storage disabled: the session lives in memory only
  }
}

try {
  state.sessionId = localStorage.getItem(SESSION_KEY) || null;
} catch {
  // storage disabled
}

// Manifests may name an app per locale (DESIGN §3): /api/apps sends `name` / `description`
// in the server's UI language plus `names` / `descriptions` with every locale's, so the page
// switches language without asking again.

function inLang(dict, lang, fallback) {
  if (dict && typeof dict === 'object' && typeof dict[lang] === 'string' && dict[lang]) return dict[lang];
  return fallback;
}

/** Give every app its name and description in ``lang`` (state.lang by default). */
export function localizeApps(lang = state.lang) {
  for (const app of state.apps.values()) {
    app.name = inLang(app.names, lang, app.name);
    app.description = inLang(app.descriptions, lang, app.description);
  }
}

/** What the start menu's search looks in: the id, every locale's name and description. */
export function appSearchText(app) {
  const texts = [app.id, app.name, app.description];
  for (const dict of [app.names, app.descriptions]) {
    if (dict && typeof dict === 'object') texts.push(...Object.values(dict));
  }
  return texts.filter((s) => typeof s === 'string').join(' ').toLowerCase();
}
