// Text Odyssey did not write (a model's answer, tool arguments and output, file names)
// shown as it is: every control character a terminal would act on, and the bidirectional
// overrides and isolates, as a visible escape (`\x1b`, `\r`, `\u202e`), as the CLI and the
// server's display form of approvals show them (crate odyssey-visible). Newline and tab
// lay text out and stay, unless `oneLine`.

const HIDDEN: ReadonlyArray<readonly [number, number]> = [
  [0x00, 0x08],
  [0x0b, 0x1f],
  [0x7f, 0x9f],
  [0x202a, 0x202e],
  [0x2066, 0x2069],
];

export function isControl(code: number): boolean {
  return HIDDEN.some(([first, last]) => code >= first && code <= last);
}

export function hasControls(text: string): boolean {
  for (const c of text) {
    if (isControl(c.codePointAt(0) ?? 0)) return true;
  }
  return false;
}

function escapeChar(code: number): string {
  if (code === 0x0d) return "\\r";
  if (code === 0x0a) return "\\n";
  if (code === 0x09) return "\\t";
  if (code < 0x80) return `\\x${code.toString(16).padStart(2, "0")}`;
  return `\\u${code.toString(16).padStart(4, "0")}`;
}

/** `text` with its control characters as escapes (newlines and tabs too when `oneLine`). */
export function visible(text: string, oneLine = false): string {
  let out = "";
  for (const c of text) {
    const code = c.codePointAt(0) ?? 0;
    const shown = isControl(code) || (oneLine && (code === 0x0a || code === 0x09));
    out += shown ? escapeChar(code) : c;
  }
  return out;
}
