// Re-rendering a list without replacing what the user is touching: the taskbar's icons and
// the start menu are rebuilt from state on every app status event, and a replaced button
// loses the keyboard focus, and a click whose mouse-down and mouse-up straddle the swap
// lands on neither button. ``syncChildren`` keeps each element already shown under its key
// and brings its attributes and content up to date in place; only new keys add elements.

/**
 * Make ``container``'s children ``fresh`` (built anew by the caller), reusing the child of
 * the same ``key(node)`` (a string, or null for a child that is not keyed) where one exists.
 * ``tail`` children, rendered elsewhere, stay after them. The container is only rearranged
 * when the order or the set of children changes.
 */
export function syncChildren(container, fresh, key, tail = []) {
  const old = new Map();
  for (const node of container.children) {
    const k = key(node);
    if (k !== null && k !== undefined) old.set(k, node);
  }
  const next = fresh.map((node) => {
    const k = key(node);
    const prev = k === null || k === undefined ? undefined : old.get(k);
    if (!prev || prev.nodeName !== node.nodeName) return node;
    old.delete(k);
    morph(prev, node);
    return prev;
  });
  const want = [...next, ...tail];
  const have = [...container.children];
  if (want.length !== have.length || want.some((node, i) => node !== have[i])) {
    container.replaceChildren(...want);
  }
}

/** ``target`` made like ``source``: attributes, then children, element by element. */
export function morph(target, source) {
  for (const a of [...target.attributes]) {
    if (!source.hasAttributeNS(a.namespaceURI, a.localName)) target.removeAttributeNS(a.namespaceURI, a.localName);
  }
  for (const a of source.attributes) {
    if (target.getAttributeNS(a.namespaceURI, a.localName) !== a.value) target.setAttributeNS(a.namespaceURI, a.name, a.value);
  }
  const have = [...target.childNodes];
  const want = [...source.childNodes];
  if (have.length !== want.length || have.some((node, i) => node.nodeName !== want[i].nodeName)) {
    target.replaceChildren(...want);
    return;
  }
  have.forEach((node, i) => {
    if (node.nodeType === Node.ELEMENT_NODE) morph(node, want[i]);
    else if (node.nodeValue !== want[i].nodeValue) node.nodeValue = want[i].nodeValue;
  });
}
