/**
 * Paths as the policy compares them (spec 8). A concrete path is checked once, normalized once
 * (percent-encoded unreserved characters decoded, other escapes upper-cased, one trailing slash
 * ignored) and compared segment by segment with precompiled templates. The path that is judged
 * is exactly the path that is sent: nothing here re-resolves it against a base URL.
 */

/** Why a path (template or concrete) is unusable, or null when it is fine. */
export function pathProblem(path: string, kind: "template" | "concrete"): string | null {
  if (typeof path !== "string" || !path.startsWith("/")) return "must start with /";
  if (/[?#]/.test(path)) return "must not contain a query or fragment";
  if (/\s/.test(path)) return "must not contain whitespace";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) return "must not contain control characters";
  if (path.includes("\\")) return "must not contain a backslash";
  if (path.includes(";")) return "must not contain ;";
  if (/[^\u0020-\u007e]/.test(path)) return "must be ASCII (percent-encode other characters)";
  // Only characters a URL keeps as written: anything else (" < > ` ^ | ...) a URL parser would
  // re-encode, and then the path sent would not be the path judged.
  if (/[^A-Za-z0-9\-._~!$&'()*+,=:@%/{}]/.test(path) || (kind === "concrete" && /[{}]/.test(path)))
    return kind === "concrete" && /[{}]/.test(path) ? "has an unfilled {placeholder}" : "has a character that must be percent-encoded";
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return "has a malformed percent escape";
  if (/%2f|%5c/i.test(path)) return "must not contain an encoded slash or backslash";
  if (/%[01][0-9a-f]|%7f/i.test(path)) return "must not contain encoded control characters";
  const segments = path.split("/").slice(1);
  for (let i = 0; i < segments.length; i++) {
    const raw = segments[i]!;
    if (raw === "") {
      if (i === segments.length - 1 && i > 0) continue; // one trailing slash
      if (segments.length === 1) continue; // the root path "/"
      return "must not contain empty segments";
    }
    const decoded = decodeUnreserved(raw);
    if (decoded === "." || decoded === "..") return "must not contain . or .. segments";
    if (kind === "template") {
      const open = raw.indexOf("{");
      if (open >= 0 || raw.includes("}")) {
        if (!/^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(raw)) return "placeholders must be whole segments like {name}";
      }
    } else if (raw.includes("{") || raw.includes("}")) return "has an unfilled {placeholder}";
  }
  return null;
}

/** A character code of RFC 3986's unreserved set: A-Z a-z 0-9 - . _ ~ (never percent-encoded). */
export function isUnreserved(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 45 || c === 46 || c === 95 || c === 126;
}

/** Decodes %XX of unreserved characters and upper-cases every other escape. */
export function decodeUnreserved(segment: string): string {
  if (!segment.includes("%")) return segment;
  return segment.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const code = parseInt(hex, 16);
    return isUnreserved(code) ? String.fromCharCode(code) : `%${hex.toUpperCase()}`;
  });
}

/** Normalized segments of a concrete, already-checked path: no leading "", one trailing "" dropped. */
export function concreteSegments(path: string): string[] {
  const segments = path.split("/");
  segments.shift();
  if (segments.length > 1 && segments[segments.length - 1] === "") segments.pop();
  if (segments.length === 1 && segments[0] === "") return [];
  for (let i = 0; i < segments.length; i++) segments[i] = decodeUnreserved(segments[i]!);
  return segments;
}

/** A template compiled for matching: literals normalized (and lower-cased for loose matching). */
export interface CompiledTemplate {
  readonly source: string;
  /** null marks a `{name}` placeholder. */
  readonly strict: readonly (string | null)[];
  readonly loose: readonly (string | null)[];
}

export function compileTemplate(template: string): CompiledTemplate {
  const strict = concreteSegments(template).map((s) => (s.startsWith("{") && s.endsWith("}") ? null : s));
  return { source: template, strict, loose: strict.map((s) => (s === null ? null : s.toLowerCase())) };
}

/** Allow-list matching: exact literals, `{name}` matches one non-empty segment. */
export function matchesStrict(t: CompiledTemplate, segments: readonly string[]): boolean {
  const lits = t.strict;
  if (lits.length !== segments.length) return false;
  for (let i = 0; i < lits.length; i++) {
    const lit = lits[i] as string | null;
    const seg = segments[i]!;
    if (lit === null ? seg === "" : lit !== seg) return false;
  }
  return true;
}

/**
 * Denial and gate matching: literals compared without letter case, and a literal also covers
 * its dot-suffixed spellings (`admin` covers `Admin.json`), so a denial cannot be dodged by how
 * a server might route those. `lowered` is the call's segments in lower case.
 */
export function matchesLoose(t: CompiledTemplate, lowered: readonly string[]): boolean {
  const lits = t.loose;
  if (lits.length !== lowered.length) return false;
  for (let i = 0; i < lits.length; i++) {
    const lit = lits[i] as string | null;
    const seg = lowered[i]!;
    if (lit === null) {
      if (seg === "") return false;
    } else if (seg !== lit && !(seg.length > lit.length && seg.charCodeAt(lit.length) === 46 && seg.startsWith(lit))) return false;
  }
  return true;
}

export class PathError extends Error {
  override name = "PathError";
}

interface ParsedTemplate {
  readonly problem: string | null;
  /** Normalized literal segments, or the placeholder name. */
  readonly parts: readonly ({ readonly literal: string } | { readonly param: string })[];
  readonly trailingSlash: boolean;
  readonly params: ReadonlySet<string>;
}

const templates = new Map<string, ParsedTemplate>();
const TEMPLATE_CACHE_MAX = 1000;

function parseTemplate(template: string): ParsedTemplate {
  let parsed = templates.get(template);
  if (parsed) return parsed;
  const problem = pathProblem(template, "template");
  const parts: ParsedTemplate["parts"][number][] = [];
  let trailingSlash = false;
  if (!problem) {
    const raw = template.split("/").slice(1);
    if (raw.length > 1 && raw[raw.length - 1] === "") {
      raw.pop();
      trailingSlash = true;
    }
    for (const seg of raw) {
      if (seg === "") continue;
      parts.push(seg.startsWith("{") ? { param: seg.slice(1, -1) } : { literal: decodeUnreserved(seg) });
    }
  }
  parsed = { problem, parts, trailingSlash, params: new Set(parts.flatMap((p) => ("param" in p ? [p.param] : []))) };
  if (templates.size >= TEMPLATE_CACHE_MAX) templates.clear();
  templates.set(template, parsed);
  return parsed;
}

/**
 * A value of unreserved characters only, not starting with a dot: sent as written, its own
 * normalized segment. A loop, not a regular expression: see judge-request.ts's KNOWN_METHODS.
 */
function isSimpleValue(text: string): boolean {
  if (text.charCodeAt(0) === 46) return false;
  for (let i = 0; i < text.length; i++) if (!isUnreserved(text.charCodeAt(i))) return false;
  return text.length > 0;
}

export interface ResolvedPath {
  /** The concrete path as it will be sent. */
  readonly path: string;
  /** Its normalized segments, as the judge compares them. */
  readonly segments: readonly string[];
}

/**
 * Checks a tool's path template, fills its placeholders (one encoded segment each) and checks
 * the result. Throws PathError naming the rule. Templates are parsed once; values of plain
 * unreserved characters take a fast path whose result needs no second scan.
 */
export function resolvePath(template: string, params: Readonly<Record<string, string | number>> | undefined): ResolvedPath {
  const parsed = parseTemplate(template);
  if (parsed.problem) throw new PathError(`the path is refused: it ${parsed.problem}`);
  const segments: string[] = [];
  let path = "";
  let simple = true;
  for (const part of parsed.parts) {
    if ("literal" in part) {
      segments.push(part.literal);
      path += `/${part.literal}`;
      continue;
    }
    const value = params && Object.hasOwn(params, part.param) ? params[part.param] : undefined;
    if (value === undefined) throw new PathError(`path parameter ${part.param} has no value`);
    const text = String(value);
    if (text === "" || text === "." || text === ".." || text.includes("/"))
      throw new PathError(`path parameter ${part.param} must be one non-empty segment (not ., .. or containing /)`);
    if (isSimpleValue(text)) {
      segments.push(text);
      path += `/${text}`;
    } else {
      simple = false;
      path += `/${encodeURIComponent(text)}`;
    }
  }
  if (params)
    for (const name in params)
      if (Object.hasOwn(params, name) && !parsed.params.has(name)) throw new PathError(`path parameter ${name} has no {${name}} in the path`);
  if (path === "") path = "/";
  else if (parsed.trailingSlash) path += "/";
  if (simple) return { path, segments };
  const problem = pathProblem(path, "concrete");
  if (problem) throw new PathError(`the path is refused as concrete: it ${problem}`);
  return { path, segments: concreteSegments(path) };
}
