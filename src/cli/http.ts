/// <reference types="node" />
/**
 * The service as the command-line client reaches it: the base URL, the bearer credential from
 * the process variable AGENTCLI_API_KEY (spec 5.9: never from an env file, so a key is not left
 * lying in a project directory), and for custom auth policies `--header 'Name: value'` and
 * `--cookie name=value`. Refusals come back as one line (`HTTP 409: ...`), the server's words
 * escaped for the terminal.
 */
import { UsageError } from "./args.js";
import { safeLine } from "./escape.js";

export interface Client {
  /** Without a trailing slash. */
  readonly base: string;
  /** `--url` as given, for commands printed to run next (undefined when the default). */
  readonly urlOption: string | undefined;
  send(method: string, path: string, options?: { body?: unknown; accept?: string; signal?: AbortSignal }): Promise<Response>;
}

export class ConfigurationProblem extends Error {}

/** A failure to reach the service at all (refused connection, unknown host). */
export class Unreachable extends Error {}

export const DEFAULT_URL = "http://127.0.0.1:8000";

export function makeClient(options: { url: string | undefined; headers: readonly string[]; cookies: readonly string[] }): Client {
  const raw = options.url ?? process.env.AGENTCLI_URL ?? DEFAULT_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError("--url must be an absolute http(s) URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError("--url must be an absolute http(s) URL");
  if (url.search || url.hash) throw new UsageError("--url must have no query or fragment");
  const base = raw.replace(/\/+$/, "");

  const headers = new Headers();
  const key = process.env.AGENTCLI_API_KEY;
  if (key !== undefined && key !== "") {
    if (/[\u0000-\u001f\u007f]/.test(key)) throw new ConfigurationProblem("AGENTCLI_API_KEY holds a control character (a line break?)");
    headers.set("Authorization", `Bearer ${key}`);
  }
  for (const h of options.headers) {
    const i = h.indexOf(":");
    const name = i > 0 ? h.slice(0, i).trim() : "";
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) throw new UsageError("--header must be 'Name: value'");
    try {
      headers.append(name, h.slice(i + 1).trim());
    } catch {
      throw new UsageError(`--header ${name}: the value is not a valid header value`);
    }
  }
  if (options.cookies.some((c) => !/^[^=;\s]+=[^;\r\n]*$/.test(c))) throw new UsageError("--cookie must be name=value");
  if (options.cookies.length > 0) headers.set("Cookie", options.cookies.join("; "));

  return {
    base,
    urlOption: options.url ?? process.env.AGENTCLI_URL,
    async send(method, path, { body, accept, signal } = {}) {
      const h = new Headers(headers);
      if (body !== undefined) h.set("Content-Type", "application/json");
      if (accept) h.set("Accept", accept);
      try {
        return await fetch(`${base}${path}`, { method, headers: h, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), ...(signal ? { signal } : {}) });
      } catch (error) {
        if ((error as Error).name === "AbortError") throw error;
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        throw new Unreachable(`cannot reach ${base}: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
      }
    },
  };
}

/** A refusal as one line: `HTTP <status>: <detail>` (422 lists each field's problem). */
export async function problemOf(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  let detail = text;
  try {
    const body = JSON.parse(text) as { detail?: unknown; code?: unknown };
    if (typeof body.detail === "string") detail = body.detail;
    else if (Array.isArray(body.detail))
      detail = body.detail.map((d: { loc?: unknown[]; msg?: unknown }) => `${(d.loc ?? []).join(".")}: ${String(d.msg)}`).join("; ");
    else detail = JSON.stringify(body);
    if (typeof body.code === "string" && !detail.includes(body.code)) detail = `${body.code}: ${detail}`;
  } catch {
    // not JSON: shown as it came
  }
  return `HTTP ${res.status}: ${safeLine(detail.slice(0, 2000))}`;
}

/** The path segment of an id, encoded. */
export const seg = (id: string) => encodeURIComponent(id);
