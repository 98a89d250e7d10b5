/**
 * What of an unexpected error may be logged under its error id: its type, its message and its
 * cause's, with anything that looks like a secret masked and the length capped. The messages are
 * ours or a library's (a provider's status and reason, a driver's complaint), not the user's
 * words, but a library may quote a URL, a header or a key it was given: those are masked here.
 */

const MAX_CHARS = 500;

const SECRETS: readonly [RegExp, string][] = [
  // credentials in a URL: scheme://user:password@host
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, "$1<redacted>@"],
  // Authorization-style values
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]+/gi, "$1 <redacted>"],
  // JWTs and key-shaped tokens (OpenAI, Anthropic, Google)
  [/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, "<redacted>"],
  [/\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}/g, "<redacted>"],
  [/\bAIza[0-9A-Za-z_-]{20,}/g, "<redacted>"],
  // name=value and "name": "value" pairs whose name says secret
  [/\b((?:api[_-]?key|apikey|key|token|secret|password|passwd|pwd|client_secret|access_token|refresh_token|authorization)["']?\s*[:=]\s*["']?)[^\s"'&,;}]+/gi, "$1<redacted>"],
];

export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRETS) out = out.replace(pattern, replacement);
  return out.length > MAX_CHARS ? `${out.slice(0, MAX_CHARS)}…` : out;
}

/** `detail` and `cause` log fields of an error: its type and message, its cause's, secrets masked. */
export function errorDetail(error: unknown): { detail: string; cause?: string } {
  const describe = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));
  const cause = error instanceof Error && error.cause !== undefined ? redactSecrets(describe(error.cause)) : undefined;
  return { detail: redactSecrets(describe(error)), ...(cause !== undefined ? { cause } : {}) };
}
