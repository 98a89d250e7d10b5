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
