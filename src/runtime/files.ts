/**
 * The file reader of the runtimes with a file system (Node 20.16+, Bun and Deno all serve
 * `node:fs/promises` through `process.getBuiltinModule`): the API policy, OpenAPI and
 * response-schema files. It lives on the runtime side so the core never touches `process` or
 * `node:fs` (STYLE.md habit 1). It reaches for the module at run time rather than importing it,
 * so the package entry also loads on workerd, where there are no files and nothing is read.
 */
import { type ReadText, resolvePath } from "../files.js";

interface Host {
  getBuiltinModule?(id: string): unknown;
  cwd?(): string;
}

type Fs = { readFile(path: string, encoding: "utf8"): Promise<string> };

/** Reads UTF-8 text; relative paths resolve against `root` (default: the working directory). A missing file is undefined. */
export function hostReadText(root?: string): ReadText {
  const host = (globalThis as { process?: Host }).process;
  const fs = host?.getBuiltinModule?.("node:fs/promises") as Fs | undefined;
  const base = root ?? host?.cwd?.();
  return async (path) => {
    if (!fs) return undefined;
    try {
      return await fs.readFile(base === undefined ? path : resolvePath(base, path), "utf8");
    } catch (error) {
      if ((error as { code?: unknown }).code === "ENOENT") return undefined;
      throw error;
    }
  };
}
