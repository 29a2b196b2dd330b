// Settings → General, "Conversation" (DESIGN §18): how the desktop listens while the user
// types and when it speaks first — the `duplex.*` keys of config.json. The fieldset is part of
// the General form: `fields(cfg)` gives the fieldset and `updates()`, the values the form sends
// with its other settings (POST /api/config); the server validates them and names a bad one.
// Also: answers streamed as the model writes them, topics named by the model and folded
// away after a while. Do-not-disturb is the tray's switch, not here.
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';

function check(id, on) {
  return el('input', { id, class: 'chk', type: 'checkbox', checked: on });
}

function number(id, value, { min, max, step }) {
  return el('input', { id, class: 'inp', type: 'number', min: String(min), max: String(max), step: String(step),
    value: toText(value) });
}

function row(labelKey, control, hintKey) {
  return el('div', { class: 'field' },
    el('label', { class: 'field-label', htmlFor: control.id, text: t(labelKey) }), control,
    hintKey ? el('span', { class: 'field-hint', text: t(hintKey) }) : null);
}

function checkRow(control, labelKey) {
  return el('label', { class: 'check-label' }, control, el('span', { text: t(labelKey) }));
}

/** The "Conversation" fieldset for ``cfg`` (the masked config) and how to read it back. */
export function fields(cfg) {
  const d = isObject(cfg && cfg.duplex) ? cfg.duplex : {};
  const listen = check('set_duplex_enabled', d.enabled !== false);
  const llm = check('set_duplex_llm', d.llm === true);
  const stream = check('set_duplex_stream', d.stream_replies !== false);
  const topicLlm = check('set_duplex_topic_llm', d.topic_llm === true);
  const interval = number('set_duplex_min_interval', d.min_interval_s ?? 20, { min: 0, max: 3600, step: 1 });
  const budget = number('set_duplex_budget', d.session_budget ?? 10, { min: 0, max: 1000, step: 1 });
  const pause = number('set_duplex_pause', d.pause_s ?? 1.5, { min: 0.2, max: 30, step: 0.1 });
  const idle = number('set_duplex_idle', d.idle_s ?? 0, { min: 0, max: 86400, step: 10 });
  const longRun = number('set_duplex_long_run', d.long_run_s ?? 30, { min: 1, max: 86400, step: 1 });
  const archive = number('set_duplex_topic_archive', d.topic_archive_s ?? 1800, { min: 0, max: 2592000, step: 60 });
  const fieldset = el('fieldset', { id: 'settings_duplex', class: 'settings-group' },
    el('legend', { text: t('settings.duplex') }),
    checkRow(listen, 'settings.duplex_enabled'),
    checkRow(llm, 'settings.duplex_llm'),
    checkRow(stream, 'settings.duplex_stream'),
    checkRow(topicLlm, 'settings.duplex_topic_llm'),
    row('settings.duplex_min_interval', interval, 'settings.duplex_min_interval_hint'),
    row('settings.duplex_budget', budget),
    row('settings.duplex_pause', pause),
    row('settings.duplex_idle', idle, 'settings.duplex_idle_hint'),
    row('settings.duplex_long_run', longRun),
    row('settings.duplex_topic_archive', archive));
  const updates = () => ({
    enabled: listen.checked,
    llm: llm.checked,
    min_interval_s: Number(interval.value),
    session_budget: Number(budget.value),
    pause_s: Number(pause.value),
    idle_s: Number(idle.value),
    long_run_s: Number(longRun.value),
    stream_replies: stream.checked,
    topic_llm: topicLlm.checked,
    topic_archive_s: Number(archive.value),
  });
  return { fieldset, updates };
}
