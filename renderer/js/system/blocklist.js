// Settings → General → "Block list" (DESIGN §12): the commands never run, in any approval
// mode, read-only. Each rule with its program words from GET /api/config's
// approvals.block_list (edited in config.json); the structural rules take no words and are
// always on.
import { t } from '../core/i18n.js';
import { el, isObject, toText } from '../core/safe.js';

const WORD_RULES = ['privilege-escalation', 'power', 'disk-format'];
const STRUCTURAL_RULES = ['device-write', 'delete-outside', 'download-exec'];

function ruleLabel(rule) {
  const key = `blocklist.rule.${rule}`;
  const text = t(key);
  return text === key ? rule : text;
}

function ruleItem(rule, words) {
  const what = words === null
    ? el('span', { class: 'blocklist-words muted', text: t('blocklist.always') })
    : words.length
      ? el('span', { class: 'blocklist-words' }, ...words.map((w) => el('code', { class: 'blocklist-word', text: w })))
      : el('span', { class: 'blocklist-words muted', text: t('blocklist.off') });
  return el('li', { class: 'blocklist-rule', attrs: { 'data-rule': rule } },
    el('span', { class: 'blocklist-name', text: ruleLabel(rule) }),
    el('code', { class: 'blocklist-id muted', text: rule }), what);
}

/** The read-only section for ``config`` (the masked config GET /api/config returns). */
export function render(config) {
  const approvals = isObject(config) && isObject(config.approvals) ? config.approvals : {};
  const lists = isObject(approvals.block_list) ? approvals.block_list : {};
  const wordsOf = (rule) => (Array.isArray(lists[rule]) ? lists[rule].map(toText) : []);
  // rules the server knows and this page does not yet are shown too, with their words
  const wordRules = [...WORD_RULES, ...Object.keys(lists).filter((r) => !WORD_RULES.includes(r))];
  const items = [
    ...wordRules.map((rule) => ruleItem(rule, wordsOf(rule))),
    ...STRUCTURAL_RULES.map((rule) => ruleItem(rule, null)),
  ];
  return el('fieldset', { id: 'settings_block_list', class: 'settings-group blocklist' },
    el('legend', { text: t('blocklist.title') }),
    el('p', { class: 'field-hint', text: t('blocklist.intro') }),
    el('ul', { class: 'blocklist-rules', attrs: { 'aria-label': t('blocklist.title') } }, items));
}
