/**
 * What of an unexpected error may be logged under its error id: its type, its message and its
 * cause's, with anything that looks like a secret masked and the length capped. The messages are
 * ours or a library's (a driver's complaint), not the user's words, but a library may quote a
 * URL, a header or a key it was given: those are masked here. A model provider's error is the
 * exception: its text may quote the request, the user's words with it ("you sent: ..."), so the
 * cause of a ModelError is told by its type and the status and codes it carries, and its text is
 * left to a DEBUG line (`providerErrorText`), where spec 6.3 allows content.
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

const describe = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** A model provider's failure (errors.ts ModelError), whose cause is the provider's own error. */
const fromProvider = (error: unknown): error is Error & { cause: unknown } => error instanceof Error && error.name === "ModelError" && error.cause !== undefined;

/** `detail` and `cause` log fields of an error: its type and message, its cause's, secrets masked. */
export function errorDetail(error: unknown): { detail: string; cause?: string } {
  const cause = !(error instanceof Error) || error.cause === undefined ? undefined : fromProvider(error) ? providerCause(error.cause) : redactSecrets(describe(error.cause));
  return { detail: redactSecrets(describe(error)), ...(cause !== undefined ? { cause } : {}) };
}

/** The provider's own error text behind a ModelError, secrets masked, for a DEBUG line only; else undefined. */
export function providerErrorText(error: unknown): string | undefined {
  return fromProvider(error) ? redactSecrets(describe(error.cause)) : undefined;
}

/** A value a provider's error carries that names a kind of failure: a status, a code, an error type. */
const CODE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * A provider's error by its type and the fields an SDK or runtime gives it (`status`, `code`,
 * `type`, those of its `error` member, its own cause's `code`: ECONNREFUSED), never its message.
 */
function providerCause(cause: unknown): string {
  // SDKs' error classes often leave `name` as "Error": their class names say more (BadRequestError).
  const named = cause instanceof Error ? (cause.name === "Error" ? cause.constructor.name : cause.name) : "";
  const name = /^\w{1,64}$/.test(named) ? named : "Error";
  const fields: string[] = [];
  const add = (label: string, value: unknown) => {
    if ((typeof value === "string" || typeof value === "number") && CODE.test(String(value)) && !fields.includes(`${label} ${value}`)) fields.push(`${label} ${value}`);
  };
  const read = (o: unknown) => (typeof o === "object" && o !== null ? (o as Record<string, unknown>) : {});
  const c = read(cause);
  add("status", c.status);
  add("code", c.code);
  add("type", c.type);
  const inner = read(c.error);
  add("status", inner.status);
  add("code", inner.code);
  add("type", inner.type);
  add("code", read(c.cause).code);
  return fields.length > 0 ? `${name} (${fields.join(", ")})` : name;
}
