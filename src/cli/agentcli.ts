#!/usr/bin/env node
/// <reference types="node" />
/**
 * agentcli: a small command-line client of the HTTP API (spec 5.9). The bearer credential comes
 * from the process variable AGENTCLI_API_KEY only, never from an env file, so a key is not left
 * lying in a project directory. Custom auth policies get `--header 'Name: value'` and
 * `--cookie name=value`.
 *
 *   agentcli chat "hello" [--thread ID]      stream an answer
 *   agentcli threads [--limit N --offset N]  list threads
 *   agentcli messages ID                     print a thread's messages
 *   agentcli delete ID                       delete a thread
 *
 * Options: --url (default AGENTCLI_URL or http://127.0.0.1:8000), --header, --cookie, --json
 * (print raw events/JSON).
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { sseEvents } from "../sse-decode.js";

const USAGE = `usage: agentcli <chat MESSAGE | threads | messages THREAD_ID | delete THREAD_ID>
  [--url URL] [--thread ID] [--limit N] [--offset N] [--header 'Name: value']... [--cookie name=value]... [--json]
The bearer credential is read from AGENTCLI_API_KEY.`;

export async function run(argv: readonly string[], out: (s: string) => void = (s) => void process.stdout.write(s)): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      url: { type: "string" },
      thread: { type: "string" },
      limit: { type: "string" },
      offset: { type: "string" },
      header: { type: "string", multiple: true },
      cookie: { type: "string", multiple: true },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, arg] = positionals;
  if (values.help || !command) {
    out(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const base = (values.url ?? process.env.AGENTCLI_URL ?? "http://127.0.0.1:8000").replace(/\/+$/, "");
  const headers = new Headers();
  const key = process.env.AGENTCLI_API_KEY;
  if (key) headers.set("Authorization", `Bearer ${key}`);
  for (const h of values.header ?? []) {
    const i = h.indexOf(":");
    if (i <= 0) return fail(`--header must be 'Name: value'`);
    headers.append(h.slice(0, i).trim(), h.slice(i + 1).trim());
  }
  const cookies = values.cookie ?? [];
  if (cookies.some((c) => !/^[^=;\s]+=[^;]*$/.test(c))) return fail("--cookie must be name=value");
  if (cookies.length > 0) headers.set("Cookie", cookies.join("; "));

  const send = async (method: string, path: string, body?: unknown) => {
    if (body !== undefined) headers.set("Content-Type", "application/json");
    return fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  };

  switch (command) {
    case "chat": {
      if (!arg) return fail("chat needs a message");
      headers.set("Accept", "text/event-stream");
      const res = await send("POST", "/chat", { message: arg, ...(values.thread ? { thread_id: values.thread } : {}) });
      if (res.status !== 200) return problem(res);
      return streamChat(res, Boolean(values.json), out);
    }
    case "threads": {
      const q = new URLSearchParams();
      if (values.limit) q.set("limit", values.limit);
      if (values.offset) q.set("offset", values.offset);
      return printJson(await send("GET", `/threads${q.size ? `?${q}` : ""}`), out);
    }
    case "messages":
      if (!arg) return fail("messages needs a thread id");
      return printJson(await send("GET", `/threads/${encodeURIComponent(arg)}/messages`), out);
    case "delete": {
      if (!arg) return fail("delete needs a thread id");
      const res = await send("DELETE", `/threads/${encodeURIComponent(arg)}`);
      if (res.status !== 204) return problem(res);
      out("deleted\n");
      return 0;
    }
    default:
      return fail(`unknown command ${JSON.stringify(command)}`);
  }

  function fail(message: string): number {
    process.stderr.write(`agentcli: ${message}\n${USAGE}\n`);
    return 2;
  }
}

async function problem(res: Response): Promise<number> {
  const text = await res.text();
  let detail = text;
  try {
    const body = JSON.parse(text) as { detail?: unknown };
    detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? body);
  } catch {
    // not JSON: print as is
  }
  process.stderr.write(`agentcli: HTTP ${res.status}: ${detail}\n`);
  return 1;
}

async function printJson(res: Response, out: (s: string) => void): Promise<number> {
  if (res.status !== 200) return problem(res);
  out(`${JSON.stringify(await res.json(), null, 2)}\n`);
  return 0;
}

async function streamChat(res: Response, raw: boolean, out: (s: string) => void): Promise<number> {
  let code = 0;
  for await (const frame of sseEvents(res.body)) {
    const event = frame.event;
    const data = JSON.parse(frame.data) as Record<string, unknown>;
    if (raw) out(`${JSON.stringify({ event, data })}\n`);
    else if (event === "message.delta") out(String(data.text));
    else if (event === "tool.call") out(`\n[tool ${String(data.name)} ${JSON.stringify(data.args)}]\n`);
    else if (event === "tool.result") out(`[${data.is_error ? "failed" : "result"}: ${String(data.result)}]\n`);
    else if (event === "message.start") process.stderr.write(`thread ${String(data.thread_id)}\n`);
    else if (event === "message.end") out(data.status === "ok" ? "\n" : `\n[${String(data.status)}]\n`);
    if (event === "error") {
      if (!raw) process.stderr.write(`agentcli: ${String(data.code)}: ${String(data.message)}\n`);
      code = 1;
    }
  }
  return code;
}

/** Run when executed (directly or through an npm bin link), not when imported. */
function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  run(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: Error) => {
      process.stderr.write(`agentcli: ${error.message}\n`);
      process.exit(1);
    },
  );
}
