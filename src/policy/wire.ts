/**
 * What the client puts on the wire and reads back: headers a tool may set, the query string
 * (with the page-size cap), and an answer read only up to `max_response_bytes`.
 */
import { ApiCallError, ApiPolicyError } from "../errors.js";
import type { JsonValue } from "../json.js";
import { readCapped } from "../streams.js";
import { isUnreserved } from "./paths.js";
import { MAX_RESPONSE_BYTES } from "./schema.js";
import type { ApiRequest } from "./types.js";

/**
 * Dropped before sending, the call goes on (CONTRACT 5): they would change where a request goes
 * or which method applies, or belong to one hop only.
 */
const DROPPED = new Set([
  "host",
  "forwarded",
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-original-url",
  "x-rewrite-url",
  "x-original-method",
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "trailers",
  "transfer-encoding",
  "upgrade",
  "content-length",
]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex
const BAD_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** The tool's headers, cleaned, keyed in lower case (a plain object: cheaper than Headers). */
export function toolHeaders(given: ApiRequest["headers"]): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!given) return headers;
  for (const name in given) {
    const value = given[name];
    if (!TOKEN.test(name)) throw new ApiPolicyError("a header name is not a valid HTTP token; nothing was sent");
    if (typeof value !== "string" || BAD_VALUE.test(value))
      throw new ApiPolicyError(`header ${name} has a line break or control character; nothing was sent`);
    const lower = name.toLowerCase();
    if (DROPPED.has(lower) || lower.startsWith("x-forwarded-")) continue;
    headers[lower] = value;
  }
  return headers;
}

/** Query pairs in order, `_method` refused, the page-size parameter capped in every spelling. */
export function queryPairs(query: ApiRequest["query"], pagination: { param: string; max: number } | undefined): [string, string][] {
  const pairs: [string, string][] = [];
  for (const key in query) {
    if (!Object.hasOwn(query, key)) continue;
    const value = query[key];
    if (Array.isArray(value)) for (const v of value as readonly unknown[]) pairs.push([key, queryValue(key, v)]);
    else pairs.push([key, queryValue(key, value)]);
  }
  const param = pagination ? canonicalKey(pagination.param) : undefined;
  for (const pair of pairs) {
    const key = canonicalKey(pair[0]);
    if (key === "_method") throw new ApiPolicyError("the query parameter _method is refused (method override); nothing was sent");
    if (key === param && (!isWholeNumber(pair[1]) || Number(pair[1]) > pagination!.max)) pair[1] = String(pagination!.max);
  }
  return pairs;
}

function queryValue(key: string, v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v !== "number" && typeof v !== "boolean") throw new ApiPolicyError(`query parameter ${key} must be text, a number, a boolean or a list of them`);
  return String(v);
}

/**
 * A key already in its canonical spelling (most are): nothing to decode, trim, lower or drop.
 * Loops, not regular expressions, on a call's path: see judge-request.ts's KNOWN_METHODS.
 */
function isPlainKey(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    // a-z 0-9 _ . -
    if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45)) return false;
  }
  return key.length > 0;
}

/** Digits, maybe with white space around them (what Number() reads as a whole number of them). */
function isWholeNumber(text: string): boolean {
  const digits = text.trim();
  for (let i = 0; i < digits.length; i++) {
    const c = digits.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return digits.length > 0;
}

/** A query key in every spelling a server may read alike: decoded, trimmed, lower case, `[]` dropped. */
function canonicalKey(key: string): string {
  if (isPlainKey(key)) return key;
  let k = key;
  if (k.includes("%")) {
    try {
      k = decodeURIComponent(k);
    } catch {
      // keep as is
    }
  }
  k = k.trim().toLowerCase();
  // `limit[]`, `limit[0]`: the shapes servers read as the same parameter.
  return k.replace(/(\[[^\]]*\])+$/, "");
}

export function queryString(pairs: readonly (readonly [string, string])[]): string {
  let out = "";
  for (const [k, v] of pairs) out += `${out === "" ? "?" : "&"}${encoded(k)}=${encoded(v)}`;
  return out;
}

/** encodeURIComponent, but a text of unreserved characters only (most keys and values) is itself. */
function encoded(text: string): string {
  for (let i = 0; i < text.length; i++) if (!isUnreserved(text.charCodeAt(i))) return encodeURIComponent(text);
  return text;
}

/** Refuses a JSON body that asks for a method override. */
export function checkBody(body: JsonValue | undefined): void {
  if (body && typeof body === "object" && !Array.isArray(body))
    for (const key of Object.keys(body)) if (key.toLowerCase() === "_method") throw new ApiPolicyError("the body key _method is refused (method override); nothing was sent");
  if (body !== undefined) assertPlainJson(body, 0);
}

function assertPlainJson(value: unknown, depth: number): void {
  if (depth > 64) throw new ApiPolicyError("the body is nested too deeply");
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new ApiPolicyError("the body holds a number JSON cannot carry");
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) assertPlainJson(v, depth + 1);
    return;
  }
  const proto = typeof value === "object" ? Object.getPrototypeOf(value) : undefined;
  if (proto !== Object.prototype && proto !== null) throw new ApiPolicyError("the body must be plain JSON data");
  for (const v of Object.values(value as object)) assertPlainJson(v, depth + 1);
}

const ENCODINGS = new Set(["", "identity", "gzip", "x-gzip", "deflate"]);

/**
 * Reads the answer. With a cap, only identity, one gzip or one deflate is accepted (anything
 * else is refused unread) and the decoded bytes are counted while streaming: past the cap the
 * rest is discarded and the call fails. fetch decodes gzip and deflate itself, so the bytes read
 * are the decoded ones.
 */
export function readAnswer(response: Response, maxBytes: number | undefined, stopped: () => boolean = () => false): Promise<Uint8Array> {
  // Answers without a cap are read the same way, so a caller that gave up stops the read at once,
  // and never past ANSWER_CEILING. Not an async function itself: the common read without a cap
  // costs no promise of its own.
  if (maxBytes === undefined) return readCapped(response.body, ANSWER_CEILING, overCeiling, stopped, stoppedUncapped);
  return readWithCap(response, maxBytes, stopped);
}

/**
 * The most of an answer read for an API without `limits.max_response_bytes`: the largest cap a
 * policy can set (64 MiB). An upstream that sends more fails its call instead of filling the
 * process's memory.
 */
export const ANSWER_CEILING = MAX_RESPONSE_BYTES;

async function readWithCap(response: Response, maxBytes: number, stopped: () => boolean): Promise<Uint8Array> {
  const encoding = (response.headers.get("content-encoding") ?? "").trim().toLowerCase();
  if (!ENCODINGS.has(encoding)) {
    await response.body?.cancel().catch(() => {});
    throw new ApiCallError("the answer's content encoding is not identity, gzip or deflate; it was not read");
  }
  const declared = response.headers.get("content-length");
  if (encoding === "" && declared !== null && Number(declared) > maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw tooLarge(maxBytes);
  }
  return readCapped(response.body, maxBytes, () => tooLarge(maxBytes), stopped);
}

/** A read without a cap fails when its caller stopped it (the caller has failed already) or past the ceiling. */
const stoppedUncapped = (): Error => new ApiCallError("the answer was not read: the call was stopped");
const overCeiling = (): Error =>
  new ApiCallError(`the answer is larger than ${ANSWER_CEILING} bytes, the most read from an API without limits.max_response_bytes; it was discarded`);

function tooLarge(maxBytes: number): Error {
  return new ApiCallError(`the answer is larger than max_response_bytes (${maxBytes}); it was discarded`);
}

const decoder = new TextDecoder();

/** `json` as a word of the content type, in any case (application/json, application/problem+json). */
function namesJson(contentType: string): boolean {
  const type = contentType.toLowerCase();
  for (let at = type.indexOf("json"); at >= 0; at = type.indexOf("json", at + 1))
    if (!isWordChar(type.charCodeAt(at - 1)) && !isWordChar(type.charCodeAt(at + 4))) return true;
  return false;
}

/** A character \w matches (NaN, past either end of the text, is not one). */
function isWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

export function parseAnswer(bytes: Uint8Array, contentType: string | null): JsonValue | string {
  const text = decoder.decode(bytes);
  if (contentType && namesJson(contentType)) {
    try {
      return JSON.parse(text) as JsonValue;
    } catch {
      return text;
    }
  }
  return text;
}
