/**
 * Reading configuration files (the API policy, OpenAPI files, a response schema) by path. The
 * core only names the port: the runtime entry passes a `ReadText` (src/runtime/files.ts on Node,
 * Bun and Deno); on workerd there are no files and the embedder passes the texts instead.
 */

/**
 * Resolves to the file's text, or undefined when there is no such file; rejects when the path
 * exists but cannot be read as a file (a directory, no permission), with the errno `code`.
 */
export type ReadText = (path: string) => Promise<string | undefined>;

/**
 * A file a setting names: its text, undefined when there is no such file, or why it cannot be
 * read (`names a file that cannot be read (EISDIR)`). The reason names the errno code only,
 * never the path or the runtime's own words, so it can go into a startup error as it is.
 */
export async function readNamedFile(readText: ReadText, path: string): Promise<{ readonly text: string | undefined } | { readonly unreadable: string }> {
  try {
    return { text: await readText(path) };
  } catch (error) {
    return { unreadable: `names a file that cannot be read (${errnoCode(error)})` };
  }
}

/** A failed file or socket operation's errno code (`EISDIR`, `EACCES`), else `error`: never its message, which names the path. */
export function errnoCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[A-Z][A-Z0-9_]*$/.test(code) ? code : "error";
}

export function resolvePath(base: string, path: string): string {
  if (path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path)) return path;
  return `${base.replace(/[\\/]+$/, "")}/${path}`;
}
