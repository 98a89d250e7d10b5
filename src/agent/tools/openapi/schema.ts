/**
 * An OpenAPI schema as the JSON Schema the model is offered and the tool's arguments are checked
 * against. Local `$ref`s are inlined (providers take no document to resolve them in), OpenAPI
 * 3.0's `nullable` and boolean `exclusiveMinimum`/`exclusiveMaximum` become their 2020-12 forms,
 * 3.1 type arrays stay, and only keywords that both @cfworker/json-schema and the providers take
 * are kept: annotations only OpenAPI knows (`discriminator`, `xml`, `example`, `x-*`) are dropped,
 * and so are the request-side `readOnly` properties, which a client must not send.
 */
import type { JsonValue } from "../../../json.js";
import { isObject, resolveLocalRef } from "../../../policy/openapi.js";

export type ModelSchema = { [key: string]: JsonValue };

/** A part of the document this service cannot offer the model; the message says which part. */
export class Unsupported extends Error {
  override name = "Unsupported";
}

export interface SchemaReader {
  readonly root: unknown;
  /** 3.0 documents: `nullable`, boolean exclusive bounds, `$ref` siblings ignored. */
  readonly v30: boolean;
}

/** Inlined schemas can grow fast (a shared $ref used many times): past this the operation is left out. */
const MAX_NODES = 5000;
const MAX_DEPTH = 48;
const TYPES = new Set(["string", "number", "integer", "boolean", "array", "object", "null"]);
const COPIED = ["description", "title", "format", "minimum", "maximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties"];

interface Walk {
  readonly reader: SchemaReader;
  /** The $refs being expanded on the way here: one seen again is a cycle. */
  readonly refs: string[];
  nodes: number;
}

export function modelSchema(reader: SchemaReader, schema: unknown): ModelSchema {
  return convert({ reader, refs: [], nodes: 0 }, schema, 0);
}

/** Follows a `$ref` (of a parameter or request body, say) to the object it names. */
export function follow(reader: SchemaReader, value: unknown, what: string): Record<string, unknown> | undefined {
  let v = value;
  for (let hops = 0; isObject(v) && typeof v.$ref === "string"; hops++) {
    if (hops > 16) throw new Unsupported(`${what} is a chain of $refs that does not end`);
    v = target(reader, v.$ref);
  }
  return isObject(v) ? v : undefined;
}

function target(reader: SchemaReader, ref: string): unknown {
  if (!ref.startsWith("#")) throw new Unsupported(`a $ref to another file (${ref})`);
  const found = resolveLocalRef(reader.root, ref);
  if (found === undefined) throw new Unsupported(`a $ref that points nowhere (${ref})`);
  return found;
}

function convert(walk: Walk, schema: unknown, depth: number): ModelSchema {
  if (++walk.nodes > MAX_NODES) throw new Unsupported(`schemas over ${MAX_NODES} nodes once their $refs are inlined`);
  if (depth > MAX_DEPTH) throw new Unsupported(`schemas nested deeper than ${MAX_DEPTH} levels`);
  if (schema === false) return { not: {} };
  if (!isObject(schema)) return {};
  if (typeof schema.$ref === "string") return viaRef(walk, schema, schema.$ref, depth);
  return keywords(walk, schema, depth);
}

function viaRef(walk: Walk, schema: Record<string, unknown>, ref: string, depth: number): ModelSchema {
  const found = target(walk.reader, ref);
  let resolved: ModelSchema;
  if (walk.refs.includes(ref)) {
    // A recursive schema cannot be inlined: below its first level, anything is accepted (the API
    // still checks what it receives).
    const description = isObject(found) && typeof found.description === "string" ? found.description : undefined;
    resolved = description ? { description } : {};
  } else {
    walk.refs.push(ref);
    resolved = convert(walk, found, depth + 1);
    walk.refs.pop();
  }
  // 3.0 ignores a $ref's siblings; 3.1 applies them beside it.
  const { $ref: _ref, ...siblings } = schema;
  if (walk.reader.v30 || Object.keys(siblings).length === 0) return resolved;
  const extra = keywords(walk, siblings, depth);
  const annotations = Object.keys(extra).every((k) => k === "description" || k === "title");
  if (annotations) return { ...resolved, ...extra };
  return { allOf: [resolved, extra] };
}

function keywords(walk: Walk, s: Record<string, unknown>, depth: number): ModelSchema {
  const out: ModelSchema = {};
  const nullable = walk.reader.v30 && s.nullable === true;
  const type = typeOf(s.type, nullable);
  if (type !== undefined) out.type = type;
  for (const key of COPIED) if (isPlain(s[key])) out[key] = s[key] as JsonValue;
  if (typeof s.pattern === "string" && compiles(s.pattern)) out.pattern = s.pattern;
  bound(out, s, "exclusiveMinimum", "minimum");
  bound(out, s, "exclusiveMaximum", "maximum");
  if (Array.isArray(s.enum) && s.enum.length > 0) out.enum = nullable && !s.enum.includes(null) ? [...(s.enum as JsonValue[]), null] : (s.enum as JsonValue[]);
  if (s.const !== undefined) out.const = s.const as JsonValue;
  if (s.default !== undefined) out.default = s.default as JsonValue;
  if (isObject(s.properties)) {
    const props: ModelSchema = {};
    const dropped = new Set<string>();
    for (const [name, sub] of Object.entries(s.properties)) {
      if (isObject(sub) && sub.readOnly === true) dropped.add(name);
      else props[name] = convert(walk, sub, depth + 1);
    }
    out.properties = props;
    if (Array.isArray(s.required)) out.required = s.required.filter((r): r is string => typeof r === "string" && !dropped.has(r));
  } else if (Array.isArray(s.required)) out.required = s.required.filter((r): r is string => typeof r === "string");
  if (out.required !== undefined && (out.required as string[]).length === 0) delete out.required;
  if (typeof s.additionalProperties === "boolean") out.additionalProperties = s.additionalProperties;
  else if (isObject(s.additionalProperties)) out.additionalProperties = convert(walk, s.additionalProperties, depth + 1);
  if (isObject(s.items) || typeof s.items === "boolean") out.items = convert(walk, s.items, depth + 1);
  for (const key of ["allOf", "anyOf", "oneOf"] as const) {
    const list = s[key];
    if (Array.isArray(list) && list.length > 0) out[key] = list.map((sub) => convert(walk, sub, depth + 1));
  }
  if (nullable && type === undefined && (out.anyOf || out.oneOf)) {
    const key = out.anyOf ? "anyOf" : "oneOf";
    out[key] = [...(out[key] as JsonValue[]), { type: "null" }];
  }
  return out;
}

/** `type` as 2020-12 has it: one name or a list of names; 3.0's `nullable` adds "null". */
function typeOf(type: unknown, nullable: boolean): JsonValue | undefined {
  const list = (Array.isArray(type) ? type : type === undefined ? [] : [type]).filter((t): t is string => typeof t === "string" && TYPES.has(t));
  if (list.length === 0) return undefined;
  if (nullable && !list.includes("null")) list.push("null");
  return list.length === 1 ? list[0]! : list;
}

/** 3.0 writes `exclusiveMinimum: true` beside `minimum`; 2020-12 (and 3.1) write the number. */
function bound(out: ModelSchema, s: Record<string, unknown>, exclusive: "exclusiveMinimum" | "exclusiveMaximum", inclusive: "minimum" | "maximum"): void {
  const value = s[exclusive];
  if (typeof value === "number") out[exclusive] = value;
  else if (value === true && typeof s[inclusive] === "number") {
    out[exclusive] = s[inclusive] as number;
    delete out[inclusive];
  }
}

function isPlain(value: unknown): boolean {
  return typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value));
}

/** A pattern the validator could not compile (it uses the `u` flag) would fail every call: it is dropped. */
function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
}
