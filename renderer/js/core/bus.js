// One event bus for the whole desktop: `emit("ns:name", detail)` / `on("ns:name", fn)`.
// Modules talk through it instead of importing each other, so main.js stays the only wiring.
const target = new EventTarget();

export function emit(name, detail) {
  target.dispatchEvent(new CustomEvent(name, { detail }));
}

export function on(name, fn) {
  const handler = (ev) => {
    try {
      fn(ev.detail);
    } catch (err) {
      // A failing listener must not stop the others; it is still reported.
      console.error(`listener for ${name} failed`, err);
    }
  };
  target.addEventListener(name, handler);
  return () => target.removeEventListener(name, handler);
}
