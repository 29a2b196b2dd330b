// The desktop's shared state. Plain data; modules change it and emit an event.
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
};

export function rememberSession(id) {
  if (typeof id === 'string' && id) state.sessionId = id;
}
