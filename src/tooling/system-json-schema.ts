/**
 * schemas/system.schema.json, generated from the zod schema of the system file
 * (src/tooling/system/schema.ts): `npm run schemas` writes it beside the policy's, and a test
 * fails when the committed file differs from what this returns.
 */
import { z } from "zod";
import { readable } from "./policy-json-schema.js";
import { systemSchema } from "./system/schema.js";

/** The JSON Schema of the system file (draft 2020-12; keys with defaults are optional). */
export function systemJsonSchema(): Record<string, unknown> {
  return readable(z.toJSONSchema(systemSchema, { target: "draft-2020-12", io: "input" })) as Record<string, unknown>;
}

/** The file's text: two-space JSON and a final newline. */
export function systemJsonSchemaText(): string {
  return `${JSON.stringify(systemJsonSchema(), null, 2)}\n`;
}
