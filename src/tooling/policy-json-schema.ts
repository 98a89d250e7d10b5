/**
 * schemas/api-policy.schema.json, generated from the zod schema of the policy document
 * (src/policy/schema.ts): `npm run schemas` writes it, and a test fails when the committed file
 * differs from what this returns.
 */
import { z } from "zod";
import { API_NAME, apiSchema } from "../policy/schema.js";

/**
 * The document as an editor sees it, for the JSON Schema only: the loader parses `apis` as a
 * mapping of anything and then each API by itself, so that each problem is placed under its API.
 */
const editorDocumentSchema = z
  .strictObject({
    apis: z
      .record(z.string().regex(API_NAME), apiSchema)
      .meta({ minProperties: 1, description: "The APIs tools may call, by name. At least one." }),
  })
  .meta({
    $id: "urn:agent-service:schemas:api-policy",
    title: "Outbound API policy (api-policy.yaml)",
    description:
      "Which outbound calls the agent's tools may make (spec 2.6, 2.7). Every call is judged before it is sent: method allow-list, then denials (they always win), then allowed operations, then the approval gate. Unknown and repeated keys are errors at every level. This schema is for editors; the service's own loader (npm run policy:check) also checks the rules between keys and the path rules in full.",
  });

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
export function readable(node: unknown, names = false): unknown {
  if (Array.isArray(node)) return node.map((n) => readable(n));
  if (!node || typeof node !== "object") return node;
  const entries = Object.entries(node as Record<string, unknown>);
  const rank = (key: string) => (names || !FIRST.includes(key) ? FIRST.length : FIRST.indexOf(key));
  // Array.prototype.sort is stable: the other keys keep zod's order.
  entries.sort(([a], [b]) => rank(a) - rank(b));
  return Object.fromEntries(entries.map(([k, v]) => [k, readable(v, !names && (k === "properties" || k === "$defs"))]));
}
