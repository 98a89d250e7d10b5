/** Reads the operations of an API's OpenAPI file (YAML or JSON): method, path template, operationId. */
import { parse } from "yaml";
import type { OpenApiOperation } from "./labels.js";

const METHODS = ["get", "head", "post", "put", "patch", "delete", "options"];

/** Throws a plain Error with a short reason when the text is not an OpenAPI document. */
export function readOpenApi(text: string): OpenApiOperation[] {
  const doc = parse(text, { maxAliasCount: 100 }) as { openapi?: unknown; swagger?: unknown; paths?: unknown } | null;
  if (!doc || typeof doc !== "object" || (doc.openapi === undefined && doc.swagger === undefined)) throw new Error("is not an OpenAPI document");
  const paths = doc.paths;
  if (!paths || typeof paths !== "object") return [];
  const out: OpenApiOperation[] = [];
  for (const [path, item] of Object.entries(paths as Record<string, unknown>)) {
    if (!item || typeof item !== "object") continue;
    for (const m of METHODS) {
      const op = (item as Record<string, unknown>)[m];
      if (!op || typeof op !== "object") continue;
      const id = (op as { operationId?: unknown }).operationId;
      out.push({ operationId: typeof id === "string" ? id : undefined, method: m.toUpperCase(), path });
    }
  }
  return out;
}
