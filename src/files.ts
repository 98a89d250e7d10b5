/**
 * Reading configuration files (the API policy, OpenAPI files, a response schema) by path. The
 * core only names the port: the runtime entry passes a `ReadText` (src/runtime/files.ts on Node,
 * Bun and Deno); on workerd there are no files and the embedder passes the texts instead.
 */

/** Resolves to the file's text, or undefined when there is no such file. */
export type ReadText = (path: string) => Promise<string | undefined>;

export function resolvePath(base: string, path: string): string {
  if (path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path)) return path;
  return `${base.replace(/[\\/]+$/, "")}/${path}`;
}

// --- Transitional: remove once src/app.ts and src/tooling/policy-check.ts stop importing it -------
// They still call defaultReadText(root) when no readText is given; until they take the reader from
// their callers (src/runtime/files.ts), this copy keeps them working. `npm run lint:core` reports
// its `globalThis.process` on purpose, so it cannot stay.

interface NodeLike {
  getBuiltinModule?(id: string): unknown;
  cwd?(): string;
}

/** @deprecated The Node reader is src/runtime/files.ts; the core takes `readText` from its caller. */
export function defaultReadText(root: string | undefined): ReadText {
  const host = (globalThis as { process?: NodeLike }).process;
  const fs = host?.getBuiltinModule?.("node:fs/promises") as { readFile(p: string, enc: "utf8"): Promise<string> } | undefined;
  const base = root ?? host?.cwd?.() ?? "/";
  return async (path) => {
    if (!fs) return undefined;
    try {
      return await fs.readFile(resolvePath(base, path), "utf8");
    } catch (error) {
      if ((error as { code?: string }).code === "ENOENT") return undefined;
      throw error;
    }
  };
}
