/**
 * Checks a compact JWT before any key is touched, for what jose accepts but this service must
 * refuse (spec 5.3, CONTRACT 5): over 16384 characters, padded or non-base64url parts, duplicate
 * JSON members (`{"sub":"u1","sub":"admin"}`), `none`, non-finite or non-integer time claims.
 */

export const MAX_TOKEN_CHARS = 16384;

export interface InspectedToken {
  readonly header: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
}

/** A reason fit for `Invalid bearer token: <reason>.` */
export class TokenProblem extends Error {
  override name = "TokenProblem";
}

const PART = /^[A-Za-z0-9_-]+$/;
const decoder = new TextDecoder("utf-8", { fatal: true });

export function inspectToken(token: string, algorithms: ReadonlySet<string>): InspectedToken {
  if (token.length > MAX_TOKEN_CHARS) throw new TokenProblem("token too long");
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((p) => PART.test(p))) throw new TokenProblem("malformed token");
  const header = decodeJson(parts[0]!);
  const payload = decodeJson(parts[1]!);
  const alg = header.alg;
  if (typeof alg !== "string" || alg.toLowerCase() === "none" || !algorithms.has(alg)) throw new TokenProblem("algorithm not allowed");
  if (header.crit !== undefined) throw new TokenProblem("malformed token");
  for (const claim of ["exp", "nbf", "iat"]) {
    const v = payload[claim];
    if (v !== undefined && !(typeof v === "number" && Number.isFinite(v) && Number.isInteger(v))) throw new TokenProblem("malformed token");
  }
  return { header, payload };
}

/** One base64url part of a compact token as a JSON object; throws TokenProblem otherwise. */
export function decodeJson(part: string): Record<string, unknown> {
  let text: string;
  try {
    const b64 = part.replace(/-/g, "+").replace(/_/g, "/");
    const bin = atob(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    text = decoder.decode(bytes);
  } catch {
    throw new TokenProblem("malformed token");
  }
  if (hasDuplicateMembers(text)) throw new TokenProblem("malformed token");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TokenProblem("malformed token");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TokenProblem("malformed token");
  return value as Record<string, unknown>;
}

/**
 * True when any JSON object in the text names a member twice. A small scanner: strings are
 * read whole (escapes decoded, so `"s\u0075b"` and `"sub"` collide), every object keeps its
 * own key set. Invalid JSON is left to JSON.parse.
 */
export function hasDuplicateMembers(text: string): boolean {
  const stack: (Set<string> | null)[] = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "{") {
      stack.push(new Set());
      expectKey = true;
    } else if (ch === "[") {
      stack.push(null);
      expectKey = false;
    } else if (ch === "}" || ch === "]") {
      stack.pop();
      expectKey = false;
    } else if (ch === ",") {
      expectKey = stack.at(-1) instanceof Set;
    } else if (ch === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const raw = text.slice(i, j + 1);
      i = j;
      if (expectKey) {
        let key: string;
        try {
          key = JSON.parse(raw) as string;
        } catch {
          return false;
        }
        const keys = stack.at(-1);
        if (keys instanceof Set) {
          if (keys.has(key)) return true;
          keys.add(key);
        }
        expectKey = false;
      }
    }
  }
  return false;
}
