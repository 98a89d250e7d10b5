/**
 * schemas/api-policy.schema.json, generated from the zod schema of the policy document
 * (src/policy/schema.ts): `npm run schemas` writes it, and a test fails when the committed file
 * differs from what this returns.
 */
import { z } from "zod";
import { editorDocumentSchema } from "../policy/schema.js";

/** The keys a reader looks for first, in this order; the rest keep zod's order. */
const FIRST = ["$schema", "$id", "$ref", "title", "description"];

/** The JSON Schema of the policy document (draft 2020-12; keys with defaults are optional). */
export function policyJsonSchema(): Record<string, unknown> {
  // io "input": the document as written, before defaults and upper-casing are applied.
  return readable(z.toJSONSchema(editorDocumentSchema, { target: "draft-2020-12", io: "input" })) as Record<string, unknown>;
}

/** The file's text: two-space JSON and a final newline. */
export function policyJsonSchemaText(): string {
  return `${JSON.stringify(policyJsonSchema(), null, 2)}\n`;
}

/** Puts FIRST first in every schema object; the names under properties and $defs keep their order. */
function readable(node: unknown, names = false): unknown {
  if (Array.isArray(node)) return node.map((n) => readable(n));
  if (!node || typeof node !== "object") return node;
  const entries = Object.entries(node as Record<string, unknown>);
  const rank = (key: string) => (names || !FIRST.includes(key) ? FIRST.length : FIRST.indexOf(key));
  // Array.prototype.sort is stable: the other keys keep zod's order.
  entries.sort(([a], [b]) => rank(a) - rank(b));
  return Object.fromEntries(entries.map(([k, v]) => [k, readable(v, !names && (k === "properties" || k === "$defs"))]));
}
