/**
 * Structured answers (spec 4.1): a JSON Schema (object root) makes every final answer a checked
 * JSON object. Only the keywords 4.1 lists are accepted, so a schema means the same to every
 * provider and to the checker; `$ref` may point only into the file's own `$defs`/`definitions`.
 * The checker interprets the schema (no code generation), so it runs on workerd too.
 */
import { Validator } from "@cfworker/json-schema";
import { ConfigurationError } from "../errors.js";
import type { JsonValue } from "../json.js";

const KEYWORDS = new Set([
  "type", "enum", "const", "properties", "required", "additionalProperties", "minProperties", "maxProperties",
  "items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "minimum", "maximum",
  "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "not", "$ref", "$defs", "definitions",
  // annotations
  "title", "description", "default", "examples", "format", "deprecated", "readOnly", "writeOnly", "$schema", "$id", "$comment",
]);
/** Keywords whose value is a map of names to schemas. */
const SCHEMA_MAPS = new Set(["properties", "$defs", "definitions"]);
/** Keywords whose value is one schema. */
const SCHEMA_ONE = new Set(["items", "not", "additionalProperties"]);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LIST = new Set(["anyOf", "oneOf", "allOf"]);

export type ResponseSchema = Readonly<Record<string, JsonValue>>;

/** Every problem of a schema, with its place (`#/properties/x`), never silently ignored. */
export function schemaProblems(schema: unknown): string[] {
  const problems: string[] = [];
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return ["the schema must be a JSON object"];
  const root = schema as Record<string, JsonValue>;
  if (root.type !== "object") problems.push("the schema's root must have type object");
  const walk = (node: JsonValue, place: string) => {
    if (typeof node === "boolean") return;
    if (typeof node !== "object" || node === null || Array.isArray(node)) {
      problems.push(`${place} must be a schema (an object)`);
      return;
    }
    for (const [key, value] of Object.entries(node)) {
      const at = `${place}/${key}`;
      if (!KEYWORDS.has(key)) {
        problems.push(`${at}: keyword ${key} is not allowed`);
        continue;
      }
      if (key === "$ref") {
        if (typeof value !== "string" || !/^#\/(\$defs|definitions)\/[^/]+$/.test(value)) problems.push(`${at}: $ref may only point to the file's own $defs or definitions`);
        else {
          const [, group, name] = value.split("/");
          const target = root[group!] as Record<string, JsonValue> | undefined;
          if (!target || typeof target !== "object" || !(decodeURIComponent(name!) in target)) problems.push(`${at}: $ref points to a definition that does not exist`);
        }
      } else if (SCHEMA_MAPS.has(key)) {
        if (typeof value !== "object" || value === null || Array.isArray(value)) problems.push(`${at} must be an object of schemas`);
        else for (const [name, sub] of Object.entries(value)) walk(sub, `${at}/${name}`);
      } else if (SCHEMA_ONE.has(key)) {
        if (key === "items" && Array.isArray(value)) problems.push(`${at}: items must be one schema`);
        else walk(value, at);
      } else if (SCHEMA_LIST.has(key)) {
        if (!Array.isArray(value) || value.length === 0) problems.push(`${at} must be a non-empty list of schemas`);
        else value.forEach((sub, i) => walk(sub, `${at}/${i}`));
      }
    }
  };
  walk(root, "#");
  return problems;
}

/** Parses and checks the schema file text; throws ConfigurationError listing every problem. */
export function readResponseSchema(text: string, source: string): ResponseSchema {
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch {
    throw new ConfigurationError(`The response schema ${source} is not valid JSON.`);
  }
  const problems = schemaProblems(schema);
  if (problems.length > 0) throw new ConfigurationError(`The response schema ${source} has problems: ${problems.join("; ")}.`);
  return schema as ResponseSchema;
}

export interface AnswerChecker {
  /** Problems of a candidate answer (text that should be one JSON object); empty when it fits. */
  check(text: string): { value: JsonValue | undefined; problems: string[] };
}

export function createAnswerChecker(schema: ResponseSchema): AnswerChecker {
  const validator = new Validator(schema as object, "2020-12", false);
  return {
    check(text) {
      let value: JsonValue;
      try {
        value = JSON.parse(text) as JsonValue;
      } catch {
        return { value: undefined, problems: ["the answer is not valid JSON"] };
      }
      const result = validator.validate(value);
      if (result.valid) return { value, problems: [] };
      const problems = result.errors
        .filter((e) => !["properties", "$ref", "allOf", "items"].includes(e.keyword) || result.errors.length === 1)
        .map((e) => `${e.instanceLocation.replace(/^#/, "") || "/"}: ${e.error}`);
      return { value, problems: problems.length > 0 ? problems : ["the answer does not fit the schema"] };
    },
  };
}

export const FINAL_ANSWER_TOOL = "final_answer";
/** Marks the note the loop adds (never stored) when an answer did not fit the schema. */
export const STRUCTURED_RETRY_PREFIX = "Your answer does not fit the response schema:";
export const MAX_STRUCTURED_TRIES = 3;
