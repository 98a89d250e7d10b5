/**
 * Text from the service (model answers, tool arguments and results, error details) shown on a
 * terminal. A model can be talked into writing escape sequences that move the cursor, rewrite
 * what was printed or set the window title, so every control character but newline and tab
 * (C0, DEL, C1) and the bidirectional overrides that reorder what a line seems to say are shown
 * escaped (`\x1b`, `\u202e`) instead of being sent to the terminal.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function escapeOne(c: string): string {
  if (c === "\n") return "\\n";
  if (c === "\t") return "\\t";
  if (c === "\r") return "\\r";
  const code = c.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** Text kept on its lines: newlines and tabs pass, other control characters are escaped. */
export function safeText(text: string): string {
  return text.replace(UNSAFE, escapeOne);
}

/** Text on one line: newlines and tabs are escaped too. */
export function safeLine(text: string): string {
  return text.replace(UNSAFE_LINE, escapeOne);
}

/** A JSON value on one line (JSON.stringify escapes C0; DEL, C1 and bidi controls are escaped here). */
export function safeJson(value: unknown): string {
  return safeLine(JSON.stringify(value) ?? "null");
}
