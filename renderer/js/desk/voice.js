// Voice in the page (spec §10, DESIGN §10): the mic button listens once (Web Speech API when
// the engine has it, else the server listens on the machine's microphone), and replies are
// spoken (speechSynthesis when it has a voice for the language, else the server's TTS).
// Every failure is one visible line; mute stops both paths. Replies are spoken as the
// setting voice.speak_replies says (default: only answers to a spoken instruction), in the
// Chinese voice whenever the text is Chinese; the tray's volume applies to speech and to the
// page's <audio>/<video> elements (bus event 'volume:changed' {volume, muted}).
import { api } from '../core/api.js';
import { emit } from '../core/bus.js';
import { speechLang, t } from '../core/i18n.js';
import { state } from '../core/state.js';
import { toast } from './notify.js';
import { setMicState } from './taskbar.js';

// Errors after which the server's microphone is worth a try (no recognition service here).
// 'not-allowed' included: an embedded web view may refuse the page a microphone the server can use.
const SAVE_DELAY_MS = 400;
/** The slider's last position is saved once the user let go of it for this long. */
const FALLBACK_ERRORS = new Set(['network', 'service-not-allowed', 'not-allowed', 'audio-capture',
  'language-not-supported']);

let recognition = null;
let serverListening = false;

// The audio library's words for "no microphone here" (PortAudio, PyAudio, the Web Speech API).
const NO_MIC = /no default input device|invalid input device|pyaudio|audio-capture|no microphone|device not found/i;

/** A recognition failure as the user should read it: a missing microphone is one friendly sentence. */
function micError(raw) {
  const text = String(raw || 'unknown');
  return NO_MIC.test(text) ? t('mic.none') : t('mic.failed', { error: text });
}

function submit(text, source) {
  const clean = String(text || '').trim();
  if (!clean) {
    toast(t('mic.nothing'), { level: 'warning' });
    return;
  }
  toast(t('mic.heard', { text: clean }), { level: 'info' });
  emit('command:submit', { text: clean, source });
}

async function listenOnServer() {
  if (serverListening) return;
  serverListening = true;
  setMicState(true);
  try {
    const reply = await api.voiceListen(speechLang());
    if (reply && typeof reply.error === 'string' && reply.error) {
      toast(micError(reply.error), { level: 'error' });
    } else {
      submit(reply && reply.text, 'voice');
    }
  } catch (err) {
    toast(micError(err.message), { level: 'error' });
  } finally {
    serverListening = false;
    setMicState(false);
  }
}

/** The mic button: start one recognition, or stop the one in progress. */
export function listen() {
  if (recognition) {
    recognition.abort();
    return;
  }
  if (serverListening) return;
  const SR = window.SpeechRecognition || window.webkitSpeechRecognition;
  if (typeof SR !== 'function') {
    listenOnServer();
    return;
  }
  let rec;
  try {
    rec = new SR();
  } catch {
    listenOnServer();
    return;
  }
  recognition = rec;
  let settled = false;
  rec.lang = speechLang();
  rec.continuous = false;
  rec.interimResults = false;
  rec.maxAlternatives = 1;
  rec.onresult = (ev) => {
    settled = true;
    const result = ev.results && ev.results[0] && ev.results[0][0];
    submit(result ? result.transcript : '', 'voice');
  };
  rec.onerror = (ev) => {
    settled = true;
    recognition = null;
    if (FALLBACK_ERRORS.has(ev.error)) {
      listenOnServer();
    } else if (ev.error === 'no-speech') {
      toast(t('mic.nothing'), { level: 'warning' });
    } else if (ev.error !== 'aborted') {
      toast(micError(ev.error), { level: 'error' });
    }
  };
  rec.onend = () => {
    if (recognition === rec) recognition = null;
    if (!serverListening) setMicState(false);
    if (!settled) toast(t('mic.nothing'), { level: 'warning' });
  };
  try {
    rec.start();
    setMicState(true);
  } catch {
    recognition = null;
    listenOnServer();
  }
}

// ------------------------------------------------------------------ speaking

function voicesReady(synth) {
  if (synth.getVoices().length) return Promise.resolve(synth.getVoices());
  // Chromium fills the list asynchronously; wait briefly, then go on with what there is.
  return new Promise((resolve) => {
    const done = () => resolve(synth.getVoices());
    synth.addEventListener('voiceschanged', done, { once: true });
    setTimeout(done, 400);
  });
}

const CJK = /[\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/u;

/** The voice for `words`: Chinese whenever they contain CJK, English for Latin text, else the asked one. */
export function replyLang(words, lang) {
  if (CJK.test(words)) return 'zh-CN';
  if (/[A-Za-z]/.test(words)) return 'en-US';
  if (typeof lang === 'string' && lang) return lang;
  if (state.lang === 'en') return 'en-US';
  const configured = state.config && state.config.default_voice;
  return typeof configured === 'string' && configured ? configured : 'zh-CN';
}

function speakPolicy() {
  const v = state.config && state.config.voice;
  return v && ['voice', 'always', 'never'].includes(v.speak_replies) ? v.speak_replies : 'voice';
}

/**
 * The reply to an instruction or a click, read aloud as voice.speak_replies says: "voice"
 * (the default) only when the instruction came from the microphone (source 'voice').
 */
export function speakReply(text, source) {
  const policy = speakPolicy();
  if (policy === 'never' || (policy === 'voice' && source !== 'voice')) return Promise.resolve();
  return speak(text);
}

/** Bumped by stopSpeaking: a reply still on its way to an engine is then not said. */
let speechTurn = 0;

/** Speak a reply; resolves when it was handed to an engine (or refused with a toast). */
export async function speak(text, lang) {
  const words = String(text || '').trim();
  if (!words || state.muted) return;
  const turn = speechTurn;
  const want = replyLang(words, lang);
  const prefix = want.toLowerCase().split(/[-_]/)[0];
  const synth = window.speechSynthesis;
  if (synth && typeof window.SpeechSynthesisUtterance === 'function') {
    const voices = await voicesReady(synth);
    const voice = voices.find((v) => v.lang.replace('_', '-').toLowerCase() === want.toLowerCase())
      || voices.find((v) => v.lang.toLowerCase().startsWith(prefix));
    if (voice) {
      if (state.muted || turn !== speechTurn) return;
      const u = new SpeechSynthesisUtterance(words);
      u.voice = voice;
      u.lang = voice.lang;
      u.rate = state.voiceRate;
      u.volume = volume();
      u.onerror = (ev) => {
        // Cancelled by mute or by the next reply: not a failure. Anything else (e.g. the
        // engine refusing to speak before a user gesture) goes to the server's voice.
        if (ev.error !== 'interrupted' && ev.error !== 'canceled' && !state.muted) speakOnServer(words, want, turn);
      };
      synth.speak(u);
      return;
    }
  }
  await speakOnServer(words, want, turn);
}

let serverAudio = null;

function stopServerAudio() {
  if (serverAudio) {
    serverAudio.pause();
    URL.revokeObjectURL(serverAudio.src);
    serverAudio = null;
  }
}

async function speakOnServer(words, want, turn = speechTurn) {
  try {
    const wav = await api.voiceSpeak(words, want);
    setSpeechError(null);
    if (state.muted || turn !== speechTurn) return;
    stopServerAudio();
    const audio = new Audio(URL.createObjectURL(wav));
    audio.volume = volume();
    serverAudio = audio;
    audio.addEventListener('ended', () => { if (serverAudio === audio) stopServerAudio(); });
    try {
      await audio.play();
    } catch (err) {
      if (!err || err.name !== 'NotAllowedError') throw err;
      // The engine allows sound only after the user interacted with the page (the
      // welcome line comes before that): play it at the first click or key press.
      const later = () => { if (serverAudio === audio && !state.muted) audio.play().catch(() => {}); };
      document.addEventListener('pointerdown', later, { once: true, capture: true });
      document.addEventListener('keydown', later, { once: true, capture: true });
    }
  } catch (err) {
    // A broken engine fails every reply the same way: one tray state, not a toast each time.
    setSpeechError(err.message || String(err));
  }
}

function setSpeechError(message) {
  if (state.speechError === message) return;
  state.speechError = message;
  emit('voice:state', message);
}

/** Whether the desktop is speaking now (the page's speechSynthesis or the server's voice). */
export function isSpeaking() {
  const synth = window.speechSynthesis;
  if (synth && (synth.speaking || synth.pending)) return true;
  return !!serverAudio && !serverAudio.paused && !serverAudio.ended;
}

/** Stop what is being said now, and what is still on its way to be said (barge-in: the
 * user types, speaks or starts an instruction; mute). Later replies are spoken as usual. */
export function stopSpeaking() {
  speechTurn += 1;
  if (window.speechSynthesis) window.speechSynthesis.cancel();
  stopServerAudio();
}

/** Mute stops what is being said now; later replies are not spoken until unmuted. */
export function setMuted(muted) {
  state.muted = !!muted;
  if (state.muted) stopSpeaking();
  volumeChanged();
}

// ------------------------------------------------------------------ volume

function volume() {
  return typeof state.volume === 'number' ? Math.min(1, Math.max(0, state.volume)) : 1;
}

/** The page's audio and video elements follow the system volume and mute. */
function applyToMedia(node) {
  node.volume = volume();
  node.muted = !!state.muted;
}

function volumeChanged() {
  for (const node of document.querySelectorAll('audio, video')) applyToMedia(node);
  emit('volume:changed', { volume: volume(), muted: !!state.muted });
}

let saveTimer = null;

/** The tray's slider (0..1); saved as the setting voice.volume unless {save: false}. */
export function setVolume(value, { save = true } = {}) {
  const v = Number(value);
  if (!Number.isFinite(v)) return;
  state.volume = Math.min(1, Math.max(0, v));
  if (serverAudio) serverAudio.volume = volume();
  volumeChanged();
  if (!save) return;
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => {
    api.saveConfig({ voice: { volume: state.volume } })
      .catch((err) => toast(t('volume.save_failed', { error: err.message }), { level: 'error' }));
  }, SAVE_DELAY_MS);
}

/** Media an app starts later picks the volume up when it starts playing. */
const adopted = new WeakSet();
document.addEventListener('play', (ev) => {
  const node = ev.target;
  if (!(node instanceof HTMLMediaElement) || node === serverAudio || adopted.has(node)) return;
  adopted.add(node); // once: the app's own volume control stays in charge afterwards
  applyToMedia(node);
}, true);
