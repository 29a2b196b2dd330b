// Conversation mode's microphone tap (an AudioWorklet, conversation_mode.js): the input as
// 16 kHz mono 16-bit PCM in messages of 20 ms, which the page sends to /api/voice/stream.
// The context is asked for 16 kHz (Chromium resamples the microphone itself); where it runs
// at another rate, samples are averaged down here.
const TARGET_RATE = 16000;
const CHUNK = 320; // 20 ms at 16 kHz: barge-in waits for no more than one chunk

class MicTap extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / TARGET_RATE;
    this.acc = 0;
    this.count = 0;
    this.pos = 0;
    this.out = new Int16Array(CHUNK);
    this.fill = 0;
  }

  push(value) {
    const s = Math.max(-1, Math.min(1, value));
    this.out[this.fill++] = s < 0 ? s * 0x8000 : s * 0x7fff;
    if (this.fill === CHUNK) {
      this.port.postMessage(this.out.buffer, [this.out.buffer]);
      this.out = new Int16Array(CHUNK);
      this.fill = 0;
    }
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (!channel) return true;
    if (this.step === 1) {
      for (let i = 0; i < channel.length; i++) this.push(channel[i]);
      return true;
    }
    for (let i = 0; i < channel.length; i++) {
      this.acc += channel[i];
      this.count++;
      this.pos += 1;
      if (this.pos >= this.step) {
        this.pos -= this.step;
        this.push(this.acc / this.count);
        this.acc = 0;
        this.count = 0;
      }
    }
    return true;
  }
}

registerProcessor('aios-mic-tap', MicTap);
