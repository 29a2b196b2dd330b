// The only module that talks to the server: fetch for the HTTP API, one WebSocket for events
// (and for the command bar's drafts, sendOnEvents).
// Every failure becomes an ApiError with a message a user can read; callers show it.
import { DEFAULTS } from './defaults.js';

// The launch token never travels as a cookie: a cookie reaches every server on every
// loopback port (browsers don't isolate cookies by port). It lives in memory and in this
// tab's sessionStorage (scoped to our origin, port included, so a reload of the tab keeps
// it and no other port can read it), and goes out as Authorization: Bearer. The events
// WebSocket, which cannot carry headers, sends it as ?token= to our own origin only.
const TOKEN_KEY = 'aios.token';
let token = null;

function stored() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null; // storage disabled: the token lives in memory only
  }
}

/** Read ?token= once (else the tab's stored one), and strip it from the address bar. */
export function initAuth() {
  const url = new URL(location.href);
  const value = url.searchParams.get('token');
  if (value) {
    token = value;
    try {
      sessionStorage.setItem(TOKEN_KEY, value);
    } catch {
      // memory only
    }
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
  } else {
    token = stored();
  }
}

// ------------------------------------------------------------------ app files

// An <img> cannot send the token, so an app's files and icon are loaded with a signed
// query (?exp=&sig=) that opens one app's files for a while (GET /api/file-grants).
let grants = new Map();
let grantTimer = null;

/** Fetch the grants now and again before they expire; resolves once the first arrived. */
export async function refreshFileGrants() {
  clearTimeout(grantTimer);
  let ttlMs = DEFAULTS.fileGrantRetryMs;
  try {
    const reply = await request('GET', '/api/file-grants');
    if (reply && reply.grants && typeof reply.grants === 'object') {
      grants = new Map(Object.entries(reply.grants));
      ttlMs = Math.max(DEFAULTS.fileGrantRetryMs, (Number(reply.ttl) || 0) * 1000 / 2);
    }
  } catch (err) {
    console.warn('file grants unavailable', err.message);
  }
  grantTimer = setTimeout(refreshFileGrants, ttlMs);
}

/** The signed URL of a path under /apps/<appId>/ (files/… or icon); the path as is when no grant. */
export function signedAppUrl(appId, path) {
  const g = grants.get(appId);
  if (!g) return path;
  const q = new URLSearchParams({ exp: String(g.exp), sig: String(g.sig) });
  return `${path}${path.includes('?') ? '&' : '?'}${q}`;
}

export class ApiError extends Error {
  constructor(message, { status = 0, body = null, kind = 'http' } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.kind = kind; // "http" | "network" | "timeout"
  }
}

/** Messages for failures that have no server text; main.js installs translated ones. */
let describe = {
  network: () => 'Cannot reach the system service',
  timeout: () => 'The request timed out',
  http: (status) => `HTTP ${status}`,
};

export function setErrorText(fns) {
  describe = { ...describe, ...fns };
}

/** Called once a request is refused with 401: the launch token this page holds is stale. */
let onUnauthorized = () => {};

export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

function refused(res, msg) {
  if (res.status === 401) onUnauthorized(msg);
}

// keepalive: the request outlives the page (sent from pagehide; unlike sendBeacon it can
// carry the Authorization header).
async function request(method, path, { json, body, headers = {}, timeout = DEFAULTS.requestTimeoutMs,
  keepalive = false, raw = false } = {}) {
  const init = { method, credentials: 'omit', keepalive, headers: { Accept: 'application/json', ...headers } };
  if (token) init.headers.Authorization = `Bearer ${token}`;
  if (json !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), timeout);
  init.signal = ctrl.signal;
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    const kind = err && err.name === 'AbortError' ? 'timeout' : 'network';
    throw new ApiError(describe[kind](), { kind });
  } finally {
    clearTimeout(timer);
  }
  let payload = null;
  const text = await res.text().catch(() => '');
  if (raw && res.ok) return text; // the body as text (a JSONL trace)
  if (text) {
    try {
      payload = JSON.parse(text);
    } catch {
      payload = null;
    }
  }
  if (!res.ok) {
    const msg = payload && typeof payload.error === 'string' && payload.error
      ? payload.error : describe.http(res.status);
    refused(res, msg);
    throw new ApiError(msg, { status: res.status, body: payload });
  }
  return payload;
}

/** POST JSON, expect audio back (or a JSON {error}); resolves to a Blob. */
async function requestAudio(path, json, timeout) {
  const init = { method: 'POST', credentials: 'omit',
    headers: { Accept: 'audio/wav, application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify(json) };
  if (token) init.headers.Authorization = `Bearer ${token}`;
  const ctrl = new AbortController();
  const timer = setTimeout(() => ctrl.abort(), timeout);
  init.signal = ctrl.signal;
  let res;
  try {
    res = await fetch(path, init);
    if (!res.ok) {
      const payload = await res.json().catch(() => null);
      const msg = payload && typeof payload.error === 'string' && payload.error
        ? payload.error : describe.http(res.status);
      refused(res, msg);
      throw new ApiError(msg, { status: res.status, body: payload });
    }
    return await res.blob();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    const kind = err && err.name === 'AbortError' ? 'timeout' : 'network';
    throw new ApiError(describe[kind](), { kind });
  } finally {
    clearTimeout(timer);
  }
}

const long = DEFAULTS.longRequestTimeoutMs;

export const api = {
  health: () => request('GET', '/api/health'),
  apps: () => request('GET', '/api/apps'),
  open: (app, sessionId) => request('POST', `/api/apps/${encodeURIComponent(app)}/open`,
    { json: sessionId ? { session_id: sessionId } : {}, timeout: long }),
  instruction: (text, sessionId) => request('POST', '/api/instruction',
    { json: sessionId ? { text, session_id: sessionId } : { text }, timeout: long }),
  /** body: {app, action_id, session_id?, ...payload of the control} */
  action: (body) => request('POST', '/api/action', { json: body, timeout: long }),
  snapshot: (elements) => request('POST', '/api/ui/snapshot', { json: { elements } }),
  /** The UI changes still applied (uiops.js re-applies them on load): {ops: [...]}. */
  uiOps: () => request('GET', '/api/ui/ops'),
  config: () => request('GET', '/api/config'),
  saveConfig: (updates) => request('POST', '/api/config', { json: { updates } }),
  /** change: {grant?: [...], revoke?: [...]} -> {app, permissions: {requested, granted}} */
  setPermissions: (app, change) => request('POST', `/api/apps/${encodeURIComponent(app)}/permissions`, { json: change }),
  /** Each atomic tool's risk classes and the classes each mode asks about (from the tools'
   *  specs): {risks, modes: {mode: [risk]}, tools: [{tool, risks}]}. */
  approvalsCatalog: () => request('GET', '/api/approvals/catalog'),
  /** The user's rules for an app's tools (DESIGN §12): {tool: 'allow'|'ask'|'never'}. */
  policy: (app) => request('GET', `/api/apps/${encodeURIComponent(app)}/policy`),
  /** change: {tool: 'allow'|'ask'|'never'|null} (null clears) -> the app's rules after it */
  setPolicy: (app, change) => request('POST', `/api/apps/${encodeURIComponent(app)}/policy`, { json: change }),
  audit: ({ app = '', session = '', limit = DEFAULTS.auditLimit } = {}) => {
    const q = new URLSearchParams();
    if (app) q.set('app', app);
    if (session) q.set('session', session);
    q.set('limit', String(limit));
    return request('GET', `/api/audit?${q}`);
  },
  restartApp: (app) => request('POST', `/api/apps/${encodeURIComponent(app)}/restart`, { json: {}, timeout: long }),
  voiceListen: (lang) => request('POST', '/api/voice/listen', { json: { lang }, timeout: long }),
  voiceTranscribe: (blob, lang) => request('POST', `/api/voice/transcribe?lang=${encodeURIComponent(lang)}`,
    { body: blob, headers: { 'Content-Type': blob.type || 'application/octet-stream' }, timeout: long }),
  /** The server renders speech (pyttsx3) and answers a WAV the page plays. */
  voiceSpeak: (text, lang) => requestAudio('/api/voice/speak', { text, lang }, long),
  voiceStatus: () => request('GET', '/api/voice/status'),
  /** The decisions waiting for the user, and the runs not finished (DESIGN §12). */
  pendingInteractions: () => request('GET', '/api/interactions?pending=1'),
  activeRuns: () => request('GET', '/api/runs?active=1'),
  /** decision: allow | allow_session | allow_always | deny; a 409 carries body.current. */
  answerInteraction: (id, decision) => request('POST', `/api/interactions/${encodeURIComponent(id)}`,
    { json: { decision } }),
  /** The answer to a choice / confirm / input card (DESIGN §13): {value}. */
  answerQuestion: (id, value) => request('POST', `/api/interactions/${encodeURIComponent(id)}`,
    { json: { value } }),
  cancelRun: (runId) => request('POST', `/api/runs/${encodeURIComponent(runId)}/cancel`, { json: {} }),
  /** The session's saved windows (DESIGN §13): {windows: [{app, x, y, w, h, z, minimized, maximized}], updated}. */
  layout: (sessionId) => request('GET', `/api/sessions/${encodeURIComponent(sessionId)}/layout`),
  saveLayout: (sessionId, windows, { keepalive = false } = {}) => request('PUT',
    `/api/sessions/${encodeURIComponent(sessionId)}/layout`, { json: { windows }, keepalive }),
  /** The session's app instances (DESIGN §13): [{instance_id, app, state, parent_instance_id, …}]. */
  instances: (sessionId) => request('GET', `/api/instances?session=${encodeURIComponent(sessionId)}`),
  /** The user brought this instance's window to the front; 404 for another session's. */
  focusInstance: (id, sessionId) => request('POST', `/api/instances/${encodeURIComponent(id)}/focus`,
    { json: { session_id: sessionId } }),
  /** The user closed this instance's window (a waiting parent goes on with closed_by_user). */
  closeInstance: (id, sessionId) => request('POST', `/api/instances/${encodeURIComponent(id)}/close`,
    { json: { session_id: sessionId } }),
  /** Send an ended run's instruction, open or action again (a new run). */
  retryRun: (runId) => request('POST', `/api/runs/${encodeURIComponent(runId)}/retry`, { json: {}, timeout: long }),
  /** The conversations, most recently used first (DESIGN §13). */
  /** Reminders and scheduled runs (DESIGN §18), the next due first. */
  automations: () => request('GET', '/api/automations'),
  /** change: {paused?, at? (unix s), cron?, what?} -> the automation after it */
  editAutomation: (id, change) => request('PATCH', `/api/automations/${encodeURIComponent(id)}`, { json: change }),
  deleteAutomation: (id) => request('DELETE', `/api/automations/${encodeURIComponent(id)}`),
  /** Where the page looks: the desktop announces what ends elsewhere (DESIGN §18). */
  attention: (sessionId, visible) => request('POST', '/api/attention',
    { json: { session_id: sessionId || null, visible } }),
  sessions: (limit) => request('GET', `/api/sessions?limit=${encodeURIComponent(limit)}`),
  newSession: () => request('POST', '/api/sessions', { json: {} }),
  /** One page of a session's timeline, oldest first: {entries, has_more, next_before}. */
  timeline: (sid, { before = null, limit } = {}) => {
    const q = new URLSearchParams({ limit: String(limit) });
    if (before) q.set('before', before);
    return request('GET', `/api/sessions/${encodeURIComponent(sid)}/timeline?${q}`);
  },
  /** The session's topic tree (DESIGN §18): {session_id, active, topics: [root + children]}. */
  topics: (sid) => request('GET', `/api/sessions/${encodeURIComponent(sid)}/topics`),
  /** Resume a topic: answered like an instruction (its window's last view in `results`). */
  resumeTopic: (sid, id, locale) => request('POST',
    `/api/sessions/${encodeURIComponent(sid)}/topics/${encodeURIComponent(id)}/resume`,
    { json: locale ? { locale } : {}, timeout: long }),
  /** Memories (DESIGN §15), newest first: ``filters`` {scope, state, source (a prefix:
   *  'user' | 'app:' | 'extracted:'), q, limit, offset} -> {memories, proposed}. */
  memories: (filters = {}) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filters)) if (v !== '' && v !== null && v !== undefined) q.set(k, String(v));
    return request('GET', `/api/memories?${q}`);
  },
  /** fields: {text?, tags?, pinned?} -> the memory after the change */
  editMemory: (id, fields) => request('PATCH', `/api/memories/${encodeURIComponent(id)}`, { json: fields }),
  deleteMemory: (id) => request('DELETE', `/api/memories/${encodeURIComponent(id)}`),
  acceptMemory: (id) => request('POST', `/api/memories/${encodeURIComponent(id)}/accept`, { json: {} }),
  rejectMemory: (id) => request('POST', `/api/memories/${encodeURIComponent(id)}/reject`, { json: {} }),
  /** A session's trace (DESIGN §16) as the JSONL text the API answers; ``run`` keeps one run's lines. */
  trace: (sid, run = '') => request('GET', `/api/traces/${encodeURIComponent(sid)}${run ? `?run=${encodeURIComponent(run)}` : ''}`,
    { raw: true, headers: { Accept: 'application/x-ndjson' } }),
  /** Model calls' tokens and cost by session | app | model | day: {by, since, groups: [{key, calls, …, cost}]}. */
  usage: (by, since = null) => request('GET', `/api/usage?by=${encodeURIComponent(by)}${since !== null ? `&since=${encodeURIComponent(since)}` : ''}`),
  /** Settings → MCP (DESIGN §17): {servers: [{name, status, error, stderr, tools, config, …}]} */
  mcpServers: () => request('GET', '/api/mcp/servers'),
  /** body: {name, command | url, token?, headers?, apps?, …} -> the server */
  addMcpServer: (body) => request('POST', '/api/mcp/servers', { json: body }),
  /** fields: {enabled?, apps?, tools?: {<tool>: {risk?, apps?, enabled?}}, …} -> the server */
  changeMcpServer: (name, fields) => request('PATCH', `/api/mcp/servers/${encodeURIComponent(name)}`, { json: fields }),
  removeMcpServer: (name) => request('DELETE', `/api/mcp/servers/${encodeURIComponent(name)}`),
  // the desktop as an MCP server (DESIGN §17): Settings → MCP server
  mcpTokens: () => request('GET', '/api/mcp/tokens'),
  createMcpToken: (name, scopes) => request('POST', '/api/mcp/tokens', { json: { name, scopes } }),
  revokeMcpToken: (id) => request('DELETE', `/api/mcp/tokens/${encodeURIComponent(id)}`),
  /** A self file (SOUL | USER | AGENTS | MEMORY): {name, text}. */
  selfFile: (name) => request('GET', `/api/self/${encodeURIComponent(name)}`),
  saveSelfFile: (name, text) => request('PUT', `/api/self/${encodeURIComponent(name)}`, { json: { text } }),
};

// ------------------------------------------------------------------ voice stream

/**
 * Conversation mode's microphone (DESIGN §18): a WebSocket to /api/voice/stream that takes
 * 16 kHz PCM as binary messages (source 'page'; 'server': the server's own microphone) and
 * answers speech_start / partial / turn_end / error.
 * Audio sent before it opens is dropped (a few ms of room noise). onClose() when it closed
 * without close() being called.
 */
export function openVoiceStream(lang, source, { onMessage, onClose }) {
  const q = new URLSearchParams({ lang, source });
  if (token) q.set('token', token);
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const socket = new WebSocket(`${scheme}://${location.host}/api/voice/stream?${q}`);
  socket.binaryType = 'arraybuffer';
  let closing = false;
  socket.addEventListener('message', (ev) => {
    if (typeof ev.data !== 'string') return;
    try {
      const msg = JSON.parse(ev.data);
      if (msg && typeof msg === 'object') onMessage(msg);
    } catch {
      console.warn('ignored a non-JSON voice message');
    }
  });
  socket.addEventListener('close', () => { if (!closing) onClose(); });
  const open = () => socket.readyState === WebSocket.OPEN;
  return {
    sendAudio: (buffer) => { if (open()) socket.send(buffer); },
    sendJson: (message) => {
      if (!open()) return false;
      socket.send(JSON.stringify(message));
      return true;
    },
    close: () => {
      closing = true;
      socket.close();
    },
  };
}

// ------------------------------------------------------------------ events

// Where this tab is in the system's event stream (DESIGN §12 "Events"): the last seq it
// handled and the epoch that seq belongs to. Kept beside the token so that a reload
// resumes with ?since= instead of losing what happened meanwhile.
const SEQ_KEY = 'aios.events.seq';
const EPOCH_KEY = 'aios.events.epoch';
const cursor = { seq: null, epoch: null };
/** The events WebSocket while it is open: what the page says back on it (drafts, DESIGN §18). */
let liveSocket = null;

/** Send ``message`` (an object, as JSON) on the events WebSocket; false when it is not open
 *  (then nothing is sent: a draft is worth nothing later). */
export function sendOnEvents(message) {
  if (!liveSocket || liveSocket.readyState !== WebSocket.OPEN) return false;
  liveSocket.send(JSON.stringify(message));
  return true;
}

function loadCursor() {
  try {
    const seq = Number(sessionStorage.getItem(SEQ_KEY));
    const epoch = sessionStorage.getItem(EPOCH_KEY);
    if (epoch && Number.isSafeInteger(seq) && seq >= 0) {
      cursor.seq = seq;
      cursor.epoch = epoch;
    }
  } catch {
    // storage disabled: the cursor lives in memory only
  }
}

function saveCursor(seq, epoch) {
  cursor.seq = seq;
  cursor.epoch = epoch;
  try {
    sessionStorage.setItem(SEQ_KEY, String(seq));
    sessionStorage.setItem(EPOCH_KEY, epoch);
  } catch {
    // memory only
  }
}

/** The last event this tab handled: {seq, epoch} (nulls before the first hello). */
export function eventCursor() {
  return { ...cursor };
}

/**
 * Keep one WebSocket to /api/events open, reconnecting with backoff and resuming from the
 * last seq handled (?since=&epoch=), so events that came while it was away are replayed.
 * onMessage(obj) gets each parsed JSON message once (replayed duplicates are dropped by
 * seq); onState("connecting"|"open"|"closed", isReconnect); onResync(reason) when the
 * stream has a gap it cannot fill — a "resync" event, or a hello of another epoch (the
 * server restarted) — so the caller reloads the state events would have updated.
 */
export function connectEvents({ onMessage, onState, onResync = () => {} }) {
  let delay = DEFAULTS.reconnectMinMs;
  let opened = false;
  let stopped = false;
  let socket = null;
  if (cursor.epoch === null) loadCursor();

  const url = () => {
    const q = new URLSearchParams();
    if (token) q.set('token', token);
    if (cursor.epoch !== null) {
      q.set('since', String(cursor.seq));
      q.set('epoch', cursor.epoch);
    }
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const query = q.toString();
    return `${scheme}://${location.host}/api/events${query ? `?${query}` : ''}`;
  };

  // One connection's view of the stream: a resync is reported once per connection even
  // when both its hello (another epoch) and the resync event that follows say so.
  let resynced = false;
  const handle = (msg) => {
    const seq = msg.seq;
    const hasSeq = Number.isSafeInteger(seq) && typeof msg.epoch === 'string';
    if (msg.type === 'hello') {
      resynced = false;
      if (hasSeq && msg.epoch !== cursor.epoch) {
        const known = cursor.epoch !== null;
        saveCursor(seq, msg.epoch);
        if (known) {
          resynced = true;
          onResync('epoch');
        }
      }
      onMessage(msg);
      return;
    }
    if (msg.type === 'resync') {
      if (hasSeq) saveCursor(seq, msg.epoch);
      if (!resynced) onResync('resync');
      resynced = true;
      return;
    }
    if (hasSeq) {
      if (msg.epoch === cursor.epoch && seq <= cursor.seq) return; // already handled
      saveCursor(seq, msg.epoch);
    }
    onMessage(msg);
  };

  const connect = () => {
    if (stopped) return;
    onState('connecting', opened);
    try {
      socket = new WebSocket(url());
    } catch (err) {
      console.warn('WebSocket could not be created', err);
      schedule();
      return;
    }
    socket.addEventListener('open', () => {
      liveSocket = socket;
      delay = DEFAULTS.reconnectMinMs;
      onState('open', opened);
      opened = true;
    });
    socket.addEventListener('message', (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        console.warn('ignored a non-JSON event');
        return;
      }
      if (msg && typeof msg === 'object') handle(msg);
    });
    socket.addEventListener('close', () => {
      if (liveSocket === socket) liveSocket = null;
      onState('closed', opened);
      // A browser hides why a WebSocket handshake failed; ask the API. A 401 there means
      // the token is stale (the handler is told by request()): reconnecting cannot help.
      request('GET', '/api/health').then(schedule, (err) => {
        if (err.status !== 401) schedule();
      });
    });
  };

  const schedule = () => {
    if (stopped) return;
    setTimeout(connect, delay);
    delay = Math.min(delay * DEFAULTS.reconnectFactor, DEFAULTS.reconnectMaxMs);
  };

  connect();
  return () => {
    stopped = true;
    if (socket) socket.close();
  };
}
