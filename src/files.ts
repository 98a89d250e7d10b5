/**
 * Reading configuration files (the API policy, OpenAPI files) by path. The core stays on web
 * standards: the default reader uses Node's module API only where the runtime offers it
 * (`process.getBuiltinModule`, present on Node 20.16+, Bun and Deno) and otherwise reads nothing;
 * on workerd the embedder passes `readText` (or bundles the text). Relative paths resolve
 * against `root`, else the working directory.
 */

/** Resolves to the file's text, or undefined when there is no such file. */
export type ReadText = (path: string) => Promise<string | undefined>;

interface NodeLike {
  getBuiltinModule?(id: string): unknown;
  cwd?(): string;
}

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

export function resolvePath(base: string, path: string): string {
  if (path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path)) return path;
  return `${base.replace(/[\\/]+$/, "")}/${path}`;
}
