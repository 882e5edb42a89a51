// Building the page with DOM calls only: text always goes in as text (textContent), never
// as markup, so nothing a model, a tool or a file name says can become an element or a
// script.

type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? "" : value);
  }
  append(node, ...children);
  return node;
}

export function append(node: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

export function clear(node: Node): void {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/** A definition list of label / value pairs. */
export function fields(pairs: Array<[string, Child]>): HTMLDListElement {
  const list = el("dl", { class: "fields" });
  for (const [label, value] of pairs) {
    append(list, el("dt", {}, label), el("dd", {}, value));
  }
  return list;
}

/** Sets a live status line (read by screen readers). */
export function say(node: HTMLElement, text: string, kind: "ok" | "bad" | "" = ""): void {
  // Unchanged text is left alone: rewriting it would announce it again.
  if (node.textContent !== text) node.textContent = text;
  node.className = `status ${kind}`;
}
