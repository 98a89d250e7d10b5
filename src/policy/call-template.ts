/**
 * How a call is named in its log line and its client span (spec 6.3, 6.4): its operation or a
 * template of its path, never what the model wrote. A tool that puts model input in the path
 * itself, instead of `pathParams`, would otherwise have it logged: such a segment, and any that
 * looks like an id or key, reads `{id}`.
 */
import type { JsonValue } from "../json.js";
import { matches } from "./judge.js";
import type { JudgedRequest } from "./judge-request.js";

/** Segments that look like ids or keys: digits, a UUID, a long hex or opaque token. */
const ID_LIKE = /^(\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|[A-Za-z0-9_~.-]{24,})$/i;

/** At most this many of the arguments' values are looked at (deeper or later ones are not). */
const MAX_VALUES = 1000;
const MAX_DEPTH = 16;

/**
 * The call's path as a template: the tool's own (`/orders/{id}` with pathParams), else the path
 * of the allowed operation it matched, else the judged path with `{id}` for every segment that
 * looks like an id or that one of the tool call's argument values is (or is a segment of).
 */
export function callTemplate(toolPath: unknown, judged: JudgedRequest, args: Readonly<Record<string, JsonValue>> | undefined): string {
  if (typeof toolPath === "string" && toolPath.includes("{")) return toolPath;
  for (const e of judged.api.allowed ?? []) if (e.path !== undefined && matches(e, judged.call)) return e.path.source;
  let fromModel: Set<string> | undefined;
  return judged.path
    .split("/")
    .map((segment) => {
      if (segment === "") return segment;
      if (ID_LIKE.test(segment)) return "{id}";
      fromModel ??= argumentValues(args);
      return fromModel.has(decoded(segment).toLowerCase()) ? "{id}" : segment;
    })
    .join("/");
}

/** Every string and number among the arguments, lower-cased, and each `/`-separated part of a string. */
function argumentValues(args: Readonly<Record<string, JsonValue>> | undefined): Set<string> {
  const out = new Set<string>();
  if (args === undefined) return out;
  const visit = (value: JsonValue, depth: number): void => {
    if (out.size >= MAX_VALUES || depth > MAX_DEPTH) return;
    if (typeof value === "string") {
      const lower = value.toLowerCase();
      out.add(lower);
      if (lower.includes("/")) for (const part of lower.split("/")) if (part !== "") out.add(decoded(part));
    } else if (typeof value === "number") out.add(String(value).toLowerCase());
    else if (Array.isArray(value)) for (const item of value) visit(item, depth + 1);
    else if (value !== null && typeof value === "object") for (const key in value) visit(value[key]!, depth + 1);
  };
  visit(args, 0);
  return out;
}

function decoded(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
