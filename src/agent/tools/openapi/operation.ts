/**
 * One OpenAPI operation read as a tool's plan: its arguments (path and query parameters as
 * top-level properties, the JSON request body as `body`) and how each reaches the request.
 * What the tool cannot send is either left out (an optional part: callbacks, an optional
 * non-JSON body or structured query parameter) or, when the operation needs it (a file upload,
 * a required header or cookie, an external $ref), makes the operation unusable. Optional header
 * and cookie parameters are simply not offered.
 */
import type { JsonValue } from "../../../json.js";
import { isObject, type OperationEntry } from "../../../policy/openapi.js";
import { pathProblem } from "../../../policy/paths.js";
import { follow, type ModelSchema, modelSchema, type SchemaReader, Unsupported } from "./schema.js";

export interface ParamPlan {
  readonly name: string;
  readonly in: "path" | "query";
  /** Joins an array value into one query value (style form without explode, space- or pipe-delimited). */
  readonly join?: string;
}

export interface OperationPlan {
  readonly description: string;
  readonly parameters: ModelSchema;
  readonly params: readonly ParamPlan[];
  /** The JSON media type the body is sent as, when the operation takes one. */
  readonly body: { readonly mediaType: string } | undefined;
}

export interface OperationReading {
  /** Undefined when the operation cannot be offered (`unusable` says why). */
  readonly plan: OperationPlan | undefined;
  readonly unusable: readonly string[];
  /** Parts not offered although the operation is. */
  readonly leftOut: readonly string[];
}

const MAX_DESCRIPTION = 1024;
const JSON_TYPE = /^application\/(?:[A-Za-z0-9.!#$&^_-]+\+)?json\s*(?:;.*)?$/i;
const FILE_TYPE = /^(?:multipart\/form-data|application\/octet-stream|image\/|audio\/|video\/)/i;

export function readOperation(reader: SchemaReader, entry: OperationEntry): OperationReading {
  const unusable: string[] = [];
  const leftOut: string[] = [];
  const properties: ModelSchema = {};
  const required: string[] = [];
  const params: ParamPlan[] = [];
  const { object: op, method, path } = entry;

  const templateProblem = pathProblem(path, "template");
  if (templateProblem) unusable.push(`its path ${templateProblem}`);
  const placeholders = new Set([...path.matchAll(/\{([^}/]*)\}/g)].map((m) => m[1]!));

  const add = (name: string, schema: ModelSchema, isRequired: boolean) => {
    if (Object.hasOwn(properties, name)) {
      unusable.push(`two of its arguments are named ${name}`);
      return false;
    }
    properties[name] = schema;
    if (isRequired) required.push(name);
    return true;
  };

  for (const p of parametersOf(reader, entry, unusable)) {
    const name = p.name as string;
    const where = p.in as string;
    const isRequired = where === "path" || p.required === true;
    if (where === "header" || where === "cookie") {
      if (isRequired) unusable.push(`it needs the ${where} parameter ${name}`);
      continue;
    }
    if (where !== "path" && where !== "query") {
      unusable.push(`parameter ${name} is in ${where}`);
      continue;
    }
    const problem = (reason: string) => (isRequired ? unusable : leftOut).push(`${where} parameter ${name}: ${reason}`);
    if (where === "path" && !placeholders.has(name)) continue; // a path parameter the path does not use
    if (!isObject(p.schema)) {
      problem(p.content !== undefined ? "a parameter given as content" : "no schema");
      continue;
    }
    let schema: ModelSchema;
    try {
      schema = modelSchema(reader, p.schema);
    } catch (error) {
      if (!(error instanceof Unsupported)) throw error;
      problem(error.message);
      continue;
    }
    const shape = shapeOf(schema);
    const style = typeof p.style === "string" ? p.style : "form";
    if (shape === "object" || style === "deepObject") {
      problem("an object value");
      continue;
    }
    if (shape === "array" && where === "path") {
      problem("an array value");
      continue;
    }
    if (typeof p.description === "string") schema = { ...schema, description: p.description };
    if (!add(name, schema, isRequired)) continue;
    const explode = typeof p.explode === "boolean" ? p.explode : style === "form";
    const join = where !== "query" || shape !== "array" ? undefined : style === "spaceDelimited" ? " " : style === "pipeDelimited" ? "|" : explode ? undefined : ",";
    params.push({ name, in: where, ...(join !== undefined ? { join } : {}) });
  }
  // A placeholder no parameter describes still needs a value.
  for (const name of placeholders)
    if (!params.some((p) => p.in === "path" && p.name === name) && !Object.hasOwn(properties, name) && add(name, { type: "string" }, true))
      params.push({ name, in: "path" });

  const body = readBody(reader, entry, { unusable, leftOut });
  if (body) add("body", body.schema, body.required);

  const callbacks = op.callbacks;
  if (isObject(callbacks) && Object.keys(callbacks).length > 0) leftOut.push("its callbacks");

  if (unusable.length > 0) return { plan: undefined, unusable, leftOut };
  const parameters: ModelSchema = { type: "object", properties, ...(required.length > 0 ? { required } : {}), additionalProperties: false };
  return { plan: { description: describe(op, method, path), parameters, params, body: body && { mediaType: body.mediaType } }, unusable, leftOut };
}

/** The path item's parameters with the operation's own over them (same name and place). */
function parametersOf(reader: SchemaReader, entry: OperationEntry, unusable: string[]): Record<string, unknown>[] {
  const byKey = new Map<string, Record<string, unknown>>();
  for (const list of [entry.pathItem.parameters, entry.object.parameters]) {
    // An empty `parameters:` key (YAML's null) is none; anything else that is not a list is not
    // read as none, or the operation's arguments would be guessed from its path alone.
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) {
      unusable.push("its parameters are not a list");
      continue;
    }
    for (const raw of list) {
      let p: Record<string, unknown> | undefined;
      try {
        p = follow(reader, raw, "a parameter");
      } catch (error) {
        if (!(error instanceof Unsupported)) throw error;
        unusable.push(`a parameter is ${error.message}`);
        continue;
      }
      if (!p || typeof p.name !== "string" || typeof p.in !== "string") {
        unusable.push("a parameter has no name or in");
        continue;
      }
      byKey.set(`${p.in}\u0000${p.name}`, p);
    }
  }
  return [...byKey.values()];
}

function readBody(
  reader: SchemaReader,
  entry: OperationEntry,
  out: { unusable: string[]; leftOut: string[] },
): { schema: ModelSchema; required: boolean; mediaType: string } | undefined {
  let rb: Record<string, unknown> | undefined;
  try {
    rb = follow(reader, entry.object.requestBody, "the request body");
  } catch (error) {
    if (!(error instanceof Unsupported)) throw error;
    out.unusable.push(`its request body: ${error.message}`);
    return undefined;
  }
  const given = entry.object.requestBody;
  if (!rb) {
    // Absent (or an empty YAML key) is no body; anything else that is not an object is not read
    // as none, or a call that needs a body would be sent without one.
    if (given !== undefined && given !== null) out.unusable.push("its request body is not an object");
    return undefined;
  }
  const required = rb.required === true;
  const problem = (reason: string) => (required ? out.unusable : out.leftOut).push(reason);
  if (!isObject(rb.content) || Object.keys(rb.content).length === 0) {
    problem("a request body without content");
    return undefined;
  }
  const types = Object.keys(rb.content);
  if (entry.method === "GET" || entry.method === "HEAD") {
    problem(`a request body on ${entry.method}`);
    return undefined;
  }
  const mediaType = types.find((t) => /^application\/json\s*(?:;.*)?$/i.test(t)) ?? types.find((t) => JSON_TYPE.test(t));
  if (mediaType === undefined) {
    const file = types.find((t) => FILE_TYPE.test(t));
    problem(file ? `a file upload (${file})` : `a request body that is not JSON (${types.join(", ")})`);
    return undefined;
  }
  const media = (rb.content as Record<string, unknown>)[mediaType];
  let schema: ModelSchema;
  try {
    schema = modelSchema(reader, isObject(media) ? media.schema : undefined);
  } catch (error) {
    if (!(error instanceof Unsupported)) throw error;
    problem(`its request body has ${error.message}`);
    return undefined;
  }
  if (typeof rb.description === "string" && schema.description === undefined) schema = { ...schema, description: rb.description };
  return { schema, required, mediaType: mediaType.split(";")[0]!.trim().toLowerCase() };
}

/** "object", "array" or "plain": what kind of value a schema takes, as far as its `type` says. */
function shapeOf(schema: ModelSchema): "object" | "array" | "plain" {
  const t = schema.type;
  const list = Array.isArray(t) ? t : [t];
  if (list.includes("object")) return "object";
  if (list.includes("array")) return "array";
  return "plain";
}

function describe(op: Readonly<Record<string, unknown>>, method: string, path: string): string {
  const parts = [op.summary, op.description].filter((t): t is string => typeof t === "string" && t.trim() !== "").map((t) => t.trim());
  const text = parts.length === 2 && parts[1]!.startsWith(parts[0]!) ? parts[1]! : parts.join("\n\n");
  const full = text === "" ? `${method} ${path}` : text;
  return full.length <= MAX_DESCRIPTION ? full : `${full.slice(0, MAX_DESCRIPTION - 1)}…`;
}

/** The value a query argument is sent as: arrays joined when the parameter's style says so. */
export function queryValue(value: JsonValue, plan: ParamPlan): string | number | boolean | (string | number | boolean)[] | undefined {
  if (value === null) return undefined;
  if (Array.isArray(value)) {
    const items = value.filter((v) => v !== null).map((v) => (typeof v === "object" ? JSON.stringify(v) : v)) as (string | number | boolean)[];
    return plan.join !== undefined ? items.join(plan.join) : items;
  }
  return typeof value === "object" ? JSON.stringify(value) : value;
}
