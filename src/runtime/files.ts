/// <reference types="node" />
/**
 * The file reader of the runtimes with a file system (Node; Bun and Deno serve `node:fs` too):
 * the API policy, OpenAPI and response-schema files. It lives on the runtime side so the core
 * never touches `process` or `node:fs` (STYLE.md habit 1); createApp takes it as `readText`.
 * workerd has no files: its entry passes the texts as bindings instead.
 */
import { readFile } from "node:fs/promises";
import { type ReadText, resolvePath } from "../files.js";

/** Reads UTF-8 text; relative paths resolve against `root` (default: the working directory). A missing file is undefined. */
export function defaultReadText(root: string = process.cwd()): ReadText {
  return async (path) => {
    try {
      return await readFile(resolvePath(root, path), "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  };
}
