/**
 * The approval digest (CONTRACT 5): `sha256:` + lowercase hex SHA-256 of the UTF-8 bytes of a
 * canonical JSON text of the call as shown. Clients and other agents recompute it, so the
 * canonical form is exact: keys sorted by code point at every depth, no spaces, non-ASCII kept
 * raw, integer-valued numbers written as integers, missing values null.
 */
import { sha256Hex } from "../auth/hashing.js";
import type { JsonValue } from "../json.js";
import type { ApprovalRecord } from "./types.js";

/** The call as a person is shown it: these fields of the approval, and nothing else. */
export type ShownCall = Pick<ApprovalRecord, "api" | "method" | "path" | "operation_id" | "rpc_method" | "a2a_operation"> & {
  readonly query: Readonly<Record<string, string | readonly string[]>>;
  readonly body: JsonValue;
};

export async function approvalDigest(call: ShownCall): Promise<string> {
  const canonical = canonicalJson({
    api: call.api,
    method: call.method.toUpperCase(),
    path: call.path,
    operation_id: call.operation_id,
    rpc_method: call.rpc_method,
    a2a_operation: call.a2a_operation,
    query: call.query as JsonValue,
    body: call.body,
  });
  return `sha256:${await sha256Hex(canonical)}`;
}

/** Canonical JSON: sorted keys (by code point), no whitespace, integers as integers. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) return "null";
    return Number.isInteger(value) ? BigInt(value).toString() : JSON.stringify(value);
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort(byCodePoint);
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k]!)}`).join(",")}}`;
}

/** Orders strings by Unicode code point (JS `<` compares UTF-16 units, which differs above U+FFFF). */
export function byCodePoint(a: string, b: string): number {
  const x = Array.from(a);
  const y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** Query pairs shown as an object: one value as a string, repeated keys as a list. */
export function shownQuery(pairs: readonly (readonly [string, string])[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of pairs) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

export const REDACTED = "<redacted>";

/** Masks fields named in `redact` (at any depth of the body, and query keys). */
export function redactValue(value: JsonValue, redact: readonly string[]): JsonValue {
  if (redact.length === 0 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, redact));
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redact.includes(k) ? REDACTED : redactValue(v, redact);
  return out;
}

/** The only form a decision's digest may take (CONTRACT 5): anything else is refused before any approval is looked at. */
export const DIGEST_FORM = /^sha256:[0-9a-f]{64}$/;
