/**
 * An API's OpenAPI file (YAML or JSON), read once at startup: its operations (method, path
 * template, operationId) for the policy's label checks and declared calls, and the parsed
 * document for the tools made from it (agent/tools/openapi). One reader for both, so the
 * operations the policy knows are exactly those the tools are made from.
 */
import { parse } from "yaml";
import type { OpenApiOperation } from "./labels.js";

const METHODS = ["get", "head", "post", "put", "patch", "delete", "options"];

export interface OpenApiDocument {
  /** The `openapi` field as text (`3.0.3`, `3.1.0`), or `swagger 2.0` for a Swagger document. */
  readonly version: string;
  readonly root: Readonly<Record<string, unknown>>;
  readonly operations: readonly OpenApiOperation[];
}

/** One operation with the objects it is read from. */
export interface OperationEntry extends OpenApiOperation {
  readonly object: Readonly<Record<string, unknown>>;
  /** The path item holding it (its `parameters` apply to every operation under it). */
  readonly pathItem: Readonly<Record<string, unknown>>;
}

/** Throws a plain Error with a short reason when the text is not an OpenAPI document. */
export function parseOpenApi(text: string): OpenApiDocument {
  const doc = parse(text, { maxAliasCount: 100 }) as { openapi?: unknown; swagger?: unknown; paths?: unknown } | null;
  if (!doc || typeof doc !== "object" || (doc.openapi === undefined && doc.swagger === undefined)) throw new Error("is not an OpenAPI document");
  const root = doc as Record<string, unknown>;
  // `openapi: 3.1` unquoted is a YAML number: read it back as the text it was.
  const version = doc.openapi !== undefined ? String(doc.openapi) : `swagger ${String(doc.swagger)}`;
  const operations = operationsOf(root).map(({ operationId, method, path }) => ({ operationId, method, path }));
  return { version, root, operations };
}

export function readOpenApi(text: string): OpenApiOperation[] {
  return [...parseOpenApi(text).operations];
}

/** Every operation under `paths`, in document order; a path item may be a local `$ref`. */
export function operationsOf(root: Readonly<Record<string, unknown>>): OperationEntry[] {
  const paths = root.paths;
  if (!isObject(paths)) return [];
  const out: OperationEntry[] = [];
  for (const [path, raw] of Object.entries(paths)) {
    const item = typeof (raw as { $ref?: unknown } | null)?.$ref === "string" ? resolveLocalRef(root, (raw as { $ref: string }).$ref) : raw;
    if (!isObject(item)) continue;
    for (const m of METHODS) {
      const op = item[m];
      if (!isObject(op)) continue;
      const id = op.operationId;
      out.push({ operationId: typeof id === "string" ? id : undefined, method: m.toUpperCase(), path, object: op, pathItem: item });
    }
  }
  return out;
}

/**
 * The value a local reference (`#/components/schemas/Order`) points to, or undefined when it is
 * not local or points nowhere. JSON Pointer escapes (`~0`, `~1`) and percent-encoding are read.
 */
export function resolveLocalRef(root: unknown, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let value: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    let token: string;
    try {
      token = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    token = token.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(value)) value = /^(0|[1-9][0-9]*)$/.test(token) ? value[Number(token)] : undefined;
    else if (isObject(value) && Object.hasOwn(value, token)) value = value[token];
    else return undefined;
    if (value === undefined) return undefined;
  }
  return value;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
