// Conversation mode (DESIGN §18, aios/duplex/turns.py): the microphone stays open, the
// server's voice activity detector says when the user starts speaking and when their turn
// is over, and each turn is submitted by itself as a spoken instruction (so its reply is
// spoken as voice.speak_replies says). Speech that starts while the desktop speaks stops
// its voice at once (barge-in). The taskbar's toggle shows the state: listening, hearing
// you, thinking.
//
// Audio: getUserMedia with the browser's echo cancellation (the desktop's own voice is
// taken out of what the microphone hears), an AudioContext at 16 kHz and an AudioWorklet
// (mic_worklet.js) that posts 20 ms of 16-bit PCM at a time to /api/voice/stream. The
// server also asks for longer speech before a barge-in while the desktop speaks, so the
// page tells it when that is (voice.js is asked every POLL_MS: it speaks through several
// engines, asking is simpler than hooking each).
// WebKitGTK has no getUserMedia: there the server listens on the machine's microphone
// (?source=server) and runs the same endpointer; the page only tells it when it speaks.
import { openVoiceStream } from '../core/api.js';
import { emit, on } from '../core/bus.js';
import { speechLang, t } from '../core/i18n.js';
import { icon } from '../core/icons.js';
import { toast } from './notify.js';
import { isSpeaking, stopSpeaking } from './voice.js';

const POLL_MS = 100;
const WORKLET_URL = new URL('./mic_worklet.js', import.meta.url);

const ui = {};
let session = null;

/** The state the toggle shows (data-state, which tests read): off | starting | listening | hearing | thinking. */
function show(name) {
  ui.button.dataset.state = name;
  ui.button.setAttribute('aria-pressed', String(name !== 'off'));
  ui.button.title = name === 'off' ? t('convmode.title') : `${t('convmode.title')}: ${t(`convmode.${name}`)}`;
  ui.label.textContent = name === 'off' ? '' : t(`convmode.${name}`);
  ui.label.hidden = name === 'off';
}

export function init() {
  ui.button = document.getElementById('conversation_mode_button');
  ui.label = document.getElementById('conversation_mode_state');
  ui.button.appendChild(icon('waves'));
  ui.button.addEventListener('click', toggle);
  on('command:done', ({ source }) => {
    if (session && source === 'voice' && ui.button.dataset.state === 'thinking') show('listening');
  });
  on('lang:changed', () => show(ui.button.dataset.state || 'off'));
  show('off');
}

export function toggle() {
  if (session) stop();
  else start();
}

/** Stop listening: the microphone, the audio graph and the socket are all let go. */
export function stop() {
  const s = session;
  session = null;
  if (!s) return;
  release(s);
  show('off');
}

function fail(message) {
  stop();
  toast(t('convmode.failed', { error: message }), { level: 'error' });
}

/** The microphone and the 16 kHz audio graph; false when the user turned the mode off meanwhile. */
async function openMic(s) {
  s.stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
  });
  if (session !== s) return false;
  s.context = new AudioContext({ sampleRate: 16000 });
  await s.context.audioWorklet.addModule(WORKLET_URL);
  return session === s;
}

/** Whether this web engine can open the microphone itself (WebKitGTK cannot). */
function pageCanListen() {
  const media = navigator.mediaDevices;
  return !!media && typeof media.getUserMedia === 'function' && typeof AudioWorkletNode === 'function';
}

function connect(s, source) {
  s.socket = openVoiceStream(speechLang(), source, {
    onMessage: (msg) => { if (session === s) onMessage(msg); },
    onClose: () => { if (session === s) fail(t('convmode.closed')); },
  });
  s.poll = setInterval(() => reportPlaying(s), POLL_MS);
}

async function start() {
  const s = { playing: false };
  session = s;
  show('starting');
  if (!pageCanListen()) {
    connect(s, 'server'); // the server listens on the machine's microphone
    return;
  }
  try {
    if (!(await openMic(s))) {
      release(s);
      return;
    }
  } catch (err) {
    release(s);
    if (session === s) fail(err && err.name === 'NotAllowedError' ? t('convmode.denied') : (err.message || String(err)));
    return;
  }
  connect(s, 'page');
  const tap = new AudioWorkletNode(s.context, 'aios-mic-tap');
  tap.port.onmessage = (ev) => s.socket.sendAudio(ev.data);
  s.context.createMediaStreamSource(s.stream).connect(tap);
}

/** Let go of what a session holds (idempotent). */
function release(s) {
  clearInterval(s.poll);
  if (s.stream) for (const track of s.stream.getTracks()) track.stop();
  if (s.context && s.context.state !== 'closed') s.context.close().catch(() => {});
  if (s.socket) s.socket.close();
}

function reportPlaying(s) {
  const playing = isSpeaking();
  if (playing !== s.playing && s.socket.sendJson({ type: 'playing', on: playing })) s.playing = playing;
}

function onMessage(msg) {
  switch (msg.type) {
    case 'ready':
      show('listening');
      return;
    case 'speech_start':
      if (isSpeaking()) {
        stopSpeaking(); // barge-in: the user speaks, the desktop stops
        ui.button.dataset.bargeIns = String(Number(ui.button.dataset.bargeIns || 0) + 1);
      }
      show('hearing');
      return;
    case 'partial':
      return; // an unfinished sentence: keep listening
    case 'turn_end':
      turnEnded(msg);
      return;
    case 'error':
      if (ui.button.dataset.state === 'starting') fail(String(msg.error || ''));
      else toast(t('convmode.failed', { error: String(msg.error || '') }), { level: 'error' });
      return;
    default:
  }
}

function turnEnded(msg) {
  const text = typeof msg.text === 'string' ? msg.text.trim() : '';
  if (!text) {
    toast(msg.error ? String(msg.error) : t('mic.nothing'), { level: 'warning' });
    show('listening');
    return;
  }
  show('thinking');
  toast(t('mic.heard', { text }), { level: 'info' });
  emit('command:submit', { text, source: 'voice' });
}

