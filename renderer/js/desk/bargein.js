// Barge-in by typing (DESIGN §18): while the desktop speaks, a key pressed in the command bar
// stops the voice at once (voice.stopSpeaking: the server's audio paused, speechSynthesis
// cancelled, a reply still on its way dropped). Starting an instruction by any path stops it
// too (commands.js, the mic button in main.js). The microphone's barge-in is the
// conversation mode's.
import { stopSpeaking } from './voice.js';

/** Keys that type nothing on their own. */
const MODIFIERS = new Set(['Shift', 'Control', 'Alt', 'AltGraph', 'Meta', 'CapsLock', 'Fn']);

export function init() {
  const box = document.getElementById('command_input');
  if (!box) return;
  box.addEventListener('keydown', (ev) => {
    if (!MODIFIERS.has(ev.key)) stopSpeaking();
  });
}
