// Voice in the page (spec §10, DESIGN §10): the mic button listens once (Web Speech API when
// the engine has it, else the server listens on the machine's microphone), and replies are
// spoken (speechSynthesis when it has a voice for the language, else the server's TTS).
// Every failure is one visible line; mute stops both paths.
import { api } from './api.js';
import { emit } from './bus.js';
import { speechLang, t } from './i18n.js';
import { toast } from './notify.js';
import { state } from './state.js';
import { setMicState } from './taskbar.js';

// Errors after which the server's microphone is worth a try (no recognition service here).
// 'not-allowed' included: an embedded web view may refuse the page a microphone the server can use.
const FALLBACK_ERRORS = new Set(['network', 'service-not-allowed', 'not-allowed', 'audio-capture',
  'language-not-supported']);

let recognition = null;
let serverListening = false;

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
      toast(t('mic.failed', { error: reply.error }), { level: 'error' });
    } else {
      submit(reply && reply.text, 'voice');
    }
  } catch (err) {
    toast(t('mic.failed', { error: err.message }), { level: 'error' });
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
      toast(t('mic.failed', { error: ev.error || 'unknown' }), { level: 'error' });
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

function replyLang(lang) {
  if (typeof lang === 'string' && lang) return lang;
  if (state.lang === 'en') return 'en-US';
  const configured = state.config && state.config.default_voice;
  return typeof configured === 'string' && configured ? configured : 'zh-CN';
}

/** Speak a reply; resolves when it was handed to an engine (or refused with a toast). */
export async function speak(text, lang) {
  const words = String(text || '').trim();
  if (!words || state.muted) return;
  const want = replyLang(lang);
  const prefix = want.toLowerCase().split(/[-_]/)[0];
  const synth = window.speechSynthesis;
  if (synth && typeof window.SpeechSynthesisUtterance === 'function') {
    const voices = await voicesReady(synth);
    const voice = voices.find((v) => v.lang.replace('_', '-').toLowerCase() === want.toLowerCase())
      || voices.find((v) => v.lang.toLowerCase().startsWith(prefix));
    if (voice) {
      if (state.muted) return;
      const u = new SpeechSynthesisUtterance(words);
      u.voice = voice;
      u.lang = voice.lang;
      u.rate = state.voiceRate;
      u.onerror = (ev) => {
        // Cancelled by mute or by the next reply: not a failure. Anything else (e.g. the
        // engine refusing to speak before a user gesture) goes to the server's voice.
        if (ev.error !== 'interrupted' && ev.error !== 'canceled' && !state.muted) speakOnServer(words, want);
      };
      synth.speak(u);
      return;
    }
  }
  await speakOnServer(words, want);
}

let serverAudio = null;

function stopServerAudio() {
  if (serverAudio) {
    serverAudio.pause();
    URL.revokeObjectURL(serverAudio.src);
    serverAudio = null;
  }
}

async function speakOnServer(words, want) {
  try {
    const wav = await api.voiceSpeak(words, want);
    setSpeechError(null);
    if (state.muted) return;
    stopServerAudio();
    const audio = new Audio(URL.createObjectURL(wav));
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

/** Mute stops what is being said now; later replies are not spoken until unmuted. */
export function setMuted(muted) {
  state.muted = !!muted;
  if (state.muted) {
    if (window.speechSynthesis) window.speechSynthesis.cancel();
    stopServerAudio();
  }
}
